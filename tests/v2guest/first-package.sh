#!/bin/bash
# The package upgrades are tested from: VRI's first packaged release, the tag below, built once
# with scripts/build-package.sh and cached outside the clone by the tag's commit
# ($VRI_CACHE_DIR, default /var/cache/vri-test, /packages/<commit>/). The .deb is copied to
# <build-dir>/package-first/, where the `node` guest suite finds it.
#   tests/v2guest/first-package.sh <build-dir>
set -euo pipefail
tag=debian/0.1.0-1
tagged_commit=97f3b862d73ddd629a28a4247584ec81483763ee  # what the tag points to, for a clone made without tags
build=$(readlink -f "${1:?usage: first-package.sh <build-dir>}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
commit=$(git -C "$repo" rev-parse -q --verify "$tag^{commit}") || commit=$tagged_commit
[ "$commit" = "$tagged_commit" ] || { echo "first-package: $tag is $commit, not $tagged_commit" >&2; exit 1; }
git -C "$repo" cat-file -e "$commit^{commit}" ||
  { echo "first-package: $commit ($tag) is not in this clone's history" >&2; exit 1; }
cache=${VRI_CACHE_DIR:-/var/cache/vri-test}/packages/$commit
if ! ls "$cache"/vri_*.deb >/dev/null 2>&1; then
  echo "first-package: building $tag ($commit) once"
  rm -rf "$cache.partial"
  # Built once per machine, to be installed and upgraded from: no tests run, no optimisation
  # (fortify goes with it), no debug information (nothing reads it), and no compiler cache (its
  # objects are never asked for again).
  DEB_BUILD_OPTIONS="nocheck noopt parallel=$(nproc)" DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g \
    CCACHE_DISABLE=1 \
    "$repo/scripts/build-package.sh" "$cache.partial" "$commit" > "$build/first-package.log" 2>&1 ||
    { tail -n 40 "$build/first-package.log"; echo "first-package: building $tag failed" >&2; exit 1; }
  rm -rf "$cache.partial/src"  # the .deb is what is kept
  mv "$cache.partial" "$cache"
fi
touch "$cache"  # used: scripts/prune-caches.sh keeps it
rm -rf "$build/package-first"
mkdir -p "$build/package-first"
cp "$cache"/vri_*.deb "$build/package-first/"
rm -f "$build"/package-first/vri-dbgsym_*
echo "first-package: $(ls "$build"/package-first/)"

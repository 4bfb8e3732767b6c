#!/usr/bin/env bash
# Builds VRI's Debian package the Debian way (dpkg-buildpackage -b -us -uc) and checks it with lintian.
#   scripts/build-package.sh OUTDIR [GIT-REF]
# Without GIT-REF it packages the working tree as it is; with one, that commit (git archive).
# A tree that is exactly its changelog version's tag (debian/<version>) builds that version;
# any other tree builds a snapshot that sorts after it: <version>+git<commits since the tag>.<commit>.
# The .deb, .buildinfo, .changes and lintian.txt land in OUTDIR; the unpacked source in OUTDIR/src.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:?usage: build-package.sh OUTDIR [GIT-REF]}" && cd "$1" && pwd)
ref=${2:-}

src=$out/src
rm -rf "$src" "$out"/*.deb "$out"/*.ddeb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$src"
if [ -n "$ref" ]; then
  commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}")
  git -C "$repo" archive "$commit" | tar -x -C "$src"
  dirty=
else
  commit=$(git -C "$repo" rev-parse HEAD)
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -x -C "$src"
  dirty=$(git -C "$repo" status --porcelain --untracked-files=no)
fi

version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tag="debian/${version//\~/_}"
tag=${tag//:/%}
if [ -z "$dirty" ] && [ "$(git -C "$repo" rev-parse -q --verify "$tag^{commit}" 2>/dev/null)" = "$commit" ]; then
  echo "build-package: $version (the tree is $tag)"
else
  since=$(git -C "$repo" rev-list --count "$commit" --not "$tag" 2>/dev/null || git -C "$repo" rev-list --count "$commit")
  snapshot="$version+git$since.$(git -C "$repo" rev-parse --short=10 "$commit")${dirty:+.dirty}"
  echo "build-package: snapshot $snapshot of $version"
  { printf 'vri (%s) bookworm; urgency=medium\n\n  * Snapshot of %s.\n\n -- %s  %s\n\n' "$snapshot" "$commit" \
      "$(dpkg-parsechangelog -l "$src/debian/changelog" -S Maintainer)" "$(date -R)"
    cat "$src/debian/changelog"; } > "$src/debian/changelog.new"
  mv "$src/debian/changelog.new" "$src/debian/changelog"
fi

# dh builds one job at a time unless told otherwise.
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=$(nproc)}
# debhelper gives the build a HOME of its own: name the builder's compiler cache explicitly.
if command -v ccache >/dev/null; then export CCACHE_DIR=${CCACHE_DIR:-$(ccache -k cache_dir)}; fi
(cd "$src" && dpkg-buildpackage -b -us -uc)
# dpkg-buildpackage writes beside the source directory, which is OUTDIR.
changes=$(ls "$out"/vri_*.changes)
lintian --fail-on error --display-info "$changes" | tee "$out/lintian.txt"
echo "build-package: $(ls "$out"/vri_*.deb)"

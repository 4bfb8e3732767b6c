#!/usr/bin/env bash
# vri-hook as the package ships it: the built .deb unpacked with `dpkg-deb -x` (the same ELF files
# and the same loader as on a node, nothing installed here), measured by bench/hook_roundtrip
# against the unpacked vrid. Its last lines are one JSON object per configuration.
#   scripts/bench-package-hook.sh PACKAGE_DIR [BUILD_DIR] [RUNS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
packages=$(cd "${1:?usage: bench-package-hook.sh PACKAGE_DIR [BUILD_DIR] [RUNS]}" && pwd)
build=$(cd "${2:-$repo/build}" && pwd)
runs=${3:-500}
deb=$(ls "$packages"/vri_*.deb | head -1)
[ -f "$deb" ] || { echo "bench-package-hook: no vri_*.deb in $packages" >&2; exit 1; }
unpacked=$(mktemp -d /tmp/vri-package-XXXXXX)
trap 'rm -rf "$unpacked"' EXIT
dpkg-deb -x "$deb" "$unpacked"
echo "bench-package-hook: $(basename "$deb"), vri-hook needs: $(readelf -d "$unpacked/usr/sbin/vri-hook" |
  sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
"$build/bench/hook_roundtrip" --runs "$runs" --hook "$unpacked/usr/sbin/vri-hook" --vrid "$unpacked/usr/sbin/vrid"

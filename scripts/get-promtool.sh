#!/usr/bin/env bash
# promtool, Prometheus' own checker of the text exposition format, from Debian 12's `prometheus`
# package without installing it (installing starts a Prometheus server): `apt-get download` and
# `dpkg-deb -x`, cached outside the clone in $VRI_CACHE_DIR (default /var/cache/vri-test)
# /promtool/<version>/, keyed by the package's version.
#
#   scripts/get-promtool.sh [OUT]    (OUT defaults to build/promtool: a link to the cached program)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/build/promtool}
cache=${VRI_CACHE_DIR:-/var/cache/vri-test}/promtool
version=$(apt-cache policy prometheus | awk '/Candidate:/ {print $2}')
[ -n "$version" ] && [ "$version" != "(none)" ] || { echo "get-promtool: Debian's prometheus package is not available"; exit 1; }
dir=$cache/$version
if [ ! -x "$dir/usr/bin/promtool" ]; then
  work=$(mktemp -d)
  chmod 755 "$work"  # apt-get downloads as _apt
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get download "prometheus=$version" >/dev/null)
  mkdir -p "$dir.tmp"
  dpkg-deb -x "$work"/prometheus_*.deb "$dir.tmp"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  echo "get-promtool: prometheus $version downloaded and unpacked into $dir"
else
  echo "get-promtool: prometheus $version cached in $dir"
fi
mkdir -p "$(dirname "$out")"
ln -sfn "$dir/usr/bin/promtool" "$out"
"$out" --version 2>&1 | head -1

#!/usr/bin/env bash
# Keeps the test caches outside the clone ($VRI_CACHE_DIR, default /var/cache/vri-test) from
# growing without end as their keys change: the guest's kernels and images (tests/v2guest/testbed.sh),
# each peer's builds (scripts/build-peers.sh) and the first release's packages
# (tests/v2guest/first-package.sh). Each user touches the entry it uses; after a full run, every
# entry touched since STAMP stays, and of the others the KEEP most recently used of each kind (an
# image, a kernel, kubelet, containerd 2.0, ...), as long as the cache stays under CAP GiB (the
# oldest go first); the rest is removed. ccache keeps itself under its own max_size, Go's build
# cache trims what it has not used for days.
#   scripts/prune-caches.sh STAMP [KEEP=2] [CAP=12]
set -euo pipefail
stamp=${1:?usage: prune-caches.sh STAMP [KEEP] [CAP-GiB]}
keep=${2:-2}
cap_kib=$((${3:-12} * 1024 * 1024))
cache=${VRI_CACHE_DIR:-/var/cache/vri-test}
[ -d "$cache" ] || exit 0

# Every cache entry: a directory named <kind>-<key> (v2guest, peers) or <commit> (packages).
entries() {
  find "$cache/v2guest" "$cache/peers" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended \
    -regex '.*/[a-z0-9.-]+-[0-9a-f]{16}' 2>/dev/null
  find "$cache/packages" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex '.*/[0-9a-f]{40}' \
    2>/dev/null
}
kind_of() { # entry: its directory and name without the key
  local name=${1##*/}
  case "$name" in
    *-????????????????) echo "${1%/*}/${name%-*}" ;;
    *) echo "${1%/*}/package" ;;
  esac
}

declare -A kept_of_kind=()
removable=()  # oldest last, each "kib path"
while read -r _ path; do
  if [ "$path" -nt "$stamp" ]; then continue; fi  # used by the run that just ended
  kind=$(kind_of "$path")
  kept=${kept_of_kind[$kind]:-0}
  if [ "$kept" -lt "$keep" ]; then
    kept_of_kind[$kind]=$((kept + 1))
    removable+=("$(du -sk "$path" | cut -f1) $path")  # kept unless over the cap
  else
    echo "prune-caches: removing $path (an older key of $(basename "$kind"))"
    "$(dirname "$0")/remove-tree.sh" "$path"; rm -f "$path.log"
  fi
done < <(entries | while read -r e; do echo "$(stat -c %Y "$e") $e"; done | sort -rn)

total=$(du -sk "$cache" | cut -f1)
for ((i = ${#removable[@]} - 1; i >= 0 && total > cap_kib; i--)); do
  read -r kib path <<<"${removable[$i]}"
  echo "prune-caches: removing $path ($((kib / 1024)) MiB; the cache is over $((cap_kib / 1024 / 1024)) GiB)"
  "$(dirname "$0")/remove-tree.sh" "$path"; rm -f "$path.log"
  total=$((total - kib))
done
echo "prune-caches: $cache holds $((total / 1024)) MiB"

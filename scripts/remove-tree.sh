#!/usr/bin/env bash
# Removes directories that a builder may have left with filesystems mounted inside: mmdebstrap mounts
# /proc, /sys and /dev under the root it builds, and a run killed mid-build (a CI limit, a lost
# session) leaves them there. A plain `rm -rf` would then walk into the host's /sys and /dev. Every
# mount under each directory is detached first (the deepest first), and rm never leaves the
# directory's own filesystem.
#   scripts/remove-tree.sh DIR...
set -euo pipefail
for dir in "$@"; do
  [ -e "$dir" ] || continue
  dir=$(readlink -f "$dir")
  # /proc/self/mounts escapes a space in a path as \040: printf %b reads it back.
  awk -v prefix="$dir/" 'index($2, prefix) == 1 || $2 == substr(prefix, 1, length(prefix) - 1) { print $2 }' \
    /proc/self/mounts | sort -r | while read -r mount; do
    umount -l "$(printf '%b' "$mount")" || { echo "remove-tree: cannot unmount $mount" >&2; exit 1; }
  done
  rm -rf --one-file-system "$dir"
done

#!/bin/bash
# The cgroup v2 guest test bed: boots a throwaway Debian 12 guest (Debian's
# kernel, systemd, pure cgroup v2, two NUMA nodes, 2 MiB hugepages) once and
# runs one suite inside it with this build's binaries.
#
#   tests/v2guest/testbed.sh <build-dir> <suite>     suite: a script in tests/v2guest/suites/
#
# The kernel and the image are cached in <build-dir>/v2guest/ and rebuilt when
# the package list or these scripts change. The build directory is shared
# read-only at its own absolute path, so host-built binaries run as they are;
# results (output.log, rc, journal.txt, console.log) land in
# <build-dir>/v2guest/out-<suite>/. Failures name the stage: image, boot or suite.
# Needs root (mmdebstrap's root mode) and the packages scripts/install-deps.sh installs.
set -euo pipefail
build=$(readlink -f "${1:?usage: testbed.sh <build-dir> <suite>}")
suite=${2:?usage: testbed.sh <build-dir> <suite>}
here=$(dirname "$(readlink -f "$0")")
cache=$build/v2guest
mkdir -p "$cache"

# What the guest runs besides systemd: the libraries vrid and the tests link.
packages=libgrpc++1.51,libprotobuf32,libhwloc15,libsqlite3-0,libvirt0,libxml2
key=$( (echo "$packages"; cat "$here"/prepare-kernel.sh "$here"/mk-initramfs.sh "$here"/build-image.sh \
          "$here"/guest-customize.sh) | sha256sum | cut -d' ' -f1)

stage() { printf '[v2guest] %-6s %s\n' "$1" "$2"; }
fail() {
  stage "$1" "FAILED: $2"
  [ -n "${3:-}" ] && [ -f "$3" ] && { echo "----- last lines of $3"; tail -n 60 "$3"; }
  exit 1
}

start=$(date +%s)
if [ "$(cat "$cache/image.key" 2>/dev/null)" != "$key" ] || [ ! -f "$cache/img/rootfs.img" ]; then
  stage image "building the kernel and the image (cached afterwards)"
  rm -f "$cache/image.key"
  "$here/prepare-kernel.sh" "$cache/kernel" > "$cache/image.log" 2>&1 || fail image "preparing the kernel" "$cache/image.log"
  KROOT="$cache/kernel/kroot" CACHE="$cache/apt-cache" "$here/build-image.sh" "$cache/img" "$packages" \
    >> "$cache/image.log" 2>&1 || fail image "building the image" "$cache/image.log"
  echo "$key" > "$cache/image.key"
  stage image "built in $(( $(date +%s) - start )) s"
else
  stage image "cached"
fi

# The suite runs from the shared build directory, so it is copied there.
[ -f "$here/suites/$suite.sh" ] || fail suite "no suite $suite in $here/suites"
mkdir -p "$cache/suites"
cp "$here/suites/$suite.sh" "$cache/suites/$suite.sh"
out=$cache/out-$suite
rm -rf "$out"
boot=$(date +%s)
stage boot "suite $suite (timeout ${TIMEOUT:-900} s)"
set +e
TIMEOUT=${TIMEOUT:-900} KERNEL="$cache/kernel/vmlinux" INITRD="$cache/kernel/initrd.cpio.gz" \
  "$here/run-guest.sh" "$cache/img/rootfs.img" "$build" "$out" \
  "guest.in=$build" "guest.run=$cache/suites/$suite.sh" hugepagesz=2M hugepages=64
rc=$?
set -e
[ -f "$out/output.log" ] && cat "$out/output.log"
stage suite "guest finished in $(( $(date +%s) - boot )) s with rc $rc"
[ "$rc" = 99 ] && fail boot "no result came back from the guest" "$out/console.log"
[ "$rc" = 0 ] || fail suite "rc $rc (the journal: $out/journal.txt)" "$out/journal.txt"
stage suite passed

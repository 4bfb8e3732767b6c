#!/bin/bash
# The cgroup v2 guest test bed: boots a throwaway Debian 12 guest (Debian's
# kernel, systemd, pure cgroup v2, two NUMA nodes, 2 MiB hugepages) once and
# runs one suite inside it with this build's binaries.
#
#   tests/v2guest/testbed.sh <build-dir> <suite>     suite: a script in tests/v2guest/suites/
#   SCENARIOS=a,b tests/v2guest/testbed.sh <build-dir> <suite>
#                                    of a suite of scenarios, only those (the rest are reported skipped)
#   GUEST_ARGS='guest.x=y ...' tests/v2guest/testbed.sh <build-dir> <suite>
#                                    words added to the guest's kernel command line, for a suite's
#                                    settings by hand (each suite says which it reads)
#
# A suite may ask for more than the base guest in its header:
#   # guest-packages: a,b,c      Debian packages baked into its image (the guest has no apt source)
#   # guest-package-depends: yes the runtime Depends of VRI's package (<build-dir>/package/vri_*.deb)
#   # guest-smp: 4               vCPUs (default 2)     # guest-mem: 4096   MiB (default 2048)
#   # guest-kernel: linux-image-6.12.117+deb12-amd64=6.12.117-1~deb12u1
#                                exactly this Debian kernel (default: Debian 12's own, 6.1)
#   # guest-timeout: 1800        seconds (default 900)
#   # guest-peers: kubernetes,containerd   programs built by scripts/build-peers.sh <build-dir>/peers,
#                                        copied to <build-dir>/v2guest/peers/<peer>/ for the guest
#   # guest-cluster: yes        a node of the control plane tests/cluster/cluster-fixture.sh runs on
#                                this host (started first): the guest reaches its API server at
#                                https://10.0.2.100:6443 through a network device that reaches
#                                nothing else, with kubeconfigs in <build-dir>/v2guest/cluster/ (the
#                                node's, as node v2guest; the exporter's; the administrator's)
#   # guest-scenarios: node systemd kubelet
#                                one boot for several suites, run in turn as scenarios
#                                (tests/v2guest/run-scenarios.sh): the image holds what each asks
#                                for, vCPUs and memory are the largest any asks for; a scenario that
#                                fails ends, its result is reported, and the next one runs
# The kernel and each image are cached outside the clone, in $VRI_CACHE_DIR (default
# /var/cache/vri-test)/v2guest/, keyed by the package list and these scripts. The build directory
# is shared read-only at its own absolute path, so host-built binaries run as they are;
# results (output.log, rc, journal.txt, console.log) land in <build-dir>/v2guest/out-<suite>/.
# Failures name the stage: image, boot or suite.
# Needs root (mmdebstrap's root mode) and the packages scripts/install-deps.sh installs.
set -euo pipefail
build=$(readlink -f "${1:?usage: testbed.sh <build-dir> <suite>}")
suite=${2:?usage: testbed.sh <build-dir> <suite>}
here=$(dirname "$(readlink -f "$0")")
script=$here/suites/$suite.sh
cache=${VRI_CACHE_DIR:-/var/cache/vri-test}/v2guest
mkdir -p "$cache" "$build/v2guest"

stage() { printf '[v2guest] %-6s %s\n' "$1" "$2"; }
fail() {
  stage "$1" "FAILED: $2"
  [ -n "${3:-}" ] && [ -f "$3" ] && { echo "----- last lines of $3"; tail -n 60 "$3"; }
  exit 1
}
[ -f "$script" ] || fail suite "no suite $suite in $here/suites"
own_header() { sed -n "s/^# guest-$1: *//p" "$2" | head -1; }
header() { own_header "$1" "$script"; }
scenarios=$(own_header scenarios "$script")
for scenario in $scenarios; do
  [ -f "$here/suites/$scenario.sh" ] || fail suite "suite $suite runs scenario $scenario, which does not exist"
done
# What the boot's scenarios ask for together: every package and peer, the largest vCPU count and memory,
# the depends of VRI's package if any asks. Its own header comes first (the kernel and the time are its).
all_headers() { # name: one value per line, from the suite and its scenarios
  header "$1"
  for scenario in $scenarios; do own_header "$1" "$here/suites/$scenario.sh"; done
}
joined() { all_headers "$1" | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -; }
largest() { all_headers "$1" | sed '/^$/d' | sort -n | tail -1; }

# What the guest runs besides systemd: the libraries vrid and the tests link, and what the suite asks for.
packages=libgrpc++1.51,libprotobuf32,libhwloc15,libsqlite3-0,libvirt0,libxml2,libyaml-cpp0.7,libmicrohttpd12
[ -n "$(joined packages)" ] && packages="$packages,$(joined packages)"
if [ "$(all_headers package-depends | grep -cx yes)" != 0 ]; then  # not grep -q: it would close the pipe early
  deb=$(ls "$build"/package/vri_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || fail image "suite $suite installs VRI's package: build it first (scripts/build-package.sh $build/package)"
  # "libc6 (>= 2.34), libgrpc++1.51, libvirt0 (>= 6.5.0) | foo" -> libc6,libgrpc++1.51,libvirt0
  packages="$packages,$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | paste -sd,)"
fi
# By hand, a suite may be booted on another kernel or CPU count than its header says (the benchmark
# suite on both kernels): GUEST_KERNEL=package=version, GUEST_SMP=n.
kernel_package=${GUEST_KERNEL:-$(header kernel)}
kernel_key=$( (echo "$kernel_package"; cat "$here"/prepare-kernel.sh "$here"/mk-initramfs.sh) | sha256sum | cut -c1-16)
image_key=$( (echo "$packages $kernel_package"; cat "$here"/prepare-kernel.sh "$here"/mk-initramfs.sh "$here"/build-image.sh \
                "$here"/guest-customize.sh) | sha256sum | cut -c1-16)
kernel=$cache/kernel-$kernel_key
image=$cache/image-$image_key

start=$(date +%s)
# One builder at a time: two suites asking for the same image build it once.
exec 9>"$cache/.lock"
flock 9
if [ ! -f "$kernel/initrd.cpio.gz" ]; then
  stage image "preparing the kernel (cached afterwards)"
  "$here/../../scripts/remove-tree.sh" "$kernel" "$kernel.partial"
  "$here/prepare-kernel.sh" "$kernel.partial" $kernel_package > "$cache/kernel.log" 2>&1 ||
    fail image "preparing the kernel" "$cache/kernel.log"
  mv "$kernel.partial" "$kernel"
fi
if [ ! -f "$image/rootfs.img" ]; then
  stage image "building the image for $packages (cached afterwards)"
  "$here/../../scripts/remove-tree.sh" "$image.partial"
  KROOT="$kernel/kroot" CACHE="$cache/apt-cache" "$here/build-image.sh" "$image.partial" "$packages" \
    > "$cache/image-$image_key.log" 2>&1 || fail image "building the image" "$cache/image-$image_key.log"
  mv "$image.partial" "$image"
  stage image "built in $(( $(date +%s) - start )) s"
else
  stage image "cached ($image)"
fi
touch "$kernel" "$image"  # used: scripts/prune-caches.sh keeps them
flock -u 9

# The suite runs from the shared build directory, so it is copied there.
mkdir -p "$build/v2guest/suites"
cp "$script" "$build/v2guest/suites/$suite.sh"
for scenario in $scenarios; do cp "$here/suites/$scenario.sh" "$build/v2guest/suites/"; done
cp "$here/run-scenarios.sh" "$build/v2guest/suites/"
cp "$here/node_helpers.sh" "$here/kubelet_node.sh" "$build/v2guest/suites/"  # the node suites' shell helpers
cp -r "$here/../data/kubelet" "$build/v2guest/suites/"  # kubelet's configuration, as the unit tests read it
# The peers, copied out of their cache: the guest sees only the build directory.
for peer in $(joined peers | tr ',' ' '); do
  [ -d "$build/peers/$peer" ] || fail suite "suite $suite runs $peer: build it first (scripts/build-peers.sh $build/peers)"
  rm -rf "$build/v2guest/peers/$peer"
  mkdir -p "$build/v2guest/peers/$peer"
  cp -L "$build/peers/$peer"/* "$build/v2guest/peers/$peer/"
done
# A node of the host's control plane: its kubeconfigs, and the one forward to its API server.
forward=
if [ "$(all_headers cluster | grep -cx yes)" != 0 ]; then
  rm -rf "$build/v2guest/cluster"
  VRI_PEERS=$build/peers/kubernetes "$here/../cluster/cluster-fixture.sh" guest "$build/v2guest/cluster" v2guest ||
    fail suite "suite $suite is a node of the control plane: start it first (tests/cluster/cluster-fixture.sh up)"
  forward=$(cat "$build/v2guest/cluster/forward")
fi
out=$build/v2guest/out-$suite
rm -rf "$out"
timeout=$(header timeout); timeout=${TIMEOUT:-${timeout:-900}}
smp=${GUEST_SMP:-$(largest smp)}; mem=$(largest mem)
# By hand, some scenarios of a suite of them: the guest's runner reads the list off its command line.
only=${SCENARIOS:+guest.scenarios=$SCENARIOS}
boot=$(date +%s)
stage boot "suite $suite (timeout $timeout s)"
boot_guest() {
  FORWARD=$forward TIMEOUT=$timeout SMP=${smp:-2} MEM=${mem:-2048} KERNEL="$kernel/vmlinux" INITRD="$kernel/initrd.cpio.gz" \
    "$here/run-guest.sh" "$image/rootfs.img" "$build" "$out" \
    "guest.in=$build" "guest.run=$build/v2guest/suites/$suite.sh" hugepagesz=2M hugepages=64 $only ${GUEST_ARGS:-}
}
set +e
boot_guest
rc=$?
if [ "$rc" = 98 ] || [ "$rc" = 97 ] || [ "$rc" = 96 ] || [ "$rc" = 95 ]; then
  # The emulator, not the suite: one CPU of the guest locked up (98), QEMU itself aborted (97),
  # the guest froze without a word (96), or its kernel died while booting (95) (run-guest.sh). Once
  # more, from nothing.
  why="an emulated CPU locked up"; [ "$rc" = 97 ] && why="QEMU aborted"
  [ "$rc" = 96 ] && why="the guest's console went silent"
  [ "$rc" = 95 ] && why="the guest's kernel panicked while booting"
  cp "$out/console.log" "$build/v2guest/console-$suite-emulator-failed.log"
  stage boot "$why (console kept in $build/v2guest/console-$suite-emulator-failed.log); booting once more"
  boot_guest
  rc=$?
fi
set -e
[ -f "$out/output.log" ] && cat "$out/output.log"
stage suite "guest finished in $(( $(date +%s) - boot )) s with rc $rc"
[ "$rc" = 98 ] && fail boot "an emulated CPU locked up (after one more boot)" "$out/console.log"
[ "$rc" = 97 ] && fail boot "QEMU aborted (after one more boot)" "$out/console.log"
[ "$rc" = 96 ] && fail boot "the guest's console went silent (after one more boot)" "$out/console.log"
[ "$rc" = 95 ] && fail boot "the guest's kernel panicked while booting (after one more boot)" "$out/console.log"
[ "$rc" = 99 ] && fail boot "no result came back from the guest" "$out/console.log"
[ "$rc" = 0 ] || fail suite "rc $rc (the journal: $out/journal.txt)" "$out/journal.txt"
stage suite passed

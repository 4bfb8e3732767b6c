#!/bin/sh
# bench/decision_scale on the guest's real systemd units with cpuset partitions (Linux 6.7+), first
# on the usual mix of shared pods and VMs, then with every shared tenant a pod: a pod grant's writes
# stay constant beside shared pods and shared VMs alike (both hold the wide set); a VM's grant still
# rewrites them. Not a test: run it by hand,
#   tests/v2guest/testbed.sh build bench-partitions
# guest-kernel: linux-image-6.12.117+deb12-amd64=6.12.117-1~deb12u1
# guest-smp: 4
# guest-timeout: 2400
set -e
cd /
fail() { echo "bench-partitions: $*" >&2; exit 1; }
. "$(dirname "$0")/node_helpers.sh"
"$GUEST_IN/bench/decision_scale" --cgroupfs systemd --partitions on --tenant-mix mixed --tenants 0,100,1000 --pairs 12
bench_settle
"$GUEST_IN/bench/decision_scale" --cgroupfs systemd --partitions on --tenant-mix pods --tenants 0,100,1000 --pairs 12

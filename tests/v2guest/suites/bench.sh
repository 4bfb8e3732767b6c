#!/bin/sh
# bench/decision_scale on the real v2 kernel, in a delegated scope, with 100 and
# 1,000 shared tenants (cpuset and cpu only), then on the guest's real systemd units
# (--cgroupfs systemd: the D-Bus calls each decision makes, and their time). Not a
# test: run it by hand,
#   tests/v2guest/testbed.sh build bench
# and compare its ratios with the host's v1 run (emulation is slower in absolute terms).
# guest-timeout: 2400
set -e
cd /
# Between two runs on the node's units: the last run's scopes and pod slices gone, as on a node where
# vrid starts after its tenants went (systemd removes them a moment after their processes die).
settle() {
  systemctl stop 'cri-containerd-*.scope' 'machine-qemu*.scope' 'kubepods-*pod*.slice' 2> /dev/null || true
  for _ in $(seq 120); do
    [ -z "$(find /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/machine.slice -mindepth 1 -type d \
      \( -name 'cri-containerd-*' -o -name 'machine-qemu*' -o -name 'kubepods-*pod*' \) 2> /dev/null)" ] && return 0
    sleep 1
  done
  echo "bench: the last run's units are still there after 120 s" >&2
  return 1
}
systemd-run --scope --quiet --slice=vri.slice --unit=vri-bench -p Delegate=yes \
  "$GUEST_IN/bench/decision_scale" --cgroupfs kernel --tenants "${VRI_BENCH_TENANTS:-100,1000}" --pairs 12
# The same on the node's real units (kubelet's systemd driver, machined's scopes), through systemd.
"$GUEST_IN/bench/decision_scale" --cgroupfs systemd --tenants "${VRI_BENCH_TENANTS:-0,100,1000}" --pairs 12
settle
# With cpuset partitions where the kernel has them (Linux 6.7+: GUEST_KERNEL=linux-image-6.12...),
# first on the usual mix, then with every shared tenant a pod: a pod grant's writes stay constant
# beside shared pods and shared VMs alike (both hold the wide set); a VM's grant still rewrites them.
kernel=$(uname -r)
major=${kernel%%.*}
minor=${kernel#*.}
minor=${minor%%.*}
if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 7 ]; }; then
  for mix in mixed pods; do
    "$GUEST_IN/bench/decision_scale" --cgroupfs systemd --partitions on --tenant-mix "$mix" \
      --tenants "${VRI_BENCH_TENANTS:-0,100,1000}" --pairs 12
    settle
  done
fi

#!/bin/sh
# Smoke: the guest is what the suites assume (cgroup v2 only, systemd, two NUMA
# nodes, 2 MiB hugepages, the host-built binaries run).
set -e
fail() { echo "smoke: $*"; exit 1; }
[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || fail "/sys/fs/cgroup is not cgroup2"
for c in cpuset cpu memory hugetlb pids; do grep -qw "$c" /sys/fs/cgroup/cgroup.controllers || fail "no $c controller"; done
[ -d /sys/devices/system/node/node1 ] || fail "one NUMA node"
echo "hugepages: $(cat /proc/sys/vm/nr_hugepages)"
"$GUEST_IN/vri/vri-topology" --topology live | head -5
echo "smoke: ok"

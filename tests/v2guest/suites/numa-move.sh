#!/bin/sh
# Memory moved between the node's two NUMA nodes at a chosen rate, on the real kernel: a process's
# (numa_move_test, as root), then a container's through a placement policy change applied to a real
# vrid (policy_apply_v2_test, in a delegated scope of its own).
set -e
cd /
"$GUEST_IN/tests/numa_move_test" --gtest_color=no
# hugetlb on the path down to the scope (systemd never enables it), as the vrid suite does.
echo +hugetlb > /sys/fs/cgroup/cgroup.subtree_control
systemctl is-active -q vri-holder || systemd-run --quiet --unit=vri-holder --slice=vri.slice sleep infinity
echo +hugetlb > /sys/fs/cgroup/vri.slice/cgroup.subtree_control
systemd-run --scope --quiet --slice=vri.slice --unit=vri-policy-apply -p Delegate=yes \
  -E VRI_TEST_TIME_SCALE=10 "$GUEST_IN/tests/policy_apply_v2_test" --gtest_color=no

#!/bin/sh
# vrid on the real v2 hierarchy: vrid_v2_test in a delegated scope of its own.
# Deadlines are scaled for the emulation (processes start ~50x slower here).
set -e
cd /
export VRI_TEST_TIME_SCALE=10
# hugetlb on the path down to the scopes (systemd never enables it), as the kernel suite does.
echo +hugetlb > /sys/fs/cgroup/cgroup.subtree_control
systemctl is-active -q vri-holder || systemd-run --quiet --unit=vri-holder --slice=vri.slice sleep infinity
echo +hugetlb > /sys/fs/cgroup/vri.slice/cgroup.subtree_control
systemd-run --scope --quiet --slice=vri.slice --unit=vri-vrid -p Delegate=yes \
  -E VRI_TEST_TIME_SCALE=10 "$GUEST_IN/tests/vrid_v2_test" --gtest_color=no

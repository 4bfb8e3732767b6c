#!/bin/sh
# The cgroup model on the real v2 kernel: real_kernel_v2_test in a scope of its
# own with Delegate=yes (not beside systemd's units). systemd never enables
# hugetlb (systemd 252 knows nothing of it): this suite enables it on the
# root and on vri.slice, the two cgroups above the delegated scope.
set -e
cd /
echo +hugetlb > /sys/fs/cgroup/cgroup.subtree_control
systemctl is-active -q vri-holder || systemd-run --quiet --unit=vri-holder --slice=vri.slice sleep infinity  # makes vri.slice exist
echo +hugetlb > /sys/fs/cgroup/vri.slice/cgroup.subtree_control
echo "hugetlb enabled on / and /vri.slice; running in a delegated scope"
systemd-run --scope --quiet --slice=vri.slice --unit=vri-kernel -p Delegate=yes \
  "$GUEST_IN/tests/real_kernel_v2_test" --gtest_color=no

#!/bin/sh
# bench/decision_scale on the real v2 kernel, in a delegated scope, with 100 and
# 1,000 shared tenants (cpuset and cpu only), then on the guest's real systemd units
# (--cgroupfs systemd: the D-Bus calls each decision makes, and their time). Not a
# test: run it by hand,
#   tests/v2guest/testbed.sh build bench
# and compare its ratios with the host's v1 run (emulation is slower in absolute terms). The systemd
# rows with cpuset partitions, on a kernel that has them: the bench-partitions suite.
# guest-timeout: 2400
set -e
cd /
systemd-run --scope --quiet --slice=vri.slice --unit=vri-bench -p Delegate=yes \
  "$GUEST_IN/bench/decision_scale" --cgroupfs kernel --tenants "${VRI_BENCH_TENANTS:-100,1000}" --pairs 12
# The same on the node's real units (kubelet's systemd driver, machined's scopes), through systemd.
"$GUEST_IN/bench/decision_scale" --cgroupfs systemd --tenants "${VRI_BENCH_TENANTS:-0,100,1000}" --pairs 12

#!/bin/sh
# bench/decision_scale on the real v2 kernel, in a delegated scope, with 100 and
# 1,000 shared tenants (cpuset and cpu only). Not a test: run it by hand,
#   tests/v2guest/testbed.sh build bench
# and compare its ratios with the host's v1 run (emulation is slower in absolute terms).
set -e
cd /
systemd-run --scope --quiet --slice=vri.slice --unit=vri-bench -p Delegate=yes \
  "$GUEST_IN/bench/decision_scale" --cgroupfs kernel --tenants "${VRI_BENCH_TENANTS:-100,1000}" --pairs 12

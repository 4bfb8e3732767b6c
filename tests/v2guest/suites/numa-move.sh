#!/bin/sh
# A process's memory moved between the node's two NUMA nodes at a chosen rate, on the real kernel:
# numa_move_test (tests/v2guest/numa_move_test.cc), as root.
set -e
cd /
"$GUEST_IN/tests/numa_move_test" --gtest_color=no

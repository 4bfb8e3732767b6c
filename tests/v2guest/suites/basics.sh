#!/bin/sh
# The guest and vrid on Debian 12's kernel, in one boot: the guest is what the other suites assume
# (smoke), the cgroup model on the real v2 kernel (kernel), vrid owning a delegated subtree (vrid).
# guest-scenarios: smoke kernel vrid
exec sh "$(dirname "$0")/run-scenarios.sh" "$0"

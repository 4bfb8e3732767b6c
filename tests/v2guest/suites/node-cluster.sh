#!/bin/sh
# A node of a cluster, in a boot of its own on Debian 12's kernel: kubelet 1.35 registered with the
# control plane that runs on the host, its pods from the scheduler that reads VRI's object (cluster).
# Its own boot: it is the longest scenario (about half an hour emulated), and a boot the emulator
# loses is booted again with only it to repeat.
# guest-scenarios: cluster
# guest-timeout: 3600
exec sh "$(dirname "$0")/run-scenarios.sh" "$0"

#!/bin/sh
# Debian 12's second kernel, 6.12, in one boot: a process's memory moved between the node's two NUMA
# nodes at a chosen rate (numa-move); cgroup v2 cpuset partitions read off the kernel and
# vrid's partition mode (partitions), then the systemd scenario, where vrid uses cpuset partitions by
# itself: containerd reports a shared container's cpuset as the wide set VRI writes and the kernel
# narrows (compared by effective sets), Guaranteed pods' scopes are root partitions, and the shim's
# pool follower sends containerd nothing for a shared container when another pod takes exclusive CPUs;
# then create-scale: an exclusive create through the shim and through NRI on containerd 2.4, whose
# cgroup writes do not grow with the shared tenants and which sends no shared container an update;
# then takeover: a real kubelet's node taken over from its static CPU manager with its pods running,
# and handed back to it.
# guest-scenarios: numa-move partitions systemd create-scale takeover
# guest-kernel: linux-image-6.12.117+deb12-amd64=6.12.117-1~deb12u1
# guest-timeout: 2400
exec sh "$(dirname "$0")/run-scenarios.sh" "$0"

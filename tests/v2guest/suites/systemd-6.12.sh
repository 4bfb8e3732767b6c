#!/bin/sh
# The systemd suite on Debian 12's second kernel, 6.12, where vrid uses cpuset partitions: containerd
# reports a shared container's cpuset as the wide set VRI writes and the kernel narrows (compared by
# effective sets), Guaranteed pods' scopes are root partitions, and the shim's pool follower sends
# containerd nothing for a shared container when another pod takes exclusive CPUs.
# guest-suite: systemd
# guest-kernel: linux-image-6.12.117+deb12-amd64=6.12.117-1~deb12u1

#!/bin/sh
# A node as operators run one, in one boot on Debian 12's kernel: VRI's package installed, upgraded
# and removed (package); kubelet's systemd driver beside machined, driven through the shim as kubelet
# would (systemd); kubelet itself in front of VRI, both ways in (kubelet). Each scenario starts from
# the node it states it needs (node_helpers.sh's fresh_node), whatever the one before it left.
# guest-scenarios: package systemd kubelet
# guest-timeout: 3600
exec sh "$(dirname "$0")/run-scenarios.sh" "$0"

#!/bin/bash
# The package's prerm (debian/vri.prerm) on `remove` deletes the node's NodeResourceTopology object
# in the API server of the control-plane fixture (label `cluster`), with the exporter's credentials
# and the node name its environment file gives; with the API server unreachable it says what to do
# by hand and lets the removal go on; on `upgrade` it deletes nothing. Root: the script reads /etc/vri
# and runs /usr/sbin/vri-nrt-exporter, which it finds in a mount namespace of its own (overlays on
# /etc and /usr/sbin whose changes go to a scratch directory), so this machine's files are not changed.
#   tests/cluster/prerm_delete_test.sh BUILD_DIR
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
build=$(readlink -f "${1:?usage: prerm_delete_test.sh BUILD_DIR}")
exporter=$build/topology-export/vri-nrt-exporter
prerm=$here/../../debian/vri.prerm
step=0
ok() { step=$((step + 1)); echo "ok $step - $*"; }
fail() { step=$((step + 1)); echo "not ok $step - $*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (a mount namespace with overlays on /etc and /usr/sbin)"
[ -x "$exporter" ] || fail "no $exporter: build it"
eval "$("$here/cluster-fixture.sh" env)"
[ -r "${KUBECONFIG%/*}/nrt-exporter.kubeconfig" ] ||
  fail "no control plane at ${KUBECONFIG%/*}: start it with tests/cluster/cluster-fixture.sh up"
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
node=vri-prerm-$$
scratch=$(mktemp -d)
trap 'kubectl delete noderesourcetopology "$node" --ignore-not-found >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT

object() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata: {name: $node}
zones:
- name: node-0
  type: Node
  resources:
  - {name: cpu, capacity: "4", allocatable: "4", available: "4"}
EOF
}

# Runs the prerm with ARGS in a mount namespace where /etc/vri holds `kubeconfig` (a path) and the
# node's name, and /usr/sbin the exporter alone; its output in $scratch/prerm.out.
run_prerm() { # kubeconfig args...
  local kubeconfig=$1
  shift
  cp "$kubeconfig" "$scratch/kubeconfig"
  rm -rf "$scratch/etc" "$scratch/sbin"
  mkdir -p "$scratch/etc/upper" "$scratch/etc/work" "$scratch/sbin/upper" "$scratch/sbin/work"
  unshare --mount --propagation private sh -c '
    set -e
    mount -t overlay vri-test-etc -o "lowerdir=/etc,upperdir=$1/etc/upper,workdir=$1/etc/work" /etc
    mount -t overlay vri-test-sbin -o "lowerdir=/usr/sbin,upperdir=$1/sbin/upper,workdir=$1/sbin/work" /usr/sbin
    rm -rf /etc/vri && mkdir -m 0755 /etc/vri
    install -m 0600 "$1/kubeconfig" /etc/vri/nrt-exporter.kubeconfig
    echo "VRI_NODE_NAME=$2" > /etc/vri/nrt-exporter.env
    install -m 0755 "$3" /usr/sbin/vri-nrt-exporter
    shift 4
    sh "$0" "$@"
  ' "$prerm" "$scratch" "$node" "$exporter" -- "$@" > "$scratch/prerm.out" 2>&1
}

object
kubectl get noderesourcetopology "$node" >/dev/null || fail "the object to delete exists"
run_prerm "${KUBECONFIG%/*}/nrt-exporter.kubeconfig" upgrade 1.0 || fail "prerm upgrade: $(cat "$scratch/prerm.out")"
kubectl get noderesourcetopology "$node" >/dev/null || fail "prerm upgrade deleted the object"
ok "prerm upgrade leaves the node's object"

run_prerm "${KUBECONFIG%/*}/nrt-exporter.kubeconfig" remove || fail "prerm remove: $(cat "$scratch/prerm.out")"
if kubectl get noderesourcetopology "$node" >/dev/null 2>&1; then
  fail "prerm remove left the node's object: $(cat "$scratch/prerm.out")"
fi
ok "prerm remove deletes the node's object with the exporter's credentials"

# An API server nobody answers at: the removal goes on, and the operator is told.
object
sed 's|server: .*|server: https://127.0.0.1:1|' "${KUBECONFIG%/*}/nrt-exporter.kubeconfig" > "$scratch/unreachable"
run_prerm "$scratch/unreachable" remove || fail "prerm remove failed the removal: $(cat "$scratch/prerm.out")"
grep -q "could not be deleted; delete it with kubectl" "$scratch/prerm.out" ||
  fail "prerm said nothing of the object it left: $(cat "$scratch/prerm.out")"
kubectl get noderesourcetopology "$node" >/dev/null || fail "the object is still there"
ok "with the API server unreachable the removal goes on and says what to do"
echo "1..$step"

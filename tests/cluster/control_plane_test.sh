#!/bin/bash
# The control-plane fixture (tests/cluster/cluster-fixture.sh) does what the cluster tests rely on
# (label `cluster`). No kubelet: a Node object is made by hand, and the scheduler binds pods to it
# through the API, which is all a pod needs to count as scheduled.
#
#   tests/cluster/control_plane_test.sh shared      on the fixture CI started (passthrough cache):
#       the NodeResourceTopology CRD is served; a Guaranteed pod that fits no NUMA zone of the
#       node's object (single-numa-node) stays Pending with the plugin's reason, one that fits is
#       bound, and a second that fits what the object says is bound too (passthrough reads the
#       object as it is); a Deployment of two replicas gets both pods created and bound.
#   tests/cluster/control_plane_test.sh lifecycle   a private fixture beside it (its own directory and
#       ports): up, the same placements, down; up again, the scheduler's overreserve cache (a pod bound
#       is reserved against every zone; an object made after the scheduler started is not read), down;
#       after each down nothing of it runs and none of its ports listens.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
fixture=$here/cluster-fixture.sh
mode=${1:?usage: control_plane_test.sh shared|lifecycle}
step=0
ok() { step=$((step + 1)); echo "ok $step - $*"; }
fail() { step=$((step + 1)); echo "not ok $step - $*"; exit 1; }

if [ "$mode" = lifecycle ]; then
  export VRI_CLUSTER_DIR=/run/vri-test-cluster-lifecycle VRI_CLUSTER_PORT_OFFSET=1
  trap '"$fixture" down >/dev/null 2>&1 || true' EXIT
fi
eval "$("$fixture" env)"
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
node=vri-test-node-$mode
namespace=vri-test-$mode-$$  # of its own: a namespace takes a while to go

# Polls until `check` succeeds (30 s).
eventually() {
  local deadline=$((SECONDS + 30))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}

# A node (by default $node): 4 CPUs in two NUMA zones of 2, by hand (its object and its topology),
# and the namespace the pods go in. Removed at the end, also on failure: later tests share the fixture.
make_node() { # [name]
  local node=${1:-$node}
  if ! kubectl get namespace "$namespace" >/dev/null 2>&1; then
    kubectl create namespace "$namespace" >/dev/null
    # A pod is refused until the controller manager made the namespace's default service account
    # (slower just after the API server came back, which the controllers' watches then find again).
    eventually kubectl -n "$namespace" get serviceaccount default ||
      fail "namespace $namespace gets its default service account"
  fi
  kubectl create -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata: {name: $node, labels: {kubernetes.io/hostname: $node}}
EOF
  local now
  now=$(date -u +%FT%TZ)
  kubectl patch node "$node" --subresource=status --type=merge -p "{\"status\": {
    \"capacity\": {\"cpu\": \"4\", \"memory\": \"8Gi\", \"pods\": \"110\"},
    \"allocatable\": {\"cpu\": \"4\", \"memory\": \"8Gi\", \"pods\": \"110\"},
    \"conditions\": [{\"type\": \"Ready\", \"status\": \"True\", \"reason\": \"ByHand\",
                      \"lastHeartbeatTime\": \"$now\", \"lastTransitionTime\": \"$now\"}]}}" >/dev/null
  # The API server gives a new Node the not-ready taint (admission plugin TaintNodesByCondition), and
  # only the node lifecycle controller, which the fixture does not run, takes it off.
  kubectl taint node "$node" node.kubernetes.io/not-ready:NoSchedule- >/dev/null
  kubectl create -f - >/dev/null <<EOF
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata: {name: $node}
attributes:
- {name: topologyManagerPolicy, value: single-numa-node}
- {name: topologyManagerScope, value: container}
zones:
- name: node-0
  type: Node
  resources:
  - {name: cpu, capacity: "2", allocatable: "2", available: "2"}
  - {name: memory, capacity: 4Gi, allocatable: 4Gi, available: 4Gi}
- name: node-1
  type: Node
  resources:
  - {name: cpu, capacity: "2", allocatable: "2", available: "2"}
  - {name: memory, capacity: 4Gi, allocatable: 4Gi, available: 4Gi}
EOF
}
remove_node() {
  kubectl delete namespace "$namespace" --wait=false >/dev/null 2>&1 || true
  local name
  for name in "$node" "$node-late"; do
    kubectl delete noderesourcetopology "$name" >/dev/null 2>&1 || true
    kubectl delete node "$name" >/dev/null 2>&1 || true
  done
}

guaranteed_pod() { # name cpus [node]
  kubectl -n "$namespace" create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeSelector: {kubernetes.io/hostname: ${3:-$node}}
  containers:
  - name: c
    image: localhost/vri/pause:1.0
    resources:
      requests: {cpu: "$2", memory: 100Mi}
      limits: {cpu: "$2", memory: 100Mi}
EOF
}
bound_to() { kubectl -n "$namespace" get pod "$1" -o jsonpath='{.spec.nodeName}'; }
is_bound() { [ "$(bound_to "$1")" = "${2:-$node}" ]; } # pod [node]
# The scheduler's reason, as it writes it into the pod's PodScheduled condition.
unschedulable_reason() {
  kubectl -n "$namespace" get pod "$1" \
    -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}: {.status.conditions[?(@.type=="PodScheduled")].message}'
}
refused_by_plugin() { unschedulable_reason "$1" | grep -q "^Unschedulable: .*cannot align container"; }

# A pod that fits no zone stays Pending with the plugin's reason; then `fits` is bound, and `second`
# (2 CPUs more) too: the passthrough cache reads the object, which still says 2 free in each zone.
topology_scenario() {
  kubectl get crd noderesourcetopologies.topology.node.k8s.io -o jsonpath='{.spec.versions[?(@.storage==true)].name}' |
    grep -qx v1alpha2 || fail "the NodeResourceTopology CRD is served, v1alpha2 stored"
  kubectl api-resources --api-group topology.node.k8s.io | grep -q noderesourcetopologies ||
    fail "noderesourcetopologies are listed among the API's resources"
  ok "the NodeResourceTopology CRD is served (v1alpha2 stored)"

  make_node
  kubectl get noderesourcetopology "$node" >/dev/null || fail "the node's NodeResourceTopology reads back"
  ok "a Node and its NodeResourceTopology (two zones of 2 CPUs, single-numa-node), by hand"

  guaranteed_pod too-big 3
  eventually refused_by_plugin too-big ||
    fail "a Guaranteed pod of 3 CPUs is refused by the plugin (got '$(unschedulable_reason too-big)')"
  is_bound too-big && fail "the pod of 3 CPUs was bound"
  ok "a Guaranteed pod of 3 CPUs, more than any zone has, stays Pending: $(unschedulable_reason too-big)"

  guaranteed_pod fits 2
  eventually is_bound fits || fail "a Guaranteed pod of 2 CPUs is bound (got '$(unschedulable_reason fits)')"
  ok "a Guaranteed pod of 2 CPUs is bound to $node"

  guaranteed_pod second 2
  eventually is_bound second || fail "a second pod of 2 CPUs is bound (got '$(unschedulable_reason second)')"
  ok "a second pod of 2 CPUs is bound too (passthrough: the object still says 2 free in each zone)"
}

# The reserve cache (overreserve), for a node whose object exists when the scheduler starts: a pod
# bound there counts against every zone until the object accounts for it, so a second pod of 2 CPUs
# stays Pending although the object still says 2 free in each zone. For an object made after the
# scheduler started, this release's cache filters nothing: a pod that fits no zone of it is bound.
overreserve_scenario() {
  make_node
  "$fixture" scheduler overreserve | sed 's/^/# /'
  ok "a node with its NodeResourceTopology, then the scheduler started again with the overreserve cache"

  guaranteed_pod first 2
  eventually is_bound first || fail "a Guaranteed pod of 2 CPUs is bound (got '$(unschedulable_reason first)')"
  ok "a Guaranteed pod of 2 CPUs is bound to $node"

  guaranteed_pod reserved 2
  eventually refused_by_plugin reserved ||
    fail "a second pod of 2 CPUs is refused while the first is reserved (got '$(unschedulable_reason reserved)')"
  is_bound reserved && fail "the second pod of 2 CPUs was bound"
  ok "a second pod of 2 CPUs stays Pending: the cache reserves the first against every zone"

  make_node "$node-late"
  guaranteed_pod late-too-big 3 "$node-late"
  eventually is_bound late-too-big "$node-late" ||
    fail "a pod of 3 CPUs on a node whose object came after the scheduler is bound (got '$(unschedulable_reason late-too-big)')"
  ok "an object made after the scheduler started is not read: a pod of 3 CPUs is bound to $node-late"
}

deployment_scenario() {
  kubectl -n "$namespace" create -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: two}
spec:
  replicas: 2
  selector: {matchLabels: {app: two}}
  template:
    metadata: {labels: {app: two}}
    spec:
      nodeSelector: {kubernetes.io/hostname: $node}
      containers:
      - {name: c, image: localhost/vri/pause:1.0}
EOF
  both_bound() {
    [ "$(kubectl -n "$namespace" get pods -l app=two -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' |
      grep -cx "$node")" = 2 ]
  }
  eventually both_bound || fail "a Deployment of two replicas gets both pods bound ($(kubectl -n "$namespace" get pods -l app=two -o wide 2>&1))"
  ok "a Deployment of two replicas: the controller manager created both pods, the scheduler bound them"
}

# Nothing of the fixture runs and none of its ports listens.
nothing_left() {
  local port
  pgrep -f -- "$VRI_CLUSTER_DIR/" >/dev/null && fail "after down, a process still names $VRI_CLUSTER_DIR: $(pgrep -af -- "$VRI_CLUSTER_DIR/")"
  for port in $("$fixture" ports); do
    ss -Htln "sport = :$port" | grep -q . && fail "after down, port $port still listens"
  done
  [ -e "$VRI_CLUSTER_DIR" ] && fail "after down, $VRI_CLUSTER_DIR is still there"
  return 0
}

case "$mode" in
  shared)
    [ -f "$KUBECONFIG" ] || fail "no control plane at $KUBECONFIG: start it with $fixture up"
    trap remove_node EXIT
    topology_scenario
    deployment_scenario
    ;;
  lifecycle)
    "$fixture" up passthrough | sed 's/^/# /'
    ok "the fixture starts"
    trap 'remove_node; "$fixture" down >/dev/null 2>&1 || true' EXIT
    topology_scenario
    remove_node
    "$fixture" down | sed 's/^/# /'
    nothing_left
    ok "down: nothing of it runs, its ports are closed, its directory is gone"
    "$fixture" up passthrough | sed 's/^/# /'
    kubectl get --raw /readyz >/dev/null || fail "the API server answers after a second start"
    ok "it starts again"
    trap 'remove_node; "$fixture" down >/dev/null 2>&1 || true' EXIT
    overreserve_scenario
    remove_node
    "$fixture" down | sed 's/^/# /'
    nothing_left
    ok "down again: nothing left"
    trap - EXIT
    ;;
  *) echo "usage: $0 shared|lifecycle" >&2; exit 2 ;;
esac
echo "1..$step"

#!/bin/bash
# A private Kubernetes control plane for the `cluster` tests: etcd on tmpfs, kube-apiserver with its
# own certificates, kube-controller-manager with only the controllers the tests need, and the
# scheduler with the NodeResourceTopologyMatch plugin as the cluster's only scheduler. The programs
# are scripts/build-peers.sh's (build/peers/kubernetes, or $VRI_PEERS). Ordinary processes on
# loopback ports of their own: nothing here changes a kernel setting or touches a cgroup.
#
#   tests/cluster/cluster-fixture.sh up [passthrough|overreserve]   starts it (replacing one left running)
#   tests/cluster/cluster-fixture.sh scheduler [passthrough|overreserve] [STRATEGY]   starts the scheduler again,
#                                                                    alone; STRATEGY the plugin's scoring
#                                                                    (LeastAllocated, the default, or LeastNUMANodes)
#   tests/cluster/cluster-fixture.sh apiserver stop|start            an outage of the API server alone
#   tests/cluster/cluster-fixture.sh down                            stops it and removes what it made
#   tests/cluster/cluster-fixture.sh env                             KUBECONFIG=... and KUBECTL=..., for a shell
#   tests/cluster/cluster-fixture.sh ports                           the loopback ports it listens on
#   tests/cluster/cluster-fixture.sh guest DIR NODE                  kubeconfigs for a QEMU guest that runs
#                                                                    kubelet as NODE (below)
#
# The scheduler's NodeResourceTopology cache:
#   passthrough (the default): every decision reads the NodeResourceTopology objects as they are.
#     VRI rewrites its node's object at each change of its ledger, so what the scheduler reads is
#     current to the last decision; no cache in front of it is needed.
#   overreserve: the plugin's reserve cache, for producers that publish every 10-60 s: a pod bound
#     to a node counts against every NUMA zone of it until the node's object is seen to account for
#     it (cacheResyncPeriodSeconds: 5). This release's cache lists the NodeResourceTopology objects
#     once, when the scheduler starts: for an object made later it logs "missing cached NodeTopology"
#     and filters nothing, so a pod that fits no zone is bound. A node's object must exist before the
#     scheduler starts, or the scheduler be restarted (`scheduler overreserve`), for it to count.
#
# Everything lives in $VRI_CLUSTER_DIR (default /run/vri-test-cluster: tmpfs, so etcd's writes cost
# no disk): pki/, one kubeconfig per component, the logs, the pids. The administrator's kubeconfig is
# <dir>/admin.kubeconfig; VRI's exporter's, with only deploy/nrt-exporter-rbac.yaml's rights,
# <dir>/nrt-exporter.kubeconfig.
#
# A QEMU guest reaches the API server at $guest_api (its user network forwards that address to the
# loopback port: tests/v2guest/run-guest.sh's FORWARD), which the API server's certificate names.
# `guest DIR NODE` writes self-contained kubeconfigs for that address (the guest sees no file of the
# host's): kubelet.kubeconfig (system:node:NODE, in system:nodes, as the Node authorizer wants a
# kubelet), nrt-exporter.kubeconfig, admin.kubeconfig; and DIR/forward, the forward to set up.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
root=${VRI_CLUSTER_DIR:-/run/vri-test-cluster}
peers=$(readlink -f "${VRI_PEERS:-$here/../../build/peers/kubernetes}")
# Loopback ports of its own, away from the defaults a node's real components use and below the
# kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by default): a port in that
# range can be taken, between one component's stop and its restart, as the local end of any
# outgoing connection on the host, and the restart then fails with "address already in use".
# A second fixture beside the first (its own directory) takes VRI_CLUSTER_PORT_OFFSET=1.
offset=${VRI_CLUSTER_PORT_OFFSET:-0}
etcd_port=$((22379 + offset)) etcd_peer_port=$((22380 + 10 + offset)) api_port=$((26443 + offset))
cm_port=$((26257 + offset)) scheduler_port=$((26259 + 10 + offset))
api=https://127.0.0.1:$api_port
guest_api_address=10.0.2.100 guest_api_port=6443
guest_api=https://$guest_api_address:$guest_api_port
components=(etcd kube-apiserver kube-controller-manager kube-scheduler)

say() { echo "cluster-fixture: $*"; }
die() { say "$*" >&2; exit 1; }

stop_component() {
  local pidfile=$root/$1.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

down() {
  local c
  # The scheduler and controller manager first: they would log the API server's absence.
  for ((i = ${#components[@]} - 1; i >= 0; i--)); do stop_component "${components[$i]}"; done
  # Any left by a fixture whose directory was removed under it: found by their arguments.
  for c in "${components[@]}"; do
    pkill -9 -f "^$peers/$c .*$root/" 2>/dev/null || true
  done
  rm -rf "$root"
  say down
}

# A key and a certificate signed by the fixture's CA: name, subject, extensions.
certificate() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$root/pki/$1.key" \
    -subj "$2" -out "$root/pki/$1.csr" 2>/dev/null
  openssl x509 -req -in "$root/pki/$1.csr" -CA "$root/pki/ca.crt" -CAkey "$root/pki/ca.key" -CAcreateserial \
    -days 3650 -extfile <(printf '%s\n' "$3") -out "$root/pki/$1.crt" 2>/dev/null
  rm -f "$root/pki/$1.csr"
}

# A kubeconfig that reaches the API server as the client certificate `name`.
kubeconfig() {
  cat > "$root/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: vri-test
  cluster: {server: "$api", certificate-authority: "$root/pki/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$root/pki/$1.crt", client-key: "$root/pki/$1.key"}
contexts:
- name: vri-test
  context: {cluster: vri-test, user: $1}
current-context: vri-test
EOF
}

# The same with the certificates inline and another server: a file that works where the fixture's
# directory is not.
inline_kubeconfig() { # certificate name, server, output file
  cat > "$3" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: vri-test
  cluster: {server: "$2", certificate-authority-data: "$(base64 -w0 "$root/pki/ca.crt")"}
users:
- name: $1
  user: {client-certificate-data: "$(base64 -w0 "$root/pki/$1.crt")", client-key-data: "$(base64 -w0 "$root/pki/$1.key")"}
contexts:
- name: vri-test
  context: {cluster: vri-test, user: $1}
current-context: vri-test
EOF
  chmod 0600 "$3"
}

# Kubeconfigs for a guest whose kubelet registers as `node`, reaching the API server at $guest_api.
guest() { # dir node
  local dir=$1 node=$2
  [ -n "$dir" ] && [ -n "$node" ] || die "guest DIR NODE"
  [ -f "$root/kube-apiserver.pid" ] || die "no control plane at $root: start it with up"
  mkdir -p "$dir"
  certificate "node-$node" "/O=system:nodes/CN=system:node:$node" extendedKeyUsage=clientAuth
  inline_kubeconfig "node-$node" "$guest_api" "$dir/kubelet.kubeconfig"
  inline_kubeconfig nrt-exporter "$guest_api" "$dir/nrt-exporter.kubeconfig"
  inline_kubeconfig admin "$guest_api" "$dir/admin.kubeconfig"
  echo "$guest_api_address:$guest_api_port=127.0.0.1:$api_port" > "$dir/forward"
  say "kubeconfigs for node $node at $guest_api in $dir; the guest's forward: $(cat "$dir/forward")"
}

pki() {
  mkdir -p "$root/pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$root/pki/ca.key" \
    -subj /CN=vri-test-ca -days 3650 -out "$root/pki/ca.crt" 2>/dev/null
  certificate apiserver /CN=kube-apiserver "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,IP:$guest_api_address,DNS:localhost,DNS:kubernetes,\
DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth"
  certificate admin "/O=system:masters/CN=vri-test-admin" extendedKeyUsage=clientAuth
  certificate controller-manager /CN=system:kube-controller-manager extendedKeyUsage=clientAuth
  certificate scheduler /CN=system:kube-scheduler extendedKeyUsage=clientAuth
  # The service accounts' token signing key.
  openssl ecparam -name prime256v1 -genkey -noout -out "$root/pki/sa.key" 2>/dev/null
  openssl ec -in "$root/pki/sa.key" -pubout -out "$root/pki/sa.pub" 2>/dev/null
  # VRI's exporter, with only the rights deploy/nrt-exporter-rbac.yaml gives it.
  certificate nrt-exporter /CN=vri-nrt-exporter extendedKeyUsage=clientAuth
  local name
  for name in admin controller-manager scheduler nrt-exporter; do kubeconfig "$name"; done
}

start() { # name args...: started in the background, its output in <dir>/<name>.log
  local name=$1
  shift
  "$peers/$name" "$@" >> "$root/$name.log" 2>&1 &
  echo $! > "$root/$name.pid"
}

# Waits until `check` succeeds, while the component runs; its log's last lines otherwise.
wait_for() { # name seconds check...
  local name=$1 seconds=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    kill -0 "$(cat "$root/$name.pid")" 2>/dev/null || { tail -n 30 "$root/$name.log" >&2; die "$name exited"; }
    [ "$SECONDS" -lt "$deadline" ] || { tail -n 30 "$root/$name.log" >&2; die "$name not ready in $seconds s"; }
    sleep 0.2
  done
}

healthy() { curl -sfk "https://127.0.0.1:$1/healthz" | grep -qx ok; }
kubectl_admin() { "$peers/kubectl" --kubeconfig "$root/admin.kubeconfig" "$@"; }

scheduler_config() { # cache mode, scoring strategy
  echo "$1" > "$root/scheduler.mode"
  echo "$2" > "$root/scheduler.strategy"
  local resync=0 reserve="    reserve:
      disabled:
      - name: NodeResourceTopologyMatch"
  if [ "$1" = overreserve ]; then resync=5 reserve=""; fi
  cat > "$root/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: "$root/scheduler.kubeconfig"}
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: NodeResourceTopologyMatch
$reserve
  pluginConfig:
  - name: NodeResourceTopologyMatch
    args:
      scoringStrategy: {type: $2}
      cacheResyncPeriodSeconds: $resync
EOF
}

cache_mode() { # the argument, checked; passthrough when empty
  local mode=${1:-passthrough}
  case "$mode" in passthrough | overreserve) echo "$mode" ;; *) die "no cache mode '$mode' (passthrough or overreserve)" ;; esac
}

# The plugin's scoring strategy, checked; LeastAllocated when empty. Under single-numa-node every
# strategy scores; under restricted and best-effort only LeastNUMANodes does.
scoring_strategy() {
  local strategy=${1:-LeastAllocated}
  case "$strategy" in
    LeastAllocated | MostAllocated | BalancedAllocation | LeastNUMANodes) echo "$strategy" ;;
    *) die "no scoring strategy '$strategy' (LeastAllocated, MostAllocated, BalancedAllocation or LeastNUMANodes)" ;;
  esac
}

start_scheduler() { # cache mode, scoring strategy
  scheduler_config "$1" "$(scoring_strategy "${2:-}")"
  start kube-scheduler --config "$root/scheduler.yaml" \
    --authentication-kubeconfig "$root/scheduler.kubeconfig" --authorization-kubeconfig "$root/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$scheduler_port"
  wait_for kube-scheduler 60 healthy "$scheduler_port"
}

start_controller_manager() {
  start kube-controller-manager --kubeconfig "$root/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$root/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$root/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$cm_port" --leader-elect=false --use-service-account-credentials \
    --controllers deployment,replicaset,serviceaccount,serviceaccount-token,root-ca-cert-publisher,garbagecollector,namespace \
    --service-account-private-key-file "$root/pki/sa.key" --root-ca-file "$root/pki/ca.crt"
  wait_for kube-controller-manager 60 healthy "$cm_port"
}

start_apiserver() {
  start kube-apiserver --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --cert-dir "$root/apiserver" --tls-cert-file "$root/pki/apiserver.crt" \
    --tls-private-key-file "$root/pki/apiserver.key" --client-ca-file "$root/pki/ca.crt" \
    --service-account-key-file "$root/pki/sa.pub" --service-account-signing-key-file "$root/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.0.0.0/24 \
    --authorization-mode Node,RBAC --allow-privileged=true --profiling=false
  wait_for kube-apiserver 90 kubectl_admin get --raw /readyz
}

# The API server alone, stopped or started again (etcd keeps what it stored): an outage for its clients.
apiserver() { # stop|start
  [ -d "$root/pki" ] || die "no fixture at $root: start it with up"
  case "$1" in
    stop) stop_component kube-apiserver; say "API server stopped" ;;
    start)
      [ -f "$root/kube-apiserver.pid" ] && { say "API server up"; return; }
      start_apiserver
      # The controller manager and the scheduler find the API server again by themselves, but their
      # watches back off for up to a minute (a new namespace waited 45 s for its service account):
      # they start again, so the next test finds the whole control plane as `up` left it.
      stop_component kube-scheduler
      stop_component kube-controller-manager
      start_controller_manager
      start_scheduler "$(cat "$root/scheduler.mode")" "$(cat "$root/scheduler.strategy")"
      say "API server up (controller manager and scheduler started again)" ;;
    *) die "apiserver stop|start" ;;
  esac
}

# The scheduler alone, started again: its caches list the objects as they are now.
restart_scheduler() { # cache mode, scoring strategy
  local mode strategy
  mode=$(cache_mode "$1")
  strategy=$(scoring_strategy "$2")
  [ -f "$root/kube-scheduler.pid" ] || die "no fixture at $root to restart the scheduler of: start it with up"
  stop_component kube-scheduler
  start_scheduler "$mode" "$strategy"
  say "scheduler started again, cache $mode, scoring $strategy"
}

# Refuses a host whose ephemeral range reaches down to one of the fixture's ports (see above).
check_ports_outside_ephemeral_range() {
  local low high port
  read -r low high < /proc/sys/net/ipv4/ip_local_port_range
  for port in $etcd_port $etcd_peer_port $api_port $cm_port $scheduler_port; do
    if [ "$port" -ge "$low" ] && [ "$port" -le "$high" ]; then
      die "port $port lies in this host's ephemeral range $low-$high (net.ipv4.ip_local_port_range)"
    fi
  done
}

up() {
  local mode
  mode=$(cache_mode "$1")
  local c
  for c in "${components[@]}" kubectl; do
    [ -x "$peers/$c" ] || die "no $c in $peers: build it with scripts/build-peers.sh"
  done
  check_ports_outside_ephemeral_range
  command -v openssl curl >/dev/null || die "openssl and curl are needed (scripts/install-deps.sh)"
  down >/dev/null
  local started=$SECONDS
  mkdir -p "$root"
  pki

  start etcd --name vri-test --data-dir "$root/etcd" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "vri-test=http://127.0.0.1:$etcd_peer_port" --listen-metrics-urls ""
  wait_for etcd 30 curl -sf "http://127.0.0.1:$etcd_port/health"

  start_apiserver

  # The plugin reads the NodeResourceTopology objects as the scheduler's user.
  kubectl_admin apply -f "$here/noderesourcetopology-crd.yaml" >/dev/null
  kubectl_admin apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "vri-test:noderesourcetopology-reader"}
rules:
- apiGroups: [topology.node.k8s.io]
  resources: [noderesourcetopologies]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "vri-test:noderesourcetopology-reader"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "vri-test:noderesourcetopology-reader"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-scheduler"}
EOF
  kubectl_admin apply -f "$here/../../deploy/nrt-exporter-rbac.yaml" >/dev/null
  kubectl_admin wait --for condition=established --timeout 30s crd/noderesourcetopologies.topology.node.k8s.io >/dev/null

  # Not nodelifecycle: an emulated node that answers slowly would be tainted and its pods evicted.
  # Each controller acts as its own service account, with the roles the API server made for it
  # (the manager's own user may do little more than start them).
  start_controller_manager

  start_scheduler "$mode"

  # A pod is refused until its namespace's default service account exists.
  wait_for kube-controller-manager 60 kubectl_admin -n default get serviceaccount default
  say "up in $((SECONDS - started)) s: $("$peers/kube-apiserver" --version), scheduler cache $mode," \
    "KUBECONFIG=$root/admin.kubeconfig"
}

case "${1:-}" in
  up) up "${2:-}" ;;
  scheduler) restart_scheduler "${2:-}" "${3:-}" ;;
  apiserver) apiserver "${2:-}" ;;
  down) down ;;
  env) echo "KUBECONFIG=$root/admin.kubeconfig"; echo "KUBECTL=$peers/kubectl" ;;
  ports) echo "$etcd_port $etcd_peer_port $api_port $cm_port $scheduler_port" ;;
  guest) guest "${2:-}" "${3:-}" ;;
  *) echo "usage: $0 up [passthrough|overreserve] | scheduler [passthrough|overreserve] [STRATEGY] | apiserver stop|start | down | env | ports | guest DIR NODE" >&2; exit 2 ;;
esac

#!/bin/sh
# The node in a cluster: kubelet 1.35 registered with the control plane that runs on the host
# (tests/cluster/cluster-fixture.sh, started before the boot), reached through a network device that
# reaches nothing but the API server. Pods come from the API server and the scheduler, which reads
# the NodeResourceTopology object VRI's exporter writes; nothing here is a static pod (a mirror pod
# would make the node foreign to the scheduler's cache). First through NRI with the systemd driver,
# every scenario; then through the shim with cgroupfs, placement and release. Pods use the host's
# network (no CNI) and no service-account token; nothing needs the API server to reach kubelet.
# guest-packages: systemd-container,libvirt-daemon-system,qemu-system-x86,apparmor,runc,curl,jq
# guest-package-depends: yes
# guest-peers: kubernetes,containerd-2.4
# guest-smp: 4
# guest-mem: 6144
# guest-cluster: yes
# guest-timeout: 2700
set -eu
cd /
fail() {
  step_failed "$*"
  echo "cluster: FAIL: $*"
  kubectl_summary
  k get pods -o wide 2>&1 | tail -n 20
  echo "node $node's taints: $(taints 2>&1)"
  k get events --sort-by=.lastTimestamp 2>&1 | tail -n 25
  journalctl -u kubelet --no-pager -o short-monotonic | grep -v ' I[0-9]' | tail -n 30
  journalctl -u vrid -u vri-cri-shim -u vri-nri-plugin -u vri-nrt-exporter --no-pager -o short-monotonic | tail -n 60
  exit 1
}
uuid_prefix=5b1e7a90-3c2d-4f6e-8a1b-
. "$(dirname "$0")/node_helpers.sh"
. "$(dirname "$0")/kubelet_node.sh"
fresh_node
here=$(dirname "$0")
node=v2guest
credentials=$GUEST_IN/v2guest/cluster
# Writes go through kubectl, as an operator's would; the polls read the API server with curl. Under
# emulation each kubectl costs a second or more of CPU (its Go runtime and client libraries start
# anew every time), so a poll every second by kubectl kept the node busy doing little else; curl and
# jq cost a small part of that. Every kubectl's duration is kept, and the summary says how much.
k() {
  started=$(date +%s%N) rc=0
  timeout 60 "$peers/kubernetes/kubectl" --kubeconfig="$credentials/admin.kubeconfig" "$@" || rc=$?
  echo $(( ($(date +%s%N) - started) / 1000000 )) >> /tmp/kubectl-ms
  return $rc
}
# The administrator's credentials from its kubeconfig, as PEM files for curl.
api_credentials() {
  mkdir -p /run/api
  for field in certificate-authority-data=ca.crt client-certificate-data=admin.crt client-key-data=admin.key; do
    sed -n "s/.*${field%=*}: \"\([^\"]*\)\".*/\1/p" "$credentials/admin.kubeconfig" | base64 -d > "/run/api/${field#*=}"
  done
}
api() { # path: a GET; its JSON on stdout, failing on an HTTP error
  curl -sf --max-time 30 --cacert /run/api/ca.crt --cert /run/api/admin.crt --key /run/api/admin.key \
    "https://10.0.2.100:6443$1"
}
pod_json() { api "/api/v1/namespaces/default/pods/$1"; }
pods_json() { api "/api/v1/namespaces/default/pods${1:+?labelSelector=app%3D$1}"; }  # [app label]
kubectl_summary() {
  awk '{ n++; ms += $1 } END { if (n) printf "kubectl: %d calls, %.0f s in all, %.0f ms each\n", n, ms / 1000, ms / n }' \
    /tmp/kubectl-ms 2>/dev/null || true
  echo "the node's CPU time by process: $(ps -eo time=,comm= --sort=-time | head -8 | awk '{printf "%s %s; ", $2, $1}')"
}
now() { date +%s; }

# --- what the cluster says about a pod, and what the node does with it -------------------------
uid_of() { pod_json "$1" 2>/dev/null | jq -r .metadata.uid; }
uids_of() { pods_json "$1" | jq -r '.items[].metadata.uid'; }  # app label
name_of_uid() { pods_json | jq -r --arg uid "$1" '.items[] | select(.metadata.uid == $uid) | .metadata.name'; }
# The app container's state as kubelet reports it to the API server: "running <id>", or the waiting
# reason and message.
state_of() { # pod name
  pod_json "$1" 2>/dev/null | jq -r '(.status.containerStatuses // [])[] | select(.name == "app")
    | if .state.running then "running \(.containerID | sub("containerd://"; ""))"
      elif .state.waiting then "waiting \(.state.waiting.reason): \(.state.waiting.message // "")"
      else "terminated \(.state.terminated.reason)" end'
}
running() { state_of "$1" | grep -q '^running '; }
container_of() { state_of "$1" | awk '$1 == "running" {print $2}'; }
agreed() { container_agreed "$(container_of "$1")"; }  # pod
# The label's pods, as many as asked, none being deleted, each with its app container running: one
# call to the API server (under emulation each kubectl takes a second or two).
all_running() { # app label, count
  pods_json "$1" | jq -e --argjson n "$2" '[.items[] | select(.metadata.deletionTimestamp == null)] |
    length == $n and all(.[]; any((.status.containerStatuses // [])[]; .name == "app" and .state.running))' > /dev/null
}
held() { vrictl list --pods | awk -v uid="$1" '$2 == uid' | grep -q .; }  # pod uid
holds_none_of() { ! vrictl list --pods | grep -q " default/$1-"; }  # app label
holds_no_pod() { ! vrictl list --pods | awk '$1 == "pod"' | grep -q .; }
# Every exclusive CPU vrid grants a pod, one per line ("app=2-3 excl" -> 2 and 3).
exclusive_cpus() {
  vrictl list --pods | sed -n 's/.* app=\([0-9,-]*\) excl.*/\1/p' | tr ',' '\n' |
    awk -F- '{ last = NF > 1 ? $2 : $1; for (cpu = $1; cpu <= last; cpu++) print cpu }'
}
no_cpu_held_twice() {
  twice=$(exclusive_cpus | sort | uniq -d)
  [ -z "$twice" ] || fail "CPU $twice held by two pods: $(vrictl list --pods)"
}
# The object's available CPUs per zone: "node-0=1 node-1=2"; fails while there is no object.
zones_free() {
  object=$(api /apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/$node) || return 1
  echo "$object" | jq -r '[.zones[] | "\(.name)=\([.resources[] | select(.name == "cpu") | .available][0])"] | join(" ")'
}
largest_zone_free() { zones_free | tr ' ' '\n' | cut -d= -f2 | sort -n | tail -1; }
scheduler_said() { # pod pattern: a FailedScheduling event of the pod's that matches
  api "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D$1,reason%3DFailedScheduling" |
    jq -r '.items[].message' | grep -q "$2"
}

# Pods and Deployments are made with `kubectl create --validate=false`: with validation (and with
# `apply` in any case) kubectl first fetches and parses the API server's OpenAPI document for the
# group, 1.4 MB for core/v1, which took it about ten seconds under emulation. The API server still
# checks what it is sent.
create() { k create --validate=false -f - > /dev/null; }
guaranteed_pod() { # name cpus [command] [grace seconds]: a bare pod
  create <<EOF2 || fail "kubectl create pod $1"
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  hostNetwork: true
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: ${4:-2}
  containers:
  - {name: app, image: localhost/vri/pause:1.0, imagePullPolicy: Never, command: [${3:-/sleeper}],
     resources: {requests: {cpu: "$2", memory: 32Mi}, limits: {cpu: "$2", memory: 32Mi}}}
EOF2
}
deployment() { # name replicas cpu qos(guaranteed|burstable)
  case $4 in
    guaranteed) resources="{requests: {cpu: \"$3\", memory: 32Mi}, limits: {cpu: \"$3\", memory: 32Mi}}" ;;
    burstable) resources="{requests: {cpu: \"$3\", memory: 16Mi}}" ;;
  esac
  create <<EOF2 || fail "kubectl create deployment $1"
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: default}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      hostNetwork: true
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 2
      containers:
      - {name: app, image: localhost/vri/pause:1.0, imagePullPolicy: Never, command: [/sleeper], resources: $resources}
EOF2
}

# Deletion to release: pods deleted at $1 (s), each one's release by vrid timed on its own (polled
# every second), in $timed. Fails if any is still held after 120 s.
time_releases() { # deleted-at uids...
  deleted_at=$1
  shift
  pending=$* timed=
  while [ -n "$pending" ]; do
    [ $(($(now) - deleted_at)) -le 120 ] || fail "vrid still holds $pending 120 s after their deletion: $(vrictl list --pods)"
    vrictl list --pods > /tmp/held.txt  # once per poll, for every pod: the poll stays about a second
    polled_at=$(now)
    still=
    for uid in $pending; do
      if awk -v uid="$uid" '$2 == uid' /tmp/held.txt | grep -q .; then
        still="$still $uid"
      else
        timed="$timed $((polled_at - deleted_at))"
      fi
    done
    pending=${still# }
    [ -z "$pending" ] || sleep 1
  done
}
percentiles() { # values...: "n=N p50=A s p99=B s max=C s"
  echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR] = $1} END {
    p50 = v[int((NR + 1) / 2)]; p99 = v[int(NR * 0.99 + 0.999)]; if (p99 == "") p99 = v[NR]
    printf "n=%d p50=%d s p99=%d s max=%d s", NR, p50, p99, v[NR] }'
}
# Rounds of `churn`'s pods deleted at once; its Deployment makes them again for the next round. The
# times from deletion to release in $releases.
churn_rounds() { # rounds replicas
  deployment churn "$2" 100m burstable
  round=0 releases=
  while [ $round -lt "$1" ]; do
    round=$((round + 1))
    wait_for 300 "churn's $2 pods running (round $round)" all_running churn "$2"
    uids=$(uids_of churn)
    for uid in $uids; do wait_for 60 "vrid holding churn's pod $uid" held "$uid"; done
    deleted_at=$(now)
    k delete pods -l app=churn --wait=false > /dev/null
    time_releases "$deleted_at" $uids
    releases="$releases$timed"
    echo "round $round: $2 pods deleted, released after$timed s"  # and the console is not silent for long
  done
  k delete deployment churn --wait=false > /dev/null
}

# --- the node -----------------------------------------------------------------------------------
# The network device on QEMU's user network: the only one with a device behind it (vri0 is a dummy).
nic() { for dev in /sys/class/net/*; do [ -e "$dev/device" ] && echo "${dev##*/}"; done | head -1; }
network_up() {
  ip link set "$1" up && ip addr replace 10.0.2.15/24 dev "$1" && ip route replace default via 10.0.2.2 dev "$1"
}

step "the node: a network device that reaches the control plane's API server and nothing else"
dev=$(nic)
[ -n "$dev" ] || fail "no network device: is the boot's FORWARD set (testbed.sh, guest-cluster)?"
network_up "$dev" || fail "configuring $dev"
api_credentials
wait_for 60 "the API server at 10.0.2.100:6443" api /readyz
echo "$dev 10.0.2.15; API server $(k version -o json | jq -r .serverVersion.gitVersion)"
# Whatever an earlier boot against the same control plane left.
k delete deployments --all > /dev/null
k delete pods --all --grace-period=0 --force > /dev/null 2>&1 || true
k delete node $node --ignore-not-found > /dev/null
k delete noderesourcetopologies.topology.node.k8s.io $node --ignore-not-found > /dev/null
# kubelet calls a node Ready only once the runtime says its network is: containerd does once it has
# loaded a CNI network configuration. The pods here all use the host's network, so no CNI plugin ever
# runs; CNI 1.0.0 has no STATUS call that would run one either.
mkdir -p /etc/cni/net.d
echo '{"cniVersion": "1.0.0", "name": "host-network", "plugins": [{"type": "loopback"}]}' \
  > /etc/cni/net.d/10-host-network.conflist
install_containerd_and_kubelet

step "libvirtd's first start (its QEMU capability probe)"
wait_for 600 "libvirtd" v version

step "VRI's package, its exporter with the node's credentials and eviction after 2 refusals"
deb=$(ls "$GUEST_IN"/package/vri_*.deb)
dpkg -i "$deb" > /tmp/dpkg.out 2>&1 || { cat /tmp/dpkg.out; fail "dpkg -i"; }
scale_hook_deadline
install -m 0600 "$credentials/nrt-exporter.kubeconfig" /etc/vri/nrt-exporter.kubeconfig
printf 'VRI_NODE_NAME=%s\nVRI_EVICT_AFTER_REFUSALS=2\n' $node > /etc/vri/nrt-exporter.env
# The evictor's rights besides the exporter's, as docs/operating.md has an operator apply them.
k apply -f /usr/share/vri/cluster/refused-pod-evictor-rbac.yaml > /dev/null || fail "the evictor's RBAC"
# kubelet as in the kubelet scenario, but registered: no static pods; single-numa-node, kubelet's and
# VRI's, the policy under which the scheduler's plugin filters nodes by NUMA zone.
sed -e '/^staticPodPath:/d' -e '/^fileCheckFrequency:/d' \
  -e 's/^topologyManagerPolicy:.*/topologyManagerPolicy: single-numa-node/' "$here/kubelet/config.yaml" \
  > /etc/kubernetes/kubelet.yaml
install -m 0600 "$credentials/kubelet.kubeconfig" /etc/kubernetes/kubelet.kubeconfig
kubelet_unit "registered with the API server" --kubeconfig=/etc/kubernetes/kubelet.kubeconfig \
  --hostname-override=$node --node-ip=10.0.2.15 --v=2

taints() { # the node's, as key:effect words; fails when the API server does not answer
  node_json=$(api /api/v1/nodes/$node) || return 1
  echo "$node_json" | jq -r '[.spec.taints[]? | "\(.key):\(.effect)"] | join(" ")'
}
not_ready_taint_lifted() {
  now_tainted=$(taints) || return 1
  case "$now_tainted" in *node.kubernetes.io/not-ready*) ;; *) return 0 ;; esac
  k taint node $node node.kubernetes.io/not-ready:NoSchedule- > /dev/null 2>&1 || true
  return 1
}
node_ready() {
  api /api/v1/nodes/$node | jq -e '[.status.conditions[] | select(.type == "Ready" and .status == "True")] | length == 1' \
    > /dev/null
}
# A pass: the way in and the driver, a new ledger, kubelet (re)started and Ready, the object written.
pass_begins() { # driver way
  driver=$1 way=$2 pass="$1, $2"
  way_in "$way"
  step "[$pass] vrid, $placer, the exporter and kubelet; the node Ready and its object written"
  containerd_with "$driver" "$way"
  containerd_restarted
  vrid_with "$driver"
  set_conf topology_manager_policy single-numa-node
  start_vrid_with_a_new_ledger
  placer_started "$way"
  unit enable vri-nrt-exporter
  unit restart vri-nrt-exporter
  unit restart kubelet
  wait_for 300 "node $node Ready" node_ready
  # The API server taints a new Node not-ready; the node lifecycle controller that lifts it does not
  # run here (an emulated node that answers slowly would have its pods evicted). Lifted as an operator
  # would, and read back: a pod made while it stays is Pending with nothing in VRI to blame.
  wait_for 60 "the node's not-ready taint lifted" not_ready_taint_lifted
  wait_for 120 "the node's NodeResourceTopology object" zones_free
  echo "$(k get node $node -o jsonpath='{.status.nodeInfo.kubeletVersion} {.status.allocatable.cpu}') allocatable;" \
    "object: $(zones_free); $(vrictl pool | head -3 | tr '\n' ' ')"
}

# --- through NRI, systemd's driver: every scenario ---------------------------------------------
pass_begins systemd nri
free_before=$(zones_free)

step "[$pass] a Deployment of Guaranteed pods scaled up: each on an exclusive CPU of its own, the object follows"
deployment gpods 2 1 guaranteed
wait_for 300 "gpods' 2 pods running" all_running gpods 2
cpus=
for pod in $(k get pods -l app=gpods -o jsonpath='{.items[*].metadata.name}'); do
  c=$(agreed "$pod")
  echo "$pod: $(container_views "$(container_of "$pod")")"
  case "$c" in DISAGREE*|*,*|*-*|"") fail "$pod is not on one CPU: $c";; esac
  case " $cpus " in *" $c "*) fail "two pods of gpods on CPU $c";; esac
  cpus="$cpus $c"
done
object_follows() { [ "$(zones_free)" != "$free_before" ]; }
wait_for 60 "the object to count gpods' CPUs (was $free_before)" object_follows
echo "gpods on CPUs$cpus; the object: $free_before -> $(zones_free)"

step "[$pass] scaled down: the pod that goes is released in seconds, not at kubelet's garbage collection"
before=$(uids_of gpods)
scaled_at=$(now)
k scale deployment gpods --replicas=1 > /dev/null
gone_uid=
one_left() { [ "$(uids_of gpods | wc -l)" = 1 ]; }
wait_for 120 "gpods down to one pod" one_left
for uid in $before; do uids_of gpods | grep -qx "$uid" || gone_uid=$uid; done
[ -n "$gone_uid" ] || fail "no pod of gpods went"
time_releases "$scaled_at" "$gone_uid"
scale_release=$timed
echo "the scaled-down pod released$scale_release s after the scale; the object: $(zones_free)"

step "[$pass] a VM started with virsh takes a NUMA zone; the scheduler keeps the next pod that needs it Pending, then binds it"
k scale deployment gpods --replicas=0 > /dev/null
wait_for 120 "gpods scaled to nothing" holds_none_of gpods
object_back() { [ "$(zones_free)" = "$free_before" ]; }
wait_for 60 "the object back to $free_before" object_back
n=$(largest_zone_free)
[ "$n" -ge 2 ] || fail "no zone with 2 free CPUs: $(zones_free)"
guaranteed_pod big "$n"
wait_for 300 "big ($n CPUs) running before the VM" running big
echo "before the VM: big bound to $(k get pod big -o jsonpath='{.spec.nodeName}') on CPUs $(agreed big)"
k delete pod big --wait=true > /dev/null
# The pod object goes once kubelet reports it stopped; vrid releases it when the plugin sees the stop
# (a few seconds later): the VM's start waits for that, as an operator's would.
wait_for 120 "vrid releasing big" holds_no_pod
define ded-a "$n" 1
v start --paused ded-a > /dev/null || fail "virsh start ded-a"
vm_full() { [ "$(largest_zone_free)" -lt "$n" ]; }
wait_for 60 "the object to show ded-a's $n CPUs taken" vm_full
echo "ded-a on CPU $(vm_cpu ded-a) ...; the object: $(zones_free)"
guaranteed_pod big "$n"
wait_for 120 "the scheduler's refusal of big" scheduler_said big 'cannot align'
[ -z "$(k get pod big -o jsonpath='{.spec.nodeName}')" ] || fail "big was bound while ded-a holds its zone"
echo "big Pending: $(k get events --field-selector involvedObject.name=big,reason=FailedScheduling -o jsonpath='{.items[0].message}')"
v destroy ded-a > /dev/null
wait_for 300 "big bound and running once ded-a is gone" running big
echo "after the VM: big on CPUs $(agreed big)"
k delete pod big --wait=true > /dev/null

step "[$pass] a race the scheduler lost: refused by VRI with its reason, evicted after 2 refusals, replaced, and run once room returns"
# The race made certain: the exporter stopped, so the object stays as it was while a VM takes the
# zone; the scheduler binds by it, as it would in the moment between a decision and its object.
wait_for 120 "the object back to $free_before" object_back
unit stop vri-nrt-exporter
v start --paused ded-a > /dev/null || fail "virsh start ded-a"
deployment raced 1 "$n" guaranteed
first_uid=
bound() {
  raced=$(pods_json raced) && first_uid=$(echo "$raced" | jq -r '.items[0].metadata.uid // empty') &&
    [ -n "$first_uid" ] && [ -n "$(echo "$raced" | jq -r '.items[0].spec.nodeName // empty')" ]
}
wait_for 120 "raced's pod bound by the stale object" bound  # bound() keeps its UID in $first_uid
first=$(name_of_uid "$first_uid")
unit start vri-nrt-exporter
# What an operator reads: the container's waiting state in the pod's status, as `kubectl get -o yaml`
# prints it (it folds a long message over several lines; the reason comes last). It is read in the
# poll itself: the second refusal may evict the pod a moment after the first is reported.
refused_by_vri() {
  k get pod "$first" -o yaml 2>/dev/null | sed -n '/containerStatuses:/,$p' |
    sed -n '/^ *waiting:/,/^ *reason:/p' > /tmp/waiting.txt
  tr -s ' \n' ' ' < /tmp/waiting.txt | grep -q 'message: .*vri: '
}
wait_for 300 "kubelet reporting VRI's refusal of $first in its status (kubectl get pod -o yaml)" refused_by_vri
echo "kubectl get pod $first -o yaml, its container's waiting state:"
cat /tmp/waiting.txt
evicted() { ! uids_of raced | grep -q "$first_uid"; }
wait_for 300 "$first evicted after 2 refusals" evicted
why=$(k get events --field-selector "involvedObject.name=$first,reason=VriRefused" -o jsonpath='{.items[0].message}')
[ -n "$why" ] || fail "no VriRefused event on $first"
echo "event VriRefused: $why"
replacement=$(k get pods -l app=raced -o jsonpath='{.items[0].metadata.name}')
[ -n "$replacement" ] || fail "raced's Deployment made no replacement"
wait_for 120 "the scheduler's refusal of $replacement" scheduler_said "$replacement" 'cannot align'
echo "$replacement Pending while ded-a holds the zone"
v destroy ded-a > /dev/null
wait_for 300 "$replacement running once ded-a is gone" running "$replacement"
echo "$replacement running on CPUs $(agreed "$replacement")"
k delete deployment raced --wait=false > /dev/null
wait_for 120 "raced's pods released" holds_none_of raced

step "[$pass] deleted with a 30 s grace period, its process ignoring SIGTERM, while kubelet restarts: held until killed; no running pod moves"
k scale deployment gpods --replicas=1 > /dev/null
wait_for 300 "gpods running" all_running gpods 1
keeper=$(k get pods -l app=gpods -o jsonpath='{.items[0].metadata.name}')
keeper_at="$(container_of "$keeper") $(agreed "$keeper")"
guaranteed_pod stubborn 1 '/sleeper, stubborn' 30
wait_for 300 "stubborn running" running stubborn
stubborn_uid=$(uid_of stubborn)
stubborn_pid=$(direct_pid "$(container_of stubborn)")
deleted_at=$(now)
k delete pod stubborn --grace-period=30 --wait=false > /dev/null
unit restart kubelet
wait_for 300 "kubelet's healthz" curl -sf --max-time 5 http://127.0.0.1:10258/healthz
# Two thirds of the grace period, checked every second: held, and its process alive.
while [ $(($(now) - deleted_at)) -lt 20 ]; do
  held "$stubborn_uid" || fail "stubborn released $(($(now) - deleted_at)) s into its 30 s grace period"
  kill -0 "$stubborn_pid" || fail "stubborn's process is gone $(($(now) - deleted_at)) s into its grace period"
  sleep 1
done
[ "$(container_of "$keeper") $(agreed "$keeper")" = "$keeper_at" ] || fail "$keeper moved: $keeper_at -> $(container_of "$keeper") $(agreed "$keeper")"
echo "20 s after the deletion: stubborn held, its process alive; $keeper unchanged ($keeper_at)"
time_releases "$deleted_at" "$stubborn_uid"
stubborn_release=$timed
[ "$stubborn_release" -ge 28 ] || fail "stubborn released$stubborn_release s after its deletion, before kubelet could kill it"
[ "$(container_of "$keeper") $(agreed "$keeper")" = "$keeper_at" ] || fail "$keeper moved after stubborn's release"
echo "stubborn released$stubborn_release s after its deletion (grace 30 s); $keeper unchanged"

step "[$pass] a pod deleted and made again under its name: never a CPU held twice"
guaranteed_pod same 1
wait_for 300 "same running" running same
old_uid=$(uid_of same)
k delete pod same --wait=true > /dev/null
guaranteed_pod same 1
new_uid=$(uid_of same)
[ "$new_uid" != "$old_uid" ] || fail "same kept its UID"
made_again=$(now)
while [ $(($(now) - made_again)) -lt 300 ]; do
  no_cpu_held_twice
  running same && ! held "$old_uid" && held "$new_uid" && break
  sleep 1
done
running same && held "$new_uid" && ! held "$old_uid" || fail "same's new pod: $(state_of same); $(vrictl list --pods)"
echo "same: $old_uid released, $new_uid on CPU $(agreed same), no CPU held twice on the way"
# Gone before the next step reads the object: a release counted after that read would cancel out the
# VM the next step starts.
object_with_same=$(zones_free)  # same running and held for a while: counted
k delete pod same --wait=false > /dev/null
same_released() { ! held "$new_uid" && [ "$(zones_free)" != "$object_with_same" ]; }
wait_for 120 "same's release, by vrid and in the object (was $object_with_same)" same_released

step "[$pass] the API server out of reach: nothing moves; back, the object catches up"
keeper_id=$(container_of "$keeper")
keeper_cpus=$(container_agreed "$keeper_id")
free_before_b=$(zones_free)
ip link set "$dev" down
define ded-b 1 2
v start --paused ded-b > /dev/null || fail "virsh start ded-b (API server away)"
b=$(vm_cpu ded-b)
# A span with kubelet and the exporter cut off: what is checked is that nothing moved in it.
away=$(now)
while [ $(($(now) - away)) -lt 10 ]; do
  [ "$(container_agreed "$keeper_id")" = "$keeper_cpus" ] || fail "$keeper moved while the API server was away"
  sleep 1
done
network_up "$dev" || fail "the network device back up"
wait_for 60 "the API server again" api /readyz
b_counted() { [ "$(zones_free)" != "$free_before_b" ]; }
wait_for 60 "the object to count ded-b's CPU $b (was $free_before_b)" b_counted
[ "$(container_of "$keeper")" = "$keeper_id" ] || fail "$keeper's container changed while the API server was away"
echo "ded-b on CPU $b while the API server was away; $keeper unchanged on $keeper_cpus; the object: $free_before_b -> $(zones_free)"
v destroy ded-b > /dev/null

step "[$pass] 20 deletions in 2 rounds of 10: each pod released long before kubelet's garbage collection"
churn_rounds 2 10
nri_releases=$releases
echo "deletion to release through NRI: $(percentiles $nri_releases)"

step "[$pass] every pod deleted; vrid holds none"
k delete deployments --all --wait=false > /dev/null
k delete pods --all --wait=false > /dev/null
wait_for 180 "vrid holding no pod" holds_no_pod
no_pods() { [ "$(pods_json | jq '.items | length')" = 0 ]; }
wait_for 120 "the API server holding no pod" no_pods
undefine_all() { for domain in ded-a ded-b; do v undefine "$domain" > /dev/null 2>&1 || true; done; }
undefine_all

# --- through the shim, cgroupfs: placement and release -----------------------------------------
unit stop kubelet
pass_begins cgroupfs shim
step "[$pass] a Guaranteed pod on an exclusive CPU; 5 deletions, each released in seconds"
guaranteed_pod g1 1
wait_for 300 "g1 running" running g1
c=$(agreed g1)
case "$c" in DISAGREE*|*,*|*-*|"") fail "g1 is not on one CPU: $c";; esac
echo "g1 on CPU $c: $(container_views "$(container_of g1)")"
k delete pod g1 --wait=false > /dev/null
churn_rounds 1 5
shim_releases=$releases
echo "deletion to release through the shim: $(percentiles $shim_releases)"
k delete pods --all --wait=false > /dev/null
wait_for 180 "vrid holding no pod" holds_no_pod
unit stop kubelet
k delete node $node > /dev/null

echo "deletion to release, NRI: $(percentiles $nri_releases); shim: $(percentiles $shim_releases);" \
  "scale-down:$scale_release s; grace 30 s:$stubborn_release s"
kubectl_summary
steps_done cluster

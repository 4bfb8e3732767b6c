#!/bin/sh
# A node changes hands with every workload running, both ways, as docs/operating.md has it. kubelet
# 1.35 with its static CPU and memory managers places a Guaranteed and a Burstable pod; VRI's package,
# installed then, refuses to start and names the steps; the steps taken, vrid adopts both pods where
# they run (same containers, same cpusets) and places a new one; then vrictl handback writes kubelet's
# checkpoints, VRI is removed, and kubelet starts with its static policies on those files, keeping
# every container on its CPUs over two of its reconcile periods, and placing a new pod itself.
# guest-packages: systemd-container,runc,curl,jq
# guest-package-depends: yes
# guest-peers: kubernetes,containerd-2.4
# guest-smp: 4
# guest-mem: 4096
# guest-timeout: 1800
set -eu
cd /
fail() {
  step_failed "$*"
  echo "takeover: FAIL: $*"
  cat /var/lib/kubelet/cpu_manager_state /var/lib/kubelet/memory_manager_state 2> /dev/null || true
  journalctl -u kubelet --no-pager -o short-monotonic | grep -v ' I[0-9]' | tail -n 40
  journalctl -u vrid -u vri-cri-shim -u containerd --no-pager -o short-monotonic | tail -n 60
  exit 1
}
uuid_prefix=9a1b2c3d-4e5f-4a6b-8c7d-
. "$(dirname "$0")/node_helpers.sh"
. "$(dirname "$0")/kubelet_node.sh"
fresh_node
here=$(dirname "$0")
manifests=/etc/kubernetes/manifests
node=v2guest
state=/var/lib/kubelet/cpu_manager_state
memory_state=/var/lib/kubelet/memory_manager_state
pods_json() { curl -sf --max-time 10 http://127.0.0.1:10265/pods; }
kubelet_view() { # pod: "<state> <containerd id> <restarts>"
  pods_json | jq -r --arg pod "$1-$node" '(.items // [])[] | select(.metadata.name == $pod)
    | (.status.containerStatuses // [])[] | select(.name == "app")
    | if .state.running then "running \(.containerID | sub("containerd://"; "")) \(.restartCount)"
      elif .state.waiting then "waiting \(.state.waiting.reason): \(.state.waiting.message // "")"
      else "terminated \(.state.terminated.reason)" end'
}
running() { kubelet_view "$1" | grep -q '^running '; }
# The exclusive CPUs vrid's ledger holds for a pod's app (vrictl's JSON is the API's message).
vri_exclusive() { # pod
  vrictl list --pods --json | jq -r --arg p "$1-$node" '.tenants[].pod | select(.name | endswith($p))
    | .containers[] | select(.resources.name == "app") | .exclusive_cpus'
}
container_of() { kubelet_view "$1" | awk '$1 == "running" {print $2}'; }
cgroup_of() { find $cg/kubepods* -type d -name "cri-containerd-$1.scope" | head -1; }  # containerd id
# A pod's container as the kernel holds it: id, restarts, cpuset.cpus, effective CPUs and memory nodes.
holds() { # pod
  id=$(container_of "$1")
  dir=$(cgroup_of "$id")
  [ -n "$dir" ] || { echo "$1 no cgroup ($(kubelet_view "$1"))"; return 0; }
  echo "$1 $(kubelet_view "$1" | awk '{print $2, $3}') cpus=$(cat "$dir/cpuset.cpus") effective=$(cat "$dir/cpuset.cpus.effective") mems=$(cat "$dir/cpuset.mems.effective")"
}
manifest() { # name cpu: Guaranteed with whole CPUs, Burstable with a share
  case $2 in
    *m) resources="requests: {cpu: \"$2\", memory: 16Mi}" ;;
    *) resources="requests: {cpu: \"$2\", memory: 32Mi}
        limits: {cpu: \"$2\", memory: 32Mi}" ;;
  esac
  cat > "/tmp/$1.yaml" <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
    - name: app
      image: localhost/vri/pause:1.0
      imagePullPolicy: Never
      command: ["/sleeper"]
      resources:
        $resources
EOF2
  mv "/tmp/$1.yaml" "$manifests/$1.yaml"
}
kubelet_started() { # since
  unit start kubelet
  wait_for 300 "kubelet's healthz" curl -sf --max-time 5 http://127.0.0.1:10258/healthz
  if journalctl -u kubelet --since "$1" -o cat |
    grep -E 'could not restore state|checkpoint is corrupted|differs from state checkpoint|expected machine state is different|Invalid state, please drain'; then
    fail "kubelet refused its CPU or memory manager's checkpoint"
  fi
}
# What a pod's container runs on: `holds` without a shared container's cpuset.cpus, which with cpuset
# partitions is VRI's wide set until kubelet's first reconcile writes its default set (the effective
# set, what the kernel runs it on, is the same).
runs_on() { # pod
  case $1 in b*) holds "$1" | sed 's/ cpus=[^ ]*//' ;; *) holds "$1" ;; esac
}
# Every container's CPUs, sampled again and again for `seconds` of wall time (each sample asks kubelet
# and the kernel, a few seconds on the guest): prints the samples that differ from the first.
cpusets_steady() { # seconds pods...
  seconds=$1
  shift
  first=$(for pod in "$@"; do runs_on "$pod"; done)
  start=$(date +%s)
  samples=0
  while [ $(($(date +%s) - start)) -lt "$seconds" ] || [ "$samples" -lt 3 ]; do
    now=$(for pod in "$@"; do runs_on "$pod"; done)
    samples=$((samples + 1))
    [ "$now" = "$first" ] || { echo "changed after $(($(date +%s) - start)) s:"; echo "$first"; echo "$now"; return 1; }
    sleep 1
  done
  echo "$samples samples over $(($(date +%s) - start)) s, every one the same"
}

step "the node: containerd 2.4 and kubelet 1.35 with its static CPU and memory managers, straight to containerd (systemd driver)"
modprobe dummy 2>/dev/null || true
ip link add vri0 type dummy && ip addr add 10.254.0.1/24 dev vri0 && ip link set vri0 up &&
  ip route add default dev vri0 || fail "the dummy interface"
install_containerd_and_kubelet
mkdir -p $manifests
# The static memory policy reserves on NUMA node 0 what systemReserved, kubeReserved and evictionHard
# hold back (256 + 64 + 100 MiB), as kubelet requires.
kubelet_static() {
  sed -i -e 's|^cpuManagerPolicy:.*|cpuManagerPolicy: static|' -e 's|^memoryManagerPolicy:.*|memoryManagerPolicy: Static|' \
    -e 's|^containerRuntimeEndpoint:.*|containerRuntimeEndpoint: unix:///run/containerd/containerd.sock|' \
    /etc/kubernetes/kubelet.yaml
  grep -q '^reservedMemory:' /etc/kubernetes/kubelet.yaml ||
    echo 'reservedMemory: [{numaNode: 0, limits: {memory: 420Mi}}]' >> /etc/kubernetes/kubelet.yaml
}
cp "$here/kubelet/config.yaml" /etc/kubernetes/kubelet.yaml
kubelet_static
kubelet_unit "standalone (static pods)" --hostname-override=$node --node-ip=10.254.0.1 --v=2
kubelet_started "$(date '+%Y-%m-%d %H:%M:%S')"

step "kubelet's static policies place a Guaranteed pod on an exclusive CPU and its memory, a Burstable one on the default set"
manifest g1 1
manifest b1 250m
for pod in g1 b1; do wait_for 300 "$pod running ($(kubelet_view $pod))" running $pod; done
g1_uid=$(pods_json | jq -r --arg p "g1-$node" '.items[] | select(.metadata.name == $p) | .metadata.uid')
wait_for 60 "kubelet's checkpoint holding g1" sh -c "jq -e --arg u '$g1_uid' '.entries[\$u].app' $state"
g=$(jq -r --arg u "$g1_uid" '.entries[$u].app' $state)
default=$(jq -r .defaultCpuSet $state)
holds g1 > /tmp/kubelets.txt
holds b1 >> /tmp/kubelets.txt
cat /tmp/kubelets.txt
echo "kubelet's checkpoint: $(cat $state)"
wait_for 60 "kubelet's memory checkpoint holding g1" sh -c "jq -e --arg u '$g1_uid' '.entries[\$u].app' $memory_state"
echo "kubelet's memory checkpoint: $(cat $memory_state)"
grep -q "^g1 .* cpus=$g effective=$g " /tmp/kubelets.txt || fail "g1 is not on kubelet's CPU $g"
grep -q "^b1 .* effective=$default " /tmp/kubelets.txt || fail "b1 is not on kubelet's default set $default"

step "VRI's package installed on it: vrid refuses to start while kubelet's CPU manager holds the node, and names the steps"
deb=$(ls "$GUEST_IN"/package/vri_*.deb)
dpkg -i "$deb" > /tmp/dpkg.out 2>&1 || echo "dpkg -i: $(tail -1 /tmp/dpkg.out)"
refusal="kubelet's CPU manager holds this node: its checkpoint $state says policy \"static\""
refused_in_journal() { journalctl -u vrid -o cat | grep -qF "$refusal"; }
wait_for 120 "vrid's refusal in its journal" refused_in_journal
! timeout 10 /usr/bin/vrictl nodeinfo > /dev/null 2>&1 || fail "vrid serves beside kubelet's static CPU manager"
# Refused with the configuration's exit status, which the unit does not restart.
restarts=$(systemctl show -p NRestarts --value vrid)
sleep 5
[ "$(systemctl show -p NRestarts --value vrid)" = "$restarts" ] ||
  fail "systemd keeps starting the refused vrid ($restarts restarts, then $(systemctl show -p NRestarts --value vrid))"
[ "$(systemctl show -p ExecMainStatus --value vrid)" = 78 ] ||
  fail "vrid's refusal exited $(systemctl show -p ExecMainStatus --value vrid), not 78"
journalctl -u vrid -o cat | grep -o 'To take the node over.*' | head -1

step "the takeover as docs/operating.md has it: kubelet stopped, its policies none, its checkpoints removed, vrid started, kubelet through the shim"
unit stop kubelet
sed -i -e 's|^cpuManagerPolicy:.*|cpuManagerPolicy: none|' -e 's|^memoryManagerPolicy:.*|memoryManagerPolicy: None|' \
  /etc/kubernetes/kubelet.yaml
vrid_with systemd
set_conf pin_guaranteed_memory true  # as kubelet's static memory policy binds a Guaranteed pod's memory
rm -f /var/lib/kubelet/cpu_manager_state /var/lib/kubelet/memory_manager_state
dpkg --configure -a > /tmp/dpkg.out 2>&1 || { cat /tmp/dpkg.out; fail "dpkg --configure -a"; }
systemctl reset-failed vrid
unit restart vrid
wait_for 120 "vrid" vrictl nodeinfo
journalctl -u vrid -o cat | grep -q "kubelet_config /etc/kubernetes/kubelet.yaml agrees" ||
  fail "vrid did not check kubelet's configuration"
way_in shim
placer_started shim
kubelet_started "$(date '+%Y-%m-%d %H:%M:%S')"

step "every container kept its id, its CPUs and its memory nodes; the ledger holds what kubelet had assigned"
wait_for 120 "vrid holding g1" sh -c "vrictl list --pods | grep -q 'g1-$node'"
for pod in g1 b1; do wait_for 300 "kubelet reporting $pod running ($(kubelet_view $pod))" running $pod; done
holds g1 > /tmp/vris.txt
holds b1 >> /tmp/vris.txt
cat /tmp/vris.txt
# With cpuset partitions (6.7+) a shared container holds the wide set VRI writes; its effective set is the same.
sed 's/ cpus=[^ ]*//' /tmp/kubelets.txt > /tmp/a.txt
sed 's/ cpus=[^ ]*//' /tmp/vris.txt > /tmp/b.txt
diff /tmp/a.txt /tmp/b.txt || fail "a container moved or was recreated"
grep -q "^g1 .* cpus=$g " /tmp/vris.txt || fail "g1's cpuset.cpus is no longer $g"
[ "$(vri_exclusive g1)" = "$g" ] || fail "vrid's ledger holds $(vri_exclusive g1) for g1, not CPU $g: $(vrictl list --pods)"
[ -z "$(vri_exclusive b1)" ] || fail "vrid's ledger holds exclusive CPUs for b1: $(vri_exclusive b1)"
[ "$(shared_pool)" = "$default" ] || fail "VRI's shared pool $(shared_pool) is not kubelet's default set $default"
vrictl list --pods
quiet_reconcile
echo "the next reconcile repaired nothing"

step "a new Guaranteed pod is placed by VRI"
manifest g3 1
wait_for 300 "g3 running ($(kubelet_view g3))" running g3
holds g3
g3=$(holds g3 | sed -n 's/.* effective=\([^ ]*\) .*/\1/p')
case "$g3" in *,*|*-*|"") fail "g3 is not on one CPU: $g3";; esac
[ "$g3" != "$g" ] && [ "$g3" != 0 ] || fail "g3 on CPU $g3: g1's or the reserved one"
[ "$(vri_exclusive g3)" = "$g3" ] || fail "vrid's ledger holds $(vri_exclusive g3) for g3, not CPU $g3"

step "the hand-back as docs/operating.md has it: kubelet stopped and set to its static policies, vrictl handback, VRI removed, kubelet started on VRI's checkpoints"
holds g1 > /tmp/before.txt
runs_on b1 >> /tmp/before.txt
holds g3 >> /tmp/before.txt
unit stop kubelet
kubelet_static
vrictl --socket /run/vri/admin.sock handback --dry-run > /tmp/handback.txt || fail "vrictl handback --dry-run: $(cat /tmp/handback.txt)"
cat /tmp/handback.txt
[ ! -e $state ] || grep -q '"policyName":"none"' $state || fail "the dry run wrote $state"
[ ! -e $memory_state ] || grep -q '"policyName":"None"' $memory_state || fail "the dry run wrote $memory_state"
vrictl --socket /run/vri/admin.sock handback > /tmp/handback.txt || fail "vrictl handback: $(cat /tmp/handback.txt)"
cat /tmp/handback.txt
echo "kubelet's checkpoint from VRI: $(cat $state)"
echo "kubelet's memory checkpoint from VRI: $(cat $memory_state)"
g3_uid=$(pods_json 2> /dev/null | jq -r --arg p "g3-$node" '.items[] | select(.metadata.name == $p) | .metadata.uid' || true)
jq -e --arg u "$g1_uid" --arg c "$g" '.policyName == "static" and .entries[$u].app == $c' $state > /dev/null ||
  fail "$state does not hold g1 on $g"
[ "$(jq '.entries | length' $state)" = 2 ] || fail "$state holds $(jq '.entries | length' $state) pods, not g1 and g3"
# The Guaranteed pods' containers with their 32 MiB, g1's on node 0 where kubelet had bound it, g3's
# where VRI did; the Burstable one has none.
jq -e --arg u "$g1_uid" '.policyName == "Static" and .entries[$u].app == [{"numaAffinity":[0],"type":"memory","size":33554432}]
  and (.entries | length) == 2 and ([.machineState[].memoryMap.memory.reserved] | add) == 67108864' $memory_state > /dev/null ||
  fail "$memory_state does not hold g1 and g3 with their memory"
apt-get purge -y -q vri > /tmp/purge.out 2>&1 || { cat /tmp/purge.out; fail "apt-get purge vri"; }
since=$(date '+%Y-%m-%d %H:%M:%S')
kubelet_started "$since"
wait_for 120 "kubelet's CPU manager restoring VRI's checkpoint" sh -c \
  "journalctl -u kubelet --since '$since' -o cat | grep -q 'restored state from checkpoint.*CPUManager'"
echo "kubelet: $(journalctl -u kubelet --since "$since" -o cat | grep -m1 'restored state from checkpoint.*CPUManager' | cut -c1-160)"

step "kubelet keeps every container on its CPUs over two of its reconcile periods (10 s)"
holds b1  # the shared container: cpuset.cpus as kubelet's first reconcile left it
for pod in g1 b1 g3; do wait_for 120 "kubelet reporting $pod running" running $pod; done
cpusets_steady 25 g1 b1 g3 || fail "kubelet moved a container"
holds g1 > /tmp/after.txt
runs_on b1 >> /tmp/after.txt
holds g3 >> /tmp/after.txt
cat /tmp/after.txt
diff /tmp/before.txt /tmp/after.txt || fail "a container changed hands with its cpuset or its id changed"
jq -e --arg u "$g1_uid" --arg c "$g" '.entries[$u].app == $c' $state > /dev/null ||
  fail "kubelet's own checkpoint lost g1: $(cat $state)"
jq -e --arg u "$g1_uid" '.entries[$u].app[0].size == 33554432' $memory_state > /dev/null ||
  fail "kubelet's own memory checkpoint lost g1: $(cat $memory_state)"

step "kubelet's static policies place a new Guaranteed pod on the CPU left, with its memory in the same books"
manifest g5 1
wait_for 300 "g5 running ($(kubelet_view g5))" running g5
holds g5
g5=$(holds g5 | sed -n 's/.* cpus=\([^ ]*\) .*/\1/p')
case ",$g,$g3,0," in *",$g5,"*) fail "kubelet put g5 on $g5, a CPU taken or reserved";; esac
g5_uid=$(pods_json | jq -r --arg p "g5-$node" '.items[] | select(.metadata.name == $p) | .metadata.uid')
wait_for 60 "kubelet's memory checkpoint holding g5" sh -c "jq -e --arg u '$g5_uid' '.entries[\$u].app' $memory_state"
jq -e '([.machineState[].memoryMap.memory.reserved] | add) == 100663296' $memory_state > /dev/null ||
  fail "kubelet's memory books do not hold g1, g3 and g5: $(cat $memory_state)"
steps_done takeover

#!/bin/sh
# kubelet itself drives VRI, both ways in: a standalone kubelet 1.35 (static pods, no API server) with
# containerd 2.4 and Debian's runc, beside libvirt under machined, on a systemd node. The same
# scenarios run twice in one boot: first kubelet talking to containerd directly, with vri-nri-plugin
# on containerd's NRI and VRI required (containerd's, and so kubelet's, systemd cgroup driver), then
# kubelet talking to vri-cri-shim in front of containerd (cgroupfs): each way in and each driver
# once. The steps that differ between the ways in (the placer restarted, the placer away) say so.
# Each placement is checked as the kernel enforces it, as the process runs, as containerd reports
# it, as kubelet's read-only /pods shows the pod, and as vrictl lists it.
# The churn's kill moments come from a seed, printed: guest.seed=S on the kernel's command line
# (testbed.sh's GUEST_ARGS) replays a run; without it the seed is 61, the test command's.
# guest-packages: systemd-container,libvirt-daemon-system,qemu-system-x86,apparmor,runc,curl,jq
# guest-package-depends: yes
# guest-peers: kubernetes,containerd-2.4
# guest-smp: 4
# guest-mem: 6144
# guest-timeout: 2700
set -eu
cd /
fail() {
  step_failed "$*"
  echo "kubelet: FAIL: $*"
  journalctl -u kubelet --no-pager -o short-monotonic | grep -v ' I[0-9]' | tail -n 40
  journalctl -u vrid -u vri-cri-shim -u vri-nri-plugin -u containerd --no-pager -o short-monotonic | tail -n 60
  exit 1
}
uuid_prefix=7c2e1d3f-8a4b-4d5e-9f60-
. "$(dirname "$0")/node_helpers.sh"
. "$(dirname "$0")/kubelet_node.sh"
fresh_node
here=$(dirname "$0")
manifests=/etc/kubernetes/manifests
node=v2guest
pods_json() { curl -sf --max-time 10 http://127.0.0.1:10265/pods; }
# kubelet's view of a pod's container: "<state> <containerd id> <restarts>", or its waiting reason and message.
kubelet_view() { # pod container
  pods_json | jq -r --arg pod "$1-$node" --arg c "$2" '(.items // [])[] | select(.metadata.name == $pod)
    | (.status.containerStatuses // [])[] | select(.name == $c)
    | if .state.running then "running \(.containerID | sub("containerd://"; "")) \(.restartCount)"
      elif .state.waiting then "waiting \(.state.waiting.reason): \(.state.waiting.message // "")"
      else "terminated \(.state.terminated.reason)" end'
}

step "the node: a dummy interface for kubelet's node IP (no network here), containerd 2.4, kubelet 1.35"
modprobe dummy 2>/dev/null || true
ip link add vri0 type dummy && ip addr add 10.254.0.1/24 dev vri0 && ip link set vri0 up &&
  ip route add default dev vri0 || fail "the dummy interface"
install_containerd_and_kubelet
mkdir -p $manifests
kubelet_unit "standalone (static pods)" --hostname-override=$node --node-ip=10.254.0.1 --v=2

step "libvirtd's first start (its QEMU capability probe)"
wait_for 600 "libvirtd" v version

step "VRI's package"
deb=$(ls "$GUEST_IN"/package/vri_*.deb)
dpkg -i "$deb" > /tmp/dpkg.out 2>&1 || { cat /tmp/dpkg.out; fail "dpkg -i"; }
scale_hook_deadline
# vrid holds kubelet's settings too, and checks them against kubelet's own file.
cp "$here/kubelet/config.yaml" /etc/kubernetes/kubelet.yaml

# The updates the placer's pool follower made since then (one log line each).
placer_updates_since() { journalctl -u $placer --since "$1" -o cat | grep -c 'in the runtime too' || true; }

# Static pods: host network (no CNI here), the test image, never pulled.
manifest() { # name qos(guaranteed|burstable) cpu [extra container yaml]
  case $2 in
    guaranteed) resources="requests: {cpu: \"$3\", memory: 32Mi}
        limits: {cpu: \"$3\", memory: 32Mi}" ;;
    burstable) resources="requests: {cpu: \"$3\", memory: 16Mi}" ;;
  esac
  cat > "/tmp/$1.yaml" <<EOF2
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
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
# A Guaranteed pod with 32 MiB of 2 MiB pages (kubelet reports the guest's in its capacity).
hugepage_pod() { # name
  cat > "/tmp/$1.yaml" <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
    - {name: app, image: localhost/vri/pause:1.0, imagePullPolicy: Never, command: ["/sleeper"],
       resources: {requests: {cpu: "1", memory: 32Mi, hugepages-2Mi: 32Mi}, limits: {cpu: "1", memory: 32Mi, hugepages-2Mi: 32Mi}}}
EOF2
  mv "/tmp/$1.yaml" "$manifests/$1.yaml"
}
# A shared VM whose memory is 2 MiB pages of one NUMA node: bound by its cgroup's cpuset.mems
# (`restrictive`; `strict` has QEMU bind it too, and QEMU under the guest's AppArmor cannot read the nodes).
hugepage_vm() { # name node MiB uuid-tail
  cat > "/tmp/$1.xml" <<XML
<domain type='qemu'><name>$1</name><uuid>${uuid_prefix}00000000000$4</uuid>
<memory unit='MiB'>$3</memory><vcpu placement='static'>1</vcpu>
<memoryBacking><hugepages><page size='2048' unit='KiB'/></hugepages></memoryBacking>
<numatune><memory mode='restrictive' nodeset='$2'/></numatune>
<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='shared'/></vri:domain></metadata>
<os><type arch='x86_64' machine='pc'>hvm</type></os><on_poweroff>destroy</on_poweroff>
<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices></domain>
XML
  v define "/tmp/$1.xml" >/dev/null || fail "virsh define $1"
}
running() { kubelet_view "$1" app | grep -q '^running '; }
container_of() { kubelet_view "$1" app | awk '$1 == "running" {print $2}'; }
views() { container_views "$(container_of "$1")"; }  # pod
agreed() { container_agreed "$(container_of "$1")"; }  # pod
on_cpus() { [ "$(agreed "$1")" = "$2" ]; }
# Waits (300 s) until kubelet shows the pod's app waiting with a message that matches, and prints it.
refused() { # pod pattern what
  for i in $(seq 1 300); do
    refusal=$(kubelet_view "$1" app | grep "$2" || true)
    [ -n "$refusal" ] && { echo "kubelet: $refusal"; return 0; }
    sleep 1
  done
  fail "kubelet never showed $3 for $1: $(kubelet_view "$1" app)"
}

run_scenarios() { # driver way(nri|shim)
  driver=$1 way=$2 pass="$1, $2"
  way_in "$way"
  step "[$pass] vrid, $placer and kubelet; kubelet's driver from RuntimeConfig"
  containerd_with "$driver" "$way"
  containerd_restarted
  vrid_with "$driver"
  start_vrid_with_a_new_ledger
  journalctl -u vrid -o cat | grep -q "kubelet_config /etc/kubernetes/kubelet.yaml agrees" ||
    fail "vrid did not check kubelet's configuration"
  placer_started "$way"
  since=$(date '+%Y-%m-%d %H:%M:%S')
  unit restart kubelet
  wait_for 300 "kubelet's healthz" curl -sf --max-time 5 http://127.0.0.1:10258/healthz
  journalctl -u kubelet --since "$since" -o cat | grep -q "received from the CRI runtime\" cgroupDriver=\"$driver\"" ||
    fail "kubelet did not take the $driver driver from RuntimeConfig"

  step "[$pass] a Guaranteed pod runs on its exclusive CPU, a Burstable one on the shared pool"
  manifest g1 guaranteed 1
  manifest b1 burstable 250m
  for pod in g1 b1; do wait_for 300 "$pod running (kubelet: $(kubelet_view $pod app))" running $pod; done
  g=$(agreed g1)
  echo "g1: $(views g1); kubelet: $(kubelet_view g1 app)"
  case "$g" in DISAGREE*|*,*|*-*|"") fail "g1 is not on one CPU: $g";; esac
  vrictl list --pods | grep "g1-$node" | grep -q "$g" || fail "vrictl does not show g1 on CPU $g: $(vrictl list --pods)"
  shared=$(shared_pool)
  wait_for 30 "b1 on the shared pool $shared" on_cpus b1 "$shared"
  echo "b1: $(views b1); the shared pool: $shared"
  case ",$shared," in *",$g,"*) fail "the shared pool $shared holds g1's CPU $g";; esac

  step "[$pass] a dedicated VM started with virsh takes a CPU; the Burstable pod is narrowed"
  define ded-a 2 1  # two dedicated vCPUs: with g1, every CPU but the reserved one is taken
  v start --paused ded-a || fail "virsh start ded-a"
  a=$(vm_cpu ded-a)
  shared=$(shared_pool)
  [ "$a" != "$g" ] || fail "ded-a shares g1's CPU $g"
  wait_for 30 "b1 narrowed to $shared" on_cpus b1 "$shared"
  echo "ded-a on CPU $a; b1: $(views b1)"
  on_cpus g1 "$g" || fail "g1 moved: $(views g1)"

  step "[$pass] steady: $placer sends no more updates"
  # What could start updates on a steady node is a loop: an update the runtime writes to a cgroup, a
  # reconcile that repairs it, a pool event that brings another update. Counted over two reconciles
  # that each repair nothing, after the last update the VM's grant caused: no update.
  quiet_reconcile
  quiet=$(date '+%Y-%m-%d %H:%M:%S')
  quiet_reconcile
  quiet_reconcile
  n=$(placer_updates_since "$quiet")
  [ "$n" = 0 ] || fail "$placer sent $n updates on a steady node"
  echo "no update over two reconciles that repaired nothing"

  step "[$pass] a pod kubelet admits but VRI's pool cannot hold: refused, backed off, created once the VM is gone"
  manifest g2 guaranteed 1
  refused g2 'vri: ' "VRI's refusal"
  refused_at=$(date +%s)
  v destroy ded-a >/dev/null
  wait_for 300 "g2 created after ded-a left" running g2
  echo "g2 running $(( $(date +%s) - refused_at )) s after the VM was destroyed: $(views g2)"
  g2=$(agreed g2)
  [ "$g2" != "$g" ] || fail "g2 on g1's CPU"

  step "[$pass] a crashed container is restarted by kubelet under a new id on its CPU; garbage collection releases nothing it holds"
  # g2 goes now, for the sidecar's CPU below: kubelet removes its sandbox, and vrid releases it, at the
  # same garbage collection that this step waits for.
  rm "$manifests/g2.yaml"
  first=$(container_of g1)
  kill_app() { pid=$(direct_pid "$1"); kill -9 "$pid" || fail "kill $pid"; }
  kill_app "$first"
  for i in $(seq 1 120); do second=$(container_of g1); [ -n "$second" ] && [ "$second" != "$first" ] && break; sleep 1; done
  [ -n "$second" ] && [ "$second" != "$first" ] || fail "kubelet did not restart g1: $(kubelet_view g1 app)"
  on_cpus g1 "$g" || fail "g1's restarted container is not on CPU $g: $(views g1)"
  kill_app "$second"
  for i in $(seq 1 180); do third=$(container_of g1); [ -n "$third" ] && [ "$third" != "$second" ] && break; sleep 1; done
  [ -n "$third" ] && [ "$third" != "$second" ] || fail "kubelet did not restart g1 twice: $(kubelet_view g1 app)"
  on_cpus g1 "$g" || fail "g1's second restart is not on CPU $g: $(views g1)"
  echo "g1: $first -> $second -> $third, restarts $(kubelet_view g1 app | awk '{print $3}'), on CPU $g"
  # kubelet keeps one dead container per name: the first goes at the next collection (every minute).
  # The second may go with it: a collection that runs while the third is only created, not yet
  # running, counts that one as the dead container to keep. Which dead ones stay is kubelet's
  # business; what is checked is that their removal takes nothing from g1.
  wait_for 150 "kubelet collecting g1's first container" container_gone "$first"
  if direct ps | grep -q "^$(echo "$second" | cut -c1-13) "; then kept="the second kept"; else kept="the second collected too"; fi
  echo "kubelet collected $first; $kept"
  on_cpus g1 "$g" || fail "g1 moved after garbage collection: $(views g1)"
  vrictl list --pods | grep "g1-$node" | grep -q "$g" || fail "vrid no longer holds CPU $g for g1: $(vrictl list --pods)"

  step "[$pass] a sidecar keeps its CPU; the app takes the init container's once it exits"
  wait_for 300 "vrid releasing g2" sh -c "! vrictl list --pods | grep -q 'g2-$node'"
  cat > /tmp/s1.yaml <<EOF2
apiVersion: v1
kind: Pod
metadata: {name: s1, namespace: default}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  initContainers:
    - {name: side, restartPolicy: Always, image: localhost/vri/pause:1.0, imagePullPolicy: Never, command: ["/sleeper"],
       resources: {requests: {cpu: "1", memory: 16Mi}, limits: {cpu: "1", memory: 16Mi}}}
    - {name: init, image: localhost/vri/pause:1.0, imagePullPolicy: Never, command: ["/sleeper", "exit", "0"],
       resources: {requests: {cpu: "1", memory: 16Mi}, limits: {cpu: "1", memory: 16Mi}}}
  containers:
    - {name: app, image: localhost/vri/pause:1.0, imagePullPolicy: Never, command: ["/sleeper"],
       resources: {requests: {cpu: "1", memory: 16Mi}, limits: {cpu: "1", memory: 16Mi}}}
EOF2
  mv /tmp/s1.yaml $manifests/s1.yaml
  wait_for 300 "s1's app running" running s1
  side=$(direct ps | awk '$2 == "s1-'$node'" && $3 == "side" && $4 == "RUNNING" {print $5}')
  init=$(direct ps | awk '$2 == "s1-'$node'" && $3 == "init" {print $5}')
  app=$(agreed s1)
  echo "s1: side on $side, init ran on $init, app on $app"
  [ -n "$side" ] && [ -n "$init" ] || fail "s1's containers: $(direct ps)"
  [ "$app" = "$init" ] || fail "s1's app is on $app, not on the init container's CPU $init"
  [ "$side" != "$app" ] || fail "s1's sidecar shares the app's CPU $app"
  case "$side$app" in *,*|*-*) fail "s1's containers are not on one CPU each: side $side, app $app";; esac

  step "[$pass] kubelet, $placer, vrid and containerd restarted in turn: nothing moves, nothing is recreated"
  placements() { for pod in g1 b1 s1; do echo "$pod $(container_of $pod) $(agreed $pod)"; done; }
  placements > /tmp/placed.txt
  cat /tmp/placed.txt
  for unit in kubelet $placer vrid containerd; do
    since=$(date '+%Y-%m-%d %H:%M:%S')
    unit restart $unit
    case $unit in
      kubelet) wait_for 300 "kubelet's healthz" curl -sf --max-time 5 http://127.0.0.1:10258/healthz ;;
      $placer) placer_ready_since "$since" ;;
      vrid) wait_for 120 "vrid" vrictl nodeinfo ;;
      containerd) wait_for 120 "containerd's CRI" sh -c "ctr plugins ls | grep -q 'io.containerd.grpc.v1 *cri .*ok'"
        [ "$way" = shim ] || placer_ready_since "$since" ;;
    esac
    # Settled when kubelet runs all three again and vrid's next reconcile, after the restart, repairs nothing.
    for pod in g1 b1 s1; do wait_for 120 "$pod running after restarting $unit" running $pod; done
    quiet_reconcile
    placements > /tmp/now.txt
    diff -u /tmp/placed.txt /tmp/now.txt || fail "restarting $unit moved or recreated a container"
    echo "after restarting $unit: the same"
  done

  step "[$pass] vrid down while kubelet starts a pod: its sandbox refused, nothing is created, the pod starts once vrid is back"
  unit stop vrid
  down=$(date '+%Y-%m-%d %H:%M:%S')
  manifest p3 burstable 100m
  # Counted, not timed: kubelet's attempt at p3's sandbox, refused for want of vrid, is the event
  # that would have made one.
  p3_refusals() { journalctl -u kubelet --since "$down" -o cat | grep '"Failed to create sandbox for pod"' | grep "pod=\"default/p3-$node\""; }
  p3_refused() { p3_refusals | grep -q "did not answer RunPodSandbox for pod default/p3-$node"; }
  wait_for 180 "kubelet's attempt at p3's sandbox, refused" p3_refused
  direct pods | grep -q " p3-$node " && fail "a sandbox for p3 was made without vrid: $(direct pods)"
  echo "kubelet's attempts at p3's sandbox: $(p3_refusals | wc -l), refused ($(p3_refusals | head -1 | grep -o '[a-z-]*: vrid did not answer RunPodSandbox[^;]*')); no sandbox"
  unit start vrid
  back=$(date +%s)
  for i in $(seq 1 200); do
    running p3 && break
    [ $((i % 20)) = 1 ] && echo "$((i - 1)) s after vrid's return: kubelet shows p3's app as '$(kubelet_view p3 app)'; sandboxes: $(direct pods | awk '$2 == "p3-'$node'" {print $1, $4}')"
    sleep 1
  done
  running p3 || fail "p3 did not start within 200 s of vrid's return"
  echo "p3 running $(( $(date +%s) - back )) s after vrid returned: $(views p3)"
  [ "$(agreed p3)" = "$(shared_pool)" ] || fail "p3 is not on the shared pool $(shared_pool): $(views p3)"
  pods="g1 b1 s1 p3"

  if [ "$way" = nri ]; then
    step "[$pass] the plugin down while kubelet starts a pod: VRI required, no container is created; it starts once the plugin is back"
    unit stop vri-nri-plugin
    manifest p4 burstable 100m
    refused p4 'required plugin .vri. not present' "containerd's refusal"
    since=$(date '+%Y-%m-%d %H:%M:%S')
    unit start vri-nri-plugin
    back=$(date +%s)
    placer_ready_since "$since"
    wait_for 300 "p4 running once the plugin is back" running p4
    echo "p4 running $(( $(date +%s) - back )) s after the plugin started: $(views p4)"
    [ "$(agreed p4)" = "$(shared_pool)" ] || fail "p4 is not on the shared pool $(shared_pool): $(views p4)"
    pods="$pods p4"
  fi

  step "[$pass] manifests removed: kubelet deletes the pods, vrid releases them once kubelet is done, before their sandboxes go"
  # All at once: kubelet removes sandboxes at its garbage collection (every minute), so one by one
  # would cost a minute each. Each pod's times are taken as it goes. $placer releases a pod once
  # kubelet has stopped its sandbox and no longer lists it on its pod-resources socket: before the
  # sandbox's removal, which was the release before.
  removed_at=$(date +%s)
  for pod in $pods; do rm "$manifests/$pod.yaml"; done
  pending=$pods released="" gone="" early=""
  while [ -n "$pending" ] && [ $(( $(date +%s) - removed_at )) -lt 300 ]; do
    # The runtime's list first: the shim releases a pod right after containerd confirms its sandbox's
    # removal, so a pod whose sandbox is gone may be held for that moment, never longer than a few seconds.
    sandboxes=$(direct pods) || fail "ListPodSandbox"
    sandboxes=$(echo "$sandboxes" | awk '{print $2}')
    listed=$(vrictl list --pods) || fail "vrictl list --pods"
    still=""
    for pod in $pending; do
      t=$(( $(date +%s) - removed_at ))
      held=no; echo "$listed" | grep -q "$pod-$node" && held=yes
      case " $released " in *" $pod="*) ;; *) [ $held = no ] && released="$released $pod=$t";; esac
      if echo "$sandboxes" | grep -qx "$pod-$node"; then
        still="$still $pod"
        continue
      fi
      case " $gone " in *" $pod="*) ;; *) gone="$gone $pod=$t";; esac
      if [ $held = yes ]; then
        since=$(echo "$gone" | tr ' ' '\n' | sed -n "s/^$pod=//p")
        [ $((t - since)) -le 5 ] || fail "kubelet removed $pod's sandbox $((t - since)) s ago but vrid still holds it: $listed"
        still="$still $pod"
      fi
    done
    pending=${still# }
    [ -n "$pending" ] && sleep 1
  done
  [ -z "$pending" ] || fail "kubelet did not remove the sandboxes of $pending within 300 s of their manifests"
  for pod in $pods; do
    r=$(echo "$released" | tr ' ' '\n' | sed -n "s/^$pod=//p"); s=$(echo "$gone" | tr ' ' '\n' | sed -n "s/^$pod=//p")
    echo "$pod: released by vrid $r s after its manifest went, its sandbox removed $s s after"
    if [ "$r" -lt "$s" ]; then early="$early $pod"; fi
  done
  # Released on kubelet's stop, before the sandbox went: every pod, unless kubelet stopped one only
  # at its collection (not seen here; the removal's own release then took it, checked above).
  # When kubelet's collection removes the sandboxes within one poll of their stop, the poll sees both at
  # once; the placer's own line says which release came from kubelet's stop, which precedes the removal.
  echo "released before their sandboxes' removal, as polled:${early:- none (one poll saw both)}"
  journalctl -u $placer --since "@$removed_at" -o cat | grep -q "released: kubelet stopped sandbox" ||
    fail "$placer released no pod on kubelet's stop: $(journalctl -u $placer --since "@$removed_at" -o cat | tail -n 20)"
  quiet_reconcile
  # Pod cgroups: kubepods[-qos]-pod<uid>.slice (systemd), pod<uid> (cgroupfs).
  leftover=$(find $cg/kubepods* -type d \( -name '*-pod[0-9a-f]*.slice' -o -name 'pod[0-9a-f]*' \) | head -3)
  [ -z "$leftover" ] || fail "pod cgroups left behind: $leftover"
  v undefine ded-a >/dev/null

  if [ "$way" = nri ]; then
    step "[$pass] churn under faults: vrid SIGKILLed 5 times and daemon-reload every 2 s while kubelet makes and deletes pods and a VM starts and stops; after each kill every view agrees, and nothing is left"
    define churn-vm 1 3
    # The storm pauses while /tmp/storm.pause exists (a VM's last try to start, between reloads).
    : > /tmp/storm.on
    ( while [ -e /tmp/storm.on ]; do [ -e /tmp/storm.pause ] || systemctl daemon-reload; sleep 2; done ) &
    storm=$!
    reloads_since=$(date '+%Y-%m-%d %H:%M:%S')
    # Agreement is waited for: a reload may undo a write to a slice kubelet made, and vrid's next
    # reconcile (every 5 s here) writes it again.
    one_cpu() { case "$(agreed "$1")" in DISAGREE*|*,*|*-*|"") return 1;; esac; }
    on_shared_pool() { on_cpus "$1" "$(shared_pool)"; }
    burstable_allowed_is_shared() {
      allowed=$(systemctl show -p AllowedCPUs --value kubepods-burstable.slice | tr ' ' ',')
      [ -z "$allowed" ] || [ "$allowed" = "$(shared_pool)" ]
    }
    vm_views() { # name: "kernel pin ledger", each the CPU of vCPU 0
      pid=$(cat "/run/libvirt/qemu/$1.pid" 2>/dev/null) || return 1
      scope=$(sed -n 's|^0::\(.*\)/libvirt/emulator$|\1|p' "/proc/$pid/cgroup")
      echo "$(cat "$cg$scope/libvirt/vcpu0/cpuset.cpus.effective" 2>/dev/null)" \
        "$(v vcpupin "$1" | awk '$1 == "0" {print $2}')" \
        "$(vrictl dominfo "$1" | sed -n 's/^  vcpu0: *CPU \([0-9]*\).*/\1/p')"
    }
    # What the hook said, without libvirt's account of how it ran it.
    hook_said() { grep . "$1" | tail -1 | sed 's/.*unexpected exit status [0-9]*: //' | cut -c1-300; }
    vm_agrees() { set -- $(vm_views "$1"); [ -n "$1" ] && [ "$1" = "$2" ] && [ "$1" = "$3" ]; }
    # Each kill lands 0-3 s after the round's pods and VM start, at a moment the seed picks: a
    # different point of kubelet's and libvirt's work each round, the same ones for the same seed.
    seed=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^guest\.seed=//p')
    seed=${seed:-61}
    kill_after_ms=$(awk -v seed="$seed" 'BEGIN { srand(seed); for (i = 0; i < 5; i++) printf "%d ", rand() * 3000 }')
    echo "seed $seed (guest.seed=S replays another): kills ${kill_after_ms}ms after each round's start"
    for round in 1 2 3 4 5; do
      manifest c$round guaranteed 1
      manifest d$round burstable 100m
      v start --paused churn-vm > /tmp/churn-vm.out 2>&1 &
      starting=$!
      ms=$(echo $kill_after_ms | cut -d' ' -f$round)
      sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
      main_pid=$(systemctl show -p MainPID --value vrid)
      systemctl kill -s KILL vrid
      wait_for 120 "vrid restarted after kill $round" sh -c \
        "[ \"\$(systemctl show -p MainPID --value vrid)\" != '$main_pid' ] && /usr/bin/vrictl nodeinfo > /dev/null"
      # A start whose hook found vrid gone, or whose decision systemd did not confirm in time under
      # the storm, is refused (the hook fails closed); it is started again with vrid back, up to
      # three times under the storm and once more between two reloads.
      vm="started"
      if ! wait $starting; then
        vm="refused at first (the hook: $(hook_said /tmp/churn-vm.out))"
        for try in 1 2 3 4; do
          [ $try -lt 4 ] || { : > /tmp/storm.pause; sleep 3; }
          if v start --paused churn-vm > /tmp/churn-vm.out 2>&1; then vm="$vm, started at try $try"; break; fi
          echo "round $round, churn-vm's start $try: $(hook_said /tmp/churn-vm.out)"
          [ $try -lt 4 ] || fail "churn-vm does not start with vrid up: $(cat /tmp/churn-vm.out)"
          sleep 2
        done
        rm -f /tmp/storm.pause
      fi
      wait_for 300 "c$round running (kubelet: $(kubelet_view c$round app))" running c$round
      wait_for 300 "d$round running (kubelet: $(kubelet_view d$round app))" running d$round
      wait_for 60 "c$round on one CPU in every view ($(views c$round))" one_cpu c$round
      wait_for 60 "d$round on the shared pool $(shared_pool) ($(views d$round))" on_shared_pool d$round
      wait_for 60 "churn-vm's views to agree ($(vm_views churn-vm))" vm_agrees churn-vm
      wait_for 60 "systemd's AllowedCPUs for kubepods-burstable.slice to be the shared pool $(shared_pool)" \
        burstable_allowed_is_shared
      c=$(agreed c$round) shared=$(shared_pool) z=$(vm_views churn-vm | awk '{print $1}')
      case ",$shared," in *",$c,"*) fail "the shared pool $shared holds c$round's CPU $c";; esac
      case ",$shared," in *",$z,"*) fail "the shared pool $shared holds churn-vm's CPU $z";; esac
      [ "$z" != "$c" ] || fail "churn-vm shares c$round's CPU $c"
      echo "kill $round: churn-vm $vm; c$round on $c, churn-vm on $z (memory: $(vrictl dominfo churn-vm | sed -n 's/^Memory: *//p')), d$round on $shared"
      rm "$manifests/c$round.yaml" "$manifests/d$round.yaml"
      v destroy churn-vm > /dev/null || fail "virsh destroy churn-vm"
      # The stop gives the CPU back and the definition loses VRI's pins: the next start is placed afresh.
      wait_for 60 "churn-vm's definition without VRI's pins" sh -c \
        "! virsh -c qemu:///system dumpxml --inactive churn-vm | grep -q -e vcpupin -e numatune"
    done
    rm /tmp/storm.on
    wait $storm
    echo "daemon-reloads meanwhile: $(journalctl -u init.scope -b --since "$reloads_since" -o cat | grep -c '^Reloading' || true)"
    churn_sandboxes_gone() { ! direct pods | awk '{print $2}' | grep -q "^[cd][1-5]-$node\$"; }
    wait_for 300 "kubelet removing the churn's sandboxes" churn_sandboxes_gone
    wait_for 120 "vrid releasing the churn's pods" sh -c "! /usr/bin/vrictl list --pods | grep -q '[cd][1-5]-$node'"
    echo "the next reconcile: $(next_reconcile "$(vrid_cursor)")"  # may repair what a kill cut short
    quiet_reconcile
    leftover=$(find $cg/kubepods* -type d \( -name '*-pod[0-9a-f]*.slice' -o -name 'pod[0-9a-f]*' \) | head -3)
    [ -z "$leftover" ] || fail "pod cgroups left behind by the churn: $leftover"
    scopes=$(systemctl list-units --all --plain --no-legend 'cri-containerd-*.scope' 'machine-qemu*.scope' | awk '$3 != "inactive"' | head -3)
    [ -z "$scopes" ] || fail "scopes left behind by the churn: $scopes"
    pgrep -f qemu-system > /dev/null && fail "a QEMU left behind: $(pgrep -af qemu-system)"
    state=$(vrictl dominfo churn-vm 2>/dev/null | sed -n 's/^State: *//p')
    [ -z "$state" ] || fail "churn-vm is still in vrid's ledger ($state) after its destroy"
    v undefine churn-vm > /dev/null
    echo "after 5 kills under churn: nothing left; $(vrictl list | wc -l) lines in vrictl list"
  fi

  step "[$pass] a Guaranteed pod's 2 MiB pages on its CPU's node; a VM asking for that node's pages is refused by the hook; the other way round, both run"
  # The guest has 32 pages of 2 MiB on each node (kubelet reports 128Mi); hp asks for 16 of them.
  hugepage_pod hp
  wait_for 300 "hp running (kubelet: $(kubelet_view hp app))" running hp
  hp_cpu=$(agreed hp)
  case "$hp_cpu" in DISAGREE*|*,*|*-*|"") fail "hp is not on one CPU: $hp_cpu";; esac
  hp_node=$(ls -d /sys/devices/system/cpu/cpu$hp_cpu/node* | sed 's|.*/node||')
  dir=$(find $cg/kubepods* -type d \( -name "cri-containerd-$(container_of hp).scope" -o -name "$(container_of hp)" \) | head -1)
  [ "$(cat "$dir/cpuset.mems")" = "$hp_node" ] || fail "hp's memory is not bound to its CPU's node $hp_node: $(cat "$dir/cpuset.mems")"
  # runc wrote the container's limit and kubelet the pod's; VRI verifies both (quiet_reconcile's tree shows a difference).
  [ "$(cat "$dir/hugetlb.2MB.max")" = $((32 << 20)) ] || fail "hp's hugetlb.2MB.max is $(cat "$dir/hugetlb.2MB.max")"
  [ "$(cat "$dir/../hugetlb.2MB.max")" = $((32 << 20)) ] || fail "hp's pod hugetlb.2MB.max is $(cat "$dir/../hugetlb.2MB.max")"
  vrictl podinfo "default/hp-$node" | grep -q "mems $hp_node, 32 MiB of 2MiB pages" || fail "vrictl podinfo: $(vrictl podinfo "default/hp-$node")"
  if [ "$driver" = systemd ]; then
    # What systemd holds and what the files hold for kubepods and its QoS slices, twice a second, shown
    # when the check below fails.
    ( while :; do for u in kubepods.slice kubepods.slice/kubepods-besteffort.slice kubepods.slice/kubepods-burstable.slice; do
        echo "$(date +%T.%N | cut -c1-12) ${u#*/} file=$(cat $cg/$u/cpuset.cpus) systemd=$(systemctl show -p AllowedCPUs --value ${u#*/})"
      done; sleep 0.5; done > /tmp/qos-cpusets.log 2>&1 ) &
    watcher=$!
    # Who enables hugetlb down kubepods.slice is kubelet's and runc's cgroup code (each level it makes gets
    # every controller its parent offers); systemd 252 knows nothing of hugetlb and leaves it on.
    unit daemon-reload
    grep -qw hugetlb $cg/kubepods.slice/cgroup.subtree_control || fail "hugetlb gone from kubepods.slice after daemon-reload"
    [ "$(cat "$dir/hugetlb.2MB.max")" = $((32 << 20)) ] || fail "daemon-reload changed hp's hugetlb.2MB.max: $(cat "$dir/hugetlb.2MB.max")"
    echo "after daemon-reload: hugetlb still on in kubepods.slice, hp's limit $(cat "$dir/hugetlb.2MB.max")"
    # systemd's reload has been seen to write kubepods-besteffort.slice's cpuset from a record older than
    # VRI's last write (0-3 where VRI had 0,2-3, the file and AllowedCPUs alike); the reconcile after it
    # repairs that, and is shown with what systemd holds for the slice when it did.
    after_reload=$(next_reconcile "$(vrid_cursor)")
    kill $watcher
    if ! echo "$after_reload" | grep -q 'nothing to repair'; then
      echo "the reconcile after daemon-reload: $after_reload"
      awk '{ v = $3 " " $4; if (seen[$2] != v) { print; seen[$2] = v } }' /tmp/qos-cpusets.log | tail -n 20
      systemctl cat kubepods-besteffort.slice 2>&1 | grep -v '^#\|^$' | tail -n 20
    fi
    quiet_reconcile
  else
    quiet_reconcile
  fi
  echo "hp: CPU $hp_cpu, memory and 32 MiB of pages on node $hp_node"
  hugepage_vm hpvm "$hp_node" 64 7
  if v start hpvm > /tmp/hpvm.txt 2>&1; then fail "hpvm started on node $hp_node, whose pages hp holds: $(vrictl capacity)"; fi
  grep -q 'hugepages-2Mi' /tmp/hpvm.txt && grep -q 'pods 32 MiB' /tmp/hpvm.txt || fail "virsh start hpvm: $(cat /tmp/hpvm.txt)"
  echo "virsh start hpvm: $(grep -o -e 'cannot provide [^)]*)' -e 'needs [^)]*)' /tmp/hpvm.txt | head -1)"
  rm "$manifests/hp.yaml"
  wait_for 300 "vrid releasing hp" sh -c "! vrictl list --pods | grep -q 'hp-$node'"
  v start hpvm > /tmp/hpvm.txt 2>&1 || fail "virsh start hpvm once hp was gone: $(cat /tmp/hpvm.txt)"
  vrictl capacity | grep -q "node $hp_node 2MiB pages .*0 B *64 MiB *0 B$" || fail "vrictl capacity: $(vrictl capacity)"
  # hp again: its CPU's node has no page left, so its pages come from the other node.
  hugepage_pod hp
  wait_for 300 "hp running beside hpvm (kubelet: $(kubelet_view hp app))" running hp
  echo "hpvm running on node $hp_node's pages; hp again: $(vrictl podinfo "default/hp-$node" | grep 'Container app')"
  vrictl capacity | grep -q "node $hp_node 2MiB pages .*0 B *64 MiB *0 B$" || fail "vrictl capacity: $(vrictl capacity)"
  quiet_reconcile
  v destroy hpvm > /dev/null; v undefine hpvm > /dev/null
  rm "$manifests/hp.yaml"
  wait_for 300 "vrid releasing hp" sh -c "! vrictl list --pods | grep -q 'hp-$node'"
}

run_scenarios systemd nri

step "a mismatch, through the shim: containerd on cgroupfs, vrid on systemd; kubelet is refused its driver"
way_in shim
containerd_with cgroupfs shim
containerd_restarted
since=$(date '+%Y-%m-%d %H:%M:%S')
unit restart vri-cri-shim
placer_ready_since "$since"
since=$(date '+%Y-%m-%d %H:%M:%S')
unit restart kubelet
wait_for 120 "kubelet's refusal" sh -c "journalctl -u kubelet --since '$since' -o cat | grep -q 'the runtime runs with the cgroupfs cgroup driver, vrid with systemd'"
unit stop kubelet
echo "kubelet: $(journalctl -u kubelet --since "$since" -o cat | grep -m1 'the runtime runs with')"

run_scenarios cgroupfs shim
steps_done kubelet

# Shell helpers for the suites that run VRI as a node runs it (node, systemd, kubelet, the benches):
# sourced by them, after they define fail() (what to show when a step fails; it calls step_failed
# first) and set uuid_prefix (their VMs' UUIDs). testbed.sh copies it beside the suite.
t0=$(date +%s)
# Each step's result on a line of its own as it ends, numbered (`ok 3 - …`, `not ok 4 - …: why`):
# a step ends when the next begins, at steps_done, or when fail() reports it.
step_no=0 step_name=
step() {
  [ -z "$step_name" ] || echo "ok $step_no - $step_name"
  step_no=$((step_no + 1)) step_name=$*
  echo "=== [$(( $(date +%s) - t0 )) s] $*"
}
step_failed() { echo "not ok $step_no - ${step_name:-before the first step}: $*"; }
steps_done() { # name
  [ -z "$step_name" ] || echo "ok $step_no - $step_name"
  step_name=
  echo "=== [$(( $(date +%s) - t0 )) s] $1: ok ($step_no steps)"
}
v() { virsh -c qemu:///system "$@"; }

wait_for() { # seconds description command...
  limit=$1; what=$2; shift 2
  deadline=$(( $(date +%s) + limit ))  # by the clock: a slow command counts too
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -le "$deadline" ] || fail "waited $limit s for $what"; sleep 1
  done
}

# A diskless, paused-started domain with VRI's dedicated policy.
define() { # name vcpus uuid-tail
  cat > "/tmp/$1.xml" <<XML
<domain type='qemu'><name>$1</name><uuid>${uuid_prefix}00000000000$3</uuid>
<memory unit='MiB'>64</memory><vcpu placement='static'>$2</vcpu>
<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='dedicated'/></vri:domain></metadata>
<os><type arch='x86_64' machine='pc'>hvm</type></os><on_poweroff>destroy</on_poweroff>
<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices></domain>
XML
  v define "/tmp/$1.xml" >/dev/null || fail "virsh define $1"
}

# vrid's journal from now on: its last entry's cursor (--since takes whole seconds, and would also
# take what vrid logged earlier in the same second).
vrid_cursor() { journalctl -u vrid -n 1 --show-cursor -o cat | sed -n 's/^-- cursor: //p'; }

# vrid's next "reconcile: " line after `cursor` (vrid_cursor), waited for.
next_reconcile() { # cursor
  wait_for 120 "a reconcile" sh -c "journalctl -u vrid --after-cursor='$1' -o cat | grep -q 'reconcile: '"
  journalctl -u vrid --after-cursor="$1" -o cat | grep 'reconcile: ' | head -1
}

# The next periodic reconcile after now finds nothing to repair.
quiet_reconcile() {
  line=$(next_reconcile "$(vrid_cursor)")
  echo "$line" | grep -q 'nothing to repair' || fail "reconcile repaired something: $line"
  # vrictl's tree, compared with the kernel, agrees: no value differs (kubelet's cgroups that nobody
  # made yet may be missing; reconcile has nothing to write for them).
  vrictl tree > /tmp/tree.txt || fail "vrictl tree: $(cat /tmp/tree.txt)"
  grep -q '^cgroup v2, ' /tmp/tree.txt || fail "vrictl tree: $(head -1 /tmp/tree.txt)"
  if grep -q '! [a-z.]*: kernel ' /tmp/tree.txt; then cat /tmp/tree.txt; fail "vrictl tree shows a value the kernel does not hold"; fi
}

# Deadlines are scaled for the emulation, as in the other suites (processes start about 50 times
# slower): the hook's call to vrid gets 15 s instead of 3. hook.conf is read at every call.
scale_hook_deadline() {
  sed -i 's/^# timeout_ms = 3000$/timeout_ms = 15000/' /etc/vri/hook.conf
  grep -q '^timeout_ms = 15000$' /etc/vri/hook.conf || fail "could not scale the hook's deadline in /etc/vri/hook.conf"
}

# A VM's vCPU 0 as the kernel, libvirt and VRI see it; they must agree ($cg: the cgroup root). Prints the CPU.
vm_cpu() { # name
  pid=$(cat "/run/libvirt/qemu/$1.pid")
  scope=$(sed -n 's|^0::\(.*\)/libvirt/emulator$|\1|p' "/proc/$pid/cgroup")
  kernel=$(cat "$cg$scope/libvirt/vcpu0/cpuset.cpus.effective")
  pin=$(v vcpupin "$1" | awk '$1 == "0" {print $2}')
  ledger=$(vrictl dominfo "$1" | sed -n 's/^  vcpu0: *CPU \([0-9]*\).*/\1/p')
  [ "$kernel" = "$pin" ] && [ "$kernel" = "$ledger" ] || fail "$1 disagrees: cgroup $kernel, vcpupin $pin, vrictl $ledger"
  echo "$kernel"
}

# Between two runs on the node's units: the last run's scopes and pod slices gone, as on a node where
# vrid starts after its tenants went (systemd removes them a moment after their processes die).
bench_settle() {
  systemctl stop 'cri-containerd-*.scope' 'machine-qemu*.scope' 'kubepods-*pod*.slice' 2> /dev/null || true
  for _ in $(seq 600); do  # 1,000 units take minutes to stop under emulation
    [ -z "$(find /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/machine.slice -mindepth 1 -type d \
      \( -name 'cri-containerd-*' -o -name 'machine-qemu*' -o -name 'kubepods-*pod*' \) 2> /dev/null)" ] && return 0
    sleep 1
  done
  fail "the last run's units are still there after 600 s"
}

# The node a scenario starts from, whatever the one before it in the same boot left, also when it
# failed midway (run-scenarios.sh): no kubelet, VRI purged with the drop-ins the scenarios add, no
# libvirt domain and no operator's hook, containerd stopped with no container and no state left, as
# Debian ships it. On a node just booted it finds nothing to do, and starts no daemon.
fresh_node() {
  systemctl stop kubelet 2> /dev/null || true
  grep -o ' /var/lib/kubelet[^ ]*' /proc/mounts | sort -r | xargs -r umount -l
  rm -rf /etc/systemd/system/kubelet.service /usr/local/bin/kubelet /etc/kubernetes /var/lib/kubelet
  if dpkg -s vri > /dev/null 2>&1; then
    apt-get purge -y -q vri > /tmp/fresh-node.out 2>&1 || { cat /tmp/fresh-node.out; fail "apt-get purge vri"; }
  fi
  rm -rf /etc/systemd/system/vrid.service.d /etc/systemd/system/vri-cri-shim.service.d \
    /etc/systemd/system/vri-nri-plugin.service.d /var/lib/vri /etc/vri
  if systemctl is-active -q libvirtd; then
    for domain in $(v list --all --name); do
      v destroy "$domain" > /dev/null 2>&1 || true
      v undefine --managed-save "$domain" > /dev/null || fail "virsh undefine $domain"
    done
    if [ -e /etc/libvirt/hooks/qemu ]; then
      rm /etc/libvirt/hooks/qemu
      systemctl restart libvirtd  # it looks for hooks when it starts
    fi
  fi
  rm -f /etc/libvirt/hooks/qemu
  # Containers outlive containerd (KillMode=process): their processes, shims and mounts go too.
  systemctl stop containerd 2> /dev/null || true
  systemctl stop 'cri-containerd-*.scope' 'kubepods*.slice' 2> /dev/null || true
  [ ! -d /sys/fs/cgroup/kubepods ] || { echo 1 > /sys/fs/cgroup/kubepods/cgroup.kill; }  # the cgroupfs driver's
  pkill -9 -f containerd-shim 2> /dev/null || true
  grep -oE ' /(run|var/lib)/containerd[^ ]*' /proc/mounts | sort -r | xargs -r umount -l
  if [ -d /sys/fs/cgroup/kubepods ]; then
    wait_for 60 "the cgroupfs driver's pods to end" sh -c \
      '! find /sys/fs/cgroup/kubepods -name cgroup.procs -exec cat {} + | grep -q .'
    find /sys/fs/cgroup/kubepods -depth -type d -exec rmdir {} \;
  fi
  rm -rf /var/lib/containerd /run/containerd /etc/containerd/config.toml /etc/containerd/conf.d \
    /etc/systemd/system/containerd.service /usr/local/bin/containerd /usr/local/bin/containerd-shim-runc-v2 \
    /usr/local/bin/ctr /etc/cni/net.d/10-host-network.conflist
  ip link del vri0 2> /dev/null || true
  # The cluster scenario's network device (the user network, when the boot has one): unconfigured.
  for dev in /sys/class/net/*; do
    [ -e "$dev/device" ] || continue
    ip addr flush dev "${dev##*/}" && ip link set "${dev##*/}" down
  done
  systemctl daemon-reload
  # CPUs a cgroup still holds exclusively (cpuset partitions, Linux 6.7+) would refuse the next
  # scenario's grants: named, then given back, deepest first (a parent's exclusive CPUs must hold its
  # children's).
  for f in $(find /sys/fs/cgroup -mindepth 2 -name cpuset.cpus.partition | sort -r); do
    [ "$(cat "$f")" = member ] || { echo "fresh node: ${f#/sys/fs/cgroup/} was $(cat "$f")"; echo member > "$f"; }
  done
  for f in $(find /sys/fs/cgroup -mindepth 2 -name cpuset.cpus.exclusive | sort -r); do
    [ -z "$(cat "$f")" ] || { echo "fresh node: ${f#/sys/fs/cgroup/} held $(cat "$f")"; echo > "$f"; }
  done
}

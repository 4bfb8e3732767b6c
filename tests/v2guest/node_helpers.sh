# Shell helpers for the suites that run VRI as a node runs it (node, systemd, the benches): sourced by them,
# after they define fail() (what to show when a step fails) and set uuid_prefix (their VMs' UUIDs).
# testbed.sh copies it beside the suite.
t0=$(date +%s)
step() { echo "=== [$(( $(date +%s) - t0 )) s] $*"; }
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

# The next periodic reconcile after now finds nothing to repair.
quiet_reconcile() {
  since=$(date '+%Y-%m-%d %H:%M:%S'); sleep 1
  wait_for 120 "a reconcile after $since" sh -c "journalctl -u vrid --since '$since' -o cat | grep -q 'reconcile: '"
  line=$(journalctl -u vrid --since "$since" -o cat | grep 'reconcile: ' | head -1)
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

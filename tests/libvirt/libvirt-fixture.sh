#!/usr/bin/env bash
# A real libvirtd with the QEMU driver (software emulation) for the `libvirt`
# tests, as root, on a host without systemd.
#   libvirt-fixture.sh up HOOK_BINARY   installs HOOK_BINARY as the qemu hook, starts libvirtd
#   libvirt-fixture.sh restart          restarts libvirtd (running domains survive)
#   libvirt-fixture.sh stop | start     stops libvirtd (running domains survive), starts it again
#   libvirt-fixture.sh down             destroys the test domains, stops libvirtd, removes
#                                       the machine/ cgroups libvirt created
# libvirtd reads its hooks once at start, so the hook is installed first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
uri=qemu:///system
pidfile=/run/libvirtd.pid
log=/var/log/libvirt/libvirtd.log

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

up() {
  local hook=$1
  for package in libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86; do
    dpkg -s "$package" >/dev/null 2>&1 || { echo "libvirt-fixture: package $package is missing" >&2; exit 1; }
  done
  # Debian's QEMU driver needs its compiled-in user even when qemu.conf says root.
  getent group libvirt-qemu >/dev/null || groupadd -r libvirt-qemu
  getent passwd libvirt-qemu >/dev/null ||
    useradd -r -g libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin libvirt-qemu
  mkdir -p /var/log/libvirt/qemu /etc/libvirt/hooks
  # No "memory" controller: the memory hierarchy belongs to the host's supervisor.
  # "cpuacct" is needed: with the empty cgroup2 mount libvirt runs hybrid and takes it from v2.
  cat > /etc/libvirt/qemu.conf <<'CONF'
user = "root"
group = "root"
security_driver = "none"
cgroup_controllers = [ "cpu", "cpuacct", "cpuset" ]
stdio_handler = "file"
CONF
  # A link, as the package installs it: vri-hook runs the vri-hook-offline beside it when vrid is down.
  rm -f /etc/libvirt/hooks/qemu
  ln -s "$(realpath "$hook")" /etc/libvirt/hooks/qemu
  if running; then
    echo "libvirt-fixture: restarting libvirtd so that it picks up the hook"
    stop_daemon
  fi
  start_daemon
}

# libvirtd under a child subreaper, so that destroyed QEMUs are reaped at once.
start_daemon() {
  LIBVIRT_LOG_OUTPUTS="3:file:$log" setsid /usr/bin/python3 "$here/reaper.py" /usr/sbin/libvirtd \
    </dev/null >>/var/log/libvirt/libvirtd.stdout 2>&1 &
  local tries=0
  until virsh -c "$uri" version >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ $tries -le 600 ] || { echo "libvirt-fixture: libvirtd did not come up; see $log" >&2; exit 1; }
    sleep 0.1
  done
  echo "libvirt-fixture: libvirtd up (pid $(cat $pidfile))"
}


stop_daemon() {
  local pid
  pid=$(cat "$pidfile")
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

down() {
  if running; then
    for domain in $(virsh -c "$uri" list --all --name | grep '^vri-test-' || true); do
      virsh -c "$uri" destroy "$domain" >/dev/null 2>&1 || true
      virsh -c "$uri" undefine "$domain" >/dev/null 2>&1 || true
    done
    stop_daemon
  fi
  for file in /run/libvirt/qemu/vri-test-*.pid; do
    [ -f "$file" ] && kill -KILL "$(cat "$file")" 2>/dev/null || true
  done
  for hierarchy in cpuset cpu cpuacct unified; do
    [ -d /sys/fs/cgroup/$hierarchy/machine ] || continue
    find /sys/fs/cgroup/$hierarchy/machine -mindepth 1 -depth -type d -name '*vri*test*' -exec rmdir {} \; 2>/dev/null || true
  done
  rm -f /etc/libvirt/hooks/qemu
  echo "libvirt-fixture: down"
}

restart() {
  running || { echo "libvirt-fixture: libvirtd is not running" >&2; exit 1; }
  stop_daemon
  start_daemon
}

case ${1:-} in
  up) up "${2:?usage: libvirt-fixture.sh up HOOK_BINARY}" ;;
  restart) restart ;;
  stop) if running; then stop_daemon; fi ;;
  start) if ! running; then start_daemon; fi ;;
  down) down ;;
  *) echo "usage: libvirt-fixture.sh up HOOK_BINARY | restart | down" >&2; exit 2 ;;
esac

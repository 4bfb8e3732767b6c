#!/bin/sh
# VRI installed from its package on a node as operators run one: systemd as PID 1, libvirt with
# machined (machine.slice/machine-qemu\x2dN\x2dNAME.scope/libvirt/vcpuN), AppArmor as Debian
# enables it. Nested VMs start paused: their threads, cgroups and pins exist, they burn no CPU.
# guest-packages: systemd-container,libvirt-daemon-system,qemu-system-x86,apparmor
# guest-package-depends: yes
# guest-smp: 4
# guest-mem: 4096
# guest-timeout: 2400
set -eu
cd /
fail() {
  step_failed "$*"
  echo "package: FAIL: $*"
  journalctl -u vrid -u libvirtd --no-pager -o short-monotonic | tail -n 60
  exit 1
}
uuid_prefix=5e1f0c2d-7a3b-4c5d-9e6f-
. "$(dirname "$0")/node_helpers.sh"
fresh_node
one() { set -- $1; [ $# -eq 1 ] || fail "expected one package, found: $*"; echo "$1"; }
first=$(one "$(ls "$GUEST_IN"/package-first/vri_*.deb 2>/dev/null)")
current=$(one "$(ls "$GUEST_IN"/package/vri_*.deb 2>/dev/null)")
first_version=$(dpkg-deb -f "$first" Version)
current_version=$(dpkg-deb -f "$current" Version)


# One VM's vCPU placement as the kernel, libvirt and VRI each see it; they must agree.
# Prints "vcpu0=2 vcpu1=3".
placement() { # name
  pid=$(cat "/run/libvirt/qemu/$1.pid")
  scope=$(sed -n 's|^0::\(.*\)/libvirt/emulator$|\1|p' "/proc/$pid/cgroup")
  case "$scope" in /machine.slice/machine-qemu*.scope) ;; *) fail "$1: QEMU is in '$scope', not machine.slice/...scope/libvirt";; esac
  kernel= affinity=
  for d in /sys/fs/cgroup"$scope"/libvirt/vcpu*; do
    n=${d##*/vcpu}
    kernel="$kernel vcpu$n=$(cat "$d/cpuset.cpus.effective")"
    tid=$(head -1 "$d/cgroup.threads")
    affinity="$affinity vcpu$n=$(taskset -pc "$tid" | sed 's/.*: //')"
  done
  pins=$(v vcpupin "$1" | awk '$1 ~ /^[0-9]+$/ {printf " vcpu%s=%s", $1, $2}')
  ledger=$(vrictl dominfo "$1" | sed -n 's/^  vcpu\([0-9]*\): *CPU \([0-9]*\).*/ vcpu\1=\2/p' | tr -d '\n')
  [ "$kernel" = "$affinity" ] && [ "$kernel" = "$pins" ] && [ "$kernel" = "$ledger" ] ||
    fail "$1 disagrees: cgroups$kernel; thread affinity$affinity; virsh vcpupin$pins; vrictl$ledger"
  echo "${kernel# }"
}



step "the node: AppArmor enabled, machined present"
[ "$(cat /sys/module/apparmor/parameters/enabled)" = Y ] || fail "AppArmor is not enabled"
grep -q libvirtd /sys/kernel/security/apparmor/profiles || fail "libvirtd's AppArmor profile is not loaded"
[ -x /lib/systemd/systemd-machined ] || fail "no systemd-machined"

step "an operator's own qemu hook that filters restored XML"
mkdir -p /etc/libvirt/hooks
cat > /etc/libvirt/hooks/qemu <<'HOOK'
#!/bin/sh
# The operator's hook: on restore and migrate, tag the description; otherwise nothing.
case "$2 $3" in
  "restore begin"|"migrate begin") sed 's|<name>|<description>filtered by the operator</description><name>|' ;;
  *) cat > /dev/null ;;
esac
HOOK
chmod 755 /etc/libvirt/hooks/qemu

step "the test's overrides, in drop-ins, before the package is installed"
mkdir -p /etc/systemd/system/vrid.service.d
cat > /etc/systemd/system/vrid.service.d/test.conf <<'EOF2'
[Service]
ExecStart=
ExecStart=/usr/sbin/vrid --config=/etc/vri/vrid.conf --log-level=debug --reconcile-interval=5
EOF2

step "libvirtd's first start (its QEMU capability probe)"
wait_for 600 "libvirtd" v version

step "dpkg -i the first package ($first_version)"
dpkg -i "$first" || fail "dpkg -i $first"
scale_hook_deadline
systemctl is-active -q vrid || fail "vrid is not running after install"
[ "$(systemctl show -p FragmentPath --value vrid)" = /lib/systemd/system/vrid.service ] || fail "vrid runs from another unit"
systemctl show -p DropInPaths --value vrid | grep -q test.conf || fail "the drop-in is not applied"
[ "$(readlink /etc/libvirt/hooks/qemu.d/vri)" = /usr/sbin/vri-hook ] || fail "the hook's link is not in qemu.d"
[ "$(systemctl is-enabled vri-cri-shim || true)" = disabled ] || fail "the shim is enabled by the package"
wait_for 60 "vrid's socket" vrictl nodeinfo
vrictl nodeinfo | grep -q "vrid version: *$first_version\$" || fail "nodeinfo does not show $first_version"

step "a dedicated VM started with virsh"
define ded-a 1 1
v start --paused ded-a || fail "virsh start ded-a"
a_before=$(placement ded-a)
echo "ded-a: $a_before"

step "upgrade to $current_version keeps every placement"
vrid_pid=$(systemctl show -p MainPID --value vrid)
dpkg -i "$current" || fail "dpkg -i $current"
wait_for 60 "vrid after the upgrade" vrictl nodeinfo
[ "$(systemctl show -p MainPID --value vrid)" != "$vrid_pid" ] || fail "the upgrade did not restart vrid"
vrictl nodeinfo | grep -q "vrid version: *$current_version\$" || fail "nodeinfo does not show $current_version"
[ "$(systemctl is-enabled vri-nrt-exporter || true)" = disabled ] || fail "the NodeResourceTopology exporter is enabled by the package"
systemctl is-active -q vri-nrt-exporter && fail "the NodeResourceTopology exporter runs without credentials"
/usr/sbin/vri-nrt-exporter --version | grep -q "$current_version" || fail "vri-nrt-exporter --version: $(/usr/sbin/vri-nrt-exporter --version 2>&1)"
[ -f /var/lib/vri/ledger.sqlite ] || fail "the ledger is gone"
[ "$(placement ded-a)" = "$a_before" ] || fail "ded-a moved in the upgrade"

step "a second dedicated VM, and one larger than the pool"
define ded-b 2 2
v start --paused ded-b || fail "virsh start ded-b"
b=$(placement ded-b)
echo "ded-b: $b"
vrictl nodeinfo
vrictl nodeinfo | grep -q "vri-hook: *$current_version " || fail "nodeinfo does not show the hook's version"
define big 4 3
if v start --paused big > /tmp/big.out 2>&1; then fail "a VM larger than the pool started"; fi
cat /tmp/big.out
grep -q "vri: " /tmp/big.out || fail "virsh start's error does not carry the hook's refusal"

step "the manual pages and vrictl's bash completion, as the package installs them"
# This image installs no manual pages (build-image.sh excludes /usr/share/man): each is read from the
# package, where dpkg takes it from on a node.
man_page() { # man1/vrictl.1
  dpkg-deb --fsys-tarfile "$current" | tar -xO "./usr/share/man/$1.gz" | zcat
}
for page in man8/vrid.8 man8/vri-hook.8 man8/vri-cri-shim.8 man8/vri-nri-plugin.8 man8/vri-nrt-exporter.8 \
  man1/vrictl.1 man1/vri-topology.1 man1/vri-cri-client.1; do
  name=${page#*/}
  man_page "$page" | grep -q "^${name%.*} \\\\- " || fail "the package has no manual page $page, or one without its NAME line"
done
man_page man1/vrictl.1 | grep -q "vcpupin" || fail "vrictl(1) does not list vcpupin"
complete_vrictl() { # line
  bash -c ". /usr/share/bash-completion/completions/vrictl; COMP_LINE='$1'; COMP_POINT=\${#COMP_LINE}; _vrictl; echo \"\${COMPREPLY[*]}\""
}
[ "$(complete_vrictl 'vrictl dom')" = dominfo ] || fail "bash completes 'vrictl dom' as '$(complete_vrictl 'vrictl dom')'"
[ "$(complete_vrictl 'vrictl dominfo ded-')" = "ded-a ded-b" ] ||
  fail "bash completes 'vrictl dominfo ded-' as '$(complete_vrictl 'vrictl dominfo ded-')'"

step "save and restore: the operator's hook runs first, vri-hook gets its output"
v save ded-b /var/tmp/ded-b.save >/dev/null || fail "virsh save"
v restore /var/tmp/ded-b.save --paused >/dev/null || fail "virsh restore"
v dumpxml ded-b | grep -q "filtered by the operator" || fail "the operator's filter was lost"
[ "$(placement ded-b)" = "$b" ] || fail "ded-b came back elsewhere"

step "vrid restarted: nothing moves, the next reconcile repairs nothing"
systemctl restart vrid
wait_for 60 "vrid" vrictl nodeinfo
[ "$(placement ded-a)" = "$a_before" ] && [ "$(placement ded-b)" = "$b" ] || fail "a VM moved"
quiet_reconcile

step "metrics_port set: vrid starts under the packaged unit and answers only a scrape with its token"
# The unit's RestrictAddressFamilies= must let vrid make the endpoint's IPv4 socket.
(umask 077 && head -c 24 /dev/urandom | base64 > /etc/vri/metrics.token)
printf 'metrics_port = 9464\nmetrics_token_file = /etc/vri/metrics.token\n' >> /etc/vri/vrid.conf
systemctl restart vrid || fail "vrid does not restart with metrics_port set"
wait_for 60 "vrid with metrics_port" vrictl nodeinfo
wait_for 30 "the metrics endpoint" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464'
scrape() {  # $1: the bearer token, or nothing
  bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464
    if [ -n "$1" ]; then printf "GET /metrics HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n" "$1" >&3
    else printf "GET /metrics HTTP/1.0\r\n\r\n" >&3; fi
    cat <&3' _ "$1"
}
scrape "" > /tmp/metrics.out || fail "no answer without a token"
grep -q '^HTTP/1.1 401' /tmp/metrics.out || { cat /tmp/metrics.out; fail "metrics served without the token"; }
scrape "$(cat /etc/vri/metrics.token)" > /tmp/metrics.out || fail "no scrape"
grep -q '^vri_node_cpus' /tmp/metrics.out || { cat /tmp/metrics.out; fail "the scrape holds no vri_node_cpus"; }
sed -i '/^metrics_port = 9464$/d; /^metrics_token_file = /d' /etc/vri/vrid.conf
rm -f /etc/vri/metrics.token
systemctl restart vrid
wait_for 60 "vrid" vrictl nodeinfo

step "libvirtd restarted: nothing moves, the next reconcile repairs nothing"
systemctl restart libvirtd
wait_for 300 "libvirtd" v version
[ "$(placement ded-a)" = "$a_before" ] && [ "$(placement ded-b)" = "$b" ] || fail "a VM moved"
quiet_reconcile

step "a VM VRI spreads over both NUMA nodes, saved preferring one: restored restrictive on both"
# VRI books the memory on both nodes and confines it there by the cgroup alone (restrictive): the
# kernel's preferred policy holds one node, and preferred over one would leave a booked node out.
v destroy ded-a >/dev/null
v destroy ded-b >/dev/null
cat > /tmp/numa-p.xml <<XML
<domain type='qemu'><name>numa-p</name><uuid>${uuid_prefix}000000000009</uuid>
<memory unit='MiB'>64</memory><vcpu placement='static'>3</vcpu>
<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='dedicated'/></vri:domain></metadata>
<numatune><memory mode='preferred' nodeset='0'/></numatune>
<os><type arch='x86_64' machine='pc'>hvm</type></os><on_poweroff>destroy</on_poweroff>
<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices></domain>
XML
# Three dedicated vCPUs need CPUs of both nodes (CPU 0 is reserved), so VRI books the memory on both.
v define /tmp/numa-p.xml >/dev/null || fail "virsh define numa-p"
v start --paused numa-p || fail "virsh start numa-p"
echo "numa-p: $(placement numa-p)"
v save numa-p /var/tmp/numa-p.save >/dev/null || fail "virsh save numa-p"
# The saved domain prefers node 0 again, as its owner wrote it: VRI's restore output decides.
v save-image-dumpxml /var/tmp/numa-p.save |
  sed "s|<memory mode='[a-z]*' nodeset='[0-9,-]*'/>|<memory mode='preferred' nodeset='0'/>|" > /tmp/numa-p.saved.xml
grep -q "<memory mode='preferred' nodeset='0'/>" /tmp/numa-p.saved.xml || fail "no preferred memory in the saved XML"
v save-image-define /var/tmp/numa-p.save /tmp/numa-p.saved.xml >/dev/null || fail "virsh save-image-define"
v restore /var/tmp/numa-p.save --paused > /tmp/restore.out 2>&1 || { cat /tmp/restore.out; fail "virsh restore numa-p"; }
v dumpxml numa-p | grep -A2 '<numatune>'
v dumpxml numa-p | grep -q "<memory mode='restrictive' nodeset='0-1'/>" ||
  fail "numa-p's memory is not restrictive on nodes 0-1"
echo "numa-p restored: $(placement numa-p)"
v destroy numa-p >/dev/null
v start --paused ded-a || fail "virsh start ded-a"

step "the shim starts from its unit"
systemctl start vri-cri-shim || fail "the shim's unit does not start"
wait_for 30 "the shim's socket" test -S /run/vri/cri.sock
systemctl is-active -q vri-cri-shim || fail "the shim stopped"

step "the NRI plugin's unit beside the shim: refused, naming the shim"
systemctl start vri-nri-plugin || true
wait_for 30 "the plugin's refusal" sh -c \
  "journalctl -u vri-nri-plugin --no-pager | grep -q 'vri-cri-shim (pid [0-9]*) already places this node'"
systemctl stop vri-nri-plugin
systemctl is-active -q vri-cri-shim || fail "the shim stopped"

step "VRI made required in containerd's drop-ins (docs/operating.md): the link is the package's file"
mkdir -p /etc/containerd/conf.d
ln -s /usr/share/vri/containerd/vri-required.toml /etc/containerd/conf.d/vri-required.toml
grep -q 'required_plugins = \["vri"\]' /etc/containerd/conf.d/vri-required.toml || fail "the drop-in requires no vri"

step "apt remove: services stopped, the hook's link gone, the state kept, VMs startable"
apt-get remove -y -q vri > /tmp/remove.out 2>&1 || { cat /tmp/remove.out; fail "apt-get remove"; }
! systemctl is-active -q vrid || fail "vrid still runs"
! systemctl is-active -q vri-cri-shim || fail "the shim still runs"
[ ! -e /etc/libvirt/hooks/qemu.d/vri ] || fail "the hook's link is still there"
[ ! -L /etc/containerd/conf.d/vri-required.toml ] || fail "containerd's drop-in link is still there"
[ -f /var/lib/vri/ledger.sqlite ] || fail "remove took the ledger"
v destroy ded-a >/dev/null
v start --paused ded-a || fail "ded-a does not start without VRI"

step "apt purge: the state is gone"
apt-get purge -y -q vri > /tmp/purge.out 2>&1 || { cat /tmp/purge.out; fail "apt-get purge"; }
[ ! -e /var/lib/vri ] || fail "purge left /var/lib/vri"
steps_done package

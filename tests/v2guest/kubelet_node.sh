# Shell helpers for the scenarios that run a real kubelet in front of VRI (kubelet, cluster): containerd
# 2.4 and kubelet 1.35 from the peers, containerd's configuration for a cgroup driver and a way in, the
# way in as docs/operating.md wires it, vrid's settings, and each container's CPUs as every party sees them.
# Sourced after node_helpers.sh, with fail() defined; testbed.sh copies it beside the suites.
cg=/sys/fs/cgroup
peers=$GUEST_IN/v2guest/peers
# Every call is bounded: a peer that hangs fails the step that called it, with the journals.
direct() { timeout 30 "$GUEST_IN/tools/cri-client/vri-cri-client" --socket=/run/containerd/containerd.sock "$@"; }
vrictl() { timeout 30 /usr/bin/vrictl "$@"; }
unit() { timeout 180 systemctl "$@" || fail "systemctl $* did not finish"; }

# containerd 2.4 and kubelet from the peers, containerd's unit, containerd started with the test image.
install_containerd_and_kubelet() {
  install -m 0755 "$peers/kubernetes/kubelet" /usr/local/bin/ || fail "no kubelet in $peers/kubernetes"
  mkdir -p /etc/kubernetes /var/lib/kubelet
  install_containerd systemd shim
  echo "$(kubelet --version)"
}

# containerd 2.4 from the peers in place of Debian's (fresh_node puts Debian's back), its unit, and
# containerd started for a cgroup driver and a way in (containerd_with) with the test image.
install_containerd() { # systemd|cgroupfs nri|shim
  for program in containerd containerd-shim-runc-v2 ctr; do
    install -m 0755 "$peers/containerd-2.4/$program" /usr/local/bin/ || fail "no $program in $peers/containerd-2.4"
  done
  echo "$(containerd --version); runc $(runc --version | head -1)"
  cat > /etc/systemd/system/containerd.service <<'EOF2'
[Unit]
Description=containerd 2.x
After=network.target
[Service]
ExecStart=/usr/local/bin/containerd
Delegate=yes
KillMode=process
Restart=always
LimitNOFILE=infinity
[Install]
WantedBy=multi-user.target
EOF2
  containerd_with "$1" "$2"
  systemctl daemon-reload
  systemctl start containerd || fail "containerd does not start"
  wait_for 120 "containerd's CRI" sh -c "ctr plugins ls | grep -q 'io.containerd.grpc.v1 *cri .*ok'"
  ctr -n k8s.io images import "$GUEST_IN/tests/containerd-image/pause.tar" >/dev/null || fail "image import"
}

# kubelet's unit: its configuration in /etc/kubernetes/kubelet.yaml, these flags besides.
kubelet_unit() { # description flags...
  description=$1
  shift
  cat > /etc/systemd/system/kubelet.service <<EOF2
[Unit]
Description=kubelet, $description
After=containerd.service vri-cri-shim.service vri-nri-plugin.service
[Service]
ExecStart=/usr/local/bin/kubelet --config=/etc/kubernetes/kubelet.yaml --root-dir=/var/lib/kubelet $*
Restart=always
RestartSec=2
[Install]
WantedBy=multi-user.target
EOF2
  systemctl daemon-reload
}

# containerd's configuration for a cgroup driver and a way in: NRI on for the plugin, off for the shim.
# With NRI, as docs/operating.md wires it: conf.d imported (where VRI is made required), NRI's socket at its
# default; its request timeout is scaled for the emulation as the hook's deadline is (2 s -> 10 s).
containerd_with() { # systemd|cgroupfs nri|shim
  [ "$1" = systemd ] && systemd_cgroup=true || systemd_cgroup=false
  if [ "$2" = nri ]; then
    imports='imports = ["/etc/containerd/conf.d/*.toml"]'
    nri='disable = false
  socket_path = "/var/run/nri/nri.sock"
  plugin_request_timeout = "10s"
  plugin_registration_timeout = "25s"'
  else
    imports=''
    nri='disable = true'
  fi
  mkdir -p /etc/containerd/conf.d
  cat > /etc/containerd/config.toml <<EOF2
version = 3
$imports
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "localhost/vri/pause:1.0"
[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = false
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
      SystemdCgroup = $systemd_cgroup
      BinaryName = "/usr/sbin/runc"
[plugins."io.containerd.nri.v1.nri"]
  $nri
EOF2
}
containerd_restarted() {
  unit restart containerd
  wait_for 120 "containerd's CRI" sh -c "ctr plugins ls | grep -q 'io.containerd.grpc.v1 *cri .*ok'"
}

# The way in, as docs/operating.md wires it (Install it on a node, step 3): kubelet's runtime endpoint, and
# one placer enabled and started (the other disabled first: the second placer for one vrid refuses
# to run). The plugin's deadline is scaled for the emulation with containerd's NRI timeout (1 s ->
# 5 s, half of it), as the hook's is. Sets $placer.
way_in() { # nri|shim
  if [ "$1" = nri ]; then
    placer=vri-nri-plugin endpoint=unix:///run/containerd/containerd.sock
    unit disable --now vri-cri-shim
    mkdir -p /etc/systemd/system/vri-nri-plugin.service.d
    printf '[Service]\nExecStart=\nExecStart=/usr/sbin/vri-nri-plugin --nri-socket=/var/run/nri/nri.sock --vrid=/run/vri/admin.sock --name=vri --index=50 --vrid-timeout-ms=5000 --cri-socket=/run/containerd/containerd.sock\n' \
      > /etc/systemd/system/vri-nri-plugin.service.d/emulation.conf
  else
    placer=vri-cri-shim endpoint=unix:///run/vri/cri.sock
    unit disable --now vri-nri-plugin
    rm -f /etc/containerd/conf.d/vri-required.toml
  fi
  sed -i "s|^containerRuntimeEndpoint:.*|containerRuntimeEndpoint: $endpoint|" /etc/kubernetes/kubelet.yaml
  systemctl daemon-reload
  unit enable $placer
}
registered_since() { journalctl -u vri-nri-plugin --since "$1" -o cat | grep -q "registered with the runtime's NRI"; }
# The placer serves again after its start at $1 (the shim's socket; the plugin's registration).
placer_ready_since() { # since
  case $placer in
    vri-cri-shim) wait_for 30 "the shim's socket" test -S /run/vri/cri.sock ;;
    vri-nri-plugin) wait_for 120 "the plugin's registration with containerd's NRI" registered_since "$1" ;;
  esac
}
# The placer started, and with NRI VRI made required as "Making VRI required" has it: linked once the
# plugin runs, then containerd restarted.
placer_started() { # way(nri|shim)
  since=$(date '+%Y-%m-%d %H:%M:%S')
  unit restart $placer
  placer_ready_since "$since"
  if [ "$1" = nri ]; then
    ln -sf /usr/share/vri/containerd/vri-required.toml /etc/containerd/conf.d/vri-required.toml
    since=$(date '+%Y-%m-%d %H:%M:%S')
    containerd_restarted
    placer_ready_since "$since"
    grep -q 'required_plugins = \["vri"\]' /etc/containerd/conf.d/vri-required.toml || fail "the drop-in"
  fi
}

# As step 1 of docs/operating.md has it: vrid's settings in /etc/vri/vrid.conf, kubelet's reservations among them.
set_conf() { sed -i "/^$1 *=/d" /etc/vri/vrid.conf && echo "$1 = $2" >> /etc/vri/vrid.conf; }
vrid_with() { # driver
  set_conf cgroup_driver "$1"
  set_conf kubelet_config /etc/kubernetes/kubelet.yaml
  set_conf system_reserved_cpu 500m
  set_conf system_reserved_memory 256Mi
  set_conf kube_reserved_memory 64Mi
  set_conf log_level debug
  set_conf reconcile_interval 5
}
# Each pass begins a new ledger (the last pass's, with the other driver, is set aside); every later
# start of vrid, as in the restarts below, is the package's own unit keeping its ledger.
start_vrid_with_a_new_ledger() {
  mkdir -p /etc/systemd/system/vrid.service.d
  printf '[Service]\nExecStart=\nExecStart=/usr/sbin/vrid --config=/etc/vri/vrid.conf --init-ledger\n' \
    > /etc/systemd/system/vrid.service.d/new-ledger.conf
  systemctl daemon-reload
  unit restart vrid
  wait_for 120 "vrid" vrictl nodeinfo
  rm /etc/systemd/system/vrid.service.d/new-ledger.conf
  systemctl daemon-reload
}

# A container's CPUs as the kernel enforces them, as the process runs, and as containerd reports them.
container_views() { # containerd id
  [ -n "$1" ] || { echo "not running"; return 0; }
  dir=$(find $cg/kubepods* -type d \( -name "cri-containerd-$1.scope" -o -name "$1" \) | head -1)
  [ -n "$dir" ] || { echo "no cgroup for $1"; return 0; }
  kernel=$(cat "$dir/cpuset.cpus.effective")
  pid=$(head -1 "$dir/cgroup.procs")
  process=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$pid/status")
  runtime=$(direct ps | awk -v id="$(echo "$1" | cut -c1-13)" '$1 == id {print $5}')
  echo "kernel=$kernel process=$process containerd=$runtime"
}
container_agreed() { # containerd id: the CPUs when every view agrees
  set -- $(container_views "$1")
  k=${1#kernel=}
  for view in "$@"; do [ "${view#*=}" = "$k" ] || { echo "DISAGREE $*"; return 0; }; done
  echo "$k"
}
shared_pool() { vrictl pool | sed -n 's/^Shared: *\([0-9,-]*\).*/\1/p'; }
container_gone() { ! direct ps | awk '{print $1}' | grep -qx "$(echo "$1" | cut -c1-13)"; }
# A container's process, from its cgroup.
direct_pid() { # id
  dir=$(find $cg/kubepods* -type d \( -name "cri-containerd-$1.scope" -o -name "$1" \) | head -1)
  head -1 "$dir/cgroup.procs"
}
sandbox_gone() { ! direct pods | awk '{print $2}' | grep -qx "$1"; }

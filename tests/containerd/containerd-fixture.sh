#!/bin/bash
# A private containerd for the `containerd` tests: its own root, state, runc
# root and sockets, the CRI plugin configured for these machines, and a locally
# built image (localhost/vri/pause:1.0: a static sleeper, also the sandbox image).
# Several of them, which can run side by side:
#   1.6  Debian's containerd 1.6, in /var/tmp/vri-containerd (containerd.toml.in)
#   2    containerd 2.x as scripts/build-peers.sh builds it (its programs in
#        $VRI_PEERS, default build/peers/containerd), in /var/tmp/vri-containerd2
#        (containerd2.toml.in)
#   2.0, 2.4  the oldest and newest 2.x lines (build/peers/containerd-2.0, -2.4), for the NRI
#        plugin's tests, in /var/tmp/vri-containerd2.0 and 2.4 (containerd2.toml.in)
# runc is Debian's for all.
#
#   tests/containerd/containerd-fixture.sh up [FLAVOUR]      starts it (replacing one left running)
#   tests/containerd/containerd-fixture.sh down [FLAVOUR]    stops it and removes what it made
#   tests/containerd/containerd-fixture.sh restart [FLAVOUR] restarts containerd alone: running containers stay
#
# The CRI socket is <root>/run/containerd.sock.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
flavour=${2:-1.6}
case "$flavour" in
  1.6)
    root=/var/tmp/vri-containerd
    config=$here/containerd.toml.in
    ;;
  2 | 2.0 | 2.4)
    root=/var/tmp/vri-containerd$flavour
    config=$here/containerd2.toml.in
    peer=containerd
    [ "$flavour" = 2 ] || peer=containerd-$flavour
    peers=$(readlink -f "${VRI_PEERS:-$here/../../build/peers/$peer}")
    # Its own containerd, ctr and runc shim first (containerd starts the shim found on PATH).
    export PATH=$peers:$PATH
    ;;
  *) echo "$0: no containerd '$flavour' (1.6, 2, 2.0 or 2.4)" >&2; exit 2 ;;
esac
sock=$root/run/containerd.sock

say() { echo "containerd-fixture ($flavour): $*"; }

down() {
  if [ -f "$root/containerd.pid" ]; then
    pid=$(cat "$root/containerd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # Shims of this containerd (found by their -address), then mounts under the private root.
  for pid in $(pgrep -f "containerd-shim-runc-v2.*-address $sock" || true); do kill -9 "$pid" 2>/dev/null || true; done
  { grep " $root/" /proc/mounts || true; } | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$root"
  # Pods without a cgroup parent run in runc's default place, /k8s.io/<id>: once their containers
  # are gone (both fixtures' containers, which share it), the parent goes too.
  for parent in /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
    [ -d "$parent" ] && rmdir "$parent" 2>/dev/null || true
  done
  say down
}

up() {
  if [ "$flavour" != 1.6 ]; then
    [ -x "$peers/containerd" ] || { say "no containerd 2.x in $peers: build it with scripts/build-peers.sh"; exit 1; }
  else
    command -v containerd >/dev/null || { say "containerd is not installed (scripts/install-deps.sh)"; exit 1; }
  fi
  down >/dev/null
  mkdir -p "$root/run" "$root/image"
  sed "s|@ROOT@|$root|g" "$config" > "$root/containerd.toml"
  start_containerd
  # containerd answers before its CRI plugin is ready (2.x starts it after the gRPC server): waited for,
  # up to 20 s on a loaded machine.
  cri_ok() { ctr -a "$sock" plugins ls 2>/dev/null | grep -q "io.containerd.grpc.v1 *cri .*ok"; }
  for _ in $(seq 100); do cri_ok && break; sleep 0.2; done
  cri_ok || { say "the CRI plugin did not start"; tail -20 "$root/containerd.log"; exit 1; }
  gcc -static -O2 -s -o "$root/image/sleeper" "$here/sleeper.c"
  "$here/mkimage.sh" "$root/image/sleeper" localhost/vri/pause:1.0 "$root/image/pause.tar" >/dev/null
  ctr -a "$sock" -n k8s.io images import "$root/image/pause.tar" >/dev/null
  say "up: $(containerd --version) (pid $(cat "$root/containerd.pid"), CRI at $sock)"
}

start_containerd() {
  containerd --config "$root/containerd.toml" >> "$root/containerd.log" 2>&1 &
  echo $! > "$root/containerd.pid"
  for _ in $(seq 200); do [ -S "$sock" ] && ctr -a "$sock" version >/dev/null 2>&1 && return 0; sleep 0.05; done
  say "containerd did not come back"; tail -20 "$root/containerd.log"; exit 1
}

restart() {
  [ -f "$root/containerd.pid" ] || { say "not running"; exit 1; }
  pid=$(cat "$root/containerd.pid")
  kill "$pid"
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  start_containerd
  say "restarted (pid $(cat "$root/containerd.pid"))"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  restart) restart ;;
  *) echo "usage: $0 up|down|restart [1.6|2|2.0|2.4]" >&2; exit 2 ;;
esac

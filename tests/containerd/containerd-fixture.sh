#!/bin/bash
# A private containerd for the `containerd` tests: its own root, state, runc
# root and sockets under /var/tmp/vri-containerd, the CRI plugin configured for
# these machines (containerd.toml.in), and a locally built image
# (localhost/vri/pause:1.0: a static sleeper, also the sandbox image).
#
#   tests/containerd/containerd-fixture.sh up      starts it (replacing one left running)
#   tests/containerd/containerd-fixture.sh down    stops it and removes what it made
#   tests/containerd/containerd-fixture.sh restart restarts containerd alone: running containers stay
#
# The CRI socket is /var/tmp/vri-containerd/run/containerd.sock.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
root=/var/tmp/vri-containerd
sock=$root/run/containerd.sock

say() { echo "containerd-fixture: $*"; }

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
  say down
}

up() {
  command -v containerd >/dev/null || { say "containerd is not installed (scripts/install-deps.sh)"; exit 1; }
  down >/dev/null
  mkdir -p "$root/run" "$root/image"
  sed "s|@ROOT@|$root|g" "$here/containerd.toml.in" > "$root/containerd.toml"
  start_containerd
  ctr -a "$sock" plugins ls 2>/dev/null | grep -q "io.containerd.grpc.v1 *cri .*ok" || {
    say "the CRI plugin did not start"; tail -20 "$root/containerd.log"; exit 1; }
  gcc -static -O2 -s -o "$root/image/sleeper" "$here/sleeper.c"
  "$here/mkimage.sh" "$root/image/sleeper" localhost/vri/pause:1.0 "$root/image/pause.tar" >/dev/null
  ctr -a "$sock" -n k8s.io images import "$root/image/pause.tar" >/dev/null
  say "up (pid $(cat "$root/containerd.pid"), CRI at $sock)"
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
  *) echo "usage: $0 up|down|restart" >&2; exit 2 ;;
esac

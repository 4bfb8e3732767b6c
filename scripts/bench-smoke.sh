#!/usr/bin/env bash
# Every benchmark in bench/ once, in its smallest configuration, so that none rots unseen: each must
# run to its end and print its JSON lines (the figures of a smoke run say nothing; the full figures
# are made by hand, with the command each benchmark's header gives). Needs root, the build's
# programs, and the daemons scripts/test.sh's bench stage starts: the private libvirtd
# (tests/libvirt/libvirt-fixture.sh) and Debian's containerd and containerd 2.x
# (tests/containerd/containerd-fixture.sh up 1.6 / up 2) and the control plane
# (tests/cluster/cluster-fixture.sh up).
#   scripts/bench-smoke.sh [BUILD_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
cd "$repo"
containerd1=/var/tmp/vri-containerd/run/containerd.sock
containerd2=/var/tmp/vri-containerd2/run/containerd.sock

failed=()
smoke() { # name command...
  local name=$1 out status=0
  shift
  out=$(mktemp)
  echo "--- $name: $*"
  local start=$SECONDS
  timeout 120 "$@" > "$out" 2>&1 || status=$?
  if [ $status -ne 0 ]; then
    tail -n 30 "$out"
    echo "--- $name: FAILED (exit $status)"
    failed+=("$name")
  elif ! grep -q '^{' "$out"; then
    tail -n 30 "$out"
    echo "--- $name: FAILED (no JSON line)"
    failed+=("$name")
  else
    grep '^{' "$out" | tail -n 3
    echo "--- $name: ok ($((SECONDS - start)) s)"
  fi
  rm -f "$out"
}

smoke cpuset_bench "$build/bench/cpuset_bench" --benchmark_min_time=0.01 --benchmark_format=json \
  --benchmark_out=/dev/null --benchmark_out_format=json
smoke ledger_bench "$build/bench/ledger_bench" --decisions 200
smoke trace_replay "$build/bench/trace_replay" --topology "pack:2 numa:2 core:8 pu:2" \
  --trace bench/traces/churn-64-seed1.jsonl --repeat 1
smoke shared_pool_shrink "$build/bench/shared_pool_shrink" --tenants 20 --rounds 1
smoke decision_scale "$build/bench/decision_scale" --tenants 0,20 --pairs 20 --cgroupfs both
smoke usage_scale "$build/bench/usage_scale" --tenants 0,20 --seconds 2
smoke vrid_load "$build/bench/vrid_load" --vrid "$build/vri/vrid" --clients 2 --seconds 1 --rounds 1 \
  --tenants 20 --flood-streams 4 --flood-scanners 1
smoke hook_roundtrip "$build/bench/hook_roundtrip" --runs 20 --virsh-starts 1
smoke libvirt_live_calls "$build/bench/libvirt_live_calls" --calls 10
smoke nri_sync_scale "$build/bench/nri_sync_scale" --pods=100 --admit-ms=0,1
smoke cri_passthrough_1.6 "$build/bench/cri_passthrough" --containerd="$containerd1" \
  --shim="$build/kubelet-bridge/cri-shim/vri-cri-shim" --calls=50 --containers=5
smoke cri_passthrough_2 "$build/bench/cri_passthrough" --containerd="$containerd2" \
  --shim="$build/kubelet-bridge/cri-shim/vri-cri-shim" --calls=50 --containers=5
smoke cri_pool_follow "$build/bench/cri_pool_follow" --containerd="$containerd1" --vrid="$build/vri/vrid" \
  --shim="$build/kubelet-bridge/cri-shim/vri-cri-shim" --containers=1 --rounds=1
smoke cri_create_scale "$build/bench/cri_create_scale" --tenants=0,20 --shared=2 --exclusive=1 --via=direct,shim,nri \
  --containerd="$containerd2" --vrid="$build/vri/vrid" --shim="$build/kubelet-bridge/cri-shim/vri-cri-shim" \
  --plugin="$build/kubelet-bridge/nri-plugin/vri-nri-plugin"
smoke nrt_export_latency "$build/bench/nrt_export_latency" --tenants=20 --rate=10 --seconds=2

if [ ${#failed[@]} -gt 0 ]; then
  echo "bench-smoke: failed: ${failed[*]}" >&2
  exit 1
fi
echo "bench-smoke: every benchmark ran"

#!/usr/bin/env bash
# Pod and VM churn on one node while its daemons fail at random (vrid SIGKILLed, the shim killed
# mid-create, containerd and libvirtd restarted, vrid's state filesystem full, QEMUs and containers
# killed while vrid is down), the node checked after every fault; then a report with plots.
#
#   scripts/soak.sh --minutes N --seed S [--out DIR] [--build DIR] [--min-vrid-kills K]
#
# As root. Starts the libvirt fixture (with this build's vri-hook) and Debian's containerd fixture
# when they are not running, and stops what it started. Writes DIR (default BUILD/soak): report.md
# with latency.png, process.png and decisions.png (gnuplot), summary.json, the CSV records and the
# daemons' logs. Exits non-zero when a check failed (the report lists what) or vrid was killed fewer
# than K times.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
minutes= seed= out= build=$repo/build min_kills=0
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$(realpath "$2"); shift 2 ;;
    --min-vrid-kills) min_kills=$2; shift 2 ;;
    *) echo "soak: unknown argument $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$minutes" ] && [ -n "$seed" ] || { echo "soak: --minutes and --seed are required" >&2; exit 2; }
out=$(realpath -m "${out:-$build/soak}")
soak=$build/tests/vri-node-soak
[ -x "$soak" ] || { echo "soak: $soak is missing: build it (scripts/build.sh $build)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "soak: gnuplot is missing (scripts/install-deps.sh installs gnuplot-nox)" >&2; exit 1; }

libvirt_fixture=$repo/tests/libvirt/libvirt-fixture.sh
containerd_fixture=$repo/tests/containerd/containerd-fixture.sh
started=()
stop_started() { for fixture in "${started[@]}"; do "$fixture" down 1.6 >/dev/null || true; done; }
trap stop_started EXIT
if ! virsh -c qemu:///system version >/dev/null 2>&1 || [ ! -e /etc/libvirt/hooks/qemu ]; then
  "$libvirt_fixture" up "$build/libvirt-bridge/vri-hook"
  started+=("$libvirt_fixture")
fi
if [ ! -S /var/tmp/vri-containerd/run/containerd.sock ]; then
  "$containerd_fixture" up 1.6
  started+=("$containerd_fixture")
fi

rm -rf "$out"
mkdir -p "$out"
commit="$(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
rc=0
"$soak" --minutes "$minutes" --seed "$seed" --out "$out" --min-vrid-kills "$min_kills" 2>&1 | tee "$out/soak.log" ||
  rc=${PIPESTATUS[0]}
gnuplot -e "dir='$out'" "$repo/scripts/soak-plots.gp"
echo "
Commit $commit, $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d)." >>"$out/report.md"
echo "soak: $(cat "$out/summary.json")"
echo "soak: the report is $out/report.md"
exit $rc

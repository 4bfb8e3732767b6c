#!/usr/bin/env bash
# Installs what VRI needs, builds it, starts vrid on this machine (state and
# sockets under the checkout's .vri/) and shows a first call through vrictl.
# vrid keeps running; stop it with: kill "$(cat .vri/vrid.pid)"
# Arguments go to vrid as flags (try --help), e.g. --reserved-cpus=0.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/install-deps.sh" >&2
# The tree the tests build (scripts/test.sh): the package's flags, so that one build/ serves both.
VRI_FLAGS=package "$repo/scripts/build.sh" build >&2

state="$repo/.vri"
mkdir -p "$state"
if [[ -f "$state/vrid.pid" ]] && kill -0 "$(cat "$state/vrid.pid")" 2>/dev/null; then
  echo "vrid is already running (pid $(cat "$state/vrid.pid")); stopping it first" >&2
  kill "$(cat "$state/vrid.pid")"
  while kill -0 "$(cat "$state/vrid.pid")" 2>/dev/null; do sleep 0.1; done
fi
# Without systemd (as on these machines) libvirt's VMs live under machine/.
layout=(--libvirt-layout=systemd-libvirt-level --machine-partition=machine.slice)
[[ -d /run/systemd/system ]] || layout=(--libvirt-layout=no-systemd --machine-partition=machine)

# The metrics endpoint (with --metrics-port=N) answers only scrapes that send this token:
#   curl -H "Authorization: Bearer $(cat .vri/metrics.token)" http://127.0.0.1:N/metrics
if [[ ! -s "$state/metrics.token" ]]; then
  (umask 077 && head -c 24 /dev/urandom | base64 >"$state/metrics.token")
fi

# The log is appended to across runs: only what this run writes counts. vrid's output goes there too, so it
# does not hold on to this terminal (or to a pipe this script's output goes into).
log="$state/vrid.log"
logged_before=$(stat -c %s "$log" 2>/dev/null || echo 0)
"$repo/build/vri/vrid" --config="$repo/deploy/vrid.conf" --state-dir="$state/state" \
  --socket="$state/run/vri.sock" --admin-socket="$state/run/admin.sock" --metrics-token-file="$state/metrics.token" "${layout[@]}" "$@" \
  </dev/null >>"$log" 2>&1 &
echo $! >"$state/vrid.pid"
for _ in $(seq 100); do
  tail -c +"$((logged_before + 1))" "$log" 2>/dev/null | grep -q " ready$" && break
  kill -0 "$(cat "$state/vrid.pid")" 2>/dev/null || { tail -5 "$state/vrid.log" >&2; exit 1; }
  sleep 0.1
done
echo "vrid is running (pid $(cat "$state/vrid.pid"), log $state/vrid.log)"
echo "\$ vrictl --socket $state/run/vri.sock nodeinfo"
"$repo/build/vrictl/vrictl" --socket "$state/run/vri.sock" nodeinfo
echo "\$ vrictl --socket $state/run/vri.sock pool"
"$repo/build/vrictl/vrictl" --socket "$state/run/vri.sock" pool
echo "stop it with: kill \$(cat $state/vrid.pid)"

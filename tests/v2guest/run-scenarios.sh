#!/bin/sh
# Runs the scenarios a suite names in its `# guest-scenarios:` header, in turn, in one boot (inside
# the guest; testbed.sh copies it beside the suites):
#
#   sh run-scenarios.sh <suite file>
#
# Each scenario is a suite's script run as it is, in a shell of its own: a failed step ends that
# scenario only, and the next one runs, from the state it states it needs (node_helpers.sh's
# fresh_node). Scenarios that use node_helpers.sh's step() report each step as it ends (`ok N - …`,
# `not ok N - …`); at the end, one line per scenario. Exits 1 when any failed.
# `guest.scenarios=a,b` on the kernel's command line (testbed.sh's SCENARIOS=a,b) runs only those.
here=$(dirname "$0")
scenarios=$(sed -n 's/^# guest-scenarios: *//p' "$1" | head -1)
[ -n "$scenarios" ] || { echo "run-scenarios: $1 names no scenarios"; exit 1; }
only=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^guest\.scenarios=//p' | tr ',' ' ')
for name in $only; do
  case " $scenarios " in *" $name "*) ;; *) echo "run-scenarios: no scenario $name in $1 ($scenarios)"; exit 1 ;; esac
done
# Where a scenario's emulated CPU time went, in seconds (cgroup v2's usage_usec; /proc/stat for the
# node): the scenario's own commands (this runner's unit and what it runs: kubectl, vrictl, ...), the
# daemons in system.slice (kubelet, containerd, vrid, systemd's helpers), pods, VMs. Under emulation the
# node's CPU is what a scenario waits for, so this says what to make cheaper.
cpu_seconds() { # cgroup directory: its CPU time so far, in ms
  sed -n 's/^usage_usec //p' "$1/cpu.stat" 2>/dev/null | awk '{printf "%d", $1 / 1000} END {if (!NR) print 0}'
}
cpu_sample() { # the node's busy time and each part's, in ms
  runner=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
  echo "$(awk '/^cpu / {printf "%d", ($2 + $3 + $4 + $7 + $8) * 10}' /proc/stat)" \
    "$(cpu_seconds "$runner")" "$(cpu_seconds /sys/fs/cgroup/system.slice)" \
    "$(($(cpu_seconds /sys/fs/cgroup/kubepods.slice) + $(cpu_seconds /sys/fs/cgroup/kubepods)))" \
    "$(($(cpu_seconds /sys/fs/cgroup/machine.slice) + $(cpu_seconds /sys/fs/cgroup/machine)))"
}
cpu_report() { # sample at the start, sample at the end, wall seconds
  echo "$1 $2 $3" | awk -v cpus="$(nproc)" '{
    printf "cpu: the node busy %d s of %d s x %d CPUs; the scenario'"'"'s commands %d s, system.slice'"'"'s daemons %d s, pods %d s, VMs %d s\n",
      ($6 - $1) / 1000, $11, cpus, ($7 - $2) / 1000, (($8 - $3) - ($7 - $2)) / 1000, ($9 - $4) / 1000, ($10 - $5) / 1000 }'
}
summary=/tmp/scenarios.summary
: > "$summary"
failed=0
for name in $scenarios; do
  if [ -n "$only" ] && ! echo " $only " | grep -q " $name "; then
    echo "$name: skipped (guest.scenarios=$(echo $only | tr ' ' ,))" >> "$summary"
    continue
  fi
  echo "##### scenario $name"
  begin=$(date +%s)
  cpu_begin=$(cpu_sample)
  { sh "$here/$name.sh"; echo $? > "/tmp/scenario-$name.rc"; } 2>&1 | tee "/tmp/scenario-$name.log"
  rc=$(cat "/tmp/scenario-$name.rc")
  took=$(( $(date +%s) - begin ))
  cpu_report "$cpu_begin" "$(cpu_sample)" "$took"
  # Steps as node_helpers.sh's step() reports them; a scenario that runs a GoogleTest program reports its tests.
  steps=$(grep -c '^ok [0-9]' "/tmp/scenario-$name.log")
  tests=$(grep -c '^\[       OK \]' "/tmp/scenario-$name.log")
  counted=
  [ "$steps" = 0 ] || counted=" ($steps steps passed)"
  [ "$tests" = 0 ] || counted="$counted ($tests tests passed)"
  if [ "$rc" = 0 ]; then
    echo "$name: passed in $took s$counted" >> "$summary"
  else
    failed=1
    at=$(grep -m1 '^not ok [0-9]' "/tmp/scenario-$name.log")
    echo "$name: FAILED (rc $rc) in $took s$counted${at:+; $at}" >> "$summary"
  fi
done
echo "##### scenarios"
cat "$summary"
exit $failed

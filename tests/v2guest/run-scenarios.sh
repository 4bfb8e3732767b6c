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
  { sh "$here/$name.sh"; echo $? > "/tmp/scenario-$name.rc"; } 2>&1 | tee "/tmp/scenario-$name.log"
  rc=$(cat "/tmp/scenario-$name.rc")
  took=$(( $(date +%s) - begin ))
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

#!/bin/sh
# An exclusive CreateContainer on cgroup v2 with cpuset partitions (bench/cri_create_scale), through the
# shim and through the NRI plugin on containerd 2.4 (cgroupfs driver, NRI on), with 0 and 100 shared
# tenants (pods and VMs with real cgroups), beside containerd's own creates in the same run. Timings
# are the emulation's and only informative; what must hold comes from counters: the cgroup files vrid
# writes for an exclusive create are as many with 100 tenants as with none, and no shared container
# gets a narrowing update from the runtime. Then one exclusive create with 100 tenants under strace,
# to name the files vrid writes for it, which must be as many as it counts.
# More tenants by hand (the guest's command line):
#   GUEST_ARGS=guest.create_tenants=0,100,1000 SCENARIOS=create-scale tests/v2guest/testbed.sh build node-6.12
# guest-packages: runc,jq,strace
# guest-peers: containerd-2.4
# guest-smp: 4
# guest-mem: 4096
# guest-timeout: 1800
set -eu
cd /
fail() {
  step_failed "$*"
  echo "create-scale: FAIL: $*"
  for log in /tmp/vri-create-scale-*/*.log; do
    [ -f "$log" ] && { echo "--- $log"; tail -n 40 "$log"; }
  done
  journalctl -u containerd --no-pager -o short-monotonic | tail -n 40
  exit 1
}
uuid_prefix=5c3a0e1f-2b4d-4e6f-8a9b-
. "$(dirname "$0")/node_helpers.sh"
. "$(dirname "$0")/kubelet_node.sh"
bench=$GUEST_IN/bench/cri_create_scale
programs="--vrid=$GUEST_IN/vri/vrid --shim=$GUEST_IN/kubelet-bridge/cri-shim/vri-cri-shim
  --plugin=$GUEST_IN/kubelet-bridge/nri-plugin/vri-nri-plugin"
# The way kubelet reaches containerd, the NRI socket at its default; vrid's deadline scaled for the
# emulation as in the kubelet scenario (1 s -> 5 s).
peers_at="--containerd=/run/containerd/containerd.sock --nri-socket=/var/run/nri/nri.sock --vrid-timeout-ms=5000"
tenants=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^guest\.create_tenants=//p')
tenants=${tenants:-0,100}

step "a fresh node with containerd 2.4, the cgroupfs driver and NRI on"
fresh_node
install_containerd cgroupfs nri
[ -z "$(ls /etc/containerd/conf.d)" ] || fail "containerd imports $(ls /etc/containerd/conf.d): no plugin may be required"
[ -e /sys/fs/cgroup/cgroup.controllers ] || fail "not cgroup v2"
uname -r

step "exclusive and shared creates: straight to containerd, through the shim, through NRI ($tenants tenants)"
# shellcheck disable=SC2086 # word lists
"$bench" --via=direct,shim,nri --tenants="$tenants" --shared=2 --exclusive=3 --partitions=on $peers_at $programs \
  > /tmp/create-scale.out 2>&1 || { cat /tmp/create-scale.out; fail "cri_create_scale failed"; }
cat /tmp/create-scale.out
grep '^{' /tmp/create-scale.out > /tmp/create-scale.json
json() { jq -r "$1" /tmp/create-scale.json; }
[ "$(json 'select(.via != "direct") | .partitions' | sort -u)" = true ] || fail "vrid did not use cpuset partitions"

step "an exclusive create writes the same number of cgroup files each time, on both ways in"
for via in shim nri; do
  counts=$(json "select(.via == \"$via\" and .kind == \"exclusive\") | \"\(.tenants) tenants: \(.cgroup_files_min)-\(.cgroup_files_max)\"")
  echo "$via: $(echo "$counts" | paste -sd ';' -)"
  json "select(.via == \"$via\" and .kind == \"exclusive\") | .cgroup_files_min != .cgroup_files_max or .cgroup_files_min < 1" |
    grep -q true && fail "$via: exclusive creates wrote differing numbers of files, or none was counted: $counts"
  # With VMs on the node, a pod's requests also move the machine partition's cpu.weight (the VMs' share
  # beside kubepods): one file more from the first VM on, named below; more tenants add none.
  json "select(.via == \"$via\" and .kind == \"exclusive\") | .cgroup_files_min" | sort -un | paste -sd ' ' - |
    awk '{exit !(NF == 1 || (NF == 2 && $2 == $1 + 1))}' || fail "$via: the files an exclusive create writes grow with the tenants: $counts"
done

step "each exclusive container is a root partition as soon as its start returns, its start's writes the same whatever the tenants"
json 'select(.via != "direct" and .kind == "exclusive") | "\(.via) \(.tenants): \(.partitions_at_start) of \(.creates) root partitions; each start wrote \(.start_cgroup_files_min)-\(.start_cgroup_files_max) files"'
json 'select(.via != "direct" and .kind == "exclusive") | .partitions_at_start == .creates and .starts_with_writes == .creates' |
  grep -q false && fail "an exclusive container was no root partition when its start returned, or its start wrote nothing"
[ "$(json 'select(.via != "direct" and .kind == "exclusive") | .start_cgroup_files_min, .start_cgroup_files_max' | sort -u | wc -l)" = 1 ] ||
  fail "the starts' writes vary"

step "no shared container gets a narrowing update from the runtime"
updates=$(json 'select(.via != "direct" and .kind == "exclusive") | "\(.via) \(.tenants): \(.runtime_updates)"')
echo "$updates"
echo "$updates" | awk '$3 != 0 {bad = 1} END {exit bad}' || fail "runtime updates of shared containers: $updates"

step "end to end against containerd's own create (information)"
json 'select(.via != "direct") | "\(.via) \(.kind) \(.tenants) tenants: \(.end_to_end_ms_p50) ms, \(.end_to_end_vs_direct)x containerd'"'"'s own"'

step "the files vrid writes for an exclusive create and its start, with 0 and with 100 tenants, named by strace"
cat > /tmp/vrid-traced <<EOF2
#!/bin/sh
# vrid under strace (only its writes, with the files they go to), a trace per vrid; stopped as vrid is.
strace -f -qq -y -ttt --seccomp-bpf -e trace=write,pwrite64 -e signal=none -o /tmp/vrid.trace.\$\$ \
  $GUEST_IN/vri/vrid "\$@" &
tracer=\$!
trap 'pkill -TERM -P \$tracer; wait \$tracer' TERM
wait \$tracer
EOF2
chmod +x /tmp/vrid-traced
rm -f /tmp/vrid.trace.*
# shellcheck disable=SC2086 # word lists
"$bench" --via=shim --tenants=0,100 --shared=1 --exclusive=1 --partitions=on --print-windows $peers_at $programs \
  --vrid=/tmp/vrid-traced > /tmp/create-traced.out 2>&1 || { cat /tmp/create-traced.out; fail "the traced run failed"; }
cat /tmp/vrid.trace.* > /tmp/vrid.trace
for call in create start; do
for tenants in 0 100; do
  window=$(sed -n "s/^shim-$tenants exclusive $call 0: wall clock \([0-9.]*\) to \([0-9.]*\)\$/\1 \2/p" /tmp/create-traced.out)
  [ -n "$window" ] || { cat /tmp/create-traced.out; fail "no window for the exclusive $call with $tenants tenants"; }
  field=cgroup_files_max
  [ "$call" = create ] || field=start_cgroup_files_max
  counted=$(grep '^{' /tmp/create-traced.out | jq -r "select(.kind == \"exclusive\" and .tenants == $tenants) | .$field")
  # strace -y: 812 1795984292.695608 write(22</sys/fs/cgroup/kubepods/.../cpuset.cpus>, "3", 1) = 1; the run's
  # names (its private root, container ids) made alike across runs.
  awk -v from="${window% *}" -v to="${window#* }" '$2 >= from && $2 <= to && $3 ~ /\/sys\/fs\/cgroup\// {
      match($3, /<\/sys\/fs\/cgroup\/[^>]*>/); file = substr($3, RSTART + 16, RLENGTH - 17)
      match($0, /, "[^"]*"/); value = substr($0, RSTART + 3, RLENGTH - 4)
      print file " = " value }' /tmp/vrid.trace |
    sed -e 's/vri-create-scale-[0-9]*/<run>/g' -e 's/[0-9a-f]\{64\}/<container>/g' > "/tmp/$call-files-$tenants.txt"
  echo "the $call with $tenants tenants: vrid counted $counted files; strace saw these $(wc -l < "/tmp/$call-files-$tenants.txt") writes:"
  sed 's/^/  /' "/tmp/$call-files-$tenants.txt"
  [ "$(wc -l < "/tmp/$call-files-$tenants.txt")" = "$counted" ] || fail "vrid counted $counted files, strace saw other writes"
done
done
extra=$(cat /tmp/create-files-0.txt /tmp/start-files-0.txt | sed 's/ = .*//' | sort > /tmp/files-0
  cat /tmp/create-files-100.txt /tmp/start-files-100.txt | sed 's/ = .*//' | sort | comm -13 /tmp/files-0 -)
echo "written with 100 tenants and not with none: ${extra:-nothing}"
[ -z "$(echo "$extra" | grep -vx '<run>/machine/cpu.weight')" ] || fail "100 tenants add writes besides the machine partition's weight: $extra"
steps_done create-scale

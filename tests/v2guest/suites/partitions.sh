#!/bin/sh
# cgroup v2 cpuset partitions on Debian 12's 6.12 kernel, on a node laid out as kubelet's systemd
# driver lays it out: what a remote partition costs, what it does to the processes outside it, and
# what invalidates it. Each step states what the kernel is expected to do and fails otherwise; the
# kernel's own words (partition states, refusals, warnings) are printed as they come. Then vrid's
# partition mode on the same node (partitions_vrid_test).
# guest-kernel: linux-image-6.12.117+deb12-amd64=6.12.117-1~deb12u1
# guest-smp: 4
# guest-timeout: 900
set -u
begin=$(date +%s)
cd /
cg=/sys/fs/cgroup
failures=0
step() { echo "=== [$(( $(date +%s) - begin )) s] $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
show() { for d in "$@"; do printf '  %-58s cpus=%-6s eff=%-6s excl=%-5s excl.eff=%-5s %s\n' "${d#$cg/}" \
  "$(cat $d/cpuset.cpus)" "$(cat $d/cpuset.cpus.effective)" "$(cat $d/cpuset.cpus.exclusive)" \
  "$(cat $d/cpuset.cpus.exclusive.effective)" "$(cat $d/cpuset.cpus.partition)"; done; }
writes=0
# put VALUE FILE: one write, counted; /bin/echo, so that a refusal comes with the kernel's errno.
put() {
  writes=$((writes + 1))
  if /bin/echo "$1" > "$2" 2> /tmp/err; then echo "  $1 > ${2#$cg/}"; return 0; fi
  echo "  $1 > ${2#$cg/}: refused ($(sed 's/.*: //' /tmp/err))"
  return 1
}
refused() { # VALUE FILE ERRNO-TEXT
  put "$1" "$2" && { fail "the kernel took $1 > ${2#$cg/}"; return; }
  grep -q "$3" /tmp/err || fail "the kernel refused $1 > ${2#$cg/} with $(cat /tmp/err), not $3"
}
state() { cat "$1/cpuset.cpus.partition"; }
expect_state() { # DIR STATE-PATTERN WHY
  s=$(state "$1")
  case "$s" in $2) ;; *) fail "${1#$cg/} is '$s', not '$2': $3";; esac
}
expect_eff() { [ "$(cat "$1/cpuset.cpus.effective")" = "$2" ] || fail "${1#$cg/} runs on $(cat "$1/cpuset.cpus.effective"), not $2: $3"; }
allowed() { sed -n 's/^Cpus_allowed_list:\t*//p' "/proc/$1/status"; }
pid_of() { systemctl show -p MainPID --value "$1"; }
# Kernel warnings from the cpuset code since the last call, printed with their place.
warned=0
warnings() {
  n=$(dmesg | grep -c 'WARNING: .*kernel/cgroup/cpuset.c')
  if [ "$n" -gt "$warned" ]; then
    echo "  KERNEL WARNING: $(dmesg | grep 'WARNING: .*kernel/cgroup/cpuset.c' | tail -1 | sed 's/.*at //')"
  fi
  new=$((n - warned)); warned=$n
  return "$new"
}
unit() { systemd-run --quiet --unit="$1" --slice="$2" -p AllowedCPUs="$3" sleep infinity; }

step "kernel $(uname -r), CPUs $(cat $cg/cpuset.cpus.effective)"
# A Burstable pod (b1), a Guaranteed pod whose container g1 takes CPU 3 beside a second container
# (side, as the pod's sandbox or a shared container), and another Guaranteed pod (o1).
unit b1 kubepods-burstable-poda.slice 0-3
unit g1 kubepods-podb.slice 0-3
unit side kubepods-podb.slice 0-3
unit o1 kubepods-podo.slice 0-3
K=$cg/kubepods.slice; P=$K/kubepods-podb.slice; G=$P/g1.service; S=$P/side.service
B=$K/kubepods-burstable.slice/kubepods-burstable-poda.slice/b1.service; O=$K/kubepods-podo.slice/o1.service
[ -f $G/cpuset.cpus.exclusive ] || { echo "FAIL: no cpuset.cpus.exclusive: not a kernel with remote partitions"; exit 1; }
show $K $P $G $S $B

step "a remote partition for g1 on CPU 3: its pod's other container leaves CPU 3, then 4 writes"
put 0-2 $S/cpuset.cpus
writes=0
t0=$(date +%s%N)
put 3 $K/cpuset.cpus.exclusive
put 3 $P/cpuset.cpus.exclusive
put 3 $G/cpuset.cpus.exclusive
t1=$(date +%s%N)
put root $G/cpuset.cpus.partition
t2=$(date +%s%N)
echo "  $writes writes; cpuset.cpus.exclusive x3 $(( (t1 - t0) / 1000 )) us, cpuset.cpus.partition $(( (t2 - t1) / 1000 )) us"
show $K $P $G $S $B $O
expect_state $G root "a remote partition whose siblings leave its CPU"
expect_eff $G 3 "the partition holds CPU 3"
for u in b1 o1; do
  [ "$(allowed "$(pid_of $u)")" = 0-2 ] || fail "$u's process may run on $(allowed "$(pid_of $u)"), not 0-2"
done
[ "$(cat $B/cpuset.cpus)" = 0-3 ] || fail "b1's cpuset.cpus changed"
echo "  b1's and o1's processes: Cpus_allowed_list $(allowed "$(pid_of b1)"), their cgroups unwritten (cpuset.cpus 0-3)"
echo "  g1's process: $(allowed "$(pid_of g1)")"
warnings || fail "a kernel warning while forming the partition"

step "writes that leave the partition alone: a cousin's and another pod's cpuset.cpus, a new sibling on 0-2, systemd"
put 0-2 $B/cpuset.cpus; put 0-3 $B/cpuset.cpus
put 0-2 $O/cpuset.cpus; put 0-3 $O/cpuset.cpus
unit side3 kubepods-podb.slice 0-2
systemctl set-property --runtime side.service AllowedCPUs=0-2 && echo "  systemctl set-property side AllowedCPUs=0-2"
systemctl daemon-reload && echo "  systemctl daemon-reload"
show $K $P $G
expect_state $G root "none of these overlaps g1's CPU within its pod"
[ "$(cat $K/cpuset.cpus.exclusive)" = 3 ] || fail "daemon-reload changed kubepods.slice's cpuset.cpus.exclusive"
warnings || fail "a kernel warning from writes that leave the partition alone"

step "a sibling's cpuset.cpus written over the partition's CPU (runc or systemd rewriting the pod's other container)"
put 0-3 $S/cpuset.cpus
show $G $S
expect_state $G "root invalid*" "a sibling overlapping a remote partition invalidates it on this kernel"
[ "$(allowed "$(pid_of b1)")" = 0-3 ] && echo "  the CPU went back to everyone: b1 may run on $(allowed "$(pid_of b1)")"
warnings && echo "  (no kernel warning)"
step "narrowing the sibling again does not revalidate it"
put 0-2 $S/cpuset.cpus
expect_state $G "root invalid*" "the kernel revalidates a partition only when written"
echo "  $(state $G)"
step "nor does writing root again: member, then root, does"
put root $G/cpuset.cpus.partition
echo "  $(state $G)"
put member $G/cpuset.cpus.partition
put root $G/cpuset.cpus.partition
expect_state $G root "member then root repairs it once its siblings leave its CPU"
expect_eff $G 3 "repaired"
warnings && echo "  (no kernel warning)"
show $G

step "a new sibling made by systemd with the partition's CPU"
unit side2 kubepods-podb.slice 0-3
show $G $P/side2.service
echo "  g1: $(state $G)"
warnings && echo "  (no kernel warning)"
systemctl stop side2.service
put member $G/cpuset.cpus.partition; put root $G/cpuset.cpus.partition
expect_state $G root "repaired once the new sibling left"
warnings && echo "  (no kernel warning)"

step "the partition's own cpuset.cpus narrowed to another CPU, then back"
put 2 $G/cpuset.cpus; echo "  g1: $(state $G)"
put 0-3 $G/cpuset.cpus
expect_state $G root "its own cpuset.cpus written back over its CPU"
warnings && echo "  (no kernel warning)"

step "what the kernel refuses, and how"
unit g2 kubepods-podc.slice 0-3
C=$K/kubepods-podc.slice; G2=$C/g2.service
refused 3 $C/cpuset.cpus.exclusive "Invalid argument"  # a CPU a sibling (pod b) holds exclusively
put 2-3 $K/cpuset.cpus.exclusive
put 2 $C/cpuset.cpus.exclusive
put 2-3 $G2/cpuset.cpus.exclusive  # more than its parent's exclusive CPUs: taken, and clipped
[ "$(cat $G2/cpuset.cpus.exclusive.effective)" = 2 ] ||
  fail "g2's exclusive 2-3 under a parent's 2 is effective as $(cat $G2/cpuset.cpus.exclusive.effective)"
put 2 $G2/cpuset.cpus.exclusive
put root $G2/cpuset.cpus.partition
expect_state $G2 root "a second remote partition on CPU 2"
expect_eff $B 0-1 "two partitions out of the shared CPUs"
put 1 $G2/cpuset.cpus.exclusive
expect_state $G2 "root invalid (*)" "a partition whose exclusive CPU is not its parent's"
echo "  $(state $G2)"
put member $G2/cpuset.cpus.partition
put "" $G2/cpuset.cpus.exclusive
put root $G2/cpuset.cpus.partition
# Without cpuset.cpus.exclusive of its own, a remote partition takes its cpuset.cpus within its parent's.
expect_state $G2 root "a partition without exclusive CPUs of its own, under a parent's CPU 2"
expect_eff $G2 2 "cpuset.cpus 0-3 within its parent's exclusive 2"
put member $G2/cpuset.cpus.partition
put "" $C/cpuset.cpus.exclusive
refused 0-3 $C/cpuset.cpus.exclusive "Invalid argument"  # overlaps pod b's exclusive CPU 3
warnings && echo "  (no kernel warning)"

step "a threaded cgroup (as a VM's vCPU thread group)"
mkdir $cg/vri-vm
sleep infinity > /dev/null 2>&1 &
vm=$!
echo $vm > $cg/vri-vm/cgroup.procs
echo +cpuset > $cg/vri-vm/cgroup.subtree_control
mkdir $cg/vri-vm/vcpu0
echo threaded > $cg/vri-vm/vcpu0/cgroup.type
put 1 $cg/vri-vm/cpuset.cpus.exclusive
put 1 $cg/vri-vm/vcpu0/cpuset.cpus.exclusive
put root $cg/vri-vm/vcpu0/cpuset.cpus.partition
echo $vm > $cg/vri-vm/vcpu0/cgroup.threads
show $cg/vri-vm/vcpu0
expect_state $cg/vri-vm/vcpu0 root "a threaded cgroup may be a remote partition on this kernel"
[ "$(allowed $vm)" = 1 ] || fail "the thread in the threaded partition may run on $(allowed $vm)"
expect_eff $B 0,2 "the shared CPUs without the thread group's 1 and g1's 3"
put member $cg/vri-vm/vcpu0/cpuset.cpus.partition
# Gone again, with its exclusive CPU: what runs after this suite in the same boot may take CPU 1.
put "" $cg/vri-vm/vcpu0/cpuset.cpus.exclusive
put "" $cg/vri-vm/cpuset.cpus.exclusive
kill $vm
wait $vm 2> /dev/null
rmdir $cg/vri-vm/vcpu0 $cg/vri-vm || fail "the thread group's cgroups are still there"
warnings && echo "  (no kernel warning)"

step "g1's partition released in 4 writes"
writes=0
t0=$(date +%s%N)
put member $G/cpuset.cpus.partition
put "" $G/cpuset.cpus.exclusive
put "" $P/cpuset.cpus.exclusive
put "" $K/cpuset.cpus.exclusive
t1=$(date +%s%N)
echo "  $writes writes, $(( (t1 - t0) / 1000 )) us"
show $K $P $G $B
[ "$(allowed "$(pid_of b1)")" = 0-3 ] || fail "b1's process may run on $(allowed "$(pid_of b1)") after the release"
warnings && echo "  (no kernel warning)"

step "cost: 20 partitions formed and undone (member, root: a scheduler-domain rebuild each) against 40 plain cpuset.cpus writes"
put 3 $K/cpuset.cpus.exclusive; put 3 $P/cpuset.cpus.exclusive; put 3 $G/cpuset.cpus.exclusive
t0=$(date +%s%N)
for i in $(seq 20); do echo root > $G/cpuset.cpus.partition; echo member > $G/cpuset.cpus.partition; done
t1=$(date +%s%N)
for i in $(seq 20); do echo 0-2 > $B/cpuset.cpus; echo 0-3 > $B/cpuset.cpus; done
t2=$(date +%s%N)
echo "  40 partition writes: $(( (t1 - t0) / 40000 )) us each; 40 cpuset.cpus writes: $(( (t2 - t1) / 40000 )) us each"

step "vrid's partition mode on this node (tests/v2guest/partitions_vrid_test.cc), once the units above are gone"
put "" $G/cpuset.cpus.exclusive; put "" $P/cpuset.cpus.exclusive; put "" $K/cpuset.cpus.exclusive
systemctl stop b1 g1 side side3 o1 kubepods-podb.slice kubepods-podo.slice kubepods-burstable-poda.slice \
  kubepods-burstable.slice 2> /dev/null
"$GUEST_IN/tests/partitions_vrid_test" --gtest_color=no || fail "vrid's partition mode: see the test's output above"
warnings
echo "  $? kernel warnings from cpuset.c during vrid's tests (the invalidating sibling write and its repair)"

echo
[ "$failures" = 0 ] || { echo "$failures failures"; exit 1; }
echo "partitions: every check passed"

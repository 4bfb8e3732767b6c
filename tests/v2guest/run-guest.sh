#!/bin/bash
# Boot the guest image once, throwaway (snapshot=on: the image is never modified),
# run <indir>/run.sh inside (via guest-run.service), collect results in <outdir>, power off.
#
# Usage: run-guest.sh <image> <indir (ro 9p tag 'in')> <outdir (rw 9p tag 'out')> [extra kernel args...]
# Env:   KERNEL=vmlinuz  INITRD=initrd.cpio.gz  (required)
#        ACCEL=tcg|kvm (default tcg: where /dev/kvm is PVM, as on the CI machines, stock kernels do not boot under kvm)
#        SMP=2  MEM=2048 (MiB)  NUMA=1 (2 nodes, one vCPU each, MEM/2 each)  CPU=qemu64 (TCG; kvm: host)
#        Exit: the guest's rc; 95 the guest's kernel panicked while booting; 96 the console went silent;
#        97 QEMU itself aborted; 98 an emulated CPU locked up; 99 no result
#        TIMEOUT=600 (s)  SILENT=600 (s)  LOG=<file> (serial console log; default <outdir>/console.log)
#        INTERACTIVE=1: serial console on this terminal, autologin root shell, no script (Ctrl-A x quits)
#        FORWARD=guest-ip:port=host-ip:port  a network device on QEMU's user network that reaches
#          nothing (restrict=on) but the one forward: a TCP connection the guest makes to guest-ip:port is
#          one socat makes to host-ip:port (the control plane's API server: tests/cluster/); the guest
#          is 10.0.2.15/24 there, and configures the device itself
set -euo pipefail
IMG=$(readlink -f "${1:?image}"); IN=$(readlink -f "${2:?indir}"); OUT=${3:?outdir}; shift 3
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT"); rm -f "$OUT/rc" "$OUT/output.log"
: "${KERNEL:?}" "${INITRD:?}"
ACCEL=${ACCEL:-tcg}; SMP=${SMP:-2}; MEM=${MEM:-2048}; NUMA=${NUMA:-1}
# Under TCG the plain qemu64 model, not "max": the guest then runs the same work 20-25% faster (200
# fork+exec 5.0-5.4 s against 6.7-8.0 s, gzip of 20 MB 2.6-3.0 s against 3.2-3.9 s, boot to the suite
# 25 s against 30 s, 4 vCPUs, three boots each). Every program the guest runs is built for baseline x86-64.
CPU=${CPU:-$([ "$ACCEL" = kvm ] && echo host || echo qemu64)}
LOG=${LOG:-$OUT/console.log}
if [ "$ACCEL" = kvm ]; then ACC=(-accel kvm -cpu "$CPU,-arch-capabilities")
else ACC=(-accel tcg,thread=multi -cpu "$CPU"); fi
TOPO=(-smp "$SMP,sockets=1,cores=$SMP,threads=1" -m "$MEM")
if [ "$NUMA" = 1 ] && [ "$SMP" -ge 2 ]; then
  half=$((MEM/2)); last=$((SMP-1)); mid=$((SMP/2))
  TOPO+=(-object memory-backend-ram,id=m0,size=${half}M -object memory-backend-ram,id=m1,size=$((MEM-half))M
         -numa node,nodeid=0,cpus=0-$((mid-1)),memdev=m0 -numa node,nodeid=1,cpus=$mid-$last,memdev=m1)
fi
# No KVM inside the guest: its VMs are emulated (<domain type='qemu'>), and under TCG the host's
# CPU models offer the guest SVM, so libvirtd's QEMU probe opened /dev/kvm, and registering KVM's
# notifier once oopsed the 6.12 guest on an emulated int3 (a libvirtd restart in the systemd suite).
NET=()
if [ -n "${FORWARD:-}" ]; then
  command -v socat > /dev/null || { echo "run-guest: FORWARD needs socat (scripts/install-deps.sh)" >&2; exit 2; }
  guest_end=${FORWARD%%=*} host_end=${FORWARD#*=}
  NET=(-netdev "user,id=net0,restrict=on,guestfwd=tcp:$guest_end-cmd:socat - TCP:$host_end"
       -device virtio-net-pci,netdev=net0)
fi
APPEND="console=ttyS0 root=/dev/vda rw quiet systemd.show_status=0 panic=-1 modprobe.blacklist=kvm,kvm_amd,kvm_intel $*"
start=$(date +%s.%N)
if [ "${INTERACTIVE:-0}" = 1 ]; then
  APPEND="$APPEND guest.run=none"; exec qemu-system-x86_64 "${ACC[@]}" "${TOPO[@]}" \
  -machine q35 -nodefaults -no-user-config -nographic -serial mon:stdio -no-reboot \
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
  -drive file="$IMG",if=virtio,format=raw,snapshot=on,cache=unsafe \
  -fsdev local,id=fin,path="$IN",security_model=none,readonly=on -device virtio-9p-pci,fsdev=fin,mount_tag=in \
  -fsdev local,id=fout,path="$OUT",security_model=none -device virtio-9p-pci,fsdev=fout,mount_tag=out \
  -device virtio-rng-pci "${NET[@]}"
fi
set +e
timeout "${TIMEOUT:-600}" qemu-system-x86_64 "${ACC[@]}" "${TOPO[@]}" \
  -machine q35 -nodefaults -no-user-config -nographic -serial stdio -no-reboot \
  -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" \
  -drive file="$IMG",if=virtio,format=raw,snapshot=on,cache=unsafe \
  -fsdev local,id=fin,path="$IN",security_model=none,readonly=on -device virtio-9p-pci,fsdev=fin,mount_tag=in \
  -fsdev local,id=fout,path="$OUT",security_model=none -device virtio-9p-pci,fsdev=fout,mount_tag=out \
  -device virtio-rng-pci "${NET[@]}" < /dev/null > "$LOG" 2>&1 &
qemu=$!
# Under TCG an emulated CPU now and then locks up for good (the guest's kernel reports a soft lockup
# that only grows). Such a guest never finishes: it is stopped as soon as a CPU has been stuck for
# 120 s, and the exit code 98 says so (testbed.sh boots once more).
# A guest can also freeze without a word (seen once under heavy load on the host: the console
# stopped in the middle of a suite for the rest of its 45 minutes). Every suite prints a line at
# least every few minutes, so a console silent for SILENT seconds is stopped too, with exit code 96.
locked=0 silent=0
while kill -0 "$qemu" 2>/dev/null; do
  if grep -qE 'soft lockup - CPU#[0-9]+ stuck for ([0-9]{4,}|[2-9][0-9]{2}|1[2-9][0-9])s' "$LOG" 2>/dev/null; then
    locked=1
    kill "$qemu" 2>/dev/null
    break
  fi
  if [ $(( $(date +%s) - $(stat -c %Y "$LOG" 2>/dev/null || date +%s) )) -ge "${SILENT:-600}" ]; then
    silent=1
    kill "$qemu" 2>/dev/null
    break
  fi
  sleep 5
done
wait "$qemu"
qrc=$?
set -e
if [ "$silent" = 1 ] && [ ! -f "$OUT/rc" ]; then
  echo "qemu stopped: the guest's console was silent for ${SILENT:-600} s"
  exit 96
fi
if [ "$locked" = 1 ]; then
  echo "qemu stopped: an emulated CPU locked up ($(grep -oE 'soft lockup - CPU#[0-9]+ stuck for [0-9]+s' "$LOG" | tail -1))"
  exit 98
fi
end=$(date +%s.%N)
# QEMU itself can abort under TCG (seen: an assertion in its MSI-X table emulation while SeaBIOS
# boots). That is the emulator, not the suite: exit code 97 says so (testbed.sh boots once more).
if [ ! -f "$OUT/rc" ] && [ "$qrc" -ge 128 ] && [ "$qrc" != 137 ] && grep -q '^qemu-system-x86_64: .*Assertion' "$LOG"; then
  echo "qemu aborted (exit $qrc): $(grep -m1 '^qemu-system-x86_64: .*Assertion' "$LOG")"
  exit 97
fi
# Under TCG the guest's kernel can also die while it boots (seen twice on 6.12 with 4 vCPUs: an int3
# trap in the scheduler of an idle CPU, 11 and 16 s in, a code-patching race of the emulation). Before
# the suite has printed anything that is the emulator, not the suite: exit code 95 says so (testbed.sh
# boots once more). Any other panic, or one once the suite runs, stays a failure.
if [ ! -f "$OUT/rc" ] && grep -q 'Kernel panic - not syncing' "$LOG" && grep -q 'Oops: int3' "$LOG" &&
  [ "$(grep -c 'guest-run\[' "$LOG")" -le 1 ]; then
  echo "the guest's kernel panicked while booting: $(grep -m1 'Kernel panic - not syncing' "$LOG")"
  exit 95
fi
printf 'qemu exit=%s wall=%.1fs guest rc=%s\n' "$qrc" "$(echo "$end - $start" | bc)" "$(cat "$OUT/rc" 2>/dev/null || echo none)"
[ -f "$OUT/rc" ] && exit "$(cat "$OUT/rc")" || exit 99

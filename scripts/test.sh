#!/usr/bin/env bash
# Installs what VRI needs, checks the formatting against .clang-format (first: it costs a
# second and fails a run that would otherwise fail only at its end), builds VRI, and runs every
# test:
#   0. the outside programs Debian 12 lacks, built from their Go modules (scripts/build-peers.sh:
#      kubelet, containerd 2.x at three releases), cached outside the clone,
#   1. the whole suite built with g++ (every label; libvirtd and both containerds, Debian's 1.6 and
#      2.x, are started for the `libvirt`, `containerd` and `containerd2` tests and stopped
#      afterwards), and the CRI pass-through benchmark against each containerd,
#   2. the Debian package (dpkg-buildpackage, its unit tests, lintian), and the first packaged
#      release, built once and cached (upgrades are tested from it),
#   3. the `v2guest` suites: a throwaway Debian guest with real cgroup v2 and systemd, booted
#      under QEMU's emulation once per suite (after the host tests: emulation takes both cores);
#      the `node` suite installs the package there beside libvirt, machined and AppArmor,
#   4. the unit tests again built with clang and AddressSanitizer + UndefinedBehaviorSanitizer, with
#      the fuzz targets (fuzz/): their corpora replayed, then a short fuzzing run that only reports,
#   5. the unit tests that run no real gRPC built with clang and ThreadSanitizer.
# Prints how long each stage took.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

jobs=$(nproc)
timings=()
stage() {
  local name=$1
  shift
  echo "=== ${name}"
  local start_ms=$(($(date +%s%N) / 1000000))
  "$@"
  local ms=$(($(date +%s%N) / 1000000 - start_ms))
  local seconds=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
  timings+=("$(printf '%-34s %7s s' "$name" "$seconds")")
  echo "=== ${name}: ${seconds} s"
}

check_format() {
  local files
  mapfile -t files < <(git ls-files '*.cc' '*.h')
  clang-format --dry-run --Werror "${files[@]}"
}

total_start=$(date +%s)
stage "install dependencies" scripts/install-deps.sh
stage "format check" check_format
# kubelet and containerd 2.x from their Go modules (cached outside the clone, by go.sum).
stage "peers (Go modules; cached)" scripts/build-peers.sh build/peers
# promtool, which checks the metrics endpoint's output (Debian's prometheus package, unpacked; cached).
stage "promtool (cached)" scripts/get-promtool.sh build/promtool
stage "build (g++)" env CXX=g++ CC=gcc scripts/build.sh build
# The `libvirt` tests need a real libvirtd with vri-hook installed before it starts.
libvirt_fixture=tests/libvirt/libvirt-fixture.sh
stage "start libvirtd (libvirt tests)" "$libvirt_fixture" up build/libvirt-bridge/vri-hook
# The `containerd` tests need a real containerd with the CRI plugin and a local image: Debian's 1.6
# (label containerd) and 2.x (label containerd2), side by side.
containerd_fixture=tests/containerd/containerd-fixture.sh
# The NRI plugin's tests also run on the oldest and newest 2.x lines (2.0, 2.4).
containerds=(1.6 2 2.0 2.4)
containerds_down() { for flavour in "${containerds[@]}"; do "$containerd_fixture" down "$flavour"; done; }
containerds_up() { for flavour in "${containerds[@]}"; do "$containerd_fixture" up "$flavour"; done; }
trap '"$libvirt_fixture" down; containerds_down' EXIT
stage "start containerd 1.6, 2.x (2.2, 2.0, 2.4)" containerds_up
stage "test (g++, all labels but v2guest)" ctest --test-dir build -j "$jobs" -LE v2guest --output-on-failure
stage "bench (CRI pass-through, 1.6)" build/bench/cri_passthrough \
  --containerd=/var/tmp/vri-containerd/run/containerd.sock --shim=build/kubelet-bridge/vri-cri-shim
stage "bench (CRI pass-through, 2.x)" build/bench/cri_passthrough \
  --containerd=/var/tmp/vri-containerd2/run/containerd.sock --shim=build/kubelet-bridge/vri-cri-shim
stop_fixtures() { "$libvirt_fixture" down && containerds_down; }
stage "stop libvirtd and containerd" stop_fixtures
trap - EXIT
stage "package (dpkg-buildpackage, lintian)" scripts/build-package.sh build/package
stage "first package (cached by its tag)" tests/v2guest/first-package.sh build
stage "test (v2 guest)" ctest --test-dir build -L v2guest --output-on-failure
# The sanitizer builds build only what their tests run (tests/CMakeLists.txt: tests-<label>), and
# are checked to hold every test of those labels that the g++ build holds: a test whose program is
# missing from tests-<label> would otherwise be left out without a word.
same_tests() { # label-regex build-dir
  diff <(ctest --test-dir build -N -L "$1" | sed -n 's/^ *Test *#[0-9]*: //p' | sort) \
    <(ctest --test-dir "$2" -N -L "$1" | sed -n 's/^ *Test *#[0-9]*: //p' | sort) ||
    { echo "$2 lacks the tests above (label $1): add their programs to tests-<label>" >&2; return 1; }
}
stage "build (clang, ASan+UBSan, fuzz targets)" env CXX=clang++ CC=clang \
  VRI_BUILD_TARGETS="tests-unit tests-unit-grpc tests-fuzz" \
  scripts/build.sh build-asan -DVRI_SANITIZE=address,undefined -DVRI_FUZZ=ON -DVRI_BUILD_BENCHMARKS=OFF
stage "check (ASan+UBSan build holds every unit test)" same_tests unit build-asan
# Every committed fuzz input once (corpora and the regressions of past findings): blocks.
stage "fuzz (replay corpora and regressions)" env ASAN_OPTIONS=detect_leaks=1 \
  ctest --test-dir build-asan -L fuzz -j "$jobs" --output-on-failure
# A short run from the corpora with a fixed seed: reported, never blocking (a finding is for a
# person to reduce, fix and add to fuzz/regressions/).
fuzz_short() { scripts/fuzz.sh --seed 1 15 || echo "fuzz: a finding above; the short run reports it and does not fail"; }
stage "fuzz (15 s per target, seed 1; reports only)" fuzz_short
stage "test (clang, ASan+UBSan, unit)" env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L unit -j "$jobs" --output-on-failure
# ThreadSanitizer: a third build. The `unit` tests only: those labelled `unit-grpc` run real gRPC,
# whose synchronisation TSan cannot see in Debian's uninstrumented libgrpc (tests/CMakeLists.txt).
stage "build (clang, TSan)" env CXX=clang++ CC=clang VRI_BUILD_TARGETS="tests-unit" \
  scripts/build.sh build-tsan -DVRI_SANITIZE=thread -DVRI_BUILD_BENCHMARKS=OFF
stage "check (TSan build holds every unit test)" same_tests '^unit$' build-tsan
stage "test (clang, TSan, unit)" env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan -L '^unit$' -j "$jobs" --output-on-failure

echo
echo "Stage times:"
printf '  %s\n' "${timings[@]}"
echo "  total: $(( $(date +%s) - total_start )) s"

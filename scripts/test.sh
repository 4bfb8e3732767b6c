#!/usr/bin/env bash
# VRI's tests, in stages grouped in tiers; with no argument, every stage (what CI runs through
# .ci/run). Each stage's time is printed, and a summary at the end.
#
#   scripts/test.sh                 every stage, in the table's order
#   scripts/test.sh TIER|STAGE...   those stages, each after the stages it needs
#   scripts/test.sh --list          the table: stage, tier, what it needs, what it makes
#
# Tiers: unit (the format check, the g++ build, the `unit` and `unit-grpc` tests, the TSan build
# and its `unit` tests: under 10 minutes warm), host (root, libvirt, containerd, kubelet: real
# daemons started and stopped here; five minutes of the soak; every benchmark once, as smoke), package (the Debian package and
# the first release's, and the packaged vri-hook's exec-to-exit benchmark), guest (the cgroup v2 guest suites under QEMU), fuzz (the ASan+UBSan build:
# the corpora, a short fuzzing run, the unit tests under the sanitizers). The g++ tree is built with
# the package's flags, so the package's build takes its objects from ccache instead of compiling
# them again, and runs no tests of its own.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
jobs=$(nproc)

# One line per stage, in the order a full run takes them: its name, its tier, the stages it needs
# (run first when it is asked for alone), what it makes.
read -r -d '' table <<'TABLE' || true
stage         | tier    | needs                              | makes
install       | -       | -                                  | the Debian packages scripts/install-deps.sh lists
format        | unit    | install                            | -
build         | unit    | install                            | build/ (g++, the package's flags)
test-unit     | unit    | build                              | -
build-tsan    | unit    | install                            | build-tsan/ (clang, ThreadSanitizer; tests-unit)
test-tsan     | unit    | build build-tsan                   | -
peers         | host    | install                            | build/peers/ (Kubernetes, etcd, containerd 2.x, podfingerprint; cached)
promtool      | host    | install                            | build/promtool/ (cached)
test-host     | host    | build peers promtool               | -
bench         | host    | build peers                        | -
package       | package | install                            | build/package/ (the .deb, lintian.txt)
bench-package | package | build package                      | -
first-package | package | install                            | build/package-first/ (cached by its tag)
test-guest    | guest   | build peers package first-package  | build/v2guest/ (each suite's results)
build-asan    | fuzz    | install                            | build-asan/ (clang, ASan+UBSan, fuzz targets)
fuzz          | fuzz    | build-asan                         | -
test-asan     | fuzz    | build build-asan                   | -
prune-caches  | -       | -                                  | the caches outside the clone, old keys removed
TABLE

declare -a stage_names=()
declare -A stage_tier=() stage_needs=()
while IFS='|' read -r name tier needs _; do
  name=${name// /} tier=${tier// /}
  read -ra needs_list <<<"$needs"
  needs=${needs_list[*]}
  [ "$name" != stage ] || continue
  stage_names+=("$name")
  stage_tier[$name]=$tier
  stage_needs[$name]=${needs#-}
done <<<"$table"

# --- the stages -------------------------------------------------------------------------------

libvirt_fixture=tests/libvirt/libvirt-fixture.sh
cluster_fixture=tests/cluster/cluster-fixture.sh
containerd_fixture=tests/containerd/containerd-fixture.sh
# Debian's 1.6 (label containerd) and 2.x (label containerd2) side by side; the NRI plugin's tests
# also run on the oldest and newest 2.x lines (2.0, 2.4).
containerds=(1.6 2 2.0 2.4)
unit_labels='^unit$|^unit-grpc$'

check_format() {
  local files
  mapfile -t files < <(git ls-files '*.cc' '*.h')
  clang-format --dry-run --Werror "${files[@]}"
}
# The sanitizer builds build only what their tests run (tests/CMakeLists.txt: tests-<label>), and
# are checked to hold every test of those labels that the g++ build holds: a test whose program is
# missing from tests-<label> would otherwise be left out without a word.
same_tests() { # label-regex build-dir
  diff <(ctest --test-dir build -N -L "$1" | sed -n 's/^ *Test *#[0-9]*: //p' | sort) \
    <(ctest --test-dir "$2" -N -L "$1" | sed -n 's/^ *Test *#[0-9]*: //p' | sort) ||
    { echo "$2 lacks the tests above (label $1): add their programs to tests-<label>" >&2; return 1; }
}
containerds_down() { for flavour in "${containerds[@]}"; do "$containerd_fixture" down "$flavour"; done; }
fixtures_down() { "$libvirt_fixture" down; containerds_down; "$cluster_fixture" down; }
# The tests that need root or a daemon: a private libvirtd with vri-hook installed before it starts,
# the containerds, each with the CRI plugin and a local image, and the control plane; stopped
# afterwards, also on failure.
host_tests() {
  trap fixtures_down EXIT
  "$libvirt_fixture" up build/libvirt-bridge/vri-hook
  for flavour in "${containerds[@]}"; do "$containerd_fixture" up "$flavour"; done
  VRI_PEERS=build/peers/kubernetes "$cluster_fixture" up passthrough
  ctest --test-dir build -j "$jobs" -LE "v2guest|$unit_labels" --output-on-failure
  # The soak's five-minute form on the same fixtures: its report in build/soak/.
  scripts/soak.sh --minutes 5 --seed 61 --min-vrid-kills 30 --out build/soak
  fixtures_down
  trap - EXIT
}
# The guest suites; the node's boot registers its kubelet with the control plane, started here.
guest_tests() {
  trap '"$cluster_fixture" down' EXIT
  VRI_PEERS=build/peers/kubernetes "$cluster_fixture" up passthrough
  ctest --test-dir build -L v2guest --output-on-failure
  "$cluster_fixture" down
  trap - EXIT
}
# Every benchmark once in its smallest configuration, as smoke (scripts/bench-smoke.sh), with the
# daemons the benchmarks drive.
bench_smoke() {
  trap fixtures_down EXIT
  "$libvirt_fixture" up build/libvirt-bridge/vri-hook
  "$containerd_fixture" up 1.6
  "$containerd_fixture" up 2
  VRI_PEERS=build/peers/kubernetes "$cluster_fixture" up passthrough
  scripts/bench-smoke.sh build
  fixtures_down
  trap - EXIT
}
# A short run from the corpora with a fixed seed: reported, never blocking (a finding is for a
# person to reduce, fix and add to fuzz/regressions/).
fuzz_run() {
  # Every committed fuzz input once (corpora and the regressions of past findings): blocks.
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan -L fuzz -j "$jobs" --output-on-failure
  scripts/fuzz.sh --seed 1 15 || echo "fuzz: a finding above; the short run reports it and does not fail"
}

# The sanitizer trees compile at -O1 with line tables only: what their reports need (a function and
# a line per frame), 15% less compile time than -O2 -g (tests/vri/vrid_api_test.cc under ASan+UBSan:
# 11.6 s against 13.7 s), and a different tree from the package's, so nothing to share with it. The
# tests' own code at -O0: half the time again (that file: 11.5 s against 22.7 s), and the code under
# test keeps -O1.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only"
  "-DCMAKE_C_FLAGS=-O1 -gline-tables-only" -DVRI_TEST_COMPILE_OPTIONS=-O0)

run_stage() {
  case "$1" in
    install) scripts/install-deps.sh ;;
    format) check_format ;;
    build) VRI_FLAGS=package scripts/build.sh build ;;
    test-unit) ctest --test-dir build -j "$jobs" -L "$unit_labels" --output-on-failure ;;
    # ThreadSanitizer: the `unit` tests only: those labelled `unit-grpc` run real gRPC, whose
    # synchronisation TSan cannot see in Debian's uninstrumented libgrpc (tests/CMakeLists.txt).
    build-tsan)
      CXX=clang++ CC=clang VRI_BUILD_TARGETS="tests-unit" \
        scripts/build.sh build-tsan "${sanitizer_flags[@]}" -DVRI_SANITIZE=thread \
        -DVRI_BUILD_BENCHMARKS=OFF ;;
    test-tsan)
      same_tests '^unit$' build-tsan
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        ctest --test-dir build-tsan -L '^unit$' -j "$jobs" --output-on-failure ;;
    # Kubernetes (kubelet, the control plane, the NUMA-aware scheduler), etcd and containerd 2.x from
    # their Go modules (cached outside the clone, by their wrapper modules).
    peers)
      scripts/build-peers.sh build/peers
      # Used: scripts/prune-caches.sh keeps them (build/peers/<peer>/ links into the cache).
      for link in build/peers/*/*; do touch "$(dirname "$(readlink -f "$link")")"; done ;;
    # promtool, which checks the metrics endpoint's output (Debian's prometheus package, unpacked).
    promtool) scripts/get-promtool.sh build/promtool ;;
    test-host) host_tests ;;
    bench) bench_smoke ;;
    # The g++ stages ran the tests on objects compiled with these flags: the package runs none.
    package) DEB_BUILD_OPTIONS="nocheck parallel=$jobs" scripts/build-package.sh build/package ;;
    # vri-hook as shipped (the .deb unpacked): what libvirt waits for on every VM start.
    bench-package) scripts/bench-package-hook.sh build/package build 300 ;;
    first-package) tests/v2guest/first-package.sh build ;;
    # After the host tests: QEMU's emulation takes both cores.
    test-guest) guest_tests ;;
    build-asan)
      CXX=clang++ CC=clang VRI_BUILD_TARGETS="tests-unit tests-unit-grpc tests-fuzz" \
        scripts/build.sh build-asan "${sanitizer_flags[@]}" -DVRI_SANITIZE=address,undefined -DVRI_FUZZ=ON \
        -DVRI_BUILD_BENCHMARKS=OFF ;;
    fuzz) fuzz_run ;;
    # After a full run only: what it used is what the current keys name.
    prune-caches)
      if [ ${#wanted[@]} -eq ${#stage_names[@]} ]; then scripts/prune-caches.sh "$run_stamp"
      else echo "prune-caches: only after a full run (one tier leaves the others' entries untouched)"; fi ;;
    test-asan)
      same_tests unit build-asan
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir build-asan -L unit -j "$jobs" --output-on-failure ;;
    *) echo "test.sh: no stage $1" >&2; return 2 ;;
  esac
}

# --- choosing and running ---------------------------------------------------------------------

declare -A wanted=()
want() { # stage: it and, first, what it needs
  [ -n "${stage_tier[$1]:-}" ] || { echo "test.sh: no stage or tier '$1' (scripts/test.sh --list)" >&2; exit 2; }
  [ -z "${wanted[$1]:-}" ] || return 0
  wanted[$1]=1
  local need
  for need in ${stage_needs[$1]}; do want "$need"; done
}

if [ "${1:-}" = --list ]; then
  printf '%s\n' "$table"
  exit 0
fi
if [ $# -eq 0 ]; then
  for name in "${stage_names[@]}"; do wanted[$name]=1; done
else
  for arg in "$@"; do
    matched=0
    for name in "${stage_names[@]}"; do
      if [ "${stage_tier[$name]}" = "$arg" ]; then want "$name"; matched=1; fi
    done
    [ $matched = 1 ] || want "$arg"
  done
fi

timings=()
total_start=$(date +%s)
# What the caches' users touch after this is what this run used (scripts/prune-caches.sh).
run_stamp=build/.test-run-stamp
mkdir -p build && touch "$run_stamp"
for name in "${stage_names[@]}"; do
  [ -n "${wanted[$name]:-}" ] || continue
  echo "=== ${name}"
  start_ms=$(($(date +%s%N) / 1000000))
  run_stage "$name"
  ms=$(($(date +%s%N) / 1000000 - start_ms))
  seconds=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
  timings+=("$(printf '%-16s %7s s' "$name" "$seconds")")
  echo "=== ${name}: ${seconds} s"
done

echo
echo "Stage times:"
printf '  %s\n' "${timings[@]}"
echo "  total: $(($(date +%s) - total_start)) s"

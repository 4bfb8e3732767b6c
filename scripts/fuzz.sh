#!/usr/bin/env bash
# Runs VRI's fuzz targets (fuzz/README.md) for a while, each from its committed corpus, and prints
# per target its executions per second and the coverage it reached (libFuzzer's "cov" and "ft").
#   scripts/fuzz.sh [--seed N] [SECONDS] [TARGET...]     (default: 600 s each, every target)
# Targets run side by side, one per core (VRI_FUZZ_JOBS=N for another count).
# Needs the ASan+UBSan tree with the targets (build-asan, -DVRI_FUZZ=ON; scripts/test.sh builds it).
# New inputs go to build-asan/fuzz-corpus/<target>/ (not committed); a crash leaves its input in
# build-asan/fuzz-findings/<target>/ and is reported, and the script exits 1. Add each finding,
# once fixed, to fuzz/regressions/<target>/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tree=$repo/build-asan
seed=""
if [ "${1:-}" = --seed ]; then seed="-seed=$2"; shift 2; fi
seconds=${1:-600}
shift || true
targets=("$@")
if [ ${#targets[@]} = 0 ]; then
  mapfile -t targets < <(cd "$repo/fuzz/corpus" && ls)
fi
# One target per core at a time: each runs alone on its core for its time, as it would in turn.
parallel=${VRI_FUZZ_JOBS:-$(nproc)}
fuzz_one() { # target: its row of the table in $tree/fuzz-<target>.row
  local target=$1 program=$tree/fuzz/$1
  local work=$tree/fuzz-corpus/$target findings=$tree/fuzz-findings/$target log=$tree/fuzz-$target.log
  mkdir -p "$work" "$findings"
  local outcome=ok
  # shellcheck disable=SC2086  # $seed is empty or one flag
  if ! ASAN_OPTIONS=detect_leaks=1 "$program" $seed -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$findings/" "$work" "$repo/fuzz/corpus/$target" > "$log" 2>&1; then
    outcome="FINDING: $(ls -t "$findings" | head -1) (log $log)"
  fi
  local last cov ft corpus rate
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<< "$last")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  printf '%-14s %10s %8s %8s %10s  %s\n' "$target" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$outcome" \
    > "$tree/fuzz-$target.row"
}
for target in "${targets[@]}"; do
  [ -x "$tree/fuzz/$target" ] || { echo "fuzz: $tree/fuzz/$target is missing (build-asan with -DVRI_FUZZ=ON)" >&2; exit 1; }
  rm -f "$tree/fuzz-$target.row"
done
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  fuzz_one "$target" &
done
wait
status=0
printf '%-14s %10s %8s %8s %10s  %s\n' target exec/s cov ft corpus outcome
for target in "${targets[@]}"; do
  row=$(cat "$tree/fuzz-$target.row" 2> /dev/null || echo "$target: no result")
  echo "$row"
  grep -q '  ok$' <<< "$row" || status=1
done
exit $status

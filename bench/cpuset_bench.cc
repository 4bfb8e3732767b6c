// CpuSet and topology costs: ./build/bench/cpuset_bench
#include <benchmark/benchmark.h>

#include "accounting/hwloc_topology.h"
#include "base/cpuset.h"

namespace vri {
namespace {

// A fragmented set: every third CPU of `cpus`.
CpuSet fragmented(int cpus) {
  CpuSet set;
  for (int cpu = 0; cpu < cpus; cpu += 3) set.add(cpu);
  return set;
}

void BM_ParseFragmented(benchmark::State& state) {
  const std::string text = fragmented(static_cast<int>(state.range(0))).format();
  for (auto _ : state) benchmark::DoNotOptimize(CpuSet::parse(text));
}
BENCHMARK(BM_ParseFragmented)->Arg(256)->Arg(8192);

void BM_Format(benchmark::State& state) {
  const CpuSet set = fragmented(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(set.format());
}
BENCHMARK(BM_Format)->Arg(256)->Arg(8192);

void BM_DifferenceAndCount(benchmark::State& state) {
  const int cpus = static_cast<int>(state.range(0));
  const CpuSet all = CpuSet::range(0, cpus - 1);
  const CpuSet taken = fragmented(cpus);
  for (auto _ : state) benchmark::DoNotOptimize((all - taken).count());
}
BENCHMARK(BM_DifferenceAndCount)->Arg(256)->Arg(8192);

void BM_Iterate(benchmark::State& state) {
  const CpuSet set = fragmented(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    int sum = 0;
    for (int cpu : set) sum += cpu;
    benchmark::DoNotOptimize(sum);
  }
}
BENCHMARK(BM_Iterate)->Arg(256)->Arg(8192);

void BM_LoadSyntheticTopology256(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(loadSyntheticTopology("pack:2 numa:4 core:16 pu:2"));
}
BENCHMARK(BM_LoadSyntheticTopology256)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vri

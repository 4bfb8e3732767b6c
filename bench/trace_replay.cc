// Replays an allocation trace (../shared/traces format) against the CPU
// chooser on an hwloc synthetic topology and prints placement quality and
// decision time, first with kubelet's packed fill, then with VRI's placement.
// The last line is one JSON object for VRI's placement.
//
//   trace_replay --topology "pack:2 numa:2 core:8 pu:2" --trace bench/traces/churn-64-seed1.jsonl [--repeat 5]
//
// --max-numa-spans X and --min-whole-core-fraction Y make it exit non-zero
// when VRI's placement is worse than that (its quality is deterministic; its
// speed is only reported).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "accounting/cpu_take.h"
#include "accounting/hwloc_topology.h"

namespace {

struct TraceStep {
  bool alloc = false;
  std::string id;
  int cpus = 0;
};

// The value of "key" in one flat JSON object line: a string or an integer.
std::string field(const std::string& line, const std::string& key) {
  const std::string quoted = "\"" + key + "\":";
  auto at = line.find(quoted);
  if (at == std::string::npos) return "";
  at += quoted.size();
  while (at < line.size() && line[at] == ' ') ++at;
  if (at < line.size() && line[at] == '"') {
    const auto end = line.find('"', at + 1);
    return end == std::string::npos ? "" : line.substr(at + 1, end - at - 1);
  }
  const auto end = line.find_first_of(",}", at);
  return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

bool readTrace(const std::string& path, std::vector<TraceStep>& steps) {
  std::ifstream file(path);
  if (!file) return false;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty()) continue;
    TraceStep step;
    const std::string op = field(line, "op");
    step.alloc = op == "alloc";
    step.id = field(line, "id");
    if (step.alloc) step.cpus = std::stoi(field(line, "cpus"));
    if ((op != "alloc" && op != "free") || step.id.empty()) {
      std::fprintf(stderr, "trace_replay: bad trace line: %s\n", line.c_str());
      return false;
    }
    steps.push_back(step);
  }
  return true;
}

struct Figures {
  int decisions = 0;
  int failures = 0;
  double p50_ns = 0, p99_ns = 0;
  double numa_spans = 0, socket_spans = 0, whole_core_fraction = 0;
};

Figures replay(const vri::Topology& topology, const std::vector<TraceStep>& steps, const vri::CpuTakeOptions& options,
               int repeat) {
  Figures figures;
  std::vector<double> times;
  for (int round = 0; round < repeat; ++round) {
    vri::CpuSet free = topology.onlineCpus();
    std::map<std::string, vri::CpuSet> held;
    int successes = 0, failures = 0;
    double numa = 0, sockets = 0, whole = 0;
    for (const TraceStep& step : steps) {
      if (!step.alloc) {
        auto it = held.find(step.id);
        if (it != held.end()) {
          free |= it->second;
          held.erase(it);
        }
        continue;
      }
      vri::CpuTakeRequest request;
      request.count = step.cpus;
      const auto start = std::chrono::steady_clock::now();
      auto taken = vri::takeCpus(topology, free, request, options);
      const auto end = std::chrono::steady_clock::now();
      times.push_back(std::chrono::duration<double, std::nano>(end - start).count());
      if (!taken.ok() || taken->count() != step.cpus || !taken->isSubsetOf(free)) {
        ++failures;
        continue;
      }
      free -= *taken;
      held[step.id] = *taken;
      ++successes;
      std::set<int> nodes, packages;
      int in_whole_cores = 0;
      for (int cpu : *taken) {
        nodes.insert(topology.cpu(cpu)->numaNode);
        packages.insert(topology.cpu(cpu)->package);
        if (topology.siblings(cpu).isSubsetOf(*taken)) ++in_whole_cores;
      }
      numa += static_cast<double>(nodes.size());
      sockets += static_cast<double>(packages.size());
      whole += static_cast<double>(in_whole_cores) / step.cpus;
    }
    figures.decisions = successes + failures;
    figures.failures = failures;
    figures.numa_spans = successes ? numa / successes : 0;
    figures.socket_spans = successes ? sockets / successes : 0;
    figures.whole_core_fraction = successes ? whole / successes : 0;
  }
  std::sort(times.begin(), times.end());
  if (!times.empty()) {
    figures.p50_ns = times[times.size() / 2];
    figures.p99_ns = times[std::min(times.size() - 1, times.size() * 99 / 100)];
  }
  return figures;
}

void print(const char* label, const Figures& f) {
  if (label != nullptr) std::printf("%s ", label);
  std::printf(
      "{\"decisions\":%d,\"failures\":%d,\"p50_ns\":%.0f,\"p99_ns\":%.0f,\"numa_spans\":%.3f,"
      "\"socket_spans\":%.3f,\"whole_core_fraction\":%.3f}\n",
      f.decisions, f.failures, f.p50_ns, f.p99_ns, f.numa_spans, f.socket_spans, f.whole_core_fraction);
}

}  // namespace

int main(int argc, char** argv) {
  std::string synthetic, trace_path;
  int repeat = 5;
  double max_numa_spans = 1e9, min_whole_core = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--topology" && i + 1 < argc) {
      synthetic = argv[++i];
    } else if (arg == "--trace" && i + 1 < argc) {
      trace_path = argv[++i];
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--max-numa-spans" && i + 1 < argc) {
      max_numa_spans = std::atof(argv[++i]);
    } else if (arg == "--min-whole-core-fraction" && i + 1 < argc) {
      min_whole_core = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: trace_replay --topology SYNTHETIC --trace FILE [--repeat N]\n"
                   "                    [--max-numa-spans X] [--min-whole-core-fraction Y]\n");
      return 2;
    }
  }
  auto topology = vri::loadSyntheticTopology(synthetic);
  if (!topology.ok()) {
    std::fprintf(stderr, "trace_replay: %s\n", topology.error().message().c_str());
    return 1;
  }
  std::vector<TraceStep> steps;
  if (!readTrace(trace_path, steps)) {
    std::fprintf(stderr, "trace_replay: cannot read trace %s\n", trace_path.c_str());
    return 1;
  }
  vri::CpuTakeOptions kubelet;
  kubelet.numaFit = false;
  print("kubelet-packed", replay(*topology, steps, kubelet, repeat));
  const Figures fitted = replay(*topology, steps, vri::CpuTakeOptions{}, repeat);
  print(nullptr, fitted);
  bool ok = true;
  if (fitted.failures != 0) ok = false, std::fprintf(stderr, "trace_replay: %d allocations failed\n", fitted.failures);
  if (fitted.numa_spans > max_numa_spans) {
    ok = false;
    std::fprintf(stderr, "trace_replay: numa_spans %.3f above %.3f\n", fitted.numa_spans, max_numa_spans);
  }
  if (fitted.whole_core_fraction < min_whole_core) {
    ok = false;
    std::fprintf(stderr, "trace_replay: whole_core_fraction %.3f below %.3f\n", fitted.whole_core_fraction,
                 min_whole_core);
  }
  return ok ? 0 : 1;
}

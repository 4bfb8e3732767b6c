#include "bench/decision_measure.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

namespace vri::bench {
namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double rssMb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

// One exclusive grant (step 0) or its release (step 1) of pair `i`.
Result<void> grantOrRelease(vri::NodeManager& node, Grant grant, int i, int step) {
  if (grant == Grant::kVm) {
    const std::string uuid = vmUuid(900000 + i);
    if (step == 1) return node.releaseVm(uuid);
    vri::VmSpec vm;
    vm.uuid = uuid;
    vm.cpu.name = "dedicated" + std::to_string(i);
    vm.cpu.vcpus = 1;
    vm.cpu.cpuPolicy = vri::VmCpuPolicy::kDedicated;
    vm.memoryBytes = 2 << 20;
    auto admitted = node.admitVm(vm);
    if (!admitted.ok()) return admitted.error();
    return {};
  }
  const vri::PodSpec pod{uid(900000 + i), "bench/x", vri::QosClass::kGuaranteed, 0, 0};
  if (step == 1) {
    auto released = node.releasePod(pod.uid);
    if (!released.ok()) return released.error();
    return {};
  }
  auto admitted = node.admitContainer(pod, {"app", "x" + std::to_string(i), false, 1000, 1000, 64 << 20, std::nullopt});
  if (!admitted.ok()) return admitted.error();
  return {};
}

}  // namespace

std::string uid(int n) {
  char text[64];
  std::snprintf(text, sizeof text, "5c%06d-0000-4000-8000-000000000000", n);
  return text;
}

std::string vmUuid(int n) {
  char text[64];
  std::snprintf(text, sizeof text, "7e%06d-0000-4000-8000-000000000001", n);
  return text;
}

// Serial exclusive admit/release pairs on `node`: the row's figures.
Result<Row> measure(const std::string& kind, Grant grant, int tenants, int pairs, vri::NodeManager& node,
                    TimingCgroupFs& fs, TimingUnits* systemd, const ContainerCgroupHook& containers) {
  std::vector<double> decisions, writes_ms, overheads, write_counts, dbus_ms, dbus_calls;
  std::vector<double> step_writes[2];  // the grants' and the releases'
  double total = 0, written = 0;
  for (int i = 0; i < pairs; ++i) {
    for (int step = 0; step < 2; ++step) {
      const bool hooked = containers && grant == Grant::kPod;
      if (hooked && step == 0) VRI_TRY(containers(uid(900000 + i), "x" + std::to_string(i), true));
      fs.reset();
      if (systemd != nullptr) systemd->reset();
      const auto start = Clock::now();
      const Result<void> done = grantOrRelease(node, grant, i, step);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (!done.ok()) return done.error();
      if (hooked && step == 1) VRI_TRY(containers(uid(900000 + i), "x" + std::to_string(i), false));
      const double write_ms = static_cast<double>(fs.nanos) / 1e6;
      const double bus_ms = systemd != nullptr ? static_cast<double>(systemd->nanos) / 1e6 : 0;
      decisions.push_back(ms);
      writes_ms.push_back(write_ms);
      overheads.push_back(ms - write_ms - bus_ms);
      write_counts.push_back(fs.writes);
      step_writes[step].push_back(fs.writes);
      dbus_ms.push_back(bus_ms);
      dbus_calls.push_back(systemd != nullptr ? systemd->calls : 0);
      total += ms;
      written += write_ms;
    }
  }
  Row row{kind,
          grant == Grant::kVm ? "vm" : "pod",
          tenants,
          percentile(decisions, 0.5),
          percentile(decisions, 0.99),
          percentile(writes_ms, 0.5),
          percentile(overheads, 0.5),
          written > 0 ? total / written : 0,
          percentile(write_counts, 0.5),
          rssMb()};
  row.grantWrites = percentile(step_writes[0], 0.5);
  row.releaseWrites = percentile(step_writes[1], 0.5);
  row.dbusP50 = percentile(dbus_ms, 0.5);
  row.dbusCalls = percentile(dbus_calls, 0.5);
  std::vector<double> tree_ms, compare_ms;
  for (int i = 0; i < 5; ++i) {
    for (bool compare : {false, true}) {
      const auto start = Clock::now();
      auto view = node.tree(compare);
      if (!view.ok()) return view.error();
      (compare ? compare_ms : tree_ms)
          .push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  }
  row.treeMs = percentile(tree_ms, 0.5);
  row.treeCompareMs = percentile(compare_ms, 0.5);
  return row;
}

// A pod row, then a VM row, on the same node.
Result<std::vector<Row>> measureBoth(const std::string& kind, int tenants, int pairs, vri::NodeManager& node,
                                     TimingCgroupFs& fs, TimingUnits* systemd, const ContainerCgroupHook& containers) {
  std::vector<Row> rows;
  for (Grant grant : {Grant::kPod, Grant::kVm}) {
    VRI_ASSIGN_OR_RETURN(Row row, measure(kind, grant, tenants, pairs, node, fs, systemd, containers));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace vri::bench

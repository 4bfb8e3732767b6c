#include "vrictl/top_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "base/cpuset.h"

namespace vri::ctl {

namespace {

// 1.5 GiB, 12.0 MiB, 512 KiB.
std::string bytesText(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

// Each tenant's exclusive CPUs, from the node's owners ("pod/<uid>/<container>", "vm/<uuid>").
std::map<std::string, CpuSet> exclusiveByTenant(const v1::Node& node) {
  std::map<std::string, CpuSet> out;
  for (const auto& [owner, cpus] : node.exclusive_cpus()) {
    const size_t second = owner.find('/', owner.find('/') + 1);
    const auto set = CpuSet::parse(cpus);
    if (set.ok()) out[owner.substr(0, second)] |= *set;
  }
  return out;
}

}  // namespace

std::optional<TopSort> parseTopSort(std::string_view text) {
  for (TopSort s : {TopSort::kCpu, TopSort::kMemory, TopSort::kThrottled, TopSort::kName})
    if (topSortName(s) == text) return s;
  return std::nullopt;
}

std::string_view topSortName(TopSort sort) {
  switch (sort) {
    case TopSort::kCpu: return "cpu";
    case TopSort::kMemory: return "memory";
    case TopSort::kThrottled: return "throttled";
    case TopSort::kName: break;
  }
  return "name";
}

std::optional<TopSort> topSortForKey(char key) {
  switch (key) {
    case 'c': return TopSort::kCpu;
    case 'm': return TopSort::kMemory;
    case 't': return TopSort::kThrottled;
    case 'n': return TopSort::kName;
    default: return std::nullopt;
  }
}

std::string formatTop(const v1::UsageReport& report, const v1::Node& node, const TopScreen& screen,
                      const TerminalStyle& style) {
  if (report.samples().empty()) return "no usage sampled yet\n";
  const v1::UsageSample& sample = report.samples(0);
  std::string out = fmt::format("{} tenants, sampled every {} ms; sorted by {}", sample.tenants_size(),
                                report.interval_ms(), topSortName(screen.sort));
  out += screen.keys ? "  (c cpu, m memory, t throttled, n name, q quit)\n" : "\n";
  // Each CPU's busy share, 8 to a line.
  double busy = 0;
  std::string cpus;
  for (int i = 0; i < sample.cpus_size(); ++i) {
    const v1::CpuUsage& cpu = sample.cpus(i);
    busy += cpu.busy();
    cpus += fmt::format("{}{:>4} {:>3.0f}%", i % 8 == 0 ? "\n " : "", cpu.cpu(), cpu.busy() * 100);
  }
  if (sample.cpus_size() > 0)
    out += fmt::format("CPUs busy: {:.0f}% of {} CPUs{}\n", busy * 100 / sample.cpus_size(), sample.cpus_size(), cpus);

  std::vector<const v1::TenantUsage*> rows;
  for (const v1::TenantUsage& t : sample.tenants()) rows.push_back(&t);
  const auto name = [](const v1::TenantUsage* t) { return t->name().empty() ? t->tenant() : t->name(); };
  std::stable_sort(rows.begin(), rows.end(), [&](const v1::TenantUsage* a, const v1::TenantUsage* b) {
    switch (screen.sort) {
      case TopSort::kCpu:
        if (a->cpu_cores() != b->cpu_cores()) return a->cpu_cores() > b->cpu_cores();
        break;
      case TopSort::kMemory:
        if (a->memory_bytes() != b->memory_bytes()) return a->memory_bytes() > b->memory_bytes();
        break;
      case TopSort::kThrottled:
        if (a->throttled_fraction() != b->throttled_fraction())
          return a->throttled_fraction() > b->throttled_fraction();
        break;
      case TopSort::kName: break;
    }
    return name(a) < name(b);
  });
  if (screen.rows > 0 && rows.size() > static_cast<size_t>(screen.rows)) rows.resize(static_cast<size_t>(screen.rows));

  const std::map<std::string, CpuSet> exclusive = exclusiveByTenant(node);
  size_t name_width = 4;
  for (const v1::TenantUsage* t : rows) name_width = std::max(name_width, std::min<size_t>(name(t).size(), 40));
  out += style.paint(fmt::format("\n{:<{}}  {:<4}  {:<12}  {:>7}  {:>9}  {:>10}", "NAME", name_width, "KIND", "CPUS",
                                 "CPU%", "THROTTLED", "MEMORY"),
                     "1") +
         "\n";
  for (const v1::TenantUsage* t : rows) {
    const auto held = exclusive.find(t->tenant());
    const std::string cpus_text = held == exclusive.end() ? "shared" : held->second.format();
    std::string cpu = "-", throttled = "-", memory = "-";
    if (t->measured()) {
      cpu = t->rates() ? fmt::format("{:.1f}", t->cpu_cores() * 100) : "~";
      throttled = !t->rates()               ? "~"
                  : t->periods_total() == 0 ? "no limit"
                                            : fmt::format("{:.1f}%", t->throttled_fraction() * 100);
      if (t->memory_measured()) memory = bytesText(t->memory_bytes());
    }
    std::string shown = name(t);
    if (shown.size() > 40) shown = shown.substr(0, 39) + "~";
    out += fmt::format("{:<{}}  {:<4}  {:<12}  {:>7}  {:>9}  {:>10}\n", shown, name_width, t->kind(), cpus_text, cpu,
                       throttled, memory);
  }
  if (static_cast<int>(rows.size()) < sample.tenants_size())
    out += fmt::format("... {} more\n", sample.tenants_size() - static_cast<int>(rows.size()));
  return out;
}

}  // namespace vri::ctl

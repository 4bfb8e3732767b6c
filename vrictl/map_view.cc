#include "vrictl/map_view.h"

#include <fmt/format.h>
#include <google/protobuf/struct.pb.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "base/cpuset.h"
#include "vrictl/cpu_holders.h"
#include "vrictl/report_views.h"

namespace vri::ctl {

namespace {

// Tenants' marks, in order; 'r' and the punctuation are the pools'.
constexpr std::string_view kMarks = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqstuvwxyz0123456789";
constexpr char kReserved = 'r', kShared = '.', kDraining = '~', kIdle = '-', kOverflow = '#';
// Colours for the tenants' marks, in turn (ANSI: bold red, green, yellow, blue, magenta, cyan).
constexpr std::string_view kTenantColours[] = {"1;31", "1;33", "1;34", "1;35", "1;36", "1;91", "1;93", "1;94"};

struct Mark {
  char symbol = kIdle;
  std::string colour;
};

struct Legend {
  std::map<std::string, Mark> byOwner;  // exclusive owners
  std::vector<std::string> order;       // by first CPU
  int overflow = 0;
};

Legend legendFor(const std::map<int, CpuHolder>& holders) {
  Legend legend;
  for (const auto& [cpu, holder] : holders) {
    if (holder.kind != CpuHolder::Kind::kExclusive || legend.byOwner.count(holder.owner)) continue;
    const size_t i = legend.order.size();
    Mark mark;
    if (i < kMarks.size()) {
      mark = {kMarks[i], std::string(kTenantColours[i % std::size(kTenantColours)])};
    } else {
      mark = {kOverflow, "1;37"};
      ++legend.overflow;
    }
    legend.byOwner[holder.owner] = mark;
    legend.order.push_back(holder.owner);
  }
  return legend;
}

Mark markOf(const CpuHolder& holder, const Legend& legend) {
  switch (holder.kind) {
    case CpuHolder::Kind::kReserved: return {kReserved, "2"};
    case CpuHolder::Kind::kShared: return {kShared, "32"};
    case CpuHolder::Kind::kDraining: return {kDraining, "33"};
    case CpuHolder::Kind::kExclusive: return legend.byOwner.at(holder.owner);
    case CpuHolder::Kind::kIdle: break;
  }
  return {kIdle, "2"};
}

// The cores on one line: as many as fit, in steps that keep the columns of lines aligned.
int coresPerLine(int threads, int width, int labelWidth) {
  const int fit = std::max(1, (width - labelWidth) / (threads + 1));
  int per = 1;
  while (per * 2 <= fit && per < 32) per *= 2;
  return per;
}

std::string count(int n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// The busy share as one character: '.' under 5 %, '1'-'9' tens of percent, '#' 95 % or more.
char busyGlyph(double busy) {
  if (busy < 0.05) return '.';
  if (busy >= 0.95) return '#';
  return static_cast<char>('0' + std::clamp(static_cast<int>(busy * 10 + 0.5), 1, 9));
}

std::string busyColour(double busy) { return busy >= 0.95 ? "1;31" : busy >= 0.5 ? "33" : busy >= 0.05 ? "32" : "2"; }

// package -> NUMA node -> core -> its CPUs
using Machine = std::map<int, std::map<int, std::map<int, std::vector<int>>>>;

// The cores of each NUMA node, a line per group of cores, each CPU drawn by `cell`.
std::string drawMachine(const Machine& machine, int threads, const TerminalStyle& style,
                        const std::function<std::string(int)>& cell) {
  std::string out;
  constexpr int kLabelWidth = 18;  // "    cores 112-127 "
  const int per_line = coresPerLine(threads, style.width, kLabelWidth);
  for (const auto& [package, nodes] : machine) {
    out += fmt::format("package {}\n", package);
    for (const auto& [numa, core_map] : nodes) {
      CpuSet cpus;
      for (const auto& [core, ids] : core_map)
        for (int id : ids) cpus.add(id);
      out += fmt::format("  NUMA node {}: CPUs {}\n", numa, cpus.format());
      std::vector<std::pair<int, std::vector<int>>> list(core_map.begin(), core_map.end());
      for (size_t i = 0; i < list.size(); i += static_cast<size_t>(per_line)) {
        const size_t end = std::min(list.size(), i + static_cast<size_t>(per_line));
        const std::string range = list[i].first == list[end - 1].first
                                      ? std::to_string(list[i].first)
                                      : fmt::format("{}-{}", list[i].first, list[end - 1].first);
        std::string line = fmt::format("    {:<{}}", (end - i == 1 ? "core " : "cores ") + range, kLabelWidth - 4);
        for (size_t c = i; c < end; ++c) {
          std::string text;
          for (int id : list[c].second) text += cell(id);
          line += " " + text + std::string(static_cast<size_t>(threads) - list[c].second.size(), ' ');
        }
        out += line + "\n";
      }
    }
  }
  return out;
}

}  // namespace

std::string formatMap(const v1::Node& node, const v1::TenantList& tenants, const TerminalStyle& style,
                      const v1::UsageSample* busy) {
  const std::map<int, CpuHolder> holders = cpuHolders(node);
  const Legend legend = legendFor(holders);
  Machine machine;
  int threads = 1;
  for (const v1::CpuInfo& cpu : node.cpus()) {
    auto& core = machine[cpu.package()][cpu.numa_node()][cpu.core()];
    core.push_back(cpu.id());
    threads = std::max(threads, static_cast<int>(core.size()));
  }
  std::set<int> numa_nodes;
  for (const v1::CpuInfo& cpu : node.cpus()) numa_nodes.insert(cpu.numa_node());
  int cores = 0;
  for (const auto& [package, nodes] : machine)
    for (const auto& [numa, core_map] : nodes) cores += static_cast<int>(core_map.size());

  std::string out = fmt::format("{}, {}, {}, {}\n", count(static_cast<int>(machine.size()), "package", "packages"),
                                count(static_cast<int>(numa_nodes.size()), "NUMA node", "NUMA nodes"),
                                count(cores, "core", "cores"), count(node.cpus_size(), "CPU", "CPUs"));
  out += drawMachine(machine, threads, style, [&](int id) {
    const Mark mark = markOf(holders.at(id), legend);
    return style.paint(std::string(1, mark.symbol), mark.colour);
  });
  // The legend: the pools, then each tenant that holds CPUs, by its first CPU.
  int reserved = 0, shared = 0, draining = 0, idle = 0;
  for (const auto& [cpu, holder] : holders) {
    reserved += holder.kind == CpuHolder::Kind::kReserved;
    shared += holder.kind == CpuHolder::Kind::kShared;
    draining += holder.kind == CpuHolder::Kind::kDraining;
    idle += holder.kind == CpuHolder::Kind::kIdle;
  }
  const auto pool = CpuSet::parse(node.shared_cpus());
  const int pool_size = pool.ok() ? pool->count() : shared;
  out += "\n" + style.paint(std::string(1, kReserved), "2") +
         fmt::format(" reserved: {}{}\n", count(reserved, "CPU", "CPUs"),
                     node.strict_cpu_reservation() || reserved == 0 ? "" : " (shared tenants run there too)");
  out += style.paint(std::string(1, kShared), "32") +
         fmt::format(" shared pool: {}, {}\n", count(pool_size, "CPU", "CPUs"),
                     count(node.shared_tenants(), "shared tenant", "shared tenants"));
  if (draining > 0) {
    out += style.paint(std::string(1, kDraining), "33") +
           fmt::format(" draining: {} (freed; their cgroup writes are pending)\n", count(draining, "CPU", "CPUs"));
  }
  if (idle > 0) out += fmt::format("{} held for a starting VM: {}\n", kIdle, count(idle, "CPU", "CPUs"));
  for (const std::string& owner : legend.order) {
    const Mark& mark = legend.byOwner.at(owner);
    if (mark.symbol == kOverflow) continue;
    const auto cpus = node.exclusive_cpus().find(owner);
    out += fmt::format("{} {:<12} {}\n", style.paint(std::string(1, mark.symbol), mark.colour),
                       cpus == node.exclusive_cpus().end() ? "" : cpus->second, ownerName(owner, tenants));
  }
  if (legend.overflow > 0) {
    out += fmt::format("{} {} more tenants with exclusive CPUs: see vrictl pool\n",
                       style.paint(std::string(1, kOverflow), "1;37"), legend.overflow);
  }
  if (busy == nullptr) return out;
  std::map<int, double> shares;
  for (const v1::CpuUsage& cpu : busy->cpus()) shares[cpu.cpu()] = cpu.busy();
  out += "\nbusy over the last round ('.' under 5 %, 1-9 tens of percent, '#' 95 % or more)\n";
  out += drawMachine(machine, threads, style, [&](int id) {
    const auto share = shares.find(id);
    if (share == shares.end()) return std::string(" ");
    return style.paint(std::string(1, busyGlyph(share->second)), busyColour(share->second));
  });
  return out;
}

std::string mapAsJson(const v1::Node& node, const v1::TenantList& tenants, const v1::UsageSample* busy) {
  const std::map<int, CpuHolder> holders = cpuHolders(node);
  std::map<int, double> shares;
  if (busy != nullptr)
    for (const v1::CpuUsage& cpu : busy->cpus()) shares[cpu.cpu()] = cpu.busy();
  google::protobuf::Struct root;
  google::protobuf::ListValue& cpus = *(*root.mutable_fields())["cpus"].mutable_list_value();
  for (const v1::CpuInfo& cpu : node.cpus()) {
    google::protobuf::Struct& entry = *cpus.add_values()->mutable_struct_value();
    auto& f = *entry.mutable_fields();
    f["id"].set_number_value(cpu.id());
    f["package"].set_number_value(cpu.package());
    f["numa_node"].set_number_value(cpu.numa_node());
    f["core"].set_number_value(cpu.core());
    const CpuHolder& holder = holders.at(cpu.id());
    static constexpr const char* kKinds[] = {"reserved", "shared", "exclusive", "draining", "idle"};
    f["pool"].set_string_value(kKinds[static_cast<int>(holder.kind)]);
    if (!holder.owner.empty()) {
      f["tenant"].set_string_value(holder.owner);
      f["name"].set_string_value(ownerName(holder.owner, tenants));
    }
    if (const auto share = shares.find(cpu.id()); share != shares.end()) f["busy"].set_number_value(share->second);
  }
  return toJson(root);
}

}  // namespace vri::ctl

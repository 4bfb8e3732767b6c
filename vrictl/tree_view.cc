#include "vrictl/tree_view.h"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "vrictl/cpu_holders.h"
#include "vrictl/node_views.h"

namespace vri::ctl {

namespace {

// A memory limit: "max" for none (v2 "max", v1's page-rounded LLONG_MAX), else a size.
std::string memoryValue(const std::string& value) {
  if (value == "max" || value == "-1" || value.size() >= 19) return "max";
  try {
    std::string size = formatBytes(std::stoull(value));
    size.erase(size.find(' '), 1);
    return size;
  } catch (const std::exception&) {
    return value;
  }
}

std::string shortName(const std::string& file) {
  static const std::map<std::string, std::string> kNames = {{"cpuset.cpus", "cpus"},
                                                            {"cpuset.mems", "mems"},
                                                            {"cpu.shares", "shares"},
                                                            {"cpu.weight", "weight"},
                                                            {"memory.limit_in_bytes", "mem"},
                                                            {"memory.max", "mem"},
                                                            {"memory.min", "mem.min"},
                                                            {"memory.low", "mem.low"},
                                                            {"pids.max", "pids"},
                                                            {"cpuset.cpus.partition", "partition"}};
  const auto it = kNames.find(file);
  return it == kNames.end() ? file : it->second;
}

}  // namespace

std::string formatValues(const v1::CgroupNode& node) {
  std::map<std::string, std::string> files;
  for (const v1::ControlFileValue& f : node.files()) files[f.file()] = f.value();
  std::vector<std::string> parts;
  const auto take = [&](const std::string& file) {
    const auto it = files.find(file);
    if (it == files.end()) return;
    const std::string name = shortName(file);
    parts.push_back(name + "=" + (name == "mem" ? memoryValue(it->second) : it->second));
    files.erase(it);
  };
  for (const char* file : {"cpuset.cpus", "cpuset.mems", "cpu.shares", "cpu.weight"}) take(file);
  // The quota: v1 in two files, v2 in one ("max 100000", "50000 100000").
  if (const auto quota = files.find("cpu.cfs_quota_us"); quota != files.end()) {
    const auto period = files.find("cpu.cfs_period_us");
    parts.push_back("quota=" + (quota->second == "-1" ? std::string("max") : quota->second) +
                    (period != files.end() ? "/" + period->second : ""));
    files.erase(quota);
    if (period != files.end()) files.erase(period);
  }
  if (const auto max = files.find("cpu.max"); max != files.end()) {
    const size_t space = max->second.find(' ');
    const std::string q = max->second.substr(0, space);
    parts.push_back("quota=" + (q == "max" ? q : q + "/" + max->second.substr(space + 1)));
    files.erase(max);
  }
  for (const char* file : {"memory.limit_in_bytes", "memory.max"}) take(file);
  for (const auto& [file, value] : files) parts.push_back(shortName(file) + "=" + value);
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : " ") + part;
  return out;
}

namespace {

struct TreeDrawing {
  const v1::CgroupTree& tree;
  const v1::TenantList& tenants;
  const TerminalStyle& style;
  std::vector<std::vector<int>> children;  // by index into tree.cgroups()
  std::string out;

  static constexpr size_t kValueColumn = 44;

  static size_t columnsOf(const std::string& text) {
    size_t width = 0;
    for (unsigned char ch : text) width += (ch & 0xC0) != 0x80;  // UTF-8: count lead bytes only
    return width;
  }

  // `lead`: the tree's lines left of this cgroup's name; `below`: the same for its children's lines.
  void draw(int i, const std::string& name, const std::string& lead, const std::string& below) {
    const v1::CgroupNode& node = tree.cgroups(i);
    std::string line = lead + name;
    if (!node.tenant().empty()) line += "  [" + ownerName(node.tenant(), tenants) + "]";
    if (node.missing()) line += " " + style.paint("(missing!)", "1;31");
    const std::string values = formatValues(node);
    const size_t shown = columnsOf(line);
    if (shown < kValueColumn && kValueColumn + values.size() <= static_cast<size_t>(style.width)) {
      line += std::string(kValueColumn - shown, ' ') + values;
    } else if (!values.empty()) {
      line += "\n" + below + (children[i].empty() ? "   " : "│  ") + values;
    }
    out += line + "\n";
    for (const v1::FileDrift& drift : node.drift()) {
      out += below + (children[i].empty() ? "   " : "│  ") +
             style.paint(fmt::format("! {}: kernel {}, VRI {}", drift.file(), drift.kernel(), drift.wanted()), "1;31") +
             "\n";
    }
    const std::string& path = node.path();
    for (size_t c = 0; c < children[i].size(); ++c) {
      const bool last = c + 1 == children[i].size();
      const int child = children[i][c];
      draw(child, tree.cgroups(child).path().substr(path.size() + 1), below + (last ? "└─ " : "├─ "),
           below + (last ? "   " : "│  "));
    }
  }
};

}  // namespace

std::string formatTree(const v1::CgroupTree& tree, const v1::TenantList& tenants, const TerminalStyle& style) {
  TreeDrawing drawing{tree, tenants, style, {}, {}};
  int differences = 0;
  for (const v1::CgroupNode& node : tree.cgroups()) differences += node.drift_size() + (node.missing() ? 1 : 0);
  differences += tree.unknown_size();
  drawing.out = fmt::format("cgroup {}, kubelet's driver {}", tree.cgroup_version(), tree.cgroup_driver());
  if (tree.compared()) {
    drawing.out += differences == 0 ? "; the kernel agrees"
                                    : fmt::format("; the kernel differs in {} {} (marked !)", differences,
                                                  differences == 1 ? "place" : "places");
  } else {
    drawing.out += "; not compared with the kernel";
  }
  drawing.out += "\n";
  // Each cgroup's parent: the nearest ancestor the tree has (the roots' parents are not VRI's).
  std::map<std::string, int> index;
  for (int i = 0; i < tree.cgroups_size(); ++i) index[tree.cgroups(i).path()] = i;
  drawing.children.resize(static_cast<size_t>(tree.cgroups_size()));
  std::vector<int> roots;
  for (int i = 0; i < tree.cgroups_size(); ++i) {
    std::string path = tree.cgroups(i).path();
    int parent = -1;
    for (size_t slash = path.rfind('/'); slash != std::string::npos && parent < 0; slash = path.rfind('/', slash - 1)) {
      if (const auto it = index.find(path.substr(0, slash)); it != index.end()) parent = it->second;
      if (slash == 0) break;
    }
    (parent < 0 ? roots : drawing.children[static_cast<size_t>(parent)]).push_back(i);
  }
  for (int root : roots) drawing.draw(root, tree.cgroups(root).path(), "", "");
  for (const std::string& unknown : tree.unknown()) {
    drawing.out += style.paint("? " + unknown + " is not known to VRI", "1;31") + "\n";
  }
  return drawing.out;
}

}  // namespace vri::ctl

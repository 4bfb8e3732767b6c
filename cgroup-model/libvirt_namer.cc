#include "cgroup-model/libvirt_namer.h"

#include <cstdio>
#include <cstring>

#include "base/enum_text.h"
#include "base/quote.h"

namespace vri {

constexpr EnumText<LibvirtLayout, 3> kLibvirtLayoutText{
    "libvirt layout",
    {{{LibvirtLayout::kSystemd, "systemd"},
      {LibvirtLayout::kSystemdWithLibvirtLevel, "systemd-libvirt-level"},
      {LibvirtLayout::kNoSystemd, "no-systemd"}}}};

Result<LibvirtLayout> parseLibvirtLayout(std::string_view text) { return kLibvirtLayoutText.parse(text); }
std::string_view libvirtLayoutName(LibvirtLayout layout) { return kLibvirtLayoutText.name(layout); }

std::string libvirtMachineName(int id, std::string_view name) {
  constexpr size_t kMaxLength = 64;
  std::string out = "qemu-" + std::to_string(id) + "-";
  bool skip = true;  // drop leading and repeated '.'/'-'
  for (char c : name) {
    if (out.size() >= kMaxLength) break;
    if (c == '.' || c == '-') {
      if (!skip) out += c;
      skip = true;
      continue;
    }
    const bool valid = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!valid) continue;  // dropped without ending a run of '.'/'-'
    out += c;
    skip = false;
  }
  while (!out.empty() && (out.back() == '-' || out.back() == '.')) out.pop_back();
  return out;
}

std::string systemdEscape(std::string_view name) {
  static constexpr char kValid[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ:_.";
  std::string out;
  for (char c : name) {
    if (c == '/') {
      out += '-';
    } else if (c == '\0' || std::strchr(kValid, c) == nullptr) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

Result<CgroupPath> LibvirtNamer::scope(int id, std::string_view name) const {
  const std::string machine = libvirtMachineName(id, name);
  if (layout_ == LibvirtLayout::kNoSystemd) return partition_.child(machine + ".libvirt-qemu");
  return partition_.child("machine-" + systemdEscape(machine) + ".scope");
}

CgroupPath LibvirtNamer::threadParent(const CgroupPath& scope) const {
  if (layout_ == LibvirtLayout::kSystemdWithLibvirtLevel) return std::move(scope.child("libvirt")).value();
  return scope;
}

CgroupPath LibvirtNamer::vcpu(const CgroupPath& scope, int index) const {
  return std::move(threadParent(scope).child("vcpu" + std::to_string(index))).value();
}

CgroupPath LibvirtNamer::emulator(const CgroupPath& scope) const {
  return std::move(threadParent(scope).child("emulator")).value();
}

CgroupPath LibvirtNamer::iothread(const CgroupPath& scope, IothreadId id) const {
  return std::move(threadParent(scope).child("iothread" + std::to_string(id))).value();
}

namespace {

bool isThreadGroupName(const std::string& name) {
  const auto numbered = [&](std::string_view prefix) {
    return name.size() > prefix.size() && name.starts_with(prefix) &&
           name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
  };
  return name == "emulator" || numbered("vcpu") || numbered("iothread");
}

}  // namespace

Result<CgroupPath> vmScopeFromProcCgroup(std::string_view procCgroup, std::string_view controller,
                                         const CgroupPath& partition) {
  std::string_view path_text;
  bool found = false;
  size_t start = 0;
  while (start < procCgroup.size() && !found) {
    const size_t end = std::min(procCgroup.find('\n', start), procCgroup.size());
    const std::string_view line = procCgroup.substr(start, end - start);
    start = end + 1;
    // "hierarchy-id:controller,list:path"
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    if (controller.empty()) {
      found = controllers.empty() && line.substr(0, first) == "0";
    } else {
      size_t at = 0;
      while (!found && at <= controllers.size()) {
        const size_t comma = std::min(controllers.find(',', at), controllers.size());
        found = controllers.substr(at, comma - at) == controller;
        at = comma + 1;
      }
    }
    if (found) path_text = line.substr(second + 1);
  }
  // "cpuset cgroup" on v1, "cgroup in the unified hierarchy" on v2.
  const std::string which =
      controller.empty() ? std::string("cgroup in the unified hierarchy") : std::string(controller) + " cgroup";
  if (!found) return Error::notFound("the process is in no " + which);
  VRI_ASSIGN_OR_RETURN(CgroupPath path, CgroupPath::parse(path_text));
  if (!path.isRoot() && isThreadGroupName(path.leaf())) path = path.parent();
  if (!path.isRoot() && path.leaf() == "libvirt") path = path.parent();
  if (path.depth() != partition.depth() + 1 || !path.isWithin(partition)) {
    return Error::notFound("the process's " + which + " " + quoteForMessage(std::string(path_text)) +
                           " is not a VM scope under " + quoteForMessage(partition.str()));
  }
  return path;
}

}  // namespace vri

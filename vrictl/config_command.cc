#include "vrictl/config_command.h"

#include <fstream>
#include <sstream>

namespace vri::ctl {

namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;  // vrid refuses larger requests anyway

std::string cpusOrNone(const std::string& cpus) { return cpus.empty() ? std::string("none") : cpus; }
std::string valueOrUnset(const std::string& value) { return value.empty() ? std::string("(unset)") : value; }

}  // namespace

Result<v1::ConfigDiffReply> diffConfigFile(VridApi& vrid, const std::string& path) {
  if (path.empty()) {
    v1::DiffConfigRequest request;
    request.set_configuration_file(true);
    return vrid.diffConfig(request);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::fromErrno(errno, "open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > kMaxConfigBytes)
    return Error::invalidArgument(path + ": larger than " + std::to_string(kMaxConfigBytes) + " bytes");
  v1::DiffConfigRequest request;
  request.set_config_text(text.str());
  request.set_origin(path);
  return vrid.diffConfig(request);
}

Result<v1::ConfigDiffReply> applyConfigFile(VridApi& vrid, const std::string& path, bool dryRun) {
  if (!path.empty())
    return Error::invalidArgument("config apply takes no file: vrid applies its own configuration file (" + path +
                                  " given); edit that file, then apply");
  v1::ApplyConfigRequest request;
  request.set_dry_run(dryRun);
  return vrid.applyConfig(request);
}

std::string formatConfigDiff(const v1::ConfigDiffReply& reply) {
  std::ostringstream out;
  const std::string& path = reply.origin();
  if (reply.settings().empty()) {
    out << path << " says what the running vrid does: nothing " << (reply.applied() ? "was" : "would be")
        << " changed.\n";
    return out.str();
  }
  {
    out << "Options " << path << (reply.applied() ? " changed" : " changes")
        << " (takes effect: reload = SIGHUP, restart = vrid's next start, apply = the placement policy):\n";
    for (const v1::ConfigSettingDiff& s : reply.settings())
      out << "  " << s.option() << ": " << valueOrUnset(s.before()) << " -> " << valueOrUnset(s.after()) << " ("
          << s.takes_effect() << ")\n";
  }
  if (reply.policy_changes()) {
    out << "Placement policy: reserved CPUs " << cpusOrNone(reply.reserved_before()) << " -> "
        << cpusOrNone(reply.reserved_after()) << ", shared pool " << reply.shared_before() << " -> "
        << reply.shared_after() << "\n";
    out << "  stay: " << reply.stays() << " tenants with exclusive CPUs or bound memory keep them\n";
    for (const v1::TenantPlan& t : reply.tenants()) {
      out << "  "
          << (t.breaks()        ? "breaks: "
              : reply.applied() ? "moved: "
                                : "moves: ")
          << t.name() << ": CPUs " << cpusOrNone(t.cpus_before());
      if (!t.breaks()) out << " -> " << cpusOrNone(t.cpus_after());
      if (!t.mems_before().empty() || !t.mems_after().empty())
        out << ", memory nodes " << (t.mems_before().empty() ? "all" : t.mems_before())
            << (t.breaks() ? "" : " -> " + (t.mems_after().empty() ? std::string("all") : t.mems_after()));
      out << " (" << t.reason() << ")\n";
    }
  }
  if (!reply.kubelet().empty()) {
    out << "kubelet (" << reply.kubelet_config() << ") would then disagree; kubelet reads these only when it starts:\n";
    for (const std::string& sentence : reply.kubelet()) out << "  " << sentence << "\n";
    if (!reply.applied())
      out << "  In this order: edit kubelet's file first (nothing changes until kubelet restarts), then apply "
             "vrid's change (vrictl config apply), then restart kubelet.\n";
  }
  if (reply.applied()) {
    out << "Applied: " << (reply.policy_changes() ? "the placement policy and " : "")
        << "the options marked reload; those marked restart wait for vrid's next start.\n";
  } else {
    out << "Nothing was changed.\n";
  }
  return out.str();
}

}  // namespace vri::ctl

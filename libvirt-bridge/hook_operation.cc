#include "libvirt-bridge/hook_operation.h"

namespace vri {

HookOperation hookOperationOf(const std::vector<std::string>& args) {
  if (args.size() < 3) return HookOperation::kOther;
  const std::string& op = args[1];
  const std::string& sub = args[2];
  if (op == "prepare" && sub == "begin") return HookOperation::kPrepare;
  if (op == "started" && sub == "begin") return HookOperation::kStarted;
  if ((op == "stopped" || op == "release") && sub == "end") return HookOperation::kRelease;
  if (op == "reconnect" && sub == "begin") return HookOperation::kReconnect;
  if ((op == "migrate" || op == "restore") && sub == "begin") return HookOperation::kIncoming;
  return HookOperation::kOther;
}

}  // namespace vri

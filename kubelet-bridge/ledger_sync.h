// vrid's ledger against the runtime's lists, each time the shim (re)connects
// to vrid: what vrid holds that the runtime no longer has (removed while the
// shim was down) is released by its runtime id; pods and running containers
// that vrid does not know (made before the shim ran) are adopted, each
// container on the CPUs it holds now, as vrid's start-up adoption does. A
// sandbox is a pod, never a container. Only pods run by a shim (a sandbox
// bound) are judged. Every failure is logged; none stops the rest.
#pragma once

#include <google/protobuf/message.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "kubelet-bridge/runtime_client.h"
#include "kubelet-bridge/vrid_client.h"

namespace vri {

struct LedgerSyncCalls {
  VridClient& vrid;
  RuntimeClient& runtime;
  std::chrono::milliseconds timeout;  // each call's
  std::function<void(const std::string&)> log;
  // And all of them by then (NRI's Synchronize is one request of the runtime's, with its timeout).
  std::chrono::system_clock::time_point until = std::chrono::system_clock::time_point::max();
};

// `tenants` must be listed before the runtime is: every id vrid binds was
// created in the runtime first, so a later list has it.
void syncLedger(const LedgerSyncCalls& calls, const v1::TenantList& tenants);

// The top-level member `key` of a JSON object, as JSON text (the runtime's verbose status info).
std::optional<std::string> jsonMember(const std::string& json, const std::string& key);

// A verbose status's info as containerd writes it: a JSON object whose "config" is `config`, the
// CRI config the runtime keeps (what the sync reads back with jsonMember).
std::string verboseInfoWithConfig(const google::protobuf::Message& config);

}  // namespace vri

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
#include <memory>
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
};

// The sync's work, planned from vrid's pods and the runtime's lists, carried out in order (what is
// gone released first, then pods adopted, then their running containers) until a deadline. What does
// not fit is carried on later: NRI's Synchronize is answered within its budget however many pods the
// node runs, and the rest adopted between the runtime's requests. Until then a pod whose
// adoption waits is adopted first when a request names its sandbox, and what the runtime removes
// meanwhile is not adopted.
class LedgerSync {
 public:
  // `tenants` must be listed before the runtime is: every id vrid binds was created in the runtime
  // first, so a later list has it. nullptr when the runtime's lists are not available (logged).
  // `calls`' clients must outlive the sync.
  static std::unique_ptr<LedgerSync> plan(const LedgerSyncCalls& calls, v1::TenantList tenants);
  ~LedgerSync();

  // Carries the work on until `until`; true once all of it is done.
  bool carryOn(std::chrono::system_clock::time_point until);
  // The sandbox's adoption and its containers', now, if they wait (each call by `until` too).
  void adoptNow(const std::string& sandboxId, std::chrono::system_clock::time_point until);
  // A sandbox or container the runtime removed: not adopted.
  void forget(const std::string& runtimeId);
  // Releases and adoptions not yet carried out.
  size_t remaining() const;

 private:
  struct Work;
  explicit LedgerSync(std::unique_ptr<Work> work);
  std::unique_ptr<Work> work_;
};

// The whole sync at once.
void syncLedger(const LedgerSyncCalls& calls, const v1::TenantList& tenants);

// The top-level member `key` of a JSON object, as JSON text (the runtime's verbose status info).
std::optional<std::string> jsonMember(const std::string& json, const std::string& key);

// A verbose status's info as containerd writes it: a JSON object whose "config" is `config`, the
// CRI config the runtime keeps (what the sync reads back with jsonMember).
std::string verboseInfoWithConfig(const google::protobuf::Message& config);

}  // namespace vri

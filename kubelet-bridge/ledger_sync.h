// vrid's ledger against containerd's lists, each time the shim (re)connects to
// vrid: what vrid holds that containerd no longer has (removed while the shim
// was down) is released by its runtime id; pods and running containers that
// vrid does not know (made before the shim ran) are adopted, each container on
// the CPUs it holds now, as vrid's start-up adoption does. A sandbox is a pod,
// never a container. Only pods run by a shim (a sandbox bound) are judged.
#pragma once

#include <grpcpp/generic/generic_stub.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kubelet-bridge/cri.pb.h"
#include "proto/vri.grpc.pb.h"

namespace vri {

struct LedgerSyncCalls {
  v1::Vri::Stub& vrid;
  grpc::GenericStub& containerd;
  std::function<std::unique_ptr<grpc::ClientContext>()> context;  // one per call, with its deadline
  std::function<void(const std::string&)> log;
};

// `tenants` must be listed before containerd is: every id vrid binds was
// created in containerd first, so a later list has it.
void syncLedger(const LedgerSyncCalls& calls, const v1::TenantList& tenants);

// The top-level member `key` of a JSON object, as JSON text (containerd's verbose status info).
std::optional<std::string> jsonMember(const std::string& json, const std::string& key);

}  // namespace vri

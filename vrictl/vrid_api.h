// What vrictl asks of vrid: the narrow seam between its commands and gRPC.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "proto/vri.pb.h"

namespace vri::ctl {

class VridApi {
 public:
  virtual ~VridApi() = default;
  virtual Result<v1::Node> node() = 0;
  virtual Result<v1::TenantList> tenants(v1::ListTenantsRequest::Kind kind) = 0;
  virtual Result<v1::Tenant> tenant(const v1::GetTenantRequest& request) = 0;
  virtual Result<v1::CgroupTree> tree(bool compareKernel) = 0;
  virtual Result<v1::ReconcileReply> reconcile(bool dryRun) = 0;
  virtual Result<v1::MoveVmReply> moveVm(const v1::MoveVmRequest& request) = 0;
  virtual Result<v1::HandBackReply> handBack(const v1::HandBackRequest& request) = 0;
  virtual Result<v1::ConfigDiffReply> diffConfig(const v1::DiffConfigRequest& request) = 0;
  virtual Result<v1::ConfigDiffReply> applyConfig(const v1::ApplyConfigRequest& request) = 0;
  // The latest usage round and `history` earlier ones.
  virtual Result<v1::UsageReport> usage(unsigned history) = 0;
  // Calls `each` for every usage round until it returns false, the stream ends, or `stop` (asked
  // every 100 ms) says so.
  virtual Result<void> watchUsage(const std::function<bool(const v1::UsageReport&)>& each,
                                  const std::function<bool()>& stop) = 0;
  // Calls `each` for every event until it returns false, the stream ends, or `stop` (asked every
  // 100 ms while no event comes) says so.
  virtual Result<void> watch(const v1::WatchRequest& request, const std::function<bool(const v1::Event&)>& each,
                             const std::function<bool()>& stop) = 0;
};

// vrid over gRPC on the unix socket `socketPath`. Errors name the socket when it cannot be reached.
std::unique_ptr<VridApi> connectToVrid(const std::string& socketPath);

}  // namespace vri::ctl

// What containerd's verbose ContainerStatus says of a container (its `info` entry, JSON), read one
// way for every reader: the shim's ledger sync reads the config the runtime keeps (ledger_sync.h),
// vri-cri-client and the tests the process and the OCI spec the runtime applied.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "kubelet-bridge/cri.pb.h"

namespace vri {

// The value at `path` in the info: a string as it is, a number as an integer's text. NOT_FOUND
// names the first key missing; INVALID_ARGUMENT when the info is not JSON.
Result<std::string> verboseInfoValue(const runtime::v1::ContainerStatusResponse& status,
                                     const std::vector<std::string>& path);

// The container's main process (info.pid).
Result<int> verboseInfoPid(const runtime::v1::ContainerStatusResponse& status);

// linux.resources.cpu.<field> of the OCI spec the runtime applied (info.runtimeSpec): what either
// way in placed, as the runtime records it.
Result<std::string> verboseInfoSpecCpu(const runtime::v1::ContainerStatusResponse& status, const std::string& field);

}  // namespace vri

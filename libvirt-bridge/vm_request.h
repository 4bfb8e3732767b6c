// What a domain asks of VRI, from its definition.
//
// Precedence: the user's own <vcpupin> pins (each vCPU on one CPU) mean
// exactly those CPUs; pins VRI wrote itself (recorded in its metadata) are
// ignored, so a saved image or migration stream is placed afresh; otherwise
// <vri:cpu> in <metadata> asks for a policy; no tuning at all is a shared VM.
// Memory is always a hard request: <memory>, to which vrid adds its overhead.
#pragma once

#include "cgroup-model/result.h"
#include "libvirt-bridge/domain_xml.h"
#include "proto/vri.pb.h"

namespace vri {

inline constexpr uint64_t kDefaultHugepageBytes = 2ULL << 20;  // x86-64's default hugepage size

Result<v1::AdmitVmRequest> vmRequestFromDomain(const DomainXml& domain);

}  // namespace vri

// vrictl's text for the node and its tenants, one function per command, from the API's messages.
#pragma once

#include <string>

#include "proto/vri.pb.h"

namespace vri::ctl {

std::string formatNodeInfo(const v1::Node& node);
std::string formatCapacity(const v1::Node& node);
std::string formatPool(const v1::Node& node);
std::string formatTenantList(const v1::TenantList& list);
std::string formatVmInfo(const v1::VmInfo& vm);
std::string formatPodInfo(const v1::PodInfo& pod);

// Shared with the other views.
std::string formatBytes(uint64_t bytes);  // "512 MiB", "1.5 GiB"
std::string cpuAmount(int64_t milli);     // "2", "0.250"

}  // namespace vri::ctl

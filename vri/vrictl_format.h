// vrictl's text output, one function per command, from the API's messages.
#pragma once

#include <string>

#include "proto/vri.pb.h"

namespace vri {

std::string formatNodeInfo(const v1::Node& node);
std::string formatCapacity(const v1::Node& node);
std::string formatPool(const v1::Node& node);
std::string formatTenantList(const v1::TenantList& list);
std::string formatVmInfo(const v1::VmInfo& vm);
std::string formatPodInfo(const v1::PodInfo& pod);

}  // namespace vri

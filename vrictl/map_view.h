// vrictl map: the machine drawn as packages, NUMA nodes and cores, each CPU
// marked with who holds it, with a legend. Fits 256 CPUs in 80 columns.
#pragma once

#include <string>

#include "proto/vri.pb.h"
#include "vrictl/terminal_style.h"

namespace vri::ctl {

std::string formatMap(const v1::Node& node, const v1::TenantList& tenants, const TerminalStyle& style);

// The same as JSON: one object per CPU with its place and holder.
std::string mapAsJson(const v1::Node& node, const v1::TenantList& tenants);

}  // namespace vri::ctl

// vrictl tree: the cgroup hierarchy as VRI models it, each cgroup with the values
// VRI holds it to, and (compared with the kernel) where the kernel holds others.
#pragma once

#include <string>

#include "proto/vri.pb.h"
#include "vrictl/terminal_style.h"

namespace vri::ctl {

std::string formatTree(const v1::CgroupTree& tree, const v1::TenantList& tenants, const TerminalStyle& style);

// "cpus=0-3 shares=1024 quota=50000/100000 mem=512MiB", from the files as VRI writes them.
std::string formatValues(const v1::CgroupNode& node);

}  // namespace vri::ctl

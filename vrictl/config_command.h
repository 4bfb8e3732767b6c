// vrictl config diff FILE: what running vrid with FILE as its configuration would change, as vrid
// works it out (DiffConfig). vrictl reads the file and sends its text: vrid reads no path a client names.
#pragma once

#include <string>

#include "base/result.h"
#include "proto/vri.pb.h"
#include "vrictl/vrid_api.h"

namespace vri::ctl {

Result<v1::ConfigDiffReply> diffConfigFile(VridApi& vrid, const std::string& path);

// The reply for people: the settings, then each tenant that would move or break, then kubelet's.
std::string formatConfigDiff(const v1::ConfigDiffReply& reply, const std::string& path);

}  // namespace vri::ctl

// vrictl config diff [FILE]: what running vrid with FILE as its configuration would change, as vrid
// works it out (DiffConfig). vrictl reads the file and sends its text: vrid reads no path a client names.
// Without FILE, vrid compares its own configuration file, read again (what an apply would do).
// vrictl config apply [--dry-run]: vrid reads its own file again and applies it (ApplyConfig).
#pragma once

#include <string>

#include "base/result.h"
#include "proto/vri.pb.h"
#include "vrictl/vrid_api.h"

namespace vri::ctl {

// `path` empty: vrid's own file.
Result<v1::ConfigDiffReply> diffConfigFile(VridApi& vrid, const std::string& path);
// `path` must be empty: vrid applies no file a client names.
Result<v1::ConfigDiffReply> applyConfigFile(VridApi& vrid, const std::string& path, bool dryRun);

// The reply for people: the settings, then each tenant that would move or break, then kubelet's.
std::string formatConfigDiff(const v1::ConfigDiffReply& reply);

}  // namespace vri::ctl

// vrictl handback: the node handed back to kubelet's static CPU manager. vrid composes kubelet's
// checkpoint from the ledger; vrictl writes it (vrid's unit may not write kubelet's directory);
// vrid, finding the same checkpoint there, gives kubelet's cgroups back and decides nothing more.
#pragma once

#include <string>

#include "base/result.h"
#include "proto/vri.pb.h"
#include "vrictl/vrid_api.h"

namespace vri::ctl {

// `kubeletRootDir` empty: vrid's kubelet_root_dir. A hand-back vrid refuses after the file was
// written puts back what the file held before (or removes it).
Result<v1::HandBackReply> handBackToKubelet(VridApi& vrid, const std::string& kubeletRootDir, bool dryRun);

}  // namespace vri::ctl

// vrictl handback: the node handed back to kubelet's static CPU manager (and memory manager). vrid
// composes kubelet's checkpoints from the ledger; vrictl writes them (vrid's unit may not write kubelet's directory);
// vrid, finding the same checkpoint there, gives kubelet's cgroups back and decides nothing more.
#pragma once

#include <string>

#include "base/result.h"
#include "proto/vri.pb.h"
#include "vrictl/vrid_api.h"

namespace vri::ctl {

struct HandBackChoices {
  std::string kubeletRootDir = {};  // empty: vrid's kubelet_root_dir
  std::string kubeletConfig = {};   // the configuration kubelet will start with; empty: vrid's kubelet_config
  bool dryRun = false;
};

// A hand-back vrid refuses after the files were written puts back what they held before (or
// removes them).
Result<v1::HandBackReply> handBackToKubelet(VridApi& vrid, const HandBackChoices& choices);

}  // namespace vri::ctl

// vrictl's commands on where one VM runs: vcpupin and emulatorpin show its
// pins or move them live (admin socket); numatune shows its memory's nodes.
#pragma once

#include <string>

#include "vrictl/commands.h"

namespace vri::ctl {

struct PinChoices {
  std::string domain;   // name or UUID
  std::string vcpu;     // vcpupin: a vCPU id; empty: all of them
  std::string cpulist;  // one CPU or "shared"; empty: show only
  bool config = false;  // also the persistent definition
  std::string nodeset;  // numatune: asked for, and refused
  bool json = false;
};

int runVcpupin(CommandContext& c, const PinChoices& p);
int runEmulatorpin(CommandContext& c, const PinChoices& p);
int runNumatune(CommandContext& c, const PinChoices& p);

// What a move means, for the commands' --help.
extern const char kVcpupinFooter[];
extern const char kEmulatorpinFooter[];

}  // namespace vri::ctl

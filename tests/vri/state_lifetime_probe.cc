// Compiled, never run, by the state_lifetime tests: a record pointer taken
// from a temporary state (the form libvirt_sync.cc once used) must not
// compile, since the next decision published may free that state while the
// pointer is still read; the same read through a named StatePtr must.
#include "vri/node_manager.h"

namespace vri {

bool onlyReserved(const NodeManager& node, const std::string& uuid) {
#ifdef VRI_PROBE_TEMPORARY_STATE
  if (const VmRecord* vm = node.state()->vm(uuid); vm && vm->defined) return true;
  return false;
#else
  const StatePtr state = node.state();
  const VmRecord* vm = state->vm(uuid);
  return vm != nullptr && vm->defined;
#endif
}

}  // namespace vri

// What vrid reads from /proc: mountinfo (where the cgroup hierarchies are), a process's
// /proc/<pid>/cgroup (which VM scope holds a QEMU thread) and QEMU's NUL-separated command line
// (its -uuid). Nothing may crash them, and what they return must be what they promise: mount
// points are absolute, a VM scope lies inside the partition, a UUID is a UUID.
#include "base/uuid.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/cgroup_path.h"
#include "cgroup-model/libvirt_namer.h"
#include "cgroup-model/node_scan.h"
#include "fuzz/fuzz_input.h"

using namespace vri;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  switch (in.kind % 4) {
    case 0: {
      const Result<CgroupMounts> mounts = parseMountInfo(in.text);
      if (!mounts.ok()) break;
      for (const auto& [controller, point] : mounts->v1) {
        VRI_FUZZ_CHECK(!controller.empty());
        VRI_FUZZ_CHECK(point.starts_with('/'));
      }
      VRI_FUZZ_CHECK(mounts->unified.empty() || mounts->unified.starts_with('/'));
      break;
    }
    case 1:
    case 2: {
      // v1 (the cpuset line) and v2 (the "0::" line), under systemd's machine.slice and libvirt's own.
      const std::string_view controller = in.kind % 4 == 1 ? "cpuset" : "";
      for (const char* partition : {"machine.slice", "machine"}) {
        const CgroupPath inside = *CgroupPath::parse(partition);
        const Result<CgroupPath> scope = vmScopeFromProcCgroup(in.text, controller, inside);
        if (!scope.ok()) continue;
        VRI_FUZZ_CHECK(scope->depth() > inside.depth());
        for (size_t i = 0; i < inside.depth(); ++i) VRI_FUZZ_CHECK(scope->components()[i] == inside.components()[i]);
        // A scope is a cgroup path: it formats to a text that parses back to it.
        const Result<CgroupPath> again = CgroupPath::parse(scope->str());
        VRI_FUZZ_CHECK(again.ok() && *again == *scope);
      }
      break;
    }
    case 3: {
      const std::optional<std::string> uuid = qemuUuidFromCmdline(in.text);
      if (uuid) VRI_FUZZ_CHECK(isUuid(*uuid));
      break;
    }
  }
  return 0;
}

#include "libvirt-bridge/qemu_pid.h"

#include <fstream>

namespace vri {

Result<int> readQemuPid(const std::string& pidDir, const std::string& domainName) {
  const std::string path = pidDir + "/" + domainName + ".pid";
  std::ifstream in(path);
  int pid = 0;
  if (!(in >> pid) || pid <= 1) return Error::notFound("cannot read QEMU's pid from " + path);
  return pid;
}

}  // namespace vri

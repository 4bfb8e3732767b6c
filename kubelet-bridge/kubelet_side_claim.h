// KubeletSideClaim: one placer of kubelet's pods per vrid. The CRI shim and the NRI plugin each
// place every pod and container the runtime creates; both at once would admit each container twice
// under different ids and fight over the runtime's records. Each takes this claim at start, a lock
// file beside vrid's socket (`<vrid socket>.kubelet-side.lock`, flock) holding its name and pid, and
// keeps it while it runs: a second one, of either kind, is refused with a message that names the
// first. The kernel lets go of the lock when its holder exits, crashed or not.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"

namespace vri {

class KubeletSideClaim {
 public:
  // Claims vrid at `vridSocket` for `program` ("vri-cri-shim", "vri-nri-plugin"); FAILED_PRECONDITION
  // naming the holder when another process has it.
  static Result<std::unique_ptr<KubeletSideClaim>> take(const std::string& vridSocket, const std::string& program);
  ~KubeletSideClaim();
  KubeletSideClaim(const KubeletSideClaim&) = delete;
  KubeletSideClaim& operator=(const KubeletSideClaim&) = delete;

  static std::string lockPath(const std::string& vridSocket) { return vridSocket + ".kubelet-side.lock"; }

 private:
  explicit KubeletSideClaim(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace vri

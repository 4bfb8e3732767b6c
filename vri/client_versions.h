// Which VRI programs call vrid, and in which version. Each client sends its
// version in its gRPC user agent ("vri-hook/0.1.0-1 grpc-c++/1.51.1 ..."), so
// that after an upgrade `vrictl nodeinfo` shows whether the hook and the shim
// that run are the ones installed.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/thread_annotations.h"

namespace vri {

struct ClientVersion {
  std::string program;  // "vri-hook"
  std::string version;  // the last version it called with
  Clock::Duration sinceLastCall{};
};

class ClientVersions {
 public:
  // At most this many programs are kept: the read-only socket is open to anyone,
  // and a caller inventing names must not grow vrid's memory.
  static constexpr size_t kMaxPrograms = 16;

  explicit ClientVersions(const Clock& clock) : clock_(clock) {}

  // Takes the first product of a user agent when it names a VRI program
  // ("vri-..." or "vrictl", with a version of package-version characters);
  // anything else is ignored.
  void record(std::string_view userAgent);
  std::vector<ClientVersion> list() const;

 private:
  struct Seen {
    std::string version;
    Clock::TimePoint at;
  };
  const Clock& clock_;
  mutable Mutex mutex_;
  std::map<std::string, Seen, std::less<>> byProgram_ VRI_GUARDED_BY(mutex_);
};

}  // namespace vri

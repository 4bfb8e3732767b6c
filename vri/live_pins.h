// LivePins: after a live move has changed the ledger and the cgroups, libvirt
// is told: its live pins and VRI's record of them in the domain's metadata
// (with `persistent`, in its definition too). vrid's libvirt side does it on
// its own worker thread, never under the decision lock, and the caller learns
// how it went.
#pragma once

#include <functional>
#include <string>

#include "base/thread_annotations.h"

namespace vri {

struct LivePinsOutcome {
  enum class State {
    kApplied,           // libvirt holds what the ledger holds
    kPending,           // it does not yet: retried until it does (`detail`: why)
    kDefinitionFailed,  // live pins set; the persistent definition was not changed (`detail`: why)
    kNoLibvirt,         // vrid does not manage libvirt's pins
  };
  State state = State::kApplied;
  std::string detail;
};
// Called exactly once, on another thread.
using LivePinsDone = std::function<void(LivePinsOutcome)>;

class LivePins {
 public:
  virtual ~LivePins() = default;
  virtual void setPins(const std::string& uuid, bool persistent, LivePinsDone done) = 0;
};

// The services' handle on vrid's libvirt side: empty without libvirt, and
// emptied before that side stops, so a call never reaches it half torn down.
class LivePinsSlot {
 public:
  void attach(LivePins* target) {
    MutexLock lock(mutex_);
    target_ = target;
  }
  void setPins(const std::string& uuid, bool persistent, LivePinsDone done) {
    MutexLock lock(mutex_);  // held while the task is handed over only: it runs on libvirt's worker
    if (target_ == nullptr) {
      done({LivePinsOutcome::State::kNoLibvirt, "vrid does not manage libvirt's pins (no libvirt_uri)"});
      return;
    }
    target_->setPins(uuid, persistent, std::move(done));
  }

 private:
  Mutex mutex_;
  LivePins* target_ VRI_GUARDED_BY(mutex_) = nullptr;
};

}  // namespace vri

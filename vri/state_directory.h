// vrid's state directory: its own, and held by one vrid at a time.
//
// A directory vrid creates is made 0700. One that exists is taken as it is
// (its mode is never changed) only when it is VRI's: a directory, owned by
// vrid's user, writable by nobody else, and either empty or holding VRI's
// lock or ledger. So
// `--state-dir=/tmp` or a typo pointing at someone else's directory is refused
// before anything is written there.
#pragma once

#include <string>

#include "cgroup-model/result.h"

namespace vri {

class StateDirectory {
 public:
  // Creates or checks `path` and takes its lock (vrid.lock, flock): refused
  // while another vrid holds it.
  static Result<StateDirectory> claim(const std::string& path);
  ~StateDirectory();
  StateDirectory(StateDirectory&& other) noexcept;
  StateDirectory& operator=(StateDirectory&&) = delete;
  StateDirectory(const StateDirectory&) = delete;

  // Nothing was ever kept here (new, or empty): a ledger begins without --init-ledger.
  bool firstStart() const { return firstStart_; }

 private:
  StateDirectory(int lockFd, bool firstStart) : lockFd_(lockFd), firstStart_(firstStart) {}
  int lockFd_;
  bool firstStart_;
};

}  // namespace vri

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

#include "base/result.h"

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

  // No ledger was ever begun here (new, empty, or only the lock of a start that stopped before
  // its ledger): a ledger begins without --init-ledger.
  bool firstStart() const { return firstStart_; }

  // Records in the lock file that this directory holds a ledger, so that a ledger lost later is
  // told from one never begun. Called once the ledger is open; idempotent.
  Result<void> recordLedgerBegun();

 private:
  StateDirectory(int lockFd, bool firstStart, bool ledgerRecorded)
      : lockFd_(lockFd), firstStart_(firstStart), ledgerRecorded_(ledgerRecorded) {}
  int lockFd_;
  bool firstStart_;
  bool ledgerRecorded_;
};

}  // namespace vri

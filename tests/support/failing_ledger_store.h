// Puts a LedgerStore behind switches: the next N applies fail, loads fail.
#pragma once

#include <atomic>

#include "accounting/ledger_store.h"

namespace vri::testing {

class FailingLedgerStore : public LedgerStore {
 public:
  explicit FailingLedgerStore(LedgerStore& inner) : inner_(inner) {}

  Result<StoredLedger> load() override {
    if (failLoads) return Error(ErrorCode::kUnavailable, "load: disk I/O error (injected)");
    return inner_.load();
  }
  Result<std::map<std::string, std::string>> meta() override { return inner_.meta(); }
  Result<void> apply(const LedgerChange& change) override {
    ++applies;
    if (skipBeforeFailing > 0) {
      --skipBeforeFailing;
    } else if (failApplies > 0) {
      --failApplies;
      return Error(ErrorCode::kUnavailable, "commit: disk I/O error (injected)");
    }
    return inner_.apply(change);
  }
  Result<void> setMeta(const std::string& key, const std::string& value) override { return inner_.setMeta(key, value); }

  std::atomic<int> failApplies{0};        // this many applies fail...
  std::atomic<int> skipBeforeFailing{0};  // ...after this many succeed
  std::atomic<bool> failLoads{false};
  std::atomic<int> applies{0};

 private:
  LedgerStore& inner_;
};

}  // namespace vri::testing

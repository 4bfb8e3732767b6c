// LedgerStore: where the ledger's records survive the process.
//
// One interface, three stores: sqlite (vrid), in memory (tests and tools that
// need no file), and a failing one that tests put in front of either. A change
// is applied in one transaction: all of it or none of it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accounting/ledger_records.h"
#include "base/result.h"

namespace vri {

struct StoredLedger {
  std::map<std::string, PodRecord> pods;  // by UID
  std::map<std::string, VmRecord> vms;    // by UUID
  std::map<std::string, std::string> meta;
};

// The records one decision writes: puts and deletes, by identity.
struct LedgerChange {
  std::vector<PodRecord> putPods;
  std::vector<std::string> deletePods;
  std::vector<VmRecord> putVms;
  std::vector<std::string> deleteVms;
  std::map<std::string, std::string> meta;  // entries set with the records, in the same transaction
  bool empty() const {
    return putPods.empty() && deletePods.empty() && putVms.empty() && deleteVms.empty() && meta.empty();
  }
};

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;
  virtual Result<StoredLedger> load() = 0;
  // The meta entries alone (which policy the records were placed under), without the records.
  virtual Result<std::map<std::string, std::string>> meta() = 0;
  // All of `change` is durable when this returns ok; none of it otherwise.
  virtual Result<void> apply(const LedgerChange& change) = 0;
  virtual Result<void> setMeta(const std::string& key, const std::string& value) = 0;
};

// Keeps the records in memory, as the sqlite store would keep them on disk.
class MemoryLedgerStore : public LedgerStore {
 public:
  Result<StoredLedger> load() override { return stored_; }
  Result<std::map<std::string, std::string>> meta() override { return stored_.meta; }
  Result<void> apply(const LedgerChange& change) override;
  Result<void> setMeta(const std::string& key, const std::string& value) override;
  const StoredLedger& stored() const { return stored_; }

 private:
  StoredLedger stored_;
};

}  // namespace vri

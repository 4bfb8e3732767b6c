// LedgerStore: the ledger's records in a sqlite3 file (WAL mode).
//
// Every put or delete is one transaction, committed before it returns, so a
// decision the ledger acknowledges survives a crash of the process
// (synchronous=NORMAL) or, with Durability::kFull, a power loss too.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accounting/ledger_records.h"
#include "cgroup-model/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace vri {

// NORMAL: a commit survives the process crashing; FULL: also the machine losing power.
enum class Durability { kNormal, kFull };
Result<Durability> parseDurability(std::string_view text);  // "normal" | "full"

struct StoredLedger {
  std::map<std::string, PodRecord> pods;  // by UID
  std::map<std::string, VmRecord> vms;    // by UUID
  std::map<std::string, std::string> meta;
};

class LedgerStore {
 public:
  static constexpr int kSchemaVersion = 1;

  static Result<std::unique_ptr<LedgerStore>> open(const std::string& path, Durability durability);
  ~LedgerStore();
  LedgerStore(const LedgerStore&) = delete;
  LedgerStore& operator=(const LedgerStore&) = delete;

  Result<StoredLedger> load();
  Result<void> putPod(const PodRecord& pod);
  Result<void> deletePod(const std::string& uid);
  Result<void> putVm(const VmRecord& vm);
  Result<void> deleteVm(const std::string& uuid);
  Result<void> setMeta(const std::string& key, const std::string& value);
  // The smallest transaction that reaches the disk: the benchmark's measure of it.
  Result<void> emptyCommit();

 private:
  explicit LedgerStore(sqlite3* db) : db_(db) {}
  Result<void> prepare();
  Result<void> put(const char* kind, const std::string& id, const std::string& body);
  Result<void> erase(const char* kind, const std::string& id);

  sqlite3* db_;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
  sqlite3_stmt* meta_ = nullptr;
};

}  // namespace vri

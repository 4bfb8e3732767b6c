// SqliteLedgerStore: the ledger's records in a sqlite3 file (WAL mode).
//
// Each apply() is one transaction, committed before it returns, so a decision
// the ledger acknowledges survives a crash of the process (synchronous=NORMAL)
// or, with Durability::kFull, a power loss too.
#pragma once

#include <memory>
#include <string>

#include "accounting/ledger_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace vri {

// NORMAL: a commit survives the process crashing; FULL: also the machine losing power.
enum class Durability { kNormal, kFull };
Result<Durability> parseDurability(std::string_view text);  // "normal" | "full"
std::string_view durabilityName(Durability durability);

class SqliteLedgerStore : public LedgerStore {
 public:
  static constexpr int kSchemaVersion = 1;

  static Result<std::unique_ptr<SqliteLedgerStore>> open(const std::string& path, Durability durability);
  ~SqliteLedgerStore() override;
  SqliteLedgerStore(const SqliteLedgerStore&) = delete;
  SqliteLedgerStore& operator=(const SqliteLedgerStore&) = delete;

  Result<StoredLedger> load() override;
  Result<void> apply(const LedgerChange& change) override;
  Result<void> setMeta(const std::string& key, const std::string& value) override;
  // The smallest transaction that reaches the disk: the benchmarks' measure of it.
  Result<void> emptyCommit();

 private:
  explicit SqliteLedgerStore(sqlite3* db) : db_(db) {}
  Result<void> prepare();
  Result<void> put(const char* kind, const std::string& id, const std::string& body);
  Result<void> erase(const char* kind, const std::string& id);
  Result<void> applyInTransaction(const LedgerChange& change);

  sqlite3* db_;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
  sqlite3_stmt* meta_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* rollback_ = nullptr;
};

}  // namespace vri

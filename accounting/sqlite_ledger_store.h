// SqliteLedgerStore: the ledger's records in a sqlite3 file (WAL mode).
//
// Each apply() is one transaction, committed before it returns, so a decision
// the ledger acknowledges survives a crash of the process (synchronous=NORMAL)
// or, with Durability::kFull, a power loss too.
#pragma once

#include <memory>
#include <string>

#include "accounting/ledger_schema.h"
#include "accounting/ledger_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace vri {

// NORMAL: a commit survives the process crashing; FULL: also the machine losing power.
enum class Durability { kNormal, kFull };
Result<Durability> parseDurability(std::string_view text);  // "normal" | "full"
std::string_view durabilityName(Durability durability);

// What open() does with a path that holds no ledger (no file, 0 bytes, no tables).
enum class LedgerFile {
  kCreateIfAbsent,  // begins a new ledger there (a first start, tests, tools)
  kMustExist,       // refuses: a ledger that was there is lost, and vrid must not silently start afresh
};

class SqliteLedgerStore : public LedgerStore {
 public:
  // The file is opened in exclusive locking mode: the process holds it alone,
  // and WAL keeps its index in the process's memory, not in a -shm file that
  // is mapped (a mapped file that cannot grow, on a full disk, would kill the
  // process with SIGBUS). Errors name the file and say what to do. An older
  // file is brought up to `schema` (see ledger_schema.h); a newer one is refused.
  static Result<std::unique_ptr<SqliteLedgerStore>> open(const std::string& path, Durability durability,
                                                         LedgerFile file = LedgerFile::kCreateIfAbsent,
                                                         const LedgerSchema& schema = currentLedgerSchema());
  ~SqliteLedgerStore() override;
  SqliteLedgerStore(const SqliteLedgerStore&) = delete;
  SqliteLedgerStore& operator=(const SqliteLedgerStore&) = delete;

  Result<StoredLedger> load() override;
  Result<std::map<std::string, std::string>> meta() override;
  Result<void> apply(const LedgerChange& change) override;
  Result<void> setMeta(const std::string& key, const std::string& value) override;
  // The schema version this open upgraded the file from (its copy is at
  // schemaBackupPath(path, version)), or 0 when it was current.
  int upgradedFrom() const { return upgradedFrom_; }
  // The smallest transaction that reaches the disk: the benchmarks' measure of it.
  Result<void> emptyCommit();

 private:
  explicit SqliteLedgerStore(sqlite3* db) : db_(db) {}
  Result<void> prepare();
  Result<void> put(const char* kind, const std::string& id, const std::string& body);
  Result<void> erase(const char* kind, const std::string& id);
  Result<void> applyInTransaction(const LedgerChange& change);

  sqlite3* db_;
  int upgradedFrom_ = 0;
  sqlite3_stmt* put_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
  sqlite3_stmt* meta_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* rollback_ = nullptr;
};

}  // namespace vri

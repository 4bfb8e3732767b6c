#include "accounting/sqlite_ledger_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>

#include "base/enum_text.h"
#include "base/quote.h"
#include "base/version.h"

namespace vri {

namespace {

Error sqliteError(sqlite3* db, const std::string& what) {
  return Error(ErrorCode::kUnavailable, what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

Result<void> exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    return Error(ErrorCode::kUnavailable, std::string("sqlite: ") + sql + ": " + text);
  }
  return {};
}

// Runs a prepared statement to completion and resets it.
Result<void> step(sqlite3* db, sqlite3_stmt* statement, const std::string& what) {
  const int rc = sqlite3_step(statement);
  sqlite3_reset(statement);
  sqlite3_clear_bindings(statement);
  if (rc != SQLITE_DONE) return sqliteError(db, what);
  return {};
}

}  // namespace

constexpr EnumText<Durability, 2> kDurabilityText{"durability",
                                                  {{{Durability::kNormal, "normal"}, {Durability::kFull, "full"}}}};

Result<Durability> parseDurability(std::string_view text) { return kDurabilityText.parse(text); }
std::string_view durabilityName(Durability durability) { return kDurabilityText.name(durability); }

namespace {

// Whether the open database has VRI's tables.
Result<bool> hasLedgerTables(sqlite3* db) {
  sqlite3_stmt* query = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'tenants')",
                         -1, &query, nullptr) != SQLITE_OK)
    return sqliteError(db, "read the schema");
  const int rc = sqlite3_step(query);
  const int tables = rc == SQLITE_ROW ? sqlite3_column_int(query, 0) : -1;
  sqlite3_finalize(query);
  if (rc != SQLITE_ROW) return sqliteError(db, "read the schema");
  return tables == 2;
}

// The version the file says it has (meta.schema_version, a positive number).
Result<int> readSchemaVersion(sqlite3* db) {
  sqlite3_stmt* query = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &query, nullptr) != SQLITE_OK)
    return sqliteError(db, "read the schema version");
  const int rc = sqlite3_step(query);
  const std::string text = rc == SQLITE_ROW && sqlite3_column_text(query, 0)
                               ? reinterpret_cast<const char*>(sqlite3_column_text(query, 0))
                               : "";
  sqlite3_finalize(query);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqliteError(db, "read the schema version");
  int version = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (rc == SQLITE_DONE || error != std::errc() || end != text.data() + text.size() || version < 1)
    return Error::failedPrecondition("its schema version " + quoteForMessage(text) + " is not a version");
  return version;
}

Result<void> syncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Error::fromErrno(errno, "open " + path);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) return Error::fromErrno(saved, "fsync " + path);
  return {};
}

// A consistent copy of the open database at `to`, on the disk before it takes that name.
Result<void> copyDatabase(sqlite3* db, const std::string& to) {
  const std::string partial = to + ".partial";
  ::unlink(partial.c_str());
  sqlite3_stmt* vacuum = nullptr;
  if (sqlite3_prepare_v2(db, "VACUUM INTO ?", -1, &vacuum, nullptr) != SQLITE_OK)
    return sqliteError(db, "copy to " + to);
  sqlite3_bind_text(vacuum, 1, partial.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(vacuum);
  sqlite3_finalize(vacuum);
  if (rc != SQLITE_DONE) {
    ::unlink(partial.c_str());
    return sqliteError(db, "copy to " + to);
  }
  VRI_TRY(syncPath(partial, O_RDONLY));
  if (::rename(partial.c_str(), to.c_str()) != 0) return Error::fromErrno(errno, "rename " + partial + " to " + to);
  const size_t slash = to.rfind('/');
  return syncPath(slash == std::string::npos ? "." : to.substr(0, slash + 1), O_RDONLY | O_DIRECTORY);
}

// Brings the file from `from` up to `schema`: the copy first, then every step and the new
// version in one transaction, so a failure leaves the file as it was.
Result<void> migrate(sqlite3* db, const std::string& path, int from, const LedgerSchema& schema) {
  VRI_TRY(copyDatabase(db, schemaBackupPath(path, from)).context("keeping the ledger before its upgrade"));
  VRI_TRY(exec(db, "BEGIN IMMEDIATE"));
  Result<void> done;
  int at = from;
  for (const SchemaStep& step : schema.steps) {
    if (step.from < at) continue;
    if (step.from != at) {
      done = Error::internal("no schema step from version " + std::to_string(at));
      break;
    }
    done = exec(db, step.sql.c_str()).context("schema step from version " + std::to_string(at));
    if (!done.ok()) break;
    ++at;
  }
  if (done.ok() && at != schema.version)
    done = Error::internal("the schema steps end at version " + std::to_string(at) + ", not " +
                           std::to_string(schema.version));
  if (done.ok()) {
    const std::string set =
        "UPDATE meta SET value = '" + std::to_string(schema.version) + "' WHERE key = 'schema_version'";
    done = exec(db, set.c_str());
  }
  if (done.ok()) done = exec(db, "COMMIT");
  if (!done.ok()) {
    (void)exec(db, "ROLLBACK");
    return std::move(done).context("upgrading ledger " + path + " from schema version " + std::to_string(from) +
                                   " (unchanged; its copy is " + schemaBackupPath(path, from) + ")");
  }
  return {};
}

// A file a newer VRI wrote: refused, with the way back.
Error newerSchema(const std::string& path, int version, int known) {
  const std::string backup = schemaBackupPath(path, known);
  std::string message = "ledger " + path + " has schema version " + std::to_string(version) + ", and this vrid (" +
                        std::string(packageVersion()) + ") reads up to version " + std::to_string(known) +
                        ": a newer VRI upgraded it. Install that VRI again, or go back to this one with the copy "
                        "made before the upgrade: ";
  if (::access(backup.c_str(), F_OK) == 0) {
    message += "stop vrid, remove " + path + " and " + path + "-wal, and move " + backup + " to " + path +
               " (tenants admitted since the upgrade are then adopted from their cgroups)";
    return Error::failedPrecondition(message);
  }
  message += "there is none at " + backup +
             "; start vrid once with --init-ledger to set the file aside and "
             "begin a new ledger (running tenants are adopted from their cgroups)";
  return Error(ErrorCode::kDataLoss, message);  // unreadable here: --init-ledger may set it aside
}

}  // namespace

Result<std::unique_ptr<SqliteLedgerStore>> SqliteLedgerStore::open(const std::string& path, Durability durability,
                                                                   LedgerFile file, const LedgerSchema& schema) {
  // DATA_LOSS: the file is gone or cannot be read as a ledger, what --init-ledger sets aside. Anything
  // else (a ledger another process holds, an I/O error) is not damage, and the file is kept.
  const auto lost = [&](const std::string& what) {
    return Error(ErrorCode::kDataLoss,
                 "ledger " + path + " " + what +
                     ": the tenants it held are not known. If it is lost for good, start vrid once "
                     "with --init-ledger to begin a new ledger (running tenants are adopted from "
                     "their cgroups; a damaged file is kept beside it)");
  };
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (file == LedgerFile::kMustExist) {
    if (!exists) return lost("does not exist");
    if (st.st_size == 0) return lost("is empty (0 bytes)");
  }
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (file == LedgerFile::kCreateIfAbsent ? SQLITE_OPEN_CREATE : 0);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    Error error = sqliteError(db, "open ledger " + path);
    sqlite3_close(db);
    return error;
  }
  std::unique_ptr<SqliteLedgerStore> store(new SqliteLedgerStore(db));
  const auto damaged = [&](Error error) {
    if ((sqlite3_errcode(db) & 0xff) == SQLITE_BUSY)
      return Error::failedPrecondition("ledger " + path + " is in use by another process (" + error.message() + ")");
    return Error(ErrorCode::kDataLoss, "ledger " + path + " cannot be read (" + error.message() +
                                           "). Restore it from a backup, or start vrid once with --init-ledger to set "
                                           "it aside and begin a new one (running tenants are adopted from their "
                                           "cgroups)");
  };
  // Before the first WAL access: with exclusive locking, the WAL index lives in heap memory.
  if (auto locked = exec(db, "PRAGMA locking_mode=EXCLUSIVE"); !locked.ok()) return damaged(locked.error());
  if (auto wal = exec(db, "PRAGMA journal_mode=WAL"); !wal.ok()) return damaged(wal.error());
  VRI_TRY(exec(db, durability == Durability::kFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  VRI_TRY(exec(db, "PRAGMA busy_timeout=5000"));
  auto tables = hasLedgerTables(db);
  if (!tables.ok()) return damaged(tables.error());
  if (!*tables && file == LedgerFile::kMustExist) return lost("has no ledger tables");
  if (!*tables) {
    const std::string create =
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE tenants (kind TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (kind, id));"
        "INSERT INTO meta (key, value) VALUES ('schema_version', '" +
        std::to_string(schema.version) + "');";
    VRI_TRY(exec(db, ("BEGIN;" + create + "COMMIT;").c_str()));
  } else {
    auto version = readSchemaVersion(db);
    if (!version.ok()) return damaged(version.error());
    if (*version > schema.version) return newerSchema(path, *version, schema.version);
    if (*version < schema.version) {
      VRI_TRY(migrate(db, path, *version, schema));
      store->upgradedFrom_ = *version;
    }
  }
  VRI_TRY(store->prepare());
  if (auto loaded = store->load(); !loaded.ok()) return damaged(loaded.error());
  return store;
}

SqliteLedgerStore::~SqliteLedgerStore() {
  sqlite3_finalize(put_);
  sqlite3_finalize(delete_);
  sqlite3_finalize(meta_);
  sqlite3_finalize(begin_);
  sqlite3_finalize(commit_);
  sqlite3_finalize(rollback_);
  sqlite3_close(db_);
}

Result<void> SqliteLedgerStore::prepare() {
  if (sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO tenants (kind, id, body) VALUES (?, ?, ?)", -1, &put_, nullptr) !=
          SQLITE_OK ||
      sqlite3_prepare_v2(db_, "DELETE FROM tenants WHERE kind = ? AND id = ?", -1, &delete_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", -1, &meta_, nullptr) !=
          SQLITE_OK ||
      sqlite3_prepare_v2(db_, "BEGIN IMMEDIATE", -1, &begin_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "COMMIT", -1, &commit_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db_, "ROLLBACK", -1, &rollback_, nullptr) != SQLITE_OK) {
    return sqliteError(db_, "prepare ledger statements");
  }
  return {};
}

Result<std::map<std::string, std::string>> SqliteLedgerStore::meta() {
  std::map<std::string, std::string> meta;
  sqlite3_stmt* query = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT key, value FROM meta", -1, &query, nullptr) != SQLITE_OK) {
    return sqliteError(db_, "read ledger meta");
  }
  while (sqlite3_step(query) == SQLITE_ROW) {
    meta[reinterpret_cast<const char*>(sqlite3_column_text(query, 0))] =
        reinterpret_cast<const char*>(sqlite3_column_text(query, 1));
  }
  sqlite3_finalize(query);
  return meta;
}

Result<StoredLedger> SqliteLedgerStore::load() {
  StoredLedger stored;
  VRI_ASSIGN_OR_RETURN(stored.meta, meta());
  sqlite3_stmt* query = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT kind, id, body FROM tenants", -1, &query, nullptr) != SQLITE_OK) {
    return sqliteError(db_, "read ledger tenants");
  }
  Result<void> outcome;
  while (sqlite3_step(query) == SQLITE_ROW) {
    const std::string kind = reinterpret_cast<const char*>(sqlite3_column_text(query, 0));
    const std::string id = reinterpret_cast<const char*>(sqlite3_column_text(query, 1));
    const std::string body = reinterpret_cast<const char*>(sqlite3_column_text(query, 2));
    if (kind == "pod") {
      auto pod = decodePod(body);
      if (!pod.ok()) {
        outcome = std::move(pod).context("ledger row pod " + quoteForMessage(id)).error();
        break;
      }
      stored.pods[id] = std::move(pod).value();
    } else if (kind == "vm") {
      auto vm = decodeVm(body);
      if (!vm.ok()) {
        outcome = std::move(vm).context("ledger row vm " + quoteForMessage(id)).error();
        break;
      }
      stored.vms[id] = std::move(vm).value();
    } else {
      outcome = Error::invalidArgument("ledger row of unknown kind " + quoteForMessage(kind));
      break;
    }
  }
  sqlite3_finalize(query);
  VRI_TRY(std::move(outcome));
  return stored;
}

Result<void> SqliteLedgerStore::put(const char* kind, const std::string& id, const std::string& body) {
  sqlite3_bind_text(put_, 1, kind, -1, SQLITE_STATIC);
  sqlite3_bind_text(put_, 2, id.c_str(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(put_, 3, body.c_str(), static_cast<int>(body.size()), SQLITE_TRANSIENT);
  return step(db_, put_, std::string("store ") + kind + " " + id);
}

Result<void> SqliteLedgerStore::erase(const char* kind, const std::string& id) {
  sqlite3_bind_text(delete_, 1, kind, -1, SQLITE_STATIC);
  sqlite3_bind_text(delete_, 2, id.c_str(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
  return step(db_, delete_, std::string("delete ") + kind + " " + id);
}

Result<void> SqliteLedgerStore::applyInTransaction(const LedgerChange& change) {
  for (const PodRecord& pod : change.putPods) VRI_TRY(put("pod", pod.spec.uid, encodePod(pod)));
  for (const std::string& uid : change.deletePods) VRI_TRY(erase("pod", uid));
  for (const VmRecord& vm : change.putVms) VRI_TRY(put("vm", vm.spec.uuid, encodeVm(vm)));
  for (const std::string& uuid : change.deleteVms) VRI_TRY(erase("vm", uuid));
  for (const auto& [key, value] : change.meta) VRI_TRY(setMeta(key, value));
  return {};
}

Result<void> SqliteLedgerStore::apply(const LedgerChange& change) {
  if (change.empty()) return {};
  const size_t rows = change.putPods.size() + change.deletePods.size() + change.putVms.size() +
                      change.deleteVms.size() + change.meta.size();
  // One row commits on its own (autocommit); more go in one transaction.
  if (rows == 1) return applyInTransaction(change);
  VRI_TRY(step(db_, begin_, "begin ledger transaction"));
  Result<void> done = applyInTransaction(change);
  if (done.ok()) done = step(db_, commit_, "commit ledger transaction");
  if (done.ok()) return {};
  // A ROLLBACK that fails too leaves sqlite to roll the journal back at the next open.
  if (auto rolled = step(db_, rollback_, "roll back ledger transaction"); !rolled.ok()) {
    return std::move(done).context(rolled.error().message()).error();
  }
  return done;
}

Result<void> SqliteLedgerStore::setMeta(const std::string& key, const std::string& value) {
  sqlite3_bind_text(meta_, 1, key.c_str(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(meta_, 2, value.c_str(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return step(db_, meta_, "store meta " + key);
}

Result<void> SqliteLedgerStore::emptyCommit() {
  // The smallest transaction that still reaches the disk: one tiny row
  // rewritten through a prepared statement, as the ledger's own writes are.
  sqlite3_bind_text(meta_, 1, "commit_probe", -1, SQLITE_STATIC);
  sqlite3_bind_text(meta_, 2, "", -1, SQLITE_STATIC);
  return step(db_, meta_, "commit probe");
}

}  // namespace vri

// The ledger file's schema and how an older file is brought up to it.
//
// The version lives in the file (meta.schema_version). A newer VRI that opens
// an older file copies it aside first (<ledger>.schema-<old>.bak), then runs
// each step up to its own version in one transaction. An older VRI refuses a
// newer file and names that copy, so a downgrade never reads what it does not
// understand and the operator knows which file to restore.
#pragma once

#include <string>
#include <vector>

namespace vri {

struct SchemaStep {
  int from = 0;     // the version this step starts from; it ends at from + 1
  std::string sql;  // run inside the migration's transaction
};

struct LedgerSchema {
  int version = 1;
  std::vector<SchemaStep> steps;  // from the first version up to `version`, in order
};

// This VRI's schema: version 1 was the first.
const LedgerSchema& currentLedgerSchema();

// Where the file as it was at `version` is kept before it is migrated past it.
std::string schemaBackupPath(const std::string& ledgerPath, int version);

}  // namespace vri

#include "accounting/ledger_schema.h"

namespace vri {

const LedgerSchema& currentLedgerSchema() {
  // A step is added here with the version it leads to, and never changed after a release.
  static const LedgerSchema schema{1, {}};
  return schema;
}

std::string schemaBackupPath(const std::string& ledgerPath, int version) {
  return ledgerPath + ".schema-" + std::to_string(version) + ".bak";
}

}  // namespace vri

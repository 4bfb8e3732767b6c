#include "accounting/ledger_schema.h"

namespace vri {

const LedgerSchema& currentLedgerSchema() {
  // A step is added here with the version it leads to, and never changed after a release.
  static const LedgerSchema schema{
      2,
      {
          // 2: a pod record's container line may carry a tenth field, its hugepage limits. No table
          // changes: the step is there so that a VRI that reads only version 1 refuses the file rather
          // than keeping those containers, and the pages and CPUs they hold, out of its books.
          {1, "-- containers' hugepage limits: a field of the pod records, no table changes"},
      }};
  return schema;
}

std::string schemaBackupPath(const std::string& ledgerPath, int version) {
  return ledgerPath + ".schema-" + std::to_string(version) + ".bak";
}

}  // namespace vri

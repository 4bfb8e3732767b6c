// The ledger file's schema across package upgrades and downgrades, on real
// sqlite files: a newer schema copies the old file aside before it changes
// it, a failed step changes nothing, and an older VRI refuses a newer file
// and names the copy to go back to.
#include <gmock/gmock.h>
#include <sqlite3.h>

#include <filesystem>

#include "accounting/ledger_schema.h"
#include "accounting/sqlite_ledger_store.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

// This VRI's version, and the next.
const int kNow = currentLedgerSchema().version;
std::string version(int v) { return std::to_string(v); }

// The next schema, as a later VRI would ship it: one step from this one's version.
LedgerSchema nextSchema(const std::string& sql = "ALTER TABLE tenants ADD COLUMN node TEXT NOT NULL DEFAULT ''") {
  LedgerSchema next = currentLedgerSchema();
  next.steps.push_back({next.version, sql});
  ++next.version;
  return next;
}

PodRecord pod(const std::string& uid) {
  PodRecord record;
  record.spec.uid = uid;
  record.spec.name = "default/" + uid.substr(0, 4);
  record.spec.qos = QosClass::kBestEffort;
  return record;
}

// What a file holds, read with sqlite alone: the schema version and the tenant ids.
std::string contents(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::string out;
  sqlite3_exec(
      db, "SELECT value FROM meta WHERE key = 'schema_version' UNION ALL SELECT id FROM tenants ORDER BY 1",
      [](void* text, int, char** values, char**) {
        *static_cast<std::string*>(text) += std::string(values[0]) + ";";
        return 0;
      },
      &out, nullptr);
  sqlite3_close(db);
  return out;
}

class LedgerSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteLedgerStore::open(path_, Durability::kNormal);
    ASSERT_TRUE(store.ok()) << store.error().message();
    LedgerChange change;
    change.putPods = {pod("aaaa0000-0000-4000-8000-000000000001"), pod("bbbb0000-0000-4000-8000-000000000002")};
    ASSERT_TRUE((*store)->apply(change).ok());
  }

  testing::TempDir tmp_;
  const std::string path_ = tmp_.sub("ledger.sqlite");
  const std::string backup_ = schemaBackupPath(path_, currentLedgerSchema().version);
};

TEST_F(LedgerSchemaTest, ANewLedgerHasTheCurrentVersionAndOpensWithoutACopy) {
  EXPECT_EQ(contents(path_),
            version(kNow) + ";aaaa0000-0000-4000-8000-000000000001;bbbb0000-0000-4000-8000-000000000002;");
  auto again = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ((*again)->upgradedFrom(), 0);
  EXPECT_FALSE(std::filesystem::exists(backup_));
}

TEST_F(LedgerSchemaTest, AnUpgradeKeepsTheOldFileFirstThenMigratesKeepingEveryTenant) {
  const std::string before = contents(path_);
  {
    auto upgraded = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist, nextSchema());
    ASSERT_TRUE(upgraded.ok()) << upgraded.error().message();
    EXPECT_EQ((*upgraded)->upgradedFrom(), kNow);
    auto loaded = (*upgraded)->load();
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(loaded->pods.size(), 2u);
  }
  EXPECT_EQ(contents(path_),
            version(kNow + 1) + ";aaaa0000-0000-4000-8000-000000000001;bbbb0000-0000-4000-8000-000000000002;");
  EXPECT_EQ(contents(backup_), before);  // the file exactly as this version had it
  EXPECT_FALSE(std::filesystem::exists(backup_ + ".partial"));
  // Opened again by the same newer VRI: nothing to do, and the copy is left as it was.
  auto again = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist, nextSchema());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->upgradedFrom(), 0);
}

TEST_F(LedgerSchemaTest, TheOlderVriRefusesTheUpgradedFileAndNamesTheCopy) {
  ASSERT_TRUE(SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist, nextSchema()).ok());
  const std::string upgraded = contents(path_);
  auto older = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist);
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(older.error().message(), HasSubstr("has schema version " + version(kNow + 1)));
  EXPECT_THAT(older.error().message(), HasSubstr("reads up to version " + version(kNow)));
  EXPECT_THAT(older.error().message(), HasSubstr("move " + backup_ + " to " + path_));
  EXPECT_EQ(contents(path_), upgraded);  // refused, and untouched
  // The way back it names works: the copy opens as this VRI's ledger with every tenant.
  std::filesystem::remove(path_);
  std::filesystem::rename(backup_, path_);
  auto back = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ((*back)->load()->pods.size(), 2u);
}

TEST_F(LedgerSchemaTest, WithoutTheCopyTheRefusalSaysThereIsNoneAndHowToBeginAgain) {
  ASSERT_TRUE(SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist, nextSchema()).ok());
  std::filesystem::remove(backup_);
  auto older = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist);
  ASSERT_FALSE(older.ok());
  EXPECT_THAT(older.error().message(), HasSubstr("there is none at " + backup_));
  EXPECT_THAT(older.error().message(), HasSubstr("--init-ledger"));
}

TEST_F(LedgerSchemaTest, AFailedStepLeavesTheFileAsItWas) {
  const std::string before = contents(path_);
  auto failed = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist,
                                        nextSchema("ALTER TABLE nosuch ADD COLUMN x TEXT"));
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.error().message(),
              HasSubstr("upgrading ledger " + path_ + " from schema version " + version(kNow)));
  EXPECT_THAT(failed.error().message(), HasSubstr("no such table: nosuch"));
  EXPECT_EQ(contents(path_), before);
  auto current = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist);
  EXPECT_TRUE(current.ok());
}

TEST_F(LedgerSchemaTest, AVersionThatIsNoNumberIsADamagedFile) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '1x' WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto opened = SqliteLedgerStore::open(path_, Durability::kNormal, LedgerFile::kMustExist);
  ASSERT_FALSE(opened.ok());
  EXPECT_THAT(opened.error().message(), HasSubstr("schema version \"1x\" is not a version"));
}

// Version 2: a container's hugepage limits. A version-1 file (the first release's) is brought up to
// it with every tenant, and a container's limits then survive a reopening; a VRI that reads only
// version 1 refuses the file, so that it never keeps such a container, and its pages, out of its books.
TEST(LedgerSchemaVersionsTest, AVersionOneFileIsUpgradedAndAContainersHugepagesKept) {
  testing::TempDir tmp;
  const std::string path = tmp.sub("ledger.sqlite");
  const LedgerSchema first{1, {}};
  {
    auto store = SqliteLedgerStore::open(path, Durability::kNormal, LedgerFile::kCreateIfAbsent, first);
    ASSERT_TRUE(store.ok()) << store.error().message();
    LedgerChange change;
    change.putPods = {pod("aaaa0000-0000-4000-8000-000000000001")};
    ASSERT_TRUE((*store)->apply(change).ok());
  }
  PodRecord withPages = pod("bbbb0000-0000-4000-8000-000000000002");
  ContainerRecord app;
  app.spec.name = "app";
  app.spec.hugepageLimits = {{2ULL << 20, 8ULL << 20}, {1ULL << 30, 1ULL << 30}};
  withPages.containers["app"] = app;
  {
    auto store = SqliteLedgerStore::open(path, Durability::kNormal, LedgerFile::kMustExist);
    ASSERT_TRUE(store.ok()) << store.error().message();
    EXPECT_EQ((*store)->upgradedFrom(), 1);
    LedgerChange change;
    change.putPods = {withPages};
    ASSERT_TRUE((*store)->apply(change).ok());
  }
  {
    auto again = SqliteLedgerStore::open(path, Durability::kNormal, LedgerFile::kMustExist);
    ASSERT_TRUE(again.ok()) << again.error().message();
    auto loaded = (*again)->load();
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    ASSERT_EQ(loaded->pods.size(), 2u);
    EXPECT_EQ(loaded->pods.at("bbbb0000-0000-4000-8000-000000000002").containers.at("app").spec.hugepageLimits,
              app.spec.hugepageLimits);
  }
  auto older = SqliteLedgerStore::open(path, Durability::kNormal, LedgerFile::kMustExist, first);
  ASSERT_FALSE(older.ok());
  EXPECT_THAT(older.error().message(), HasSubstr("reads up to version 1"));
}

}  // namespace
}  // namespace vri

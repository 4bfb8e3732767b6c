// Who besides root and VRI's own user may change a file or directory VRI trusts.
#include "base/owned_path.h"

#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

// A group other than root's: as root the file is given nogroup (65534); any other user's
// files already carry that user's own group.
void giveAnotherGroup(const std::string& path) {
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(path.c_str(), static_cast<uid_t>(-1), 65534), 0);
  }
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  ASSERT_NE(st.st_gid, 0u) << "the test needs a group other than root's on " << path;
}

TEST(OwnedPathTest, AFileOnlyItsOwnerWritesIsAccepted) {
  testing::TempDir tmp;
  const std::string file = tmp.sub("vrid.conf");
  std::ofstream(file) << "log_level = info\n";
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  EXPECT_TRUE(refuseFileWritableByOthers(file, "config").ok());
  // Read by everyone is fine: only writing decides anything.
  ASSERT_EQ(::chmod(file.c_str(), 0444), 0);
  EXPECT_TRUE(refuseFileWritableByOthers(file, "config").ok());
}

TEST(OwnedPathTest, AFileEveryoneMayWriteIsRefusedWithTheModeAndTheCure) {
  testing::TempDir tmp;
  const std::string file = tmp.sub("vrid.conf");
  std::ofstream(file) << "\n";
  ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
  const auto refused = refuseFileWritableByOthers(file, "config");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(refused.error().message(), HasSubstr("config: " + file + " may be written by everyone (mode 0666)"));
  EXPECT_THAT(refused.error().message(), HasSubstr("chmod o-w"));
}

TEST(OwnedPathTest, AFileItsGroupMayWriteIsRefusedUnlessTheGroupIsRoots) {
  testing::TempDir tmp;
  const std::string file = tmp.sub("hook.conf");
  std::ofstream(file) << "\n";
  giveAnotherGroup(file);
  ASSERT_EQ(::chmod(file.c_str(), 0664), 0);
  const auto refused = refuseWritableByOthers(file, "hook config");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("may be written by group"));
  EXPECT_THAT(refused.error().message(), HasSubstr("chmod g-w"));
  if (::geteuid() == 0) {  // root's own group writing is root writing
    ASSERT_EQ(::chown(file.c_str(), static_cast<uid_t>(-1), 0), 0);
    EXPECT_TRUE(refuseWritableByOthers(file, "hook config").ok());
  }
}

TEST(OwnedPathTest, AFileInADirectoryOthersMayWriteIsRefusedEvenWithTheStickyBit) {
  testing::TempDir tmp;
  const std::string dir = tmp.sub("etc");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  const std::string file = dir + "/vrid.conf";
  std::ofstream(file) << "\n";
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  ASSERT_TRUE(refuseFileWritableByOthers(file, "config").ok());
  // Whoever may write the directory may replace the file; a sticky bit still lets them create
  // the file where none is, or a socket where one will be.
  for (mode_t mode : {mode_t{0777}, mode_t{01777}}) {
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    const auto refused = refuseFileWritableByOthers(file, "config");
    ASSERT_FALSE(refused.ok()) << std::oct << mode;
    EXPECT_THAT(refused.error().message(), HasSubstr("config's directory: " + dir + " may be written by everyone"));
  }
}

TEST(OwnedPathTest, AFileThatIsNotThereIsAnErrorOfItsOwn) {
  testing::TempDir tmp;
  const auto missing = refuseWritableByOthers(tmp.sub("absent"), "config");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(OwnedPathTest, ASecretEveryoneMayReadIsRefusedAndItsGroupMayReadIt) {
  testing::TempDir tmp;
  const std::string file = tmp.sub("metrics.token");
  std::ofstream(file) << "s3cret-s3cret-s3cret\n";
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  const auto everyone = readOwnedSecretFile(file, "metrics_token_file", 4096);
  ASSERT_FALSE(everyone.ok());
  EXPECT_EQ(everyone.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(everyone.error().message(), HasSubstr("may be read by everyone (mode 0644)"));
  EXPECT_THAT(everyone.error().message(), HasSubstr("chmod o-r"));
  // The same file is no secret to readOwnedFile, and a group that may read it is allowed.
  EXPECT_TRUE(readOwnedFile(file, "config", 4096).ok());
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  auto read = readOwnedSecretFile(file, "metrics_token_file", 4096);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(*read, "s3cret-s3cret-s3cret\n");
}

}  // namespace
}  // namespace vri

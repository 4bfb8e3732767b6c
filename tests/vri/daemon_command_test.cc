// vrid's command line: every configuration option is a flag of the same name, declared once for
// CLI11, which makes --help from the same declarations.
#include <gmock/gmock.h>

#include "vri/daemon_config.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;

TEST(DaemonCommandTest, OptionsAreFlagsInBothSpellingsAndTheLastOneGivenWins) {
  auto command = parseDaemonCommand({"--reserved-cpus=0-1", "--state-dir", "/tmp/a", "--config=/etc/x.conf",
                                     "--print-config", "--libvirt-uri=", "--state-dir=/tmp/b"});
  ASSERT_TRUE(command.ok()) << command.error().message();
  EXPECT_TRUE(command->printConfig);
  EXPECT_TRUE(command->configPathGiven);
  EXPECT_EQ(command->configPath, "/etc/x.conf");
  EXPECT_THAT(command->overrides, ::testing::UnorderedElementsAre(Pair("reserved_cpus", "0-1"), Pair("libvirt_uri", ""),
                                                                  Pair("state_dir", "/tmp/b")));
  auto config = loadDaemonConfig(*parseDaemonCommand({"--reserved-cpus=2-3"}));
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_THAT(formatConfig(*config), HasSubstr("reserved_cpus = 2-3"));
}

TEST(DaemonCommandTest, RefusesWhatIsNoFlagOfItsAndAValueLeftOut) {
  EXPECT_THAT(parseDaemonCommand({"--no-such-flag=1"}).error().message(),
              HasSubstr("unknown flag \"--no-such-flag=1\" (see --help)"));
  EXPECT_THAT(parseDaemonCommand({"stray"}).error().message(), HasSubstr("unexpected argument \"stray\""));
  EXPECT_THAT(parseDaemonCommand({"--reserved-cpus"}).error().message(), HasSubstr("--reserved-cpus needs a value"));
  EXPECT_THAT(parseDaemonCommand({"--reserved-cpus", "--print-config"}).error().message(),
              HasSubstr("--reserved-cpus needs a value"));
  EXPECT_THAT(parseDaemonCommand({"--admin-group=adm"}).error().message(), HasSubstr("admin_group is no more"));
  // A value the option does not take is refused when the configuration is loaded, naming the flag.
  auto command = parseDaemonCommand({"--reserved-cpus=3-1"});
  ASSERT_TRUE(command.ok());
  EXPECT_THAT(loadDaemonConfig(*command).error().message(), HasSubstr("flag --reserved_cpus"));
}

TEST(DaemonCommandTest, HelpNamesEveryOptionWithItsDefault) {
  auto command = parseDaemonCommand({"--help"});
  ASSERT_TRUE(command.ok());
  EXPECT_TRUE(command->help);
  const std::string usage = daemonUsage();
  for (const ConfigOption& option : configOptions()) {
    std::string flag = option.name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    EXPECT_THAT(usage, HasSubstr("--" + flag + " ")) << option.name;
  }
  EXPECT_THAT(usage, HasSubstr("(default: /sys/fs/cgroup)"));
  EXPECT_THAT(usage, HasSubstr("--init-ledger"));
}

}  // namespace
}  // namespace vri

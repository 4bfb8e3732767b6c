// A crowded node: a second vrid on a live one's sockets, state directories
// that are not VRI's, and ledgers that are missing or damaged. vrid takes every
// exclusive resource before it touches a cgroup, removes only what it created,
// never changes the mode of a directory it did not make, and never starts
// silently on a lost ledger.
#include <gmock/gmock.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "accounting/sqlite_ledger_store.h"
#include "tests/support/directory_snapshot.h"
#include "tests/vri/daemon_harness.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kUid[] = "0b1c2d3e-0000-4000-8000-0000000000c1";

mode_t modeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class VridExclusiveStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(vrid_.start());
    v1::AdmitContainerRequest r;
    r.set_pod_uid(kUid);
    r.set_qos(v1::GUARANTEED);
    r.set_container_name("app");
    r.set_container_id("c1c1");
    r.set_cpu_request_milli(2000);
    r.set_cpu_limit_milli(2000);
    grpc::ClientContext context;
    v1::ContainerAllocation allocation;
    ASSERT_TRUE(vrid_.admin->AdmitContainer(&context, r, &allocation).ok());
  }

  // A second vrid on the same cgroupfs with `config`: its error, or "" when it started.
  std::string startSecond(const DaemonConfig& config) {
    Logger log(LogLevel::kError);
    auto second = Daemon::start(config, vrid_.fs(), log);
    return second.ok() ? "" : second.error().message();
  }

  bool firstAnswers() {
    grpc::ClientContext c1, c2;
    v1::Node node;
    v1::TenantList tenants;
    return vrid_.readOnly->GetNode(&c1, {}, &node).ok() && vrid_.admin->ListTenants(&c2, {}, &tenants).ok() &&
           tenants.tenants_size() == 1;
  }

  testing::DaemonHarness vrid_;
};

TEST_F(VridExclusiveStartTest, ASecondVridOnTheLiveSocketsStopsBeforeTouchingAnyCgroup) {
  const auto cgroups = testing::snapshotFiles(vrid_.tmp().sub("fx/cgroup"));
  testing::TempDir other;
  DaemonConfig second = vrid_.config;
  second.stateDir = other.sub("state");  // its own (empty) ledger: it would adopt and rewrite everything
  EXPECT_THAT(startSecond(second), HasSubstr("another process serves on " + vrid_.config.socket));
  // Only the admin socket shared, the read-only one free: still nothing touched, and the live admin socket stays.
  second.socket = other.sub("ro.sock");
  EXPECT_THAT(startSecond(second), HasSubstr("another process serves on " + vrid_.config.adminSocket));
  EXPECT_FALSE(std::filesystem::exists(other.sub("ro.sock")));
  EXPECT_EQ(testing::snapshotFiles(vrid_.tmp().sub("fx/cgroup")), cgroups) << "the second vrid wrote cgroups";
  EXPECT_TRUE(firstAnswers());
  // The same state directory: refused too.
  EXPECT_THAT(startSecond(vrid_.config), HasSubstr("another vrid is running on the state directory"));
  EXPECT_TRUE(firstAnswers());
}

TEST_F(VridExclusiveStartTest, AFileAtASocketPathIsNeitherServedOnNorRemoved) {
  vrid_.stop();
  std::ofstream(vrid_.config.adminSocket) << "not a socket\n";
  const std::string error = startSecond(vrid_.config);
  EXPECT_THAT(error, HasSubstr("exists and is not a socket; not removing it"));
  ASSERT_TRUE(std::filesystem::is_regular_file(vrid_.config.adminSocket));
  EXPECT_FALSE(std::filesystem::exists(vrid_.config.socket)) << "the read-only socket was left behind";
  std::filesystem::remove(vrid_.config.adminSocket);
  ASSERT_TRUE(vrid_.start());
  vrid_.stop();  // a clean stop removes the sockets it bound
  EXPECT_FALSE(std::filesystem::exists(vrid_.config.socket));
  EXPECT_FALSE(std::filesystem::exists(vrid_.config.adminSocket));
}

TEST_F(VridExclusiveStartTest, AStateDirectoryThatIsNotVrisIsRefusedAndLeftAsItWas) {
  testing::TempDir other;
  DaemonConfig config = vrid_.config;
  config.socket = other.sub("ro.sock");
  config.adminSocket = other.sub("admin.sock");
  // Like /tmp: others may write to it, and it holds what is not VRI's.
  const std::string shared = other.sub("shared");
  std::filesystem::create_directories(shared);
  ::chmod(shared.c_str(), 01777);
  std::ofstream(shared + "/someone-elses") << "x";
  config.stateDir = shared;
  EXPECT_THAT(startSecond(config), HasSubstr("not a directory of VRI's own"));
  EXPECT_EQ(modeOf(shared), 01777u);
  ::chmod(shared.c_str(), 0755);
  EXPECT_THAT(startSecond(config), HasSubstr("it holds \"someone-elses\""));
  EXPECT_EQ(modeOf(shared), 0755u);
  EXPECT_FALSE(std::filesystem::exists(shared + "/vrid.lock"));
  EXPECT_FALSE(std::filesystem::exists(shared + "/ledger.sqlite"));
  // An empty directory someone made for vrid (systemd's StateDirectory=, 0755): taken as it is.
  const std::string empty = other.sub("empty");
  std::filesystem::create_directories(empty);
  ::chmod(empty.c_str(), 0755);
  config.stateDir = empty;
  vrid_.stop();
  config.socket = vrid_.config.socket;
  config.adminSocket = vrid_.config.adminSocket;
  EXPECT_EQ(startSecond(config), "");
  EXPECT_EQ(modeOf(empty), 0755u);
  // One vrid makes: 0700.
  config.stateDir = other.sub("made/state");
  EXPECT_EQ(startSecond(config), "");
  EXPECT_EQ(modeOf(config.stateDir), 0700u);
}

// A first start that stops after claiming its directory (here a file where the admin socket goes) leaves only
// vrid's lock: the next start is still a first one. Once a ledger was begun, losing it is refused as before.
TEST_F(VridExclusiveStartTest, AFirstStartThatStoppedAfterClaimingItsDirectoryIsStillAFirstStart) {
  vrid_.stop();
  testing::TempDir other;
  DaemonConfig config = vrid_.config;
  config.stateDir = other.sub("state");
  std::ofstream(config.adminSocket) << "not a socket\n";
  EXPECT_THAT(startSecond(config), HasSubstr("exists and is not a socket"));
  std::filesystem::remove(config.adminSocket);
  ASSERT_TRUE(std::filesystem::exists(config.stateDir + "/vrid.lock"));
  ASSERT_FALSE(std::filesystem::exists(config.ledgerPath()));
  EXPECT_EQ(startSecond(config), "");
  ASSERT_TRUE(std::filesystem::exists(config.ledgerPath()));
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(config.ledgerPath() + suffix);
  EXPECT_THAT(startSecond(config), HasSubstr("--init-ledger"));
}

// VRI makes kubepods below kubelet_cgroup_root when it owns everything, never the root itself: a root that does
// not exist is named at start-up, with what to do; with kubelet owning its side, it is only a warning.
TEST_F(VridExclusiveStartTest, AKubeletCgroupRootThatDoesNotExistIsNamedAtStartUp) {
  vrid_.stop();
  vrid_.config.layout.kubeletParent = *CgroupPath::parse("absent/root");
  auto started = vrid_.start();
  ASSERT_FALSE(started);
  EXPECT_THAT(std::string(started.message()), HasSubstr("kubelet_cgroup_root /absent/root does not exist in the"));
  EXPECT_THAT(std::string(started.message()), HasSubstr("create it"));
  vrid_.config.layout.ownership = Ownership::kCpusetsAndMachine;
  ASSERT_TRUE(vrid_.start());
  EXPECT_THAT(vrid_.logText(), HasSubstr("pods are placed once kubelet has made it"));
}

// With kubelet_config set, a vrid whose settings differ from kubelet's does not start, and names
// each difference; it claims nothing first, so the running vrid keeps its sockets.
TEST_F(VridExclusiveStartTest, AVridThatDisagreesWithKubeletsConfigurationDoesNotStart) {
  DaemonConfig config = vrid_.config;
  config.stateDir = vrid_.tmp().sub("second-state");
  config.kubeletConfig = vrid_.tmp().sub("kubelet.yaml");
  std::ofstream(config.kubeletConfig) << "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                         "kind: KubeletConfiguration\n"
                                         "systemReserved: {cpu: 250m}\n"
                                         "cpuManagerPolicy: static\n";
  const std::string refused = startSecond(config);
  EXPECT_THAT(refused, HasSubstr("kubelet_config " + config.kubeletConfig + " disagrees"));
  EXPECT_THAT(refused, HasSubstr("kubelet's systemReserved.cpu is 250m, vrid's system_reserved_cpu is 1"));
  EXPECT_THAT(refused, HasSubstr("kubelet's cpuManagerPolicy is \"static\""));
  // kubelet's own CPU manager holds the node: the refusal names the takeover's steps, in order.
  EXPECT_THAT(refused,
              HasSubstr("To take the node over with its pods running: stop kubelet; in " + config.kubeletConfig +
                        " set cpuManagerPolicy: none and memoryManagerPolicy: None; "
                        "remove " +
                        config.kubeletRootDir + "/cpu_manager_state and " + config.kubeletRootDir +
                        "/memory_manager_state; with memoryManagerPolicy Static before, set pin_guaranteed_memory = "
                        "true in vrid's configuration, so that VRI binds Guaranteed pods' memory as kubelet did; "
                        "start vrid"));
  EXPECT_FALSE(std::filesystem::exists(config.stateDir));
  EXPECT_TRUE(firstAnswers());
  // Agreeing, it gets as far as the sockets the first one holds.
  std::ofstream(config.kubeletConfig, std::ios::trunc) << "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                                          "kind: KubeletConfiguration\n"
                                                          "systemReserved: {cpu: \"1\"}\n";
  EXPECT_THAT(startSecond(config), Not(HasSubstr("kubelet_config")));
  EXPECT_TRUE(firstAnswers());
}

TEST_F(VridExclusiveStartTest, ALostOrDamagedLedgerIsRefusedNamingTheFileUntilTheOperatorSaysInitLedger) {
  vrid_.stop();
  const std::string ledger = vrid_.config.ledgerPath();
  const auto refusedFor = [&](const std::string& why) {
    auto started = vrid_.start();
    EXPECT_FALSE(started) << why;
    EXPECT_THAT(std::string(started.message()), HasSubstr("ledger " + ledger)) << why;
    EXPECT_THAT(std::string(started.message()), HasSubstr("--init-ledger")) << why;
  };
  std::filesystem::copy_file(ledger, ledger + ".good");
  std::filesystem::remove(ledger);
  refusedFor("deleted");
  std::ofstream(ledger, std::ios::trunc);
  refusedFor("0 bytes");
  {
    auto other = SqliteLedgerStore::open(vrid_.tmp().sub("other.db"), Durability::kNormal);
    ASSERT_TRUE(other.ok());
  }
  std::filesystem::remove(ledger);
  {
    // A sqlite file, but not a ledger: its tables are missing.
    std::ofstream out(ledger, std::ios::binary);
    out << "SQLite format 3";
    out << std::string(4096 - 15, '\0');
  }
  refusedFor("no tables");
  std::ofstream(ledger, std::ios::trunc) << std::string(8192, 'x');
  refusedFor("garbage");
  EXPECT_EQ(std::filesystem::file_size(ledger), 8192u) << "a refused start changed the ledger file";

  // The good ledger back: the pod is there again.
  std::filesystem::copy_file(ledger + ".good", ledger, std::filesystem::copy_options::overwrite_existing);
  ASSERT_TRUE(vrid_.start());
  EXPECT_TRUE(firstAnswers());
  vrid_.stop();

  // --init-ledger on a damaged file: set aside, a new ledger begun, the running pod adopted from its cgroup.
  std::ofstream(ledger, std::ios::trunc) << std::string(8192, 'x');
  vrid_.config.initLedger = true;
  ASSERT_TRUE(vrid_.start());
  bool kept_aside = false;
  for (const auto& entry : std::filesystem::directory_iterator(vrid_.config.stateDir))
    kept_aside = kept_aside || entry.path().filename().string().starts_with("ledger.sqlite.damaged-");
  EXPECT_TRUE(kept_aside);
  grpc::ClientContext context;
  v1::Tenant tenant;
  v1::GetTenantRequest request;
  request.set_pod_uid(kUid);
  EXPECT_TRUE(vrid_.readOnly->GetTenant(&context, request, &tenant).ok());
}

// --init-ledger sets aside only a ledger that is lost or damaged: a sound one that another process
// holds a lock on is refused as it is, and comes back whole once the lock is gone. Two runs in one
// second keep two copies.
TEST_F(VridExclusiveStartTest, InitLedgerKeepsASoundLedgerThatIsOnlyBusyAndEveryDamagedCopy) {
  vrid_.stop();
  const std::string ledger = vrid_.config.ledgerPath();
  const auto damagedCopies = [&] {
    int copies = 0;
    for (const auto& entry : std::filesystem::directory_iterator(vrid_.config.stateDir))
      copies += entry.path().filename().string().starts_with("ledger.sqlite.damaged-") &&
                !entry.path().filename().string().ends_with("-wal");
    return copies;
  };
  vrid_.config.initLedger = true;
  {
    sqlite3* holder = nullptr;
    ASSERT_EQ(sqlite3_open(ledger.c_str(), &holder), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(holder, "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE;", nullptr, nullptr, nullptr),
              SQLITE_OK);
    auto started = vrid_.start();
    EXPECT_FALSE(started);
    EXPECT_THAT(std::string(started.message()), HasSubstr("in use by another process"));
    EXPECT_THAT(std::string(started.message()), HasSubstr("sets aside only a ledger that is lost or damaged"));
    sqlite3_exec(holder, "ROLLBACK;", nullptr, nullptr, nullptr);
    sqlite3_close(holder);
  }
  EXPECT_EQ(damagedCopies(), 0);
  ASSERT_TRUE(vrid_.start());
  EXPECT_TRUE(firstAnswers());
  grpc::ClientContext context;
  v1::Tenant tenant;
  v1::GetTenantRequest request;
  request.set_pod_uid(kUid);
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&context, request, &tenant).ok());
  EXPECT_EQ(tenant.pod().containers(0).resources().name(), "app") << "the ledger's own record, not an adoption";
  vrid_.stop();

  for (int run = 0; run < 2; ++run) {
    for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(ledger + suffix);
    std::ofstream(ledger, std::ios::trunc) << std::string(8192, 'x');
    ASSERT_TRUE(vrid_.start());
    vrid_.stop();
  }
  EXPECT_EQ(damagedCopies(), 2);
}

// A checkpoint of kubelet's CPU or memory manager that names a policy other than none: kubelet's
// manager holds the node (or kubelet, set to none, would refuse to start on it), so vrid does not
// start either, and says what to do. kubelet's own file for policy none does not stop it.
TEST_F(VridExclusiveStartTest, AKubeletCheckpointOfTheStaticPolicyStopsVridWithTheNextStep) {
  DaemonConfig config = vrid_.config;
  config.stateDir = vrid_.tmp().sub("second-state");
  config.kubeletRootDir = vrid_.tmp().sub("kubelet");
  std::filesystem::create_directories(config.kubeletRootDir);
  const std::string cpuState = config.kubeletRootDir + "/cpu_manager_state";
  std::ofstream(cpuState) << R"({"policyName":"static","defaultCpuSet":"0-3","checksum":0})";
  std::string refused = startSecond(config);
  EXPECT_THAT(refused, HasSubstr("kubelet's CPU manager holds this node: its checkpoint " + cpuState +
                                 " says policy \"static\""));
  EXPECT_THAT(refused, HasSubstr("remove " + cpuState));
  EXPECT_FALSE(std::filesystem::exists(config.stateDir));

  std::ofstream(cpuState, std::ios::trunc) << R"({"policyName":"none","defaultCpuSet":"","checksum":0})";
  const std::string memoryState = config.kubeletRootDir + "/memory_manager_state";
  std::ofstream(memoryState) << R"({"policyName":"Static","machineState":{},"checksum":0})";
  refused = startSecond(config);
  EXPECT_THAT(refused, HasSubstr("kubelet's memory manager holds this node: its checkpoint " + memoryState +
                                 " says policy \"Static\""));
  // Not JSON: named, not guessed at.
  std::ofstream(memoryState, std::ios::trunc) << "{policyName";
  EXPECT_THAT(startSecond(config), HasSubstr(memoryState + ": not JSON"));
  // kubelet's files for policy none: it gets as far as the sockets the first one holds.
  std::ofstream(memoryState, std::ios::trunc) << R"({"policyName":"None","machineState":{},"checksum":0})";
  EXPECT_THAT(startSecond(config), HasSubstr("another process serves on"));
  EXPECT_TRUE(firstAnswers());
}

}  // namespace
}  // namespace vri

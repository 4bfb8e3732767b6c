// The vrid binary as a process: its configuration surface, reflection,
// vrictl against it, SIGHUP, SIGTERM during a burst, stale sockets.
#include <gmock/gmock.h>
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <atomic>
#include <mutex>
#include <set>

#include "accounting/sqlite_ledger_store.h"
#include "base/version.h"
#include "proto/vri.grpc.pb.h"
#include "tests/proto/reflection_client.grpc.pb.h"
#include "tests/support/eventually.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::readFile;
using testing::runCommand;
using testing::VridProcess;

TEST(ProgramVersionTest, EveryProgramAnswersVersionWithThePackagesVersion) {
  testing::TempDir tmp;
  std::string programs = VRI_PROGRAMS;
  int seen = 0;
  for (size_t start = 0; start < programs.size();) {
    size_t end = programs.find(',', start);
    if (end == std::string::npos) end = programs.size();
    const std::string entry = programs.substr(start, end - start);
    start = end + 1;
    const std::string name = entry.substr(0, entry.find('=')), path = entry.substr(entry.find('=') + 1);
    std::string out;
    EXPECT_EQ(runCommand({path, "--version"}, &out, tmp.sub("out")), 0) << name << ": " << out;
    EXPECT_EQ(out, name + " " + std::string(packageVersion()) + "\n");
    ++seen;
  }
  EXPECT_EQ(seen, 6);
  EXPECT_FALSE(packageVersion().empty());
}

// A package version as a regular expression that matches only itself ("0.1.0-1+git3.abc").
std::string regexQuote(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view(".+*?()[]{}|^$\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::unique_ptr<v1::Vri::Stub> stub(const std::string& socket) {
  return v1::Vri::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
}

std::string podUid(int n) {
  char uid[40];
  std::snprintf(uid, sizeof uid, "5e000000-0000-4000-8000-%012d", n);
  return uid;
}

v1::AdmitContainerRequest sharedContainer(int n) {
  v1::AdmitContainerRequest r;
  r.set_pod_uid(podUid(n));
  r.set_qos(v1::BURSTABLE);
  r.set_container_name("app");
  r.set_cpu_request_milli(10);
  return r;
}

TEST(VridProcessTest, DefaultConfigFileDocumentsEveryOptionWithItsDefault) {
  testing::TempDir tmp;
  std::ofstream(tmp.sub("empty.conf")) << "";
  std::string defaults;
  ASSERT_EQ(runCommand({VRID_BINARY, "--config=" + tmp.sub("empty.conf"), "--print-config"}, &defaults, tmp.sub("out")),
            0)
      << defaults;
  const std::string documented = readFile(std::string(VRI_SOURCE_DIR) + "/deploy/vrid.conf");
  int options = 0;
  std::istringstream lines(defaults);
  for (std::string line; std::getline(lines, line);) {
    ++options;
    EXPECT_THAT(documented, HasSubstr("\n# " + line + "\n")) << "deploy/vrid.conf does not document: " << line;
  }
  EXPECT_GT(options, 30);
  // And the file as shipped is accepted.
  std::string out;
  EXPECT_EQ(runCommand({VRID_BINARY, "--config=" + std::string(VRI_SOURCE_DIR) + "/deploy/vrid.conf", "--print-config"},
                       &out, tmp.sub("out")),
            0)
      << out;
  EXPECT_EQ(out, defaults);
}

TEST(VridProcessTest, BadConfigurationIsRefusedWithFileAndLine) {
  testing::TempDir tmp;
  std::ofstream(tmp.sub("bad.conf")) << "# comment\nreserved_cpus = 3-1\n";
  std::string out;
  // 78 (EX_CONFIG): what only the operator can mend, which vrid.service does not restart.
  EXPECT_EQ(runCommand({VRID_BINARY, "--config=" + tmp.sub("bad.conf"), "--print-config"}, &out, tmp.sub("out")), 78);
  EXPECT_THAT(out, HasSubstr("bad.conf:2: reserved_cpus"));
  EXPECT_THAT(out, HasSubstr("3-1"));
  std::ofstream(tmp.sub("unknown.conf")) << "reserverd_cpus = 1\n";
  EXPECT_EQ(runCommand({VRID_BINARY, "--config=" + tmp.sub("unknown.conf")}, &out, tmp.sub("out")), 78);
  EXPECT_THAT(out, HasSubstr("unknown option \"reserverd_cpus\""));
  EXPECT_EQ(runCommand({VRID_BINARY, "--no-such-flag=1"}, &out, tmp.sub("out")), 1);
  EXPECT_THAT(out, HasSubstr("unknown flag"));
  EXPECT_EQ(runCommand({VRID_BINARY, "--config=" + tmp.sub("absent.conf")}, &out, tmp.sub("out")), 78);
}

// kubelet's static CPU manager holds the node: refused with the steps, as a configuration is (78).
TEST(VridProcessTest, AKubeletWhoseCpuManagerHoldsTheNodeIsRefusedWithTheConfigurationsStatus) {
  testing::TempDir tmp;
  ASSERT_EQ(::mkdir(tmp.sub("kubelet").c_str(), 0755), 0);
  std::ofstream(tmp.sub("kubelet/cpu_manager_state"))
      << R"({"policyName":"static","defaultCpuSet":"0-7","checksum":14413152})";
  std::ofstream(tmp.sub("vrid.conf")) << "kubelet_root_dir = " << tmp.sub("kubelet") << "\n";
  std::string out;
  EXPECT_EQ(runCommand({VRID_BINARY, "--config=" + tmp.sub("vrid.conf"), "--state-dir=" + tmp.sub("state")}, &out,
                       tmp.sub("out")),
            78);
  EXPECT_THAT(out, HasSubstr("kubelet's CPU manager holds this node"));
  EXPECT_THAT(out, HasSubstr("To take the node over"));
  EXPECT_NE(::access(tmp.sub("state").c_str(), F_OK), 0) << "the state directory was made";
}

// Whoever may write vrid's configuration or its sockets' directory could move placement: vrid refuses
// to start on them, before it claims, creates or writes anything.
TEST(VridProcessTest, AConfigOrSocketDirectoryOthersMayWriteIsRefusedBeforeAnythingIsClaimed) {
  testing::TempDir tmp;
  const auto refusedAtStart = [&](const std::string& name, std::vector<std::string> extra, const std::string& why) {
    VridProcess vrid(tmp, name, std::move(extra));
    EXPECT_FALSE(vrid.start());
    EXPECT_THAT(vrid.log(), HasSubstr(why)) << name;
    EXPECT_NE(::access(tmp.sub("state").c_str(), F_OK), 0) << name << ": the state directory was made";
  };
  std::ofstream(tmp.sub("vrid.conf")) << "log_level = info\n";
  ASSERT_EQ(::chmod(tmp.sub("vrid.conf").c_str(), 0666), 0);
  refusedAtStart("open-config", {}, "config: " + tmp.sub("vrid.conf") + " may be written by everyone (mode 0666)");
  ASSERT_EQ(::chmod(tmp.sub("vrid.conf").c_str(), 0644), 0);

  ASSERT_EQ(::mkdir(tmp.sub("run").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(tmp.sub("run").c_str(), 01777), 0);  // as /tmp is
  refusedAtStart("open-run", {},
                 "the directory of " + tmp.sub("run/vri.sock") + ": " + tmp.sub("run") + " may be written by everyone");
  ASSERT_EQ(::chmod(tmp.sub("run").c_str(), 0755), 0);

  std::ofstream(tmp.sub("vrid.conf")) << "admin_group = operators\n";
  refusedAtStart("admin-group", {}, "admin_group is no more: the admin socket is root's alone (mode 0600)");
  std::ofstream(tmp.sub("vrid.conf")) << "# empty\n";
  refusedAtStart("no-group", {"--socket-group=vri-no-such-group"}, "socket_group: no group named");
}

// The read-only socket is root's unless a group is named for it; the admin socket always is.
TEST(VridProcessTest, TheSocketsAreTheirOwnersAloneUnlessTheReadOnlyOneIsGivenAGroup) {
  testing::TempDir tmp;
  struct stat st {};
  {
    VridProcess vrid(tmp);
    ASSERT_TRUE(vrid.start());
    ASSERT_EQ(::stat(vrid.socket().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(vrid.adminSocket().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(vrid.stop(), 0);
  }
  const struct group* own = ::getgrgid(::getegid());
  ASSERT_NE(own, nullptr) << "the test's own group has no name";
  VridProcess vrid(tmp, "grouped", {"--socket-group=" + std::string(own->gr_name)});
  ASSERT_TRUE(vrid.start());
  ASSERT_EQ(::stat(vrid.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, ::getegid());
  ASSERT_EQ(::stat(vrid.adminSocket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(vrid.stop(), 0);
}

// A peer gone mid-write (libvirtd stopping under libvirt's client, which writes with write(2)) raises
// SIGPIPE: vrid takes it as the failed write it is, however it was started.
TEST(VridProcessTest, SigpipeIsAFailedWriteNotTheEndOfVrid) {
  testing::TempDir tmp;
  struct sigaction was {};
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &default_action, &was);  // vrid inherits the default, as from a shell
  VridProcess vrid(tmp);
  const ::testing::AssertionResult started = vrid.start();
  ::sigaction(SIGPIPE, &was, nullptr);
  ASSERT_TRUE(started);
  ASSERT_EQ(::kill(vrid.pid(), SIGPIPE), 0);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::Node node;
  EXPECT_TRUE(stub(vrid.socket())->GetNode(&context, {}, &node).ok()) << "vrid ended on SIGPIPE: " << vrid.log();
  // SIGPIPE is delivered before the SIGTERM sent after it: an exit code of 0 says vrid outlived it.
  EXPECT_EQ(vrid.stop(), 0) << "vrid ended on SIGPIPE: " << vrid.log();
}

TEST(VridProcessTest, OffersReflectionAndVrictlReadsIt) {
  testing::TempDir tmp;
  VridProcess vrid(tmp);
  ASSERT_TRUE(vrid.start());

  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(
      grpc::CreateChannel("unix:" + vrid.socket(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = reflection->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::set<std::string> names;
  for (const auto& service : response.list_services_response().service()) names.insert(service.name());
  EXPECT_TRUE(names.count("vri.v1.Vri"));
  EXPECT_TRUE(names.count("grpc.health.v1.Health"));
  EXPECT_TRUE(stream->Finish().ok());
  stream.reset();
  reflection.reset();  // an open connection would hold vrid's shutdown for its grace period

  grpc::ClientContext admit_context;
  v1::ContainerAllocation placed;
  ASSERT_TRUE(stub(vrid.adminSocket())->AdmitContainer(&admit_context, sharedContainer(7), &placed).ok());

  std::string out;
  ASSERT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "nodeinfo"}, &out, tmp.sub("out")), 0) << out;
  EXPECT_THAT(out, HasSubstr("CPUs online:"));
  EXPECT_THAT(out, HasSubstr("8 (0-7)"));
  // vrid's version; vrictl's own is not recorded from the read-only socket, where anyone may claim it.
  EXPECT_THAT(out, ::testing::ContainsRegex("vrid version: +" + regexQuote(std::string(packageVersion())) + "\n"));
  EXPECT_THAT(out, Not(HasSubstr("  vrictl:")));
  // On the admin socket it is, learned from this very call's user agent.
  ASSERT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.adminSocket(), "nodeinfo"}, &out, tmp.sub("out")), 0) << out;
  EXPECT_THAT(out,
              ::testing::ContainsRegex("  vrictl: +" + regexQuote(std::string(packageVersion())) + " \\(last call"));
  ASSERT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "pool"}, &out, tmp.sub("out")), 0) << out;
  EXPECT_THAT(out, HasSubstr("Shared:"));
  EXPECT_THAT(out, HasSubstr("(8 CPUs)"));  // every cpuset with its count: "0" alone reads as "none"
  ASSERT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "capacity"}, &out, tmp.sub("out")), 0) << out;
  EXPECT_THAT(out, ::testing::ContainsRegex("CPUs +8 +1 +7 "));  // capacity, reserved, allocatable
  ASSERT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "list", "--pods", "--json"}, &out, tmp.sub("out")),
            0);
  EXPECT_THAT(out, HasSubstr("\"uid\": \"" + podUid(7) + "\""));
  ASSERT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "podinfo", podUid(7)}, &out, tmp.sub("out")), 0);
  EXPECT_THAT(out, HasSubstr("Container app"));
  EXPECT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "dominfo", "nosuch"}, &out, tmp.sub("out")), 1);
  EXPECT_THAT(out, HasSubstr("no VM with UUID or name nosuch"));
  EXPECT_EQ(vrid.stop(), 0);
  EXPECT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "nodeinfo"}, &out, tmp.sub("out")), 1);
  EXPECT_THAT(out, ::testing::StartsWith("vrictl: cannot reach vrid at unix:" + vrid.socket()));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
}

// docs/operating.md, "Changing the placement policy while vrid runs", as written: the file edited,
// `vrictl config diff`, `config apply --dry-run`, `config apply`; SIGHUP for `systemctl reload vrid`; and a
// vrid that starts with an edited file it has not applied keeps the ledger's policy and says so.
TEST(VridProcessTest, TheLiveChangeProcedureRunsAsOperatingMdWritesIt) {
  testing::TempDir tmp;
  VridProcess vrid(tmp);
  ASSERT_TRUE(vrid.start());
  v1::AdmitContainerRequest guaranteed = sharedContainer(8);
  guaranteed.set_pod_name("default/web");
  guaranteed.set_qos(v1::GUARANTEED);
  guaranteed.set_cpu_request_milli(2000);
  guaranteed.set_cpu_limit_milli(2000);
  guaranteed.set_memory_limit_bytes(64 << 20);
  grpc::ClientContext c1;
  v1::ContainerAllocation placed;
  ASSERT_TRUE(stub(vrid.adminSocket())->AdmitContainer(&c1, guaranteed, &placed).ok());
  const CpuSet exclusive = *CpuSet::parse(placed.cpuset_cpus());
  grpc::ClientContext c2;
  v1::Node node;
  ASSERT_TRUE(stub(vrid.socket())->GetNode(&c2, {}, &node).ok());
  const CpuSet reservedBefore = *CpuSet::parse(node.reserved_cpus());
  const CpuSet reserved = reservedBefore | exclusive;
  const auto vrictl = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), {VRICTL_BINARY, "--socket", vrid.adminSocket()});
    return runCommand(args, out, tmp.sub("out"));
  };
  const auto exclusiveNow = [&] {
    grpc::ClientContext context;
    v1::GetTenantRequest get;
    get.set_pod_uid(podUid(8));
    v1::Tenant tenant;
    const grpc::Status got = stub(vrid.socket())->GetTenant(&context, get, &tenant);
    EXPECT_TRUE(got.ok()) << got.error_message();
    return tenant.pod().containers_size() == 1 ? tenant.pod().containers(0).exclusive_cpus() : std::string("none");
  };

  // 1. Edit vrid's file. 2. See what it would do.
  std::ofstream(tmp.sub("vrid.conf")) << "reserved_cpus = " << reserved.format() << "\n";
  std::string out;
  ASSERT_EQ(vrictl({"config", "diff"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("reserved_cpus: (unset) -> " + reserved.format() + " (apply)"));
  EXPECT_THAT(out, HasSubstr("moves: default/web app: CPUs " + exclusive.format() + " -> "));
  EXPECT_THAT(out, HasSubstr("Nothing was changed."));
  // 4. Apply: the dry run, then the change.
  ASSERT_EQ(vrictl({"config", "apply", "--dry-run"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("Nothing was changed."));
  EXPECT_EQ(exclusiveNow(), exclusive.format());
  ASSERT_EQ(vrictl({"config", "apply"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("moved: default/web app: CPUs " + exclusive.format() + " -> "));
  EXPECT_THAT(out, HasSubstr("Applied: the placement policy"));
  const CpuSet moved = *CpuSet::parse(exclusiveNow());
  EXPECT_FALSE(moved.intersects(reserved));
  ASSERT_EQ(vrictl({"config", "diff"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("nothing would be changed"));

  // A vrid restarted on a file it has not applied runs the ledger's policy and says what waits.
  ASSERT_EQ(vrid.stop(), 0);
  std::ofstream(tmp.sub("vrid.conf")) << "# reserved_cpus as before\n";
  ASSERT_TRUE(vrid.start());
  EXPECT_THAT(vrid.log(), HasSubstr("placement policy: reserved_cpus is \"" + reserved.format() +
                                    "\" in the ledger and \"\" in the configuration file"));
  // (This vrid's start-up released the pod: it runs under no kubepods, so its cgroups are gone.)
  ASSERT_EQ(vrictl({"config", "diff"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("reserved_cpus: " + reserved.format() + " -> (unset) (apply)"));
  ASSERT_EQ(vrictl({"events", "--recent", "20"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("POLICY_PENDING"));

  // systemctl reload vrid: SIGHUP takes the same way.
  const size_t logged = vrid.log().size();
  ::kill(vrid.pid(), SIGHUP);
  EXPECT_TRUE(
      testing::eventually([&] { return vrid.log().find("policy change applied", logged) != std::string::npos; }));
  EXPECT_THAT(vrid.log().substr(logged), HasSubstr("policy change applied: 0 moved"));
  ASSERT_EQ(vrictl({"config", "diff"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("nothing would be changed"));
  // A channel of its own subchannels: one from gRPC's global pool may still be the stopped vrid's.
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  grpc::ClientContext c3;
  const grpc::Status got = v1::Vri::NewStub(grpc::CreateCustomChannel("unix:" + vrid.socket(),
                                                                      grpc::InsecureChannelCredentials(), arguments))
                               ->GetNode(&c3, {}, &node);
  ASSERT_TRUE(got.ok()) << got.error_message();
  EXPECT_EQ(node.reserved_cpus(), reservedBefore.format());
  EXPECT_EQ(vrid.stop(), 0);
}

TEST(VridProcessTest, SighupReloadsTheLogLevelAppliesThePolicyAndNamesWhatNeedsARestart) {
  testing::TempDir tmp;
  std::ofstream(tmp.sub("vrid.conf")) << "log_level = info\n";
  VridProcess vrid(tmp);
  ASSERT_TRUE(vrid.start());
  std::ofstream(tmp.sub("vrid.conf")) << "log_level = debug\nstrict_cpu_reservation = true\nusage_history = 30\n";
  ::kill(vrid.pid(), SIGHUP);
  EXPECT_TRUE(testing::eventually([&] { return vrid.log().find("next start") != std::string::npos; }));
  EXPECT_THAT(vrid.log(), HasSubstr("reload: log_level = debug"));
  EXPECT_THAT(vrid.log(), HasSubstr("usage_history changed in the configuration; it takes effect at the next start"));
  // The placement policy (strict_cpu_reservation) as `vrictl config apply` applies it.
  EXPECT_THAT(vrid.log(), HasSubstr("policy change applied: 0 moved, 0 kept"));
  std::ofstream(tmp.sub("vrid.conf")) << "log_level = loud\n";
  ::kill(vrid.pid(), SIGHUP);
  EXPECT_TRUE(testing::eventually([&] { return vrid.log().find("reload refused") != std::string::npos; }));
  EXPECT_THAT(vrid.log(), HasSubstr("reload refused, keeping the running configuration"));
  EXPECT_EQ(vrid.stop(), 0);
}

TEST(VridProcessTest, SigtermDuringABurstLosesNoAcknowledgedDecision) {
  testing::TempDir tmp;
  VridProcess vrid(tmp);
  ASSERT_TRUE(vrid.start());
  std::mutex mutex;
  std::set<std::string> acknowledged;
  std::atomic<int> next{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      auto client = stub(vrid.adminSocket());
      for (;;) {
        const int n = next++;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        v1::ContainerAllocation placed;
        if (!client->AdmitContainer(&context, sharedContainer(n), &placed).ok()) return;  // vrid is gone
        std::lock_guard lock(mutex);
        acknowledged.insert(podUid(n));
      }
    });
  }
  // SIGTERM in the middle of the burst, once some decisions were acknowledged.
  ASSERT_TRUE(testing::eventually([&] {
    std::lock_guard lock(mutex);
    return acknowledged.size() > 20;
  }));
  EXPECT_EQ(vrid.stop(SIGTERM), 0);
  for (auto& client : clients) client.join();
  EXPECT_GT(acknowledged.size(), 20u);
  EXPECT_THAT(vrid.log(), HasSubstr("stopped"));

  auto store = SqliteLedgerStore::open(tmp.sub("state/ledger.sqlite"), Durability::kNormal);
  ASSERT_TRUE(store.ok()) << store.error().message();
  auto stored = (*store)->load();
  ASSERT_TRUE(stored.ok());
  for (const std::string& uid : acknowledged) EXPECT_TRUE(stored->pods.count(uid)) << uid << " was acknowledged";
}

TEST(VridProcessTest, SigtermWithIdleConnectionsAndOpenWatchesExitsAtOnce) {
  testing::TempDir tmp;
  VridProcess vrid(tmp);
  ASSERT_TRUE(vrid.start());
  // An idle connection on each socket, and a Watch stream open on the read-only one.
  auto idle = stub(vrid.adminSocket());
  grpc::ClientContext node_context;
  v1::Node node;
  ASSERT_TRUE(idle->GetNode(&node_context, {}, &node).ok());
  auto watcher = stub(vrid.socket());
  grpc::ClientContext watch_context;
  auto stream = watcher->Watch(&watch_context, {});
  std::atomic<bool> ended{false};
  std::thread reader([&] {
    v1::Event event;
    while (stream->Read(&event)) {
    }
    ended = true;
  });
  grpc::ClientContext ping_context;
  ASSERT_TRUE(watcher->GetNode(&ping_context, {}, &node).ok());  // the Watch is being served by now
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(vrid.stop(SIGTERM), 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.5) << "no call was in flight; the 5 s grace is for calls that are\n" << vrid.log();
  reader.join();
  EXPECT_TRUE(ended);
}

TEST(VridProcessTest, ReplacesAStaleSocketButNeitherALiveOneNorALockedLedger) {
  testing::TempDir tmp;
  VridProcess first(tmp);
  ASSERT_TRUE(first.start());
  VridProcess second(tmp, "second");
  EXPECT_FALSE(second.start());
  EXPECT_THAT(second.log(), HasSubstr("another vrid is running on the state directory"));
  testing::TempDir other_state;
  VridProcess third_party(tmp, "third-party", {"--state-dir=" + other_state.sub("state")});
  EXPECT_FALSE(third_party.start());
  EXPECT_THAT(third_party.log(), HasSubstr("another process serves on " + first.socket()));
  EXPECT_EQ(first.stop(SIGKILL), 128 + SIGKILL);  // leaves both socket files behind
  VridProcess third(tmp, "third");
  ASSERT_TRUE(third.start());
  EXPECT_EQ(third.stop(), 0);
}

}  // namespace
}  // namespace vri

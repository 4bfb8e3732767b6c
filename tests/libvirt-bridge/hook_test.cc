// vri-hook against a whole in-process vrid on real unix sockets, run the way
// libvirt runs it (argv, stdin, exit code, stderr): every hook operation,
// refusals, and a vrid that is gone, hung, or not on the other end at all.
#include "libvirt-bridge/hook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/hook_socket_client.h"
#include "libvirt-bridge/hook_wire.h"
#include "proto/hook_call.pb.h"
#include "tests/libvirt-bridge/hook_harness.h"
#include "tests/support/child_process.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using testing::domainXml;
using ::testing::HasSubstr;
using testing::HookTest;
using testing::kOtherUuid;
using testing::kUuid;
using ::testing::StartsWith;

TEST_F(HookTest, RestoreThenPrepareAdmitsOnceStartedPlacesStopReleases) {
  const std::string xml = domainXml("web", kUuid, 2, "dedicated");
  // restore begin: admitted, and the XML comes back with this host's pins, marked as VRI's.
  HookOutcome restored = hook("web", "restore", "begin", xml);
  ASSERT_EQ(restored.exitCode, 0) << restored.err;
  auto rewritten = parseDomainXml(restored.out);
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message() << "\n" << restored.out;
  EXPECT_TRUE(rewritten->pinsAreVris());
  const v1::VmAllocation allocation = vm(kUuid).allocation();
  ASSERT_EQ(allocation.vcpu_cpus_size(), 2);
  EXPECT_EQ(rewritten->cputune.vcpupins.at(0).format(), std::to_string(allocation.vcpu_cpus(0)));
  EXPECT_EQ(rewritten->cputune.vcpupins.at(1).format(), std::to_string(allocation.vcpu_cpus(1)));

  // prepare begin with the rewritten XML (what libvirt does next): the same VM, admitted once.
  HookOutcome prepared = hook("web", "prepare", "begin", restored.out);
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  EXPECT_TRUE(prepared.out.empty());
  EXPECT_EQ(vmCount(), 1);
  EXPECT_EQ(vm(kUuid).allocation().vcpu_cpus(0), allocation.vcpu_cpus(0));

  // started begin: vrid finds the cgroups through QEMU's pid and writes the pins.
  vrid_.fakeQemu("machine/qemu-7-web.libvirt-qemu", 5151, kUuid, 2);
  writePidFile("web", 5151);
  HookOutcome started = hook("web", "started", "begin", restored.out);
  ASSERT_EQ(started.exitCode, 0) << started.err;
  EXPECT_EQ(cpus("machine/qemu-7-web.libvirt-qemu/vcpu0"), std::to_string(allocation.vcpu_cpus(0)));
  EXPECT_EQ(cpus("machine/qemu-7-web.libvirt-qemu/vcpu1"), std::to_string(allocation.vcpu_cpus(1)));
  EXPECT_EQ(vm(kUuid).scope(), "machine/qemu-7-web.libvirt-qemu");

  // stopped end releases; release end finds nothing left and is still fine.
  EXPECT_EQ(hook("web", "stopped", "end", xml).exitCode, 0);
  EXPECT_EQ(vmCount(), 0);
  HookOutcome released = hook("web", "release", "end", xml);
  EXPECT_EQ(released.exitCode, 0);
  EXPECT_TRUE(released.err.empty()) << released.err;
}

TEST_F(HookTest, RefusalIsOneLineOnStderrAndChangesNothing) {
  ASSERT_EQ(hook("big", "prepare", "begin", domainXml("big", kUuid, 7, "dedicated")).exitCode, 0);
  const std::string shared_before = vm(kUuid).allocation().shared_cpus();
  HookOutcome refused = hook("second", "prepare", "begin", domainXml("second", kOtherUuid, 2, "dedicated"));
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_THAT(refused.err, StartsWith("vri: "));
  EXPECT_THAT(refused.err, HasSubstr("VM second"));
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_EQ(vmCount(), 1);

  // A VM whose own <vcpupin> names a CPU another VM holds exclusively.
  const int taken = vm(kUuid).allocation().vcpu_cpus(0);
  const std::string pinned = domainXml("pinned", kOtherUuid, 1, "",
                                       "<cputune><vcpupin vcpu='0' cpuset='" + std::to_string(taken) + "'/></cputune>");
  refused = hook("pinned", "prepare", "begin", pinned);
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_THAT(refused.err, HasSubstr("<vcpupin> names CPUs " + std::to_string(taken)));
  EXPECT_EQ(vmCount(), 1);
  EXPECT_EQ(vm(kUuid).allocation().shared_cpus(), shared_before);
}

TEST_F(HookTest, UserPinsAreHonouredAndPrintedBackUnchanged) {
  const std::string pinned = domainXml("pinned", kUuid, 2, "",
                                       "<cputune><vcpupin vcpu='0' cpuset='5'/><vcpupin vcpu='1' cpuset='6'/>"
                                       "</cputune>");
  HookOutcome restored = hook("pinned", "restore", "begin", pinned);
  ASSERT_EQ(restored.exitCode, 0) << restored.err;
  EXPECT_TRUE(restored.out.empty());  // the user's pins stay the user's
  EXPECT_EQ(vm(kUuid).allocation().exclusive_cpus(), "5-6");
}

TEST_F(HookTest, BadInputIsRefusedAndOtherOperationsPassAtOnce) {
  HookOutcome bad = hook("x", "prepare", "begin", "<domain><name>x</name>");
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_THAT(bad.err, HasSubstr("malformed XML"));
  // libxml2's message for bytes that are not UTF-8 spans two lines; virsh shows the hook's one
  // line (found by hook_fuzz).
  bad = hook("x", "prepare", "begin", "<domain><name>\x99\x99\x99\x99</name></domain>");
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_THAT(bad.err, HasSubstr("not proper UTF-8"));
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
  bad = hook("..", "prepare", "begin", domainXml("../../etc", kUuid, 1, ""));
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_THAT(bad.err, HasSubstr("cannot be a domain name"));
  EXPECT_EQ(vmCount(), 0);
  for (const std::string op : {"start", "stopped", "release", "migrate", "restore"}) {
    EXPECT_EQ(hook("x", op, "what", "garbage").exitCode, 0) << op;
  }
  UnreachableHookVrid nobody("not asked");
  EXPECT_EQ(runHook(config_, {}, "", nobody).exitCode, 0);
  // A stop of a VM whose XML cannot be read still goes on.
  EXPECT_EQ(hook("x", "stopped", "end", "garbage").exitCode, 0);
}

TEST_F(HookTest, UnreachableVridFailsDedicatedVmsAndLetsSharedOnesStart) {
  vrid_.stop();
  config_.timeoutMs = 300;
  HookOutcome dedicated = hook("db", "prepare", "begin", domainXml("db", kUuid, 1, "dedicated"));
  EXPECT_EQ(dedicated.exitCode, 1);
  EXPECT_THAT(dedicated.err, HasSubstr("asks for dedicated CPUs and vrid at unix:" + hookSocketBeside(config_.socket)));
  HookOutcome shared = hook("web", "prepare", "begin", domainXml("web", kOtherUuid, 1, ""));
  EXPECT_EQ(shared.exitCode, 0);
  EXPECT_THAT(shared.err, HasSubstr("did not answer"));
  EXPECT_THAT(shared.err, HasSubstr("starts, and vrid adopts it later"));
  config_.whenUnreachable = WhenUnreachable::kRefuse;
  shared = hook("web", "prepare", "begin", domainXml("web", kOtherUuid, 1, ""));
  EXPECT_EQ(shared.exitCode, 1);
  EXPECT_THAT(shared.err, HasSubstr("when_unreachable = refuse"));
}

TEST_F(HookTest, HungVridIsGivenUpOnAtTheDeadline) {
  // A socket that accepts connections into its backlog and never answers, where the hook looks.
  std::filesystem::create_directories(vrid_.tmp().sub("hung"));
  const std::string path = vrid_.tmp().sub("hung/hook.sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  config_.socket = vrid_.tmp().sub("hung/admin.sock");
  config_.timeoutMs = 400;
  const auto begin = std::chrono::steady_clock::now();
  HookOutcome outcome = hook("db", "prepare", "begin", domainXml("db", kUuid, 1, "dedicated"));
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  ::close(fd);
  EXPECT_EQ(outcome.exitCode, 1);
  EXPECT_THAT(outcome.err, HasSubstr("did not answer"));
  EXPECT_GE(elapsed, std::chrono::milliseconds(350));
  EXPECT_LT(elapsed, std::chrono::milliseconds(3000));
}

TEST(HookConfigTest, ParsesAndRefusesWithFileAndLine) {
  auto config = parseHookConfig(
      "# comment\nsocket = /run/x.sock\ntimeout_ms = 1500\nwhen_unreachable = refuse\nqemu_pid_dir = /p\n", "f");
  ASSERT_TRUE(config.ok()) << config.error().message();
  EXPECT_EQ(config->socket, "/run/x.sock");
  EXPECT_EQ(config->timeoutMs, 1500);
  EXPECT_EQ(config->whenUnreachable, WhenUnreachable::kRefuse);
  EXPECT_EQ(config->qemuPidDir, "/p");
  EXPECT_THAT(parseHookConfig("timeout_ms = 0\n", "f").error().message(), HasSubstr("f:1: timeout_ms"));
  EXPECT_THAT(parseHookConfig("\nsocket = relative\n", "f").error().message(), HasSubstr("f:2: socket"));
  EXPECT_THAT(parseHookConfig("colour = blue\n", "f").error().message(), HasSubstr("unknown option"));
  EXPECT_THAT(parseHookConfig("when_unreachable = maybe\n", "f").error().message(), HasSubstr("start-shared or"));
  // A control character inside a path (found by hook_fuzz): refused, shown escaped, not taken.
  const auto control = parseHookConfig("socket = /run/vri\x0b/admin.sock\n", "f");
  ASSERT_FALSE(control.ok());
  EXPECT_THAT(control.error().message(), HasSubstr("f:1: socket: a value without control characters"));
  EXPECT_THAT(control.error().message(), HasSubstr("\\x0b"));
  EXPECT_FALSE(parseHookConfig("qemu_pid_dir = /run/\x01qemu\n", "f").ok());
  EXPECT_TRUE(loadHookConfig("/nonexistent/hook.conf").ok());  // no file: the defaults
}

TEST(HookConfigTest, NoFileInADirectoryOthersMayWriteIsRefusedNotTakenForTheDefaults) {
  testing::TempDir tmp;
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0777), 0);
  const auto refused = loadHookConfig(tmp.sub("hook.conf"));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(),
              HasSubstr("hook config's directory: " + tmp.path() + " may be written by everyone"));
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  EXPECT_TRUE(loadHookConfig(tmp.sub("hook.conf")).ok());
}

TEST_F(HookTest, TheBinaryTakesArgvAndStdinAsLibvirtPassesThem) {
  const std::string conf = vrid_.tmp().sub("hook.conf");
  std::ofstream(conf) << "socket = " << config_.socket << "\ntimeout_ms = 2000\n";
  const std::vector<std::string> env = {"VRI_HOOK_CONFIG=" + conf};
  const std::string scratch = vrid_.tmp().sub("");
  auto ok = testing::runChild({VRI_HOOK_BINARY, "web", "prepare", "begin", "-"},
                              domainXml("web", kUuid, 7, "dedicated"), scratch, env);
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
  auto refused = testing::runChild({VRI_HOOK_BINARY, "db", "prepare", "begin", "-"},
                                   domainXml("db", kOtherUuid, 2, "dedicated"), scratch, env);
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_THAT(refused.err, StartsWith("vri: "));
  auto other =
      testing::runChild({VRI_HOOK_BINARY, "db", "start", "begin", "-"}, std::string(3 << 20, 'x'), scratch, env);
  EXPECT_EQ(other.exitCode, 0) << other.err;
  auto huge =
      testing::runChild({VRI_HOOK_BINARY, "db", "prepare", "begin", "-"}, std::string(3 << 20, 'x'), scratch, env);
  EXPECT_EQ(huge.exitCode, 1);
  EXPECT_THAT(huge.err, HasSubstr("larger than the 1048576 bytes accepted"));
  std::ofstream(conf) << "socket = nowhere\n";
  auto bad_config = testing::runChild({VRI_HOOK_BINARY, "db", "prepare", "begin", "-"}, "", scratch, env);
  EXPECT_EQ(bad_config.exitCode, 1);
  EXPECT_THAT(bad_config.err, HasSubstr(conf + ":1: socket"));
  // A configuration anyone may write would let anyone send VMs elsewhere: refused, nothing asked of vrid.
  std::ofstream(conf) << "socket = " << config_.socket << "\ntimeout_ms = 2000\n";
  ASSERT_EQ(::chmod(conf.c_str(), 0666), 0);
  auto open_config = testing::runChild({VRI_HOOK_BINARY, "db2", "prepare", "begin", "-"},
                                       domainXml("db2", kOtherUuid, 1, "dedicated"), scratch, env);
  EXPECT_EQ(open_config.exitCode, 1);
  EXPECT_THAT(open_config.err, HasSubstr("vri: hook config: " + conf + " may be written by everyone"));
  EXPECT_EQ(vmCount(), 1);
}

// Raw bytes to the hook socket and what comes back before vrid closes the connection.
std::string sendRaw(const std::string& socket, const std::string& bytes) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return "<connect failed>";
  (void)!::write(fd, bytes.data(), bytes.size());
  ::shutdown(fd, SHUT_WR);
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) answer.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return answer;
}

std::string answerText(const std::string& frame) {
  if (frame.size() < kHookFrameHeaderBytes) return "<no answer: " + frame + ">";
  hook::v1::HookAnswer answer;
  if (!answer.ParseFromString(frame.substr(kHookFrameHeaderBytes))) return "<not an answer>";
  return std::to_string(answer.exit_code()) + " " + answer.err();
}

TEST_F(HookTest, TheHookSocketAnswersWhatIsNotACallAndGoesOnServing) {
  // Bigger than any call may be: refused from its size alone, before vrid reads it.
  std::string answer = answerText(sendRaw(hookSocketPath(vrid_.config), hookFrameHeader(kMaxHookMessageBytes + 1)));
  EXPECT_THAT(answer, StartsWith("1 vri: vrid's hook socket: a call of 4194305 bytes")) << answer;
  answer = answerText(sendRaw(hookSocketPath(vrid_.config), hookFrameHeader(5) + "\xff\xff\xff\xff\xff"));
  EXPECT_THAT(answer, HasSubstr("not a hook call")) << answer;
  // Cut short: vrid says so to whoever still listens, and holds nothing.
  answer = answerText(sendRaw(hookSocketPath(vrid_.config), hookFrameHeader(100) + "ab"));
  EXPECT_THAT(answer, HasSubstr("closed the connection before its call was complete")) << answer;
  // A relative qemu_pid_dir from a caller that is not vri-hook: refused, nothing asked of vrid.
  hook::v1::HookCall call;
  for (const char* arg : {"web", "started", "begin", "-"}) call.add_args(arg);
  call.set_domain_xml(domainXml("web", kUuid, 1, ""));
  call.set_qemu_pid_dir("run/libvirt");
  const std::string body = call.SerializeAsString();
  answer = answerText(sendRaw(hookSocketPath(vrid_.config), hookFrameHeader(body.size()) + body));
  EXPECT_THAT(answer, HasSubstr("qemu_pid_dir: an absolute path")) << answer;
  EXPECT_EQ(vmCount(), 0);
  HookOutcome fine = hook("web", "prepare", "begin", domainXml("web", kUuid, 1, "dedicated"));
  EXPECT_EQ(fine.exitCode, 0) << fine.err;
  EXPECT_EQ(vmCount(), 1);
}

TEST_F(HookTest, CallsThroughTheHookSocketAreVridsOwnCallsWithTheHooksVersion) {
  ASSERT_EQ(hook("web", "prepare", "begin", domainXml("web", kUuid, 1, "dedicated")).exitCode, 0);
  EXPECT_EQ(hook("db", "prepare", "begin", domainXml("db", kOtherUuid, 9, "dedicated")).exitCode, 1);
  const CallMetrics::Snapshot calls = vrid_.daemon().callMetrics().snapshot();
  EXPECT_EQ(calls.calls.count({"AdmitVm", "vri-hook", "OK"}), 1u);
  EXPECT_EQ(calls.calls.count({"AdmitVm", "vri-hook", "RESOURCE_EXHAUSTED"}), 1u);
  grpc::ClientContext context;
  v1::Node node;
  ASSERT_TRUE(vrid_.readOnly->GetNode(&context, v1::GetNodeRequest(), &node).ok());
  bool seen = false;
  for (const auto& client : node.clients())
    seen = seen || (client.program() == "vri-hook" && !client.version().empty());
  EXPECT_TRUE(seen) << node.DebugString();
  EXPECT_THAT(vrid_.logText(), HasSubstr("AdmitVm refused on the hook socket: RESOURCE_EXHAUSTED"));
}

TEST_F(HookTest, AGrpcSocketWhereTheHookSocketShouldBeIsNamedAndTheHookDecidesAsWithoutVrid) {
  // hook.sock beside the configured socket is vrid's admin socket (gRPC), not its hook socket.
  std::filesystem::create_directories(vrid_.tmp().sub("elsewhere"));
  std::filesystem::create_symlink(vrid_.config.adminSocket, vrid_.tmp().sub("elsewhere/hook.sock"));
  config_.socket = vrid_.tmp().sub("elsewhere/admin.sock");
  config_.timeoutMs = 1000;
  HookOutcome dedicated = hook("db", "prepare", "begin", domainXml("db", kUuid, 1, "dedicated"));
  EXPECT_EQ(dedicated.exitCode, 1);
  EXPECT_THAT(dedicated.err, HasSubstr("is it vrid's hook_socket?")) << dedicated.err;
  EXPECT_THAT(dedicated.err, HasSubstr("asks for dedicated CPUs")) << dedicated.err;
  HookOutcome shared = hook("web", "prepare", "begin", domainXml("web", kOtherUuid, 1, ""));
  EXPECT_EQ(shared.exitCode, 0) << shared.err;
  EXPECT_EQ(vmCount(), 0);
}

TEST(HookFrontTest, LoadsNothingButTheCAndCxxRuntimes) {
  // What the dynamic linker must load and bind before vri-hook's main runs, every VM start.
  testing::TempDir tmp;
  const auto dynamic = testing::runChild({"/usr/bin/readelf", "-d", VRI_HOOK_BINARY}, "", tmp.path());
  ASSERT_EQ(dynamic.exitCode, 0) << dynamic.err;
  std::vector<std::string> needed;
  std::istringstream lines(dynamic.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t open = line.find("Shared library: [");
    if (open != std::string::npos) needed.push_back(line.substr(open + 17, line.find(']', open) - open - 17));
  }
  const std::set<std::string> runtimes = {"libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libc.so.6"};
  for (const std::string& library : needed) {
    // Sanitizer builds add their own runtimes.
    if (library.starts_with("libasan") || library.starts_with("libubsan") || library.starts_with("libtsan")) continue;
    EXPECT_TRUE(runtimes.contains(library)) << "vri-hook needs " << library;
  }
  EXPECT_FALSE(needed.empty()) << dynamic.out;
}

}  // namespace
}  // namespace vri

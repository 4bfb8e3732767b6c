// vrid as root: the socket access rules checked from an unprivileged user,
// and decisions written into a private subtree of the real v1 cgroupfs.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "base/cpuset.h"
#include "base/unix_socket.h"
#include "proto/vri.grpc.pb.h"
#include "tests/root/real_v1_subtree.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using testing::readFile;
using testing::removeCgroupTree;
using testing::runCommand;
using testing::VridProcess;

constexpr char kUid[] = "0e000000-0000-4000-8000-000000000001";
constexpr char kContainerId[] = "c0ffee01";

std::string self;  // this binary, re-run as the unprivileged client

v1::AdmitContainerRequest guaranteed() {
  v1::AdmitContainerRequest r;
  r.set_pod_uid(kUid);
  r.set_qos(v1::GUARANTEED);
  r.set_container_name("app");
  r.set_container_id(kContainerId);
  r.set_cpu_request_milli(1000);
  r.set_cpu_limit_milli(1000);
  r.set_memory_limit_bytes(64ULL << 20);
  return r;
}

// Client mode: one call on `socket`, prints the gRPC status code.
int runClient(const std::string& socket, const std::string& call) {
  auto stub = v1::Vri::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (call == "connect") {  // a bare connect(2): what the socket file's mode lets this user do
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
    const int err = errno;
    std::printf("connect=%s uid=%d\n", connected == 0 ? "ok" : std::strerror(err), static_cast<int>(::getuid()));
    return 0;
  }
  grpc::Status status;
  if (call == "get-node") {
    v1::Node node;
    status = stub->GetNode(&context, {}, &node);
  } else {
    v1::ContainerAllocation placed;
    status = stub->AdmitContainer(&context, guaranteed(), &placed);
  }
  std::printf("code=%d uid=%d %s\n", static_cast<int>(status.error_code()), static_cast<int>(::getuid()),
              status.error_message().c_str());
  return 0;
}

// `call` on `socket` as nobody, in group nogroup and no other.
std::string asNobody(const testing::TempDir& tmp, const std::string& socket, const std::string& call) {
  std::string out;
  runCommand(
      {"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", self, "--vri-client", socket, call},
      &out, tmp.sub("client.out"));
  return out;
}

mode_t modeOf(const std::string& path, gid_t* group = nullptr) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  if (group != nullptr) *group = st.st_gid;
  return st.st_mode & 07777;
}

TEST(VridRootTest, AnUnprivilegedUserReachesNoSocketByDefault) {
  ASSERT_EQ(::geteuid(), 0u) << "the root tests need root (run ctest as root; CI does)";
  ASSERT_EQ(::access("/usr/bin/setpriv", X_OK), 0) << "needs setpriv (util-linux)";
  testing::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);  // nobody must reach the sockets' directory
  VridProcess vrid(tmp);
  ASSERT_TRUE(vrid.start());
  EXPECT_EQ(modeOf(vrid.socket()), 0600u);
  EXPECT_EQ(modeOf(vrid.adminSocket()), 0600u);
  for (const std::string& socket : {vrid.socket(), vrid.adminSocket()}) {
    EXPECT_THAT(asNobody(tmp, socket, "connect"), HasSubstr("connect=Permission denied uid=65534")) << socket;
    EXPECT_THAT(asNobody(tmp, socket, "get-node"), HasSubstr("code=14 uid=65534")) << socket;
  }
  // vrictl says why, rather than that vrid is down.
  std::string out;
  EXPECT_EQ(runCommand({"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", VRICTL_BINARY,
                        "--socket", vrid.socket(), "nodeinfo"},
                       &out, tmp.sub("vrictl.out")),
            1);
  EXPECT_THAT(out, HasSubstr(vrid.socket() + " is not open to this user"));
  // Root still is served (so the refusals above are the modes', not a vrid that is down).
  EXPECT_EQ(runCommand({self, "--vri-client", vrid.socket(), "get-node"}, &out, tmp.sub("root.out")), 0);
  EXPECT_THAT(out, HasSubstr("code=0 uid=0"));
  EXPECT_EQ(vrid.stop(), 0);
}

TEST(VridRootTest, ASocketGroupReadsThroughTheReadOnlySocketAndNeverChanges) {
  ASSERT_EQ(::geteuid(), 0u) << "the root tests need root (run ctest as root; CI does)";
  ASSERT_EQ(::access("/usr/bin/setpriv", X_OK), 0) << "needs setpriv (util-linux)";
  testing::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);
  VridProcess vrid(tmp, "vrid", {"--socket-group=nogroup"});
  ASSERT_TRUE(vrid.start());
  gid_t group = 0;
  EXPECT_EQ(modeOf(vrid.socket(), &group), 0660u);
  EXPECT_EQ(group, 65534u);
  EXPECT_EQ(modeOf(vrid.adminSocket(), &group), 0600u);
  EXPECT_EQ(group, 0u);

  EXPECT_THAT(asNobody(tmp, vrid.socket(), "get-node"), HasSubstr("code=0 uid=65534"));
  // The read-only socket refuses a change in code.
  const std::string denied = asNobody(tmp, vrid.socket(), "admit");
  EXPECT_THAT(denied, HasSubstr("code=7 uid=65534"));
  EXPECT_THAT(denied, HasSubstr("use the admin socket"));
  // The admin socket is root's alone.
  EXPECT_THAT(asNobody(tmp, vrid.adminSocket(), "connect"), HasSubstr("connect=Permission denied"));
  EXPECT_EQ(vrid.stop(), 0);
  // Nothing was admitted by anyone.
  EXPECT_THAT(vrid.log(), ::testing::Not(HasSubstr("admit pod/")));
}

TEST(VridRootTest, TheShimsSocketIsRootsAlone) {
  ASSERT_EQ(::geteuid(), 0u) << "the root tests need root (run ctest as root; CI does)";
  testing::TempDir tmp;
  ::chmod(tmp.path().c_str(), 0755);
  const std::string listen = tmp.sub("run/cri.sock");
  // No containerd and no vrid are needed for the shim to listen: its channels connect lazily.
  const pid_t shim =
      testing::spawn({VRI_CRI_SHIM_BINARY, "--listen=" + listen, "--containerd=" + tmp.sub("absent/containerd.sock"),
                      "--vrid=" + tmp.sub("absent/admin.sock")},
                     tmp.sub("shim.log"), O_TRUNC, true);
  const std::unique_ptr<const pid_t, std::function<void(const pid_t*)>> stop(&shim, [](const pid_t* pid) {
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
  });
  for (int i = 0; i < 200 * testing::timeScale() && !socketAcceptsConnections(listen); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(socketAcceptsConnections(listen)) << readFile(tmp.sub("shim.log"));
  EXPECT_EQ(modeOf(listen), 0600u);
  EXPECT_THAT(asNobody(tmp, listen, "connect"), HasSubstr("connect=Permission denied uid=65534"));
}

TEST(VridRootTest, AConfigAnotherUserOwnsIsRefused) {
  ASSERT_EQ(::geteuid(), 0u) << "the root tests need root (run ctest as root; CI does)";
  testing::TempDir tmp;
  std::ofstream(tmp.sub("vrid.conf")) << "# nobody's\n";
  ASSERT_EQ(::chown(tmp.sub("vrid.conf").c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(tmp.sub("vrid.conf").c_str(), 0644), 0);
  VridProcess vrid(tmp);
  EXPECT_FALSE(vrid.start());
  EXPECT_THAT(vrid.log(), HasSubstr("config: " + tmp.sub("vrid.conf") + " belongs to uid 65534"));
}

TEST(VridRootTest, DecisionsReachTheRealCgroupfs) {
  testing::RealV1Subtree subtree("vrid");
  ASSERT_NO_FATAL_FAILURE(subtree.make());
  const std::string& root = subtree.root();
  const CpuSet& cpus = subtree.cpus();

  testing::TempDir tmp;
  {
    VridProcess vrid(tmp, "vrid",
                     {"--topology=live", "--ownership=everything", "--kubelet-cgroup-root=/" + root,
                      "--machine-partition=" + root + "/machine", "--cgroup-v1-controllers=cpuset,cpu,cpuacct,pids",
                      "--system-reserved-cpu=1", "--libvirt-uri="});
    ASSERT_TRUE(vrid.start());
    const std::string kubepods = "/sys/fs/cgroup/cpuset/" + root + "/kubepods";
    EXPECT_EQ(readFile(kubepods + "/burstable/cpuset.cpus"), cpus.format() + "\n");  // created by vrid

    auto stub = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid.adminSocket(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext c1;
    v1::ContainerAllocation placed;
    ASSERT_TRUE(stub->AdmitContainer(&c1, guaranteed(), &placed).ok());
    const CpuSet exclusive = *CpuSet::parse(placed.cpuset_cpus());
    ASSERT_EQ(exclusive.count(), 1);
    const std::string container = kubepods + "/pod" + kUid + "/" + kContainerId;
    EXPECT_EQ(readFile(container + "/cpuset.cpus"), exclusive.format() + "\n");
    EXPECT_EQ(readFile(kubepods + "/burstable/cpuset.cpus"), (cpus - exclusive).format() + "\n");
    EXPECT_EQ(
        readFile("/sys/fs/cgroup/cpu/" + root + "/kubepods/pod" + kUid + "/" + kContainerId + "/cpu.cfs_quota_us"),
        "100000\n");
    EXPECT_TRUE(std::filesystem::is_directory("/sys/fs/cgroup/pids/" + root + "/kubepods/pod" + kUid));

    grpc::ClientContext c2;
    v1::ReleasePodRequest release;
    release.set_pod_uid(kUid);
    v1::Released released;
    ASSERT_TRUE(stub->ReleasePod(&c2, release, &released).ok());
    stub.reset();  // an open connection would hold the shutdown for its grace period
    EXPECT_FALSE(std::filesystem::exists(kubepods + "/pod" + kUid));
    EXPECT_EQ(readFile(kubepods + "/burstable/cpuset.cpus"), cpus.format() + "\n");
    EXPECT_EQ(vrid.stop(), 0);
  }
  subtree.remove();
  for (const std::string& h : subtree.hierarchies()) EXPECT_FALSE(std::filesystem::exists(subtree.dir(h)));
}

}  // namespace
}  // namespace vri

int main(int argc, char** argv) {
  vri::self = std::filesystem::canonical("/proc/self/exe");
  if (argc == 4 && std::string(argv[1]) == "--vri-client") return vri::runClient(argv[2], argv[3]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// The metrics endpoint under the shipped unit's sandbox: systemd's RestrictAddressFamilies= is a
// seccomp filter that answers EAFNOSUPPORT to socket() of any family it does not list. The same
// filter here, in a child process: without AF_INET the endpoint says why it cannot listen, and the
// unit vrid ships lists AF_INET, so metrics_port works under it.
#include "vri/metrics_server.h"

#include <gmock/gmock.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>
#include <sstream>

namespace vri {
namespace {

using ::testing::HasSubstr;

// What RestrictAddressFamilies=AF_UNIX does to this process: socket() of another family fails with
// EAFNOSUPPORT.
bool restrictToUnixSockets() {
#if defined(__x86_64__)
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EAFNOSUPPORT & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0;
#else
  return false;
#endif
}

// MetricsServer::start on an ephemeral loopback port, in a child under the filter: "listening" or
// the error it gave.
std::string startUnderUnixOnlyFilter() {
  int out[2];
  if (::pipe(out) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(out[0]);
    std::string result = "cannot install the seccomp filter";
    if (restrictToUnixSockets()) {
      auto server = MetricsServer::start("127.0.0.1", 0, [] { return std::string(); });
      result = server.ok() ? "listening" : server.error().message();
    }
    (void)!::write(out[1], result.data(), result.size());
    ::_exit(0);
  }
  ::close(out[1]);
  std::string result;
  char buffer[512];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) result.append(buffer, static_cast<size_t>(n));
  ::close(out[0]);
  ::waitpid(child, nullptr, 0);
  return result;
}

TEST(MetricsServerTest, WithoutIpv4SocketsTheEndpointSaysTheSandboxForbidsThem) {
  const std::string result = startUnderUnixOnlyFilter();
  EXPECT_THAT(result, HasSubstr("may not make an IPv4 socket"));
  EXPECT_THAT(result, HasSubstr("RestrictAddressFamilies= must list AF_INET"));
  // And without the filter it listens.
  auto server = MetricsServer::start("127.0.0.1", 0, [] { return std::string(); });
  EXPECT_TRUE(server.ok()) << server.error().message();
}

TEST(MetricsServerTest, TheShippedUnitLetsTheEndpointListen) {
  std::ifstream unit(std::string(VRI_SOURCE_DIR) + "/deploy/vrid.service.in");
  ASSERT_TRUE(unit) << "deploy/vrid.service.in";
  std::string line, families;
  while (std::getline(unit, line)) {
    if (line.starts_with("RestrictAddressFamilies=")) families = line.substr(line.find('=') + 1);
  }
  std::istringstream listed(families);
  std::vector<std::string> names{std::istream_iterator<std::string>(listed), {}};
  EXPECT_THAT(names, ::testing::Contains("AF_UNIX"));  // the sockets, libvirt's and D-Bus's
  EXPECT_THAT(names, ::testing::Contains("AF_INET"));  // metrics_address is an IPv4 address
}

}  // namespace
}  // namespace vri

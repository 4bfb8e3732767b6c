// The metrics endpoint on a real loopback port: who may read it (the bearer token), who may hold it
// (slow and idle clients give way to a scrape), and under the shipped unit's sandbox: systemd's
// RestrictAddressFamilies= is a seccomp filter that answers EAFNOSUPPORT to socket() of any family
// it does not list. The same filter here, in a child process: without AF_INET the endpoint says
// why it cannot listen, and the unit vrid ships lists AF_INET, so metrics_port works under it.
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

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/eventually.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kToken[] = "0123456789abcdef-metrics";

// A TCP connection to the endpoint on loopback, or -1.
int connectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

// One request and the whole answer (the connection is closed by the server after HTTP/1.0), or
// what arrived before `wait` passed.
std::string request(int port, const std::string& head, std::chrono::milliseconds wait = std::chrono::seconds(3)) {
  const int fd = connectTo(port);
  if (fd < 0) return "cannot connect";
  timeval timeout{static_cast<time_t>(wait.count() / 1000), static_cast<suseconds_t>(wait.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string answer;
  if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size())) {
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

std::string get(int port, const std::string& authorization) {
  return request(port, "GET /metrics HTTP/1.0\r\n" +
                           (authorization.empty() ? "" : "Authorization: " + authorization + "\r\n") + "\r\n");
}

TEST(MetricsServerTest, OnlyAScrapeWithTheBearerTokenIsAnsweredAndNothingIsRenderedForOthers) {
  std::atomic<int> renders{0};
  auto server = MetricsServer::start("127.0.0.1", 0, kToken, [&renders] {
    ++renders;
    return std::string("vri_node_cpus{pool=\"online\"} 8\n");
  });
  ASSERT_TRUE(server.ok()) << server.error().message();
  const int port = (*server)->port();
  for (const std::string& wrong :
       {std::string(), std::string("Bearer"), std::string("Bearer "), "Bearer " + std::string(kToken) + "x",
        "Bearer " + std::string(kToken).substr(1), "bearer " + std::string(kToken), "Basic " + std::string(kToken)}) {
    const std::string answer = get(port, wrong);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 401")) << "Authorization: " << wrong;
    EXPECT_THAT(answer, HasSubstr("WWW-Authenticate: Bearer"));
    EXPECT_THAT(answer, ::testing::Not(HasSubstr("vri_node_cpus")));
  }
  // Nor is a wrong method or path told apart before the token.
  EXPECT_THAT(request(port, "POST /metrics HTTP/1.0\r\n\r\n"), StartsWith("HTTP/1.1 401"));
  EXPECT_EQ(renders.load(), 0);
  const std::string answer = get(port, "Bearer " + std::string(kToken));
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(answer, HasSubstr("vri_node_cpus{pool=\"online\"} 8"));
  EXPECT_EQ(renders.load(), 1);
  EXPECT_THAT(request(port, "POST /metrics HTTP/1.0\r\nAuthorization: Bearer " + std::string(kToken) + "\r\n\r\n"),
              StartsWith("HTTP/1.1 405"));
  // An endpoint without a token is not started.
  auto open = MetricsServer::start("127.0.0.1", 0, "", [] { return std::string(); });
  ASSERT_FALSE(open.ok());
  EXPECT_THAT(open.error().message(), HasSubstr("metrics_token_file"));
}

// 300 idle connections and 8 that send a byte every 200 ms, each reconnecting as soon as it is
// closed: every scrape is still answered, each within a second.
TEST(MetricsServerTest, SlowAndIdleClientsGiveWayToAScrape) {
  auto server = MetricsServer::start("127.0.0.1", 0, kToken, [] { return std::string("vri_up 1\n"); });
  ASSERT_TRUE(server.ok()) << server.error().message();
  const int port = (*server)->port();
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(connectTo(port));
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};  // rounds of one byte from each trickler
  std::thread tricklers([port, &stop, &rounds] {
    std::vector<int> fds(8, -1);
    std::vector<size_t> sent(8, 0);
    const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    while (!stop) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i] < 0) {
          fds[i] = connectTo(port);
          sent[i] = 0;
        }
        const char byte = sent[i] < head.size() ? head[sent[i]] : 'a';
        if (fds[i] >= 0 && ::send(fds[i], &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
          ::close(fds[i]);
          fds[i] = -1;
        }
        ++sent[i];
      }
      ++rounds;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // their pace: a byte every 200 ms
    }
    for (const int fd : fds)
      if (fd >= 0) ::close(fd);
  });
  // The slow ones hold their connections before the first scrape, and trickle again between two.
  ASSERT_TRUE(testing::eventually([&] { return rounds >= 2; }, std::chrono::seconds(10)));
  for (int scrape = 0; scrape < 5; ++scrape) {
    const auto started = std::chrono::steady_clock::now();
    const std::string answer = get(port, "Bearer " + std::string(kToken));
    const auto took = std::chrono::steady_clock::now() - started;
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200")) << "scrape " << scrape;
    EXPECT_THAT(answer, HasSubstr("vri_up 1"));
    EXPECT_LT(took, std::chrono::seconds(1)) << "scrape " << scrape;
    const int seen = rounds;
    ASSERT_TRUE(testing::eventually([&] { return rounds > seen; }, std::chrono::seconds(10)));
  }
  stop = true;
  tricklers.join();
  for (const int fd : idle)
    if (fd >= 0) ::close(fd);
}

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
      auto server = MetricsServer::start("127.0.0.1", 0, kToken, [] { return std::string(); });
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
  auto server = MetricsServer::start("127.0.0.1", 0, kToken, [] { return std::string(); });
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

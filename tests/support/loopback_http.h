// HTTP on 127.0.0.1 for the metrics endpoint's tests and benchmark: a free port to give vrid, a
// bearer token file it accepts, and one HTTP/1.0 request read to its end.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/stat.h>

#include <fstream>
#include <string>

namespace vri::testing {

// A TCP port nobody listens on now (the kernel's choice for port 0).
inline int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

inline constexpr char kMetricsToken[] = "vri-tests-metrics-token";

// Writes kMetricsToken to `path` as vrid takes a metrics_token_file (mode 0600); returns `path`.
inline std::string writeMetricsToken(const std::string& path) {
  std::ofstream(path, std::ios::trunc) << kMetricsToken << "\n";
  ::chmod(path.c_str(), 0600);
  return path;
}

// One request to 127.0.0.1:`port` (with `Authorization: Bearer <token>` unless `token` is empty); the whole answer,
// status line first ("connect failed" if none).
inline std::string loopbackHttp(int port, const std::string& method, const std::string& path,
                                const std::string& token = kMetricsToken) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return "connect failed";
  }
  const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n" +
                              (token.empty() ? "" : "Authorization: Bearer " + token + "\r\n") + "\r\n";
  (void)!::write(fd, request.data(), request.size());
  std::string answer;
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) answer.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  return answer;
}

}  // namespace vri::testing

#include "vri/metrics_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cgroup-model/quote.h"

namespace vri {

namespace {

MHD_Result answer(MHD_Connection* connection, unsigned status, const std::string& body, const char* type) {
  MHD_Response* response =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result onRequest(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                     const char*, size_t* uploadSize, void** state) {
  // The first call for a request only announces it; the answer comes with the second.
  static int announced;
  if (*state == nullptr) {
    *state = &announced;
    return MHD_YES;
  }
  if (*uploadSize != 0) {  // a body is not read, only refused
    *uploadSize = 0;
    return MHD_YES;
  }
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    return answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", "text/plain; charset=utf-8");
  if (std::strcmp(url, "/metrics") != 0)
    return answer(connection, MHD_HTTP_NOT_FOUND, "vrid serves /metrics only\n", "text/plain; charset=utf-8");
  const auto* server = static_cast<const MetricsServer*>(cls);
  return answer(connection, MHD_HTTP_OK, server->render(), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& address, int port,
                                                            std::function<std::string()> render) {
  sockaddr_in bind_to{};
  bind_to.sin_family = AF_INET;
  bind_to.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &bind_to.sin_addr) != 1)
    return Error::invalidArgument("metrics_address: not an IPv4 address: " + quoteForMessage(address));
  // A service manager may forbid IPv4 sockets (systemd's RestrictAddressFamilies= without AF_INET
  // answers EAFNOSUPPORT): said as such, not as a wrong address.
  if (const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); probe < 0) {
    const int error = errno;
    return Error::fromErrno(error, "metrics endpoint: vrid may not make an IPv4 socket here" +
                                       std::string(error == EAFNOSUPPORT || error == EPERM
                                                       ? " (a service manager's sandbox forbids it: systemd's "
                                                         "RestrictAddressFamilies= must list AF_INET for metrics_port)"
                                                       : ""));
  } else {
    ::close(probe);
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer(std::move(render)));
  // One thread of its own that polls; scrapes are answered one at a time, so a slow scraper cannot
  // take more than one thread, and at most 8 connections are held.
  server->daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, nullptr, nullptr, &onRequest,
                                     server.get(), MHD_OPTION_SOCK_ADDR, &bind_to, MHD_OPTION_CONNECTION_LIMIT, 8U,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
  if (server->daemon_ == nullptr)
    return Error::failedPrecondition("metrics endpoint: cannot listen on " + address + ":" + std::to_string(port) +
                                     " (in use, or not an address of this host)");
  const MHD_DaemonInfo* info = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = info != nullptr ? info->port : port;
  return server;
}

MetricsServer::~MetricsServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace vri

#include "vri/metrics_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/quote.h"

namespace vri {

namespace {

using Slot = MetricsConnections::Slot;

MHD_Result answer(MHD_Connection* connection, unsigned status, const std::string& body, const char* type) {
  MHD_Response* response =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (status == MHD_HTTP_UNAUTHORIZED)
    MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"vrid\"");
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

Slot* slotOf(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info != nullptr ? static_cast<Slot*>(info->socket_context) : nullptr;
}

MHD_Result onRequest(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                     const char*, size_t* uploadSize, void** state) {
  // The first call for a request only announces it; the answer comes with the second.
  static int announced;
  if (*state == nullptr) {
    *state = &announced;
    return MHD_YES;
  }
  if (*uploadSize != 0) {  // a body is not read, only refused; meanwhile the connection may give way
    *uploadSize = 0;
    return MHD_YES;
  }
  if (Slot* slot = slotOf(connection)) slot->answering = true;
  auto* server = static_cast<MetricsServer*>(cls);
  constexpr const char* kText = "text/plain; charset=utf-8";
  if (!server->authorized(MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)))
    return answer(connection, MHD_HTTP_UNAUTHORIZED, "vrid's metrics need the bearer token of metrics_token_file\n",
                  kText);
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    return answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", kText);
  if (std::strcmp(url, "/metrics") != 0)
    return answer(connection, MHD_HTTP_NOT_FOUND, "vrid serves /metrics only\n", kText);
  return answer(connection, MHD_HTTP_OK, server->render(), "text/plain; version=0.0.4; charset=utf-8");
}

// Before libmicrohttpd takes a connection: room is made, or the newcomer refused.
MHD_Result onAccept(void* cls, const sockaddr*, socklen_t) {
  auto* server = static_cast<MetricsServer*>(cls);
  return server->connections().makeRoom(MetricsConnections::Clock::now()) ? MHD_YES : MHD_NO;
}

void onConnection(void* cls, MHD_Connection* connection, void** socketContext, MHD_ConnectionNotificationCode code) {
  auto* server = static_cast<MetricsServer*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socketContext =
        server->connections().opened(info != nullptr ? info->connect_fd : -1, MetricsConnections::Clock::now());
  } else if (*socketContext != nullptr) {
    server->connections().closed(static_cast<Slot*>(*socketContext));
    *socketContext = nullptr;
  }
}

// An answer was sent (or given up): a kept-alive connection waits for its next request, and may
// give way meanwhile.
void onCompleted(void*, MHD_Connection* connection, void**, MHD_RequestTerminationCode) {
  if (Slot* slot = slotOf(connection)) slot->answering = false;
}

}  // namespace

bool MetricsServer::authorized(const char* header) const {
  if (header == nullptr) return false;
  // Compared in time that does not depend on where the first difference is.
  const size_t length = std::strlen(header);
  unsigned char difference = length == expectedHeader_.size() ? 0 : 1;
  for (size_t i = 0; i < expectedHeader_.size(); ++i)
    difference |= static_cast<unsigned char>(expectedHeader_[i] ^ (i < length ? header[i] : 0));
  return difference == 0;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& address, int port,
                                                            std::string bearerToken,
                                                            std::function<std::string()> render,
                                                            MetricsEndpointPolicy policy) {
  if (bearerToken.empty())
    return Error::invalidArgument("metrics endpoint: serving it needs a bearer token (metrics_token_file)");
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
  std::unique_ptr<MetricsServer> server(new MetricsServer(std::move(bearerToken), std::move(render), policy));
  // One thread of its own that polls every connection (epoll), so a slow client holds a
  // connection, never a thread. libmicrohttpd's own limit is above the policy's: a connection
  // the policy shut down counts there until its next poll closes it.
  const auto limit = static_cast<unsigned>(2 * policy.connections);
  server->daemon_ =
      MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, &onAccept, server.get(), &onRequest,
                       server.get(), MHD_OPTION_SOCK_ADDR, &bind_to, MHD_OPTION_CONNECTION_LIMIT, limit,
                       MHD_OPTION_CONNECTION_TIMEOUT, policy.idleSeconds, MHD_OPTION_NOTIFY_CONNECTION, &onConnection,
                       server.get(), MHD_OPTION_NOTIFY_COMPLETED, &onCompleted, server.get(), MHD_OPTION_END);
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

// The metrics endpoint: GET /metrics over HTTP, served by libmicrohttpd (Debian's libmicrohttpd12)
// on its own thread, answering from `render` (metrics_text.h) at each scrape. Anything but GET is
// 405, any other path 404. Off unless metrics_port is set; 127.0.0.1 unless metrics_address says
// otherwise.
//
// Who may read it: the metrics name every tenant and its usage, which on vrid's sockets are root's
// and socket_group's. A TCP port is open to every local user (and, off loopback, to the network),
// so every request must carry `Authorization: Bearer <token>` with the token from
// metrics_token_file (metrics_token.h); anything else is 401 and nothing is rendered for it.
// Prometheus sends it with `authorization: {credentials_file: ...}`.
//
// Who may hold it: MetricsConnections (metrics_connections.h) decides which connections give way
// when it is full, so slow or idle clients cannot keep a scrape from being answered.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "vri/metrics_connections.h"

struct MHD_Daemon;

namespace vri {

struct MetricsEndpointPolicy {
  size_t connections = 16;                                                  // open at once
  std::chrono::steady_clock::duration lifetime = std::chrono::seconds(30);  // of any one connection
  unsigned idleSeconds = 5;  // libmicrohttpd closes a connection that sends nothing for this long
};

class MetricsServer {
 public:
  // `port` 0 takes a free port (tests); port() says which. `bearerToken` must not be empty.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address, int port, std::string bearerToken,
                                                      std::function<std::string()> render,
                                                      MetricsEndpointPolicy policy = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }

  // Called on libmicrohttpd's thread only.
  std::string render() const { return render_(); }
  bool authorized(const char* authorizationHeader) const;
  MetricsConnections& connections() { return connections_; }

 private:
  MetricsServer(std::string bearerToken, std::function<std::string()> render, const MetricsEndpointPolicy& policy)
      : expectedHeader_("Bearer " + std::move(bearerToken)),
        render_(std::move(render)),
        connections_(policy.connections, policy.lifetime) {}
  std::string expectedHeader_;
  std::function<std::string()> render_;
  MetricsConnections connections_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace vri

// The metrics endpoint: GET /metrics over HTTP, served by libmicrohttpd (Debian's libmicrohttpd12)
// on its own thread, answering from `render` (metrics_text.h) at each scrape. Anything but GET is
// 405, any other path 404. Off unless metrics_port is set; 127.0.0.1 unless metrics_address says
// otherwise.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cgroup-model/result.h"

struct MHD_Daemon;

namespace vri {

class MetricsServer {
 public:
  // `port` 0 takes a free port (tests); port() says which.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& address, int port,
                                                      std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  // Called by libmicrohttpd's thread for each scrape.
  std::string render() const { return render_(); }

 private:
  explicit MetricsServer(std::function<std::string()> render) : render_(std::move(render)) {}
  std::function<std::string()> render_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace vri

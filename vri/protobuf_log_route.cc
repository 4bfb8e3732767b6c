#include "vri/protobuf_log_route.h"

#include <google/protobuf/stubs/logging.h>

#include <atomic>
#include <cstdio>
#include <string>

namespace vri {

namespace {

std::atomic<RateLimitedLog*> route{nullptr};

void toRoute(google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
  RateLimitedLog* log = route.load();
  const std::string where = std::string(file != nullptr ? file : "?") + ":" + std::to_string(line);
  if (log == nullptr || level == google::protobuf::LOGLEVEL_FATAL) {
    // A fatal line is written whole before protobuf aborts; none is lost to the limit.
    std::fprintf(stderr, "protobuf (%s): %s\n", where.c_str(), message.c_str());
    return;
  }
  log->write("protobuf: " + message);
}

}  // namespace

ProtobufLogRoute::ProtobufLogRoute(RateLimitedLog& log) : log_(log) {
  RateLimitedLog* none = nullptr;
  installed_ = route.compare_exchange_strong(none, &log_);
  if (installed_) previous_ = reinterpret_cast<void*>(google::protobuf::SetLogHandler(&toRoute));
}

ProtobufLogRoute::~ProtobufLogRoute() {
  if (!installed_) return;
  google::protobuf::SetLogHandler(reinterpret_cast<google::protobuf::LogHandler*>(previous_));
  route.store(nullptr);
}

}  // namespace vri

// protobuf's own log lines (one per request with invalid UTF-8 in a string field, for one) routed
// through vrid's rate-limited log: a caller on the read-only socket who sends thousands of such
// requests writes at most the limit's lines, not one each.
//
// protobuf takes one log handler per process, a plain function: the route installed is kept in a
// static pointer, the one piece of process-wide state here, set by the first route made and cleared
// by that route when it goes (a second vrid in a test process leaves the first one's in place).
#pragma once

#include "base/rate_limited_log.h"

namespace vri {

class ProtobufLogRoute {
 public:
  explicit ProtobufLogRoute(RateLimitedLog& log);
  ~ProtobufLogRoute();
  ProtobufLogRoute(const ProtobufLogRoute&) = delete;
  ProtobufLogRoute& operator=(const ProtobufLogRoute&) = delete;

  // Whether this route is the one protobuf writes to.
  bool installed() const { return installed_; }

 private:
  RateLimitedLog& log_;
  bool installed_ = false;
  void* previous_ = nullptr;  // protobuf's handler before this route (a LogHandler*)
};

}  // namespace vri

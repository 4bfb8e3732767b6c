#include "base/rate_limited_log.h"

#include <cstdio>

namespace vri {

namespace {

std::string escaped(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (const char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void RateLimitedLog::write(std::string_view line) {
  std::string text;
  {
    MutexLock lock(mutex_);
    const Clock::TimePoint now = clock_.now();
    if (now - windowStart_ >= std::chrono::seconds(1)) {
      windowStart_ = now;
      inWindow_ = 0;
    }
    if (inWindow_ >= perSecond_) {
      ++droppedSinceLine_;
      ++droppedTotal_;
      return;
    }
    ++inWindow_;
    text = escaped(line);
    if (droppedSinceLine_ > 0) {
      text += " (" + std::to_string(droppedSinceLine_) + " more like it not logged)";
      droppedSinceLine_ = 0;
    }
  }
  sink_(text);  // outside the lock: the sink may be slow
}

uint64_t RateLimitedLog::dropped() const {
  MutexLock lock(mutex_);
  return droppedTotal_;
}

}  // namespace vri

// How long something took, as vrid's log lines say it: "4.10 ms".
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace vri {

using Stopwatch = std::chrono::steady_clock;

inline std::string millisSince(Stopwatch::time_point start) {
  const double ms = std::chrono::duration<double, std::milli>(Stopwatch::now() - start).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

}  // namespace vri

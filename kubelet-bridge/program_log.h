// A log line of the kubelet side's programs, on stderr: "<UTC time> <program>: <line>". systemd's
// journal takes stderr as it is; the time is for a program run by hand or under a test.
#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace vri {

inline void logProgramLine(const char* program, const std::string& line) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::fprintf(stderr, "%s %s: %s\n", stamp, program, line.c_str());
}

// A duration as the programs log it, "1.234 ms" (bench/ reads it back).
inline std::string millis(std::chrono::steady_clock::duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", std::chrono::duration<double, std::milli>(d).count());
  return text;
}

}  // namespace vri

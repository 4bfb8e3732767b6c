// Leveled log lines on stderr (journald adds its own timestamps under
// systemd; a terminal gets ours). Safe to call from many threads.
#pragma once

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string_view>

#include "base/result.h"

#include "base/thread_annotations.h"

namespace vri {

enum class LogLevel { kError, kWarning, kInfo, kDebug };
Result<LogLevel> parseLogLevel(std::string_view text);  // error | warning | info | debug
std::string_view logLevelName(LogLevel level);

class Logger {
 public:
  explicit Logger(LogLevel level, std::FILE* out = stderr) : level_(level), out_(out) {}

  void setLevel(LogLevel level) { level_.store(level); }
  LogLevel level() const { return level_.load(); }
  bool enabled(LogLevel level) const { return level <= level_.load(); }

  // One line: "2026-11-22T15:36:01.123Z info <message>".
  void log(LogLevel level, std::string_view message);
  void error(std::string_view message) { log(LogLevel::kError, message); }
  void warning(std::string_view message) { log(LogLevel::kWarning, message); }
  void info(std::string_view message) { log(LogLevel::kInfo, message); }
  void debug(std::string_view message) { log(LogLevel::kDebug, message); }

 private:
  std::atomic<LogLevel> level_;
  std::FILE* out_;
  Mutex mutex_;  // one line at a time on out_
};

}  // namespace vri

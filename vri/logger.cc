#include "vri/logger.h"

#include <chrono>
#include <ctime>
#include <string>

#include "base/enum_text.h"
#include "base/quote.h"

namespace vri {

constexpr EnumText<LogLevel, 4> kLogLevelText{"log level",
                                              {{{LogLevel::kError, "error"},
                                                {LogLevel::kWarning, "warning"},
                                                {LogLevel::kInfo, "info"},
                                                {LogLevel::kDebug, "debug"}}}};

Result<LogLevel> parseLogLevel(std::string_view text) { return kLogLevelText.parse(text); }
std::string_view logLevelName(LogLevel level) { return kLogLevelText.name(level); }

void Logger::log(LogLevel level, std::string_view message) {
  if (!enabled(level)) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string line = std::string(stamp) + "." + std::to_string(1000 + millis).substr(1) + "Z " +
                     std::string(logLevelName(level)) + " " + std::string(message) + "\n";
  MutexLock lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace vri

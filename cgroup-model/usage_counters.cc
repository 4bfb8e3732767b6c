#include "cgroup-model/usage_counters.h"

#include <charconv>

#include "base/quote.h"
#include "base/text.h"

namespace vri {

namespace {

std::optional<uint64_t> parseUnsigned(std::string_view text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Calls `each(key, value)` for every "key value" line; refuses a line that is not one.
template <typename Each>
Result<void> forEachKeyValue(std::string_view text, std::string_view what, Each each) {
  for (std::string_view line : splitOn(trimmed(text), '\n')) {
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    const auto value = space == std::string_view::npos ? std::nullopt : parseUnsigned(line.substr(space + 1));
    if (!value) return Error::invalidArgument(std::string(what) + ": not a 'key value' line: " + quoteForMessage(line));
    each(line.substr(0, space), *value);
  }
  return {};
}

}  // namespace

Result<CpuCounters> parseCpuStatV2(std::string_view text) {
  CpuCounters c;
  bool usage = false;
  VRI_TRY(forEachKeyValue(text, "cpu.stat", [&](std::string_view key, uint64_t v) {
    if (key == "usage_usec") {
      c.usageNs = v * 1000;
      usage = true;
    } else if (key == "nr_periods") {
      c.periods = v;
    } else if (key == "nr_throttled") {
      c.throttledPeriods = v;
    } else if (key == "throttled_usec") {
      c.throttledNs = v * 1000;
    }
  }));
  if (!usage) return Error::invalidArgument("cpu.stat: no usage_usec");
  return c;
}

Result<CpuCounters> parseCpuStatV1(std::string_view text) {
  CpuCounters c;
  bool periods = false;
  VRI_TRY(forEachKeyValue(text, "cpu.stat", [&](std::string_view key, uint64_t v) {
    if (key == "nr_periods") {
      c.periods = v;
      periods = true;
    } else if (key == "nr_throttled") {
      c.throttledPeriods = v;
    } else if (key == "throttled_time") {
      c.throttledNs = v;
    }
  }));
  if (!periods) return Error::invalidArgument("cpu.stat: no nr_periods");
  return c;
}

Result<uint64_t> parseCounterFile(std::string_view text) {
  const auto value = parseUnsigned(trimmed(text));
  if (!value) return Error::invalidArgument("not an unsigned number: " + quoteForMessage(text));
  return *value;
}

Result<std::vector<CpuTime>> parseProcStat(std::string_view text, long ticksPerSecond) {
  if (ticksPerSecond <= 0) return Error::invalidArgument("ticks per second must be positive");
  const uint64_t nsPerTick = 1'000'000'000ULL / static_cast<uint64_t>(ticksPerSecond);
  std::vector<CpuTime> cpus;
  for (std::string_view line : splitOn(text, '\n')) {
    if (!line.starts_with("cpu") || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::vector<std::string_view> fields;
    for (std::string_view f : splitOn(line, ' '))
      if (!f.empty()) fields.push_back(f);
    // cpuN user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is in user's already.
    if (fields.size() < 9) return Error::invalidArgument("/proc/stat: a short CPU line: " + quoteForMessage(line));
    const auto cpu = parseUnsigned(fields[0].substr(3));
    if (!cpu || *cpu > 1'000'000) return Error::invalidArgument("/proc/stat: " + quoteForMessage(fields[0]));
    CpuTime t;
    t.cpu = static_cast<int>(*cpu);
    for (size_t i = 1; i <= 8; ++i) {
      const auto ticks = parseUnsigned(fields[i]);
      if (!ticks) return Error::invalidArgument("/proc/stat: not a number in " + quoteForMessage(line));
      t.totalNs += *ticks * nsPerTick;
      if (i != 4 && i != 5) t.busyNs += *ticks * nsPerTick;  // 4 idle, 5 iowait
    }
    cpus.push_back(t);
  }
  if (cpus.empty()) return Error::invalidArgument("/proc/stat: no cpuN lines");
  return cpus;
}

}  // namespace vri

#include "base/amount_limits.h"

namespace vri {

Result<void> checkMilliCpu(std::string_view field, int64_t milli) {
  if (milli < 0)
    return Error::invalidArgument(std::string(field) + ": must not be negative, got " + std::to_string(milli));
  if (milli > kMaxCpuMilli)
    return Error::invalidArgument(std::string(field) + ": " + std::to_string(milli) +
                                  "m is beyond what any node holds (" + std::to_string(kMaxCpuMilli) + "m)");
  return {};
}

Result<void> checkMemoryBytes(std::string_view field, uint64_t bytes) {
  if (bytes > kMaxMemoryBytes)
    return Error::invalidArgument(std::string(field) + ": " + std::to_string(bytes) +
                                  " bytes is beyond what any node holds (" + std::to_string(kMaxMemoryBytes) + ")");
  return {};
}

Result<uint64_t> addBytes(std::string_view what, uint64_t a, uint64_t b, uint64_t ceiling) {
  if (!fitsWithin(a, b, ceiling))
    return Error::invalidArgument(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                                  " bytes is beyond what any node holds (" + std::to_string(ceiling) + ")");
  return a + b;
}

}  // namespace vri

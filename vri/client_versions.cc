#include "vri/client_versions.h"

#include <algorithm>

namespace vri {

namespace {

bool isProgramName(std::string_view name) {
  if (name != "vrictl" && !name.starts_with("vri-")) return false;
  return name.size() <= 32 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
}

// Debian's version characters (policy 5.6.12): digits, letters, . + ~ - :
bool isVersion(std::string_view version) {
  return !version.empty() && version.size() <= 64 && std::all_of(version.begin(), version.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' ||
           c == '~' || c == '-' || c == ':';
  });
}

}  // namespace

void ClientVersions::record(std::string_view userAgent) {
  const std::string_view product = userAgent.substr(0, userAgent.find(' '));
  const size_t slash = product.find('/');
  if (slash == std::string_view::npos) return;
  const std::string_view program = product.substr(0, slash), version = product.substr(slash + 1);
  if (!isProgramName(program) || !isVersion(version)) return;
  const Clock::TimePoint now = clock_.now();
  MutexLock lock(mutex_);
  auto it = byProgram_.find(program);
  if (it == byProgram_.end()) {
    if (byProgram_.size() >= kMaxPrograms) return;
    it = byProgram_.emplace(std::string(program), Seen{}).first;
  }
  it->second = Seen{std::string(version), now};
}

std::vector<ClientVersion> ClientVersions::list() const {
  const Clock::TimePoint now = clock_.now();
  MutexLock lock(mutex_);
  std::vector<ClientVersion> out;
  for (const auto& [program, seen] : byProgram_) out.push_back({program, seen.version, now - seen.at});
  return out;
}

}  // namespace vri

#include "nri/runtime_versions.h"

#include <charconv>
#include <optional>
#include <string>
#include <utility>

namespace vri {

namespace api = ::nri::pkg::api::v1alpha1;

namespace {

// "v0.12.3" or "2.2.9": its leading numbers, as many as are separated by dots (at most three);
// none when it does not start with one.
std::vector<int> versionNumbers(std::string_view version) {
  if (!version.empty() && version.front() == 'v') version.remove_prefix(1);
  std::vector<int> numbers;
  const char* at = version.data();
  const char* end = version.data() + version.size();
  while (numbers.size() < 3) {
    int number = 0;
    auto [next, ec] = std::from_chars(at, end, number);
    if (ec != std::errc()) break;
    numbers.push_back(number);
    if (next == end || *next != '.') break;
    at = next + 1;
  }
  return numbers;
}

// Its major and minor numbers, if it has both.
std::optional<std::pair<int, int>> majorMinor(std::string_view version) {
  const std::vector<int> numbers = versionNumbers(version);
  if (numbers.size() < 2) return std::nullopt;
  return std::pair{numbers[0], numbers[1]};
}

}  // namespace

// The last event the runtime's NRI knows. NRI v0.11.0 added UPDATE_POD_SANDBOX,
// POST_UPDATE_POD_SANDBOX and VALIDATE_CONTAINER_ADJUSTMENT after REMOVE_CONTAINER (v0.8.0 ends
// there), and v0.12.0 names its own version in Configure. Without that, the runtime's release says
// it: containerd 2.0 and 2.1 vendor NRI v0.8.0, 2.2 v0.11.0, 2.3 and 2.4 v0.12. Every NRI since the
// multiplexed protocol knows the events up to REMOVE_CONTAINER, and that is all that is assumed of
// a runtime or version not known here.
api::Event nriEventsKnownTo(std::string_view name, std::string_view version, std::string_view nriVersion) {
  if (const auto nri = majorMinor(nriVersion)) {
    return *nri >= std::pair{0, 11} ? api::VALIDATE_CONTAINER_ADJUSTMENT : api::REMOVE_CONTAINER;
  }
  if (name == "containerd") {
    if (const auto release = majorMinor(version); release && *release >= std::pair{2, 2}) {
      return api::VALIDATE_CONTAINER_ADJUSTMENT;
    }
  }
  return api::REMOVE_CONTAINER;
}

bool nriTakesUnsolicitedUpdatesSafely(std::string_view nriVersion) {
  const std::vector<int> numbers = versionNumbers(nriVersion);
  return numbers.size() == 3 && numbers >= std::vector<int>{0, 12, 1};
}

bool runtimeStopsFailedSandboxes(std::string_view runtimeName, std::string_view runtimeVersion) {
  if (runtimeName != "containerd") return true;
  const std::vector<int> numbers = versionNumbers(runtimeVersion);
  return numbers.size() < 2 || numbers >= std::vector<int>{2, 2};
}

Result<int32_t> nriEventMask(const std::vector<api::Event>& handles, std::string_view runtimeName,
                             std::string_view runtimeVersion, std::string_view runtimeNriVersion) {
  const api::Event last = nriEventsKnownTo(runtimeName, runtimeVersion, runtimeNriVersion);
  int32_t mask = 0;
  for (api::Event event : handles) {
    if (event > last) {
      return Error::failedPrecondition(
          "the NRI of " + std::string(runtimeName) + " " + std::string(runtimeVersion) +
          (runtimeNriVersion.empty() ? "" : " (NRI " + std::string(runtimeNriVersion) + ")") + " does not know event " +
          api::Event_Name(event) + ", which the plugin handles");
    }
    mask |= 1 << (event - 1);  // NRI's bit for event e
  }
  return mask;
}

}  // namespace vri

// What is known of the runtimes' NRI versions: which events each knows (and so the event mask a
// plugin registers with), whether it takes unsolicited updates safely, and whether it cleans up a
// sandbox a plugin refused.
#pragma once

#include <string_view>
#include <vector>

#include "base/result.h"
#include "nri/nri_api.pb.h"

namespace vri {

// The last event the runtime's NRI knows, from its name, release and NRI version (empty when the
// runtime does not say: NRI before v0.12).
::nri::pkg::api::v1alpha1::Event nriEventsKnownTo(std::string_view runtimeName, std::string_view runtimeVersion,
                                                  std::string_view runtimeNriVersion);

// The event mask to answer Configure with for the events a plugin `handles`, for the runtime that
// configures it (its name, release and, from NRI v0.12, its NRI's version): refused when the
// runtime's NRI does not know one of them (NRI refuses an unknown event bit and the registration
// fails), saying which.
Result<int32_t> nriEventMask(const std::vector<::nri::pkg::api::v1alpha1::Event>& handles, std::string_view runtimeName,
                             std::string_view runtimeVersion, std::string_view runtimeNriVersion = {});

// Whether the runtime's NRI takes unsolicited UpdateContainers without risk of deadlocking the
// runtime: v0.12.1 and later (containerd#13733); unknown versions do not.
bool nriTakesUnsolicitedUpdatesSafely(std::string_view runtimeNriVersion);

// Whether the runtime stops a sandbox whose RunPodSandbox a plugin failed: containerd 2.0 and 2.1
// leave its pause process and runc shim running (containerd 2.2 added the cleanup); other runtimes
// are taken to clean up.
bool runtimeStopsFailedSandboxes(std::string_view runtimeName, std::string_view runtimeVersion);

// The version of NRI's API spoken here (nri/nri_api.proto), as a plugin tells the runtime.
inline constexpr char kNriApiVersion[] = "v0.12.3";

}  // namespace vri

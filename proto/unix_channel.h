// The one way a VRI program makes a gRPC channel to a unix socket: to vrid (its API), to the
// runtime (CRI) or to kubelet (pod resources). Each caller says what it needs; the channel
// arguments that follow from it are chosen here.
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace vri {

struct UnixChannelOptions {
  // The calling program, sent as the user agent ("vri-cri-shim/0.1.0-1"): vrid records which
  // client versions call it. None: gRPC's own.
  std::string_view program = {};
  // The peer restarts in about a second (vrid, kubelet, containerd): a call waits for it within its
  // deadline, reconnecting every 100 ms to 1 s, instead of failing on gRPC's default back-off of up
  // to 2 minutes.
  bool quickReconnect = false;
  // gRPC's own retries off: a call that fails is the caller's to judge at once (the hook).
  bool noRetries = false;
  // The largest message either way, when the default 4 MiB is too small.
  std::optional<int> messageLimit = std::nullopt;
};

std::shared_ptr<grpc::Channel> unixChannel(const std::string& socketPath, const UnixChannelOptions& options = {});

// A channel to vrid's API socket for `program`: quick to reconnect, with its user agent.
inline std::shared_ptr<grpc::Channel> vridChannel(const std::string& socketPath, std::string_view program) {
  return unixChannel(socketPath, {.program = program, .quickReconnect = true});
}

}  // namespace vri

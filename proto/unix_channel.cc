#include "proto/unix_channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "base/version.h"

namespace vri {

std::shared_ptr<grpc::Channel> unixChannel(const std::string& socketPath, const UnixChannelOptions& options) {
  grpc::ChannelArguments args;
  if (options.quickReconnect) {
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  }
  if (options.noRetries) args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  if (!options.program.empty()) args.SetUserAgentPrefix(clientUserAgent(options.program));
  if (options.messageLimit) {
    args.SetMaxReceiveMessageSize(*options.messageLimit);
    args.SetMaxSendMessageSize(*options.messageLimit);
  }
  return grpc::CreateCustomChannel("unix:" + socketPath, grpc::InsecureChannelCredentials(), args);
}

}  // namespace vri

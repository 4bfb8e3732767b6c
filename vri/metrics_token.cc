#include "vri/metrics_token.h"

#include "base/owned_path.h"

namespace vri {

namespace {
constexpr size_t kMinTokenBytes = 16;  // short enough to type, long enough not to guess
constexpr size_t kMaxTokenBytes = 4096;
}  // namespace

Result<std::string> readMetricsToken(const std::string& path) {
  VRI_ASSIGN_OR_RETURN(std::string token, readOwnedSecretFile(path, "metrics_token_file", kMaxTokenBytes + 2));
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  const std::string refuse = "metrics_token_file: " + path + " ";
  if (token.size() < kMinTokenBytes)
    return Error::invalidArgument(refuse + "holds " + std::to_string(token.size()) + " characters; a token needs " +
                                  std::to_string(kMinTokenBytes) +
                                  " or more (for example: head -c 32 /dev/urandom | "
                                  "base64 > " +
                                  path + ")");
  if (token.size() > kMaxTokenBytes)
    return Error::invalidArgument(refuse + "holds more than " + std::to_string(kMaxTokenBytes) + " characters");
  for (const char c : token) {
    if (c < 0x21 || c > 0x7e)
      return Error::invalidArgument(refuse + "must hold one line of visible ASCII characters (no spaces)");
  }
  return token;
}

}  // namespace vri

// KubeApi: HTTPS calls to the API server with libcurl, one connection kept between calls. Not for
// more than one thread at a time: the exporter calls it from its publishing thread alone.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/result.h"
#include "topology-export/kube_credentials.h"

namespace vri::topology_export {

struct HttpReply {
  long status = 0;  // 200, 201, 404, 409, ...
  std::string body;
};

class KubeApi {
 public:
  KubeApi(KubeCredentials credentials, std::chrono::milliseconds timeout);
  ~KubeApi();
  KubeApi(const KubeApi&) = delete;
  KubeApi& operator=(const KubeApi&) = delete;

  // One call; an HTTP status of any kind is a reply, a failure to get one (refused, timed out, a
  // certificate that does not verify) an error (kUnavailable, with curl's reason).
  Result<HttpReply> call(const std::string& method, const std::string& path, const std::string& body = "",
                         const std::string& contentType = "application/json");

  const std::string& server() const { return credentials_.server; }

 private:
  KubeCredentials credentials_;
  std::chrono::milliseconds timeout_;
  void* curl_;  // CURL*, kept so that calls reuse the connection
};

// "GET /apis/...: 403 Forbidden: <the Status object's message>", for a reply that is not a success.
Error httpError(const std::string& what, const HttpReply& reply);

}  // namespace vri::topology_export

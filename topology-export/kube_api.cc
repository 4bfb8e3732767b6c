#include "topology-export/kube_api.h"

#include <curl/curl.h>

#include <nlohmann/json.hpp>

namespace vri::topology_export {
namespace {

size_t appendBody(char* data, size_t size, size_t count, void* body) {
  static_cast<std::string*>(body)->append(data, size * count);
  return size * count;
}

void setBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(curl, option, &blob);
}

}  // namespace

KubeApi::KubeApi(KubeCredentials credentials, std::chrono::milliseconds timeout)
    : credentials_(std::move(credentials)), timeout_(timeout), curl_(curl_easy_init()) {}

KubeApi::~KubeApi() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Result<HttpReply> KubeApi::call(const std::string& method, const std::string& path, const std::string& body,
                                const std::string& contentType) {
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return Error(ErrorCode::kInternal, "libcurl could not start a session");
  curl_easy_reset(curl);
  HttpReply reply;
  const std::string url = credentials_.server + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, appendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  if (!credentials_.caPem.empty()) setBlob(curl, CURLOPT_CAINFO_BLOB, credentials_.caPem);
  if (credentials_.insecureSkipVerify) curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
  if (!credentials_.clientCertPem.empty()) {
    setBlob(curl, CURLOPT_SSLCERT_BLOB, credentials_.clientCertPem);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    setBlob(curl, CURLOPT_SSLKEY_BLOB, credentials_.clientKeyPem);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  const std::string type = "Content-Type: " + contentType;
  const std::string authorization = "Authorization: Bearer " + credentials_.bearerToken;
  if (!body.empty()) headers = curl_slist_append(headers, type.c_str());
  if (!credentials_.bearerToken.empty()) headers = curl_slist_append(headers, authorization.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  const CURLcode done = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (done != CURLE_OK) {
    return Error(ErrorCode::kUnavailable, method + " " + url + ": " + curl_easy_strerror(done));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

Error httpError(const std::string& what, const HttpReply& reply) {
  std::string message;
  const nlohmann::json status = nlohmann::json::parse(reply.body, nullptr, false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    message = status["message"].get<std::string>();
  } else {
    message = reply.body.substr(0, 200);
  }
  ErrorCode code = ErrorCode::kUnknown;
  switch (reply.status) {
    case 400:
    case 422: code = ErrorCode::kInvalidArgument; break;
    case 401: code = ErrorCode::kUnauthenticated; break;
    case 403: code = ErrorCode::kPermissionDenied; break;
    case 404: code = ErrorCode::kNotFound; break;
    case 409: code = ErrorCode::kAlreadyExists; break;
    case 429:
    case 500:
    case 502:
    case 503:
    case 504: code = ErrorCode::kUnavailable; break;
    default: break;
  }
  return Error(code, what + ": HTTP " + std::to_string(reply.status) + ": " + message);
}

}  // namespace vri::topology_export

#include "topology-export/kube_credentials.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace vri::topology_export {
namespace {

Result<std::string> readWhole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::notFound("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Standard base64 (RFC 4648), padding optional, as kubeconfig's *-data fields carry PEM.
Result<std::string> decodeBase64(const std::string& text) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z')
      value = c - 'A';
    else if (c >= 'a' && c <= 'z')
      value = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      value = c - '0' + 52;
    else if (c == '+')
      value = 62;
    else if (c == '/')
      value = 63;
    else if (c == '=' || c == '\n' || c == '\r')
      continue;
    else
      return Error::invalidArgument("not base64");
    bits = (bits << 6) | static_cast<uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

const YAML::Node namedEntry(const YAML::Node& list, const std::string& name, const char* field) {
  if (list.IsSequence()) {
    for (const YAML::Node& entry : list)
      if (entry["name"] && entry["name"].as<std::string>() == name) return entry[field];
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// The PEM of `<key>-data` (inline, base64) or `<key>` (a path, relative to the kubeconfig's folder).
Result<std::string> pemOf(const YAML::Node& section, const std::string& key, const std::filesystem::path& folder) {
  if (section[key + "-data"]) {
    auto pem = decodeBase64(section[key + "-data"].as<std::string>());
    if (!pem.ok()) return std::move(pem).error().addContext(key + "-data");
    return pem;
  }
  if (section[key]) {
    std::filesystem::path path = section[key].as<std::string>();
    if (path.is_relative()) path = folder / path;
    return readWhole(path);
  }
  return std::string();
}

}  // namespace

Result<KubeCredentials> readKubeconfig(const std::string& path) {
  auto text = readWhole(path);
  if (!text.ok()) return std::move(text).error();
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  try {
    const YAML::Node config = YAML::Load(*text);
    const std::string context = config["current-context"] ? config["current-context"].as<std::string>() : "";
    const YAML::Node selected = namedEntry(config["contexts"], context, "context");
    if (!selected) return Error::invalidArgument("kubeconfig " + path + ": no context '" + context + "'");
    const std::string clusterName = selected["cluster"] ? selected["cluster"].as<std::string>() : "";
    const std::string userName = selected["user"] ? selected["user"].as<std::string>() : "";
    const YAML::Node cluster = namedEntry(config["clusters"], clusterName, "cluster");
    if (!cluster || !cluster["server"]) {
      return Error::invalidArgument("kubeconfig " + path + ": no cluster '" + clusterName + "' with a server");
    }
    KubeCredentials credentials;
    credentials.server = cluster["server"].as<std::string>();
    if (!credentials.server.starts_with("https://")) {
      return Error::invalidArgument("kubeconfig " + path + ": the server " + credentials.server + " is not https://");
    }
    credentials.insecureSkipVerify =
        cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>();
    VRI_ASSIGN_OR_RETURN(credentials.caPem, pemOf(cluster, "certificate-authority", folder));
    const YAML::Node user = namedEntry(config["users"], userName, "user");
    if (user) {
      VRI_ASSIGN_OR_RETURN(credentials.clientCertPem, pemOf(user, "client-certificate", folder));
      VRI_ASSIGN_OR_RETURN(credentials.clientKeyPem, pemOf(user, "client-key", folder));
      if (user["token"]) credentials.bearerToken = user["token"].as<std::string>();
      if (user["tokenFile"]) {
        VRI_ASSIGN_OR_RETURN(credentials.bearerToken, readWhole(folder / user["tokenFile"].as<std::string>()));
      }
    }
    if (credentials.clientCertPem.empty() != credentials.clientKeyPem.empty()) {
      return Error::invalidArgument("kubeconfig " + path +
                                    ": a client certificate needs its key, and a key its certificate");
    }
    return credentials;
  } catch (const YAML::Exception& e) {
    return Error::invalidArgument("kubeconfig " + path + ": " + e.what());
  }
}

Result<KubeCredentials> inClusterCredentials(const std::string& root) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return Error::failedPrecondition("not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset");
  }
  KubeCredentials credentials;
  const std::string h = host;
  credentials.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  VRI_ASSIGN_OR_RETURN(credentials.bearerToken, readWhole(root + "/token"));
  VRI_ASSIGN_OR_RETURN(credentials.caPem, readWhole(root + "/ca.crt"));
  while (!credentials.bearerToken.empty() && std::isspace(static_cast<unsigned char>(credentials.bearerToken.back())))
    credentials.bearerToken.pop_back();
  return credentials;
}

}  // namespace vri::topology_export

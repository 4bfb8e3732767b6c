// How a node agent reaches the API server: a kubeconfig file (its current context's cluster and
// user), or, inside a pod, the service account's files and KUBERNETES_SERVICE_HOST/PORT.
#pragma once

#include <string>

#include "base/result.h"

namespace vri::topology_export {

struct KubeCredentials {
  std::string server;  // https://host:port
  // PEM: the CA that signed the server's certificate; the client's certificate and key. A path in
  // the kubeconfig is read in; inline data (…-data, base64) is decoded.
  std::string caPem;
  std::string clientCertPem;
  std::string clientKeyPem;
  std::string bearerToken;  // a token, when the user has one instead of a certificate
  bool insecureSkipVerify = false;
};

// The current context of the kubeconfig at `path` (its relative paths are taken from its folder).
Result<KubeCredentials> readKubeconfig(const std::string& path);

// A pod's own credentials: /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt} (under
// `root`, for tests) and the service's address from the environment.
Result<KubeCredentials> inClusterCredentials(const std::string& root = "/var/run/secrets/kubernetes.io/serviceaccount");

}  // namespace vri::topology_export

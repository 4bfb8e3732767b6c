// Credentials as a node agent finds them: a kubeconfig's current context (paths relative to its
// folder, or inline base64 data, or a token), or a pod's service-account files; and the refusals.
#include "topology-export/kube_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace vri::topology_export {
namespace {

using ::testing::HasSubstr;

class KubeCredentialsTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(tmp_.sub(name)).parent_path());
    std::ofstream(tmp_.sub(name)) << text;
    return tmp_.sub(name);
  }
  testing::TempDir tmp_;
};

TEST_F(KubeCredentialsTest, TheCurrentContextsClusterAndUserWithPathsFromTheFilesFolder) {
  write("pki/ca.crt", "CA PEM");
  write("pki/me.crt", "CERT PEM");
  write("pki/me.key", "KEY PEM");
  const std::string path = write("kube/config", R"(apiVersion: v1
kind: Config
clusters:
- name: other
  cluster: {server: "https://other:6443"}
- name: main
  cluster: {server: "https://10.0.0.1:6443", certificate-authority: ../pki/ca.crt}
users:
- name: me
  user: {client-certificate: ../pki/me.crt, client-key: ../pki/me.key}
contexts:
- name: a
  context: {cluster: other, user: me}
- name: b
  context: {cluster: main, user: me}
current-context: b
)");
  auto credentials = readKubeconfig(path);
  ASSERT_TRUE(credentials.ok()) << credentials.error().message();
  EXPECT_EQ(credentials->server, "https://10.0.0.1:6443");
  EXPECT_EQ(credentials->caPem, "CA PEM");
  EXPECT_EQ(credentials->clientCertPem, "CERT PEM");
  EXPECT_EQ(credentials->clientKeyPem, "KEY PEM");
  EXPECT_EQ(credentials->bearerToken, "");
}

TEST_F(KubeCredentialsTest, InlineDataIsDecodedAndATokenTaken) {
  // base64 of "CA PEM\n"
  const std::string path = write("config", R"(clusters:
- name: c
  cluster: {server: "https://api:443", certificate-authority-data: Q0EgUEVNCg==}
users:
- name: u
  user: {token: abc.def}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
)");
  auto credentials = readKubeconfig(path);
  ASSERT_TRUE(credentials.ok()) << credentials.error().message();
  EXPECT_EQ(credentials->caPem, "CA PEM\n");
  EXPECT_EQ(credentials->bearerToken, "abc.def");
}

TEST_F(KubeCredentialsTest, RefusesWhatCannotReachTheServerSafely) {
  const auto refusal = [&](const std::string& text) {
    auto credentials = readKubeconfig(write("bad", text));
    return credentials.ok() ? std::string("accepted") : credentials.error().message();
  };
  EXPECT_THAT(refusal("current-context: none\ncontexts: []\n"), HasSubstr("no context 'none'"));
  EXPECT_THAT(refusal("clusters:\n- {name: c, cluster: {server: 'http://api:80'}}\n"
                      "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
              HasSubstr("is not https://"));
  EXPECT_THAT(refusal("clusters:\n- {name: c, cluster: {server: 'https://api'}}\n"
                      "users:\n- {name: u, user: {client-certificate-data: Q0E=}}\n"
                      "contexts:\n- {name: x, context: {cluster: c, user: u}}\ncurrent-context: x\n"),
              HasSubstr("needs its key"));
  EXPECT_THAT(refusal("clusters:\n- {name: c, cluster: {server: 'https://api', certificate-authority-data: '%%'}}\n"
                      "contexts:\n- {name: x, context: {cluster: c}}\ncurrent-context: x\n"),
              HasSubstr("not base64"));
  EXPECT_THAT(refusal("clusters: [\n"), HasSubstr("kubeconfig"));
  EXPECT_THAT(readKubeconfig(tmp_.sub("absent")).error().message(), HasSubstr("cannot read"));
}

TEST_F(KubeCredentialsTest, APodsServiceAccount) {
  write("sa/token", "tok\n");
  write("sa/ca.crt", "CA");
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto credentials = inClusterCredentials(tmp_.sub("sa"));
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(credentials.ok()) << credentials.error().message();
  EXPECT_EQ(credentials->server, "https://[fd00::1]:443");
  EXPECT_EQ(credentials->bearerToken, "tok");
  EXPECT_EQ(credentials->caPem, "CA");
  EXPECT_THAT(inClusterCredentials(tmp_.sub("sa")).error().message(), HasSubstr("not in a pod"));
}

}  // namespace
}  // namespace vri::topology_export

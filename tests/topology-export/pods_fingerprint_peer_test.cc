// The pods fingerprint against the scheduler plugin's own computation: the Go peer
// tests/peers/podfingerprint (scripts/build-peers.sh), which prints what
// github.com/k8stopologyawareschedwg/podfingerprint signs for the pods on its command line. Sets of
// every size a node has, names as Kubernetes allows them (DNS labels and subdomains) and some it
// does not, to show the hash takes any bytes alike.
#include <gtest/gtest.h>

#include <random>

#include "tests/support/temp_dir.h"
#include "tests/vri/vrid_process.h"
#include "topology-export/pods_fingerprint.h"

namespace vri::topology_export {
namespace {

std::string peer() {
  const char* peers = std::getenv("VRI_PEERS_DIR");
  if (peers == nullptr || *peers == '\0') {
    ADD_FAILURE() << "VRI_PEERS_DIR is not set: the podfingerprint peer is built by scripts/build-peers.sh";
    return "";
  }
  const std::string path = std::string(peers) + "/podfingerprint/podfingerprint";
  if (::access(path.c_str(), X_OK) != 0) ADD_FAILURE() << "no " << path << ": build it with scripts/build-peers.sh";
  return path;
}

std::string peersFingerprint(const std::vector<PodName>& pods) {
  testing::TempDir tmp;
  std::vector<std::string> argv{peer()};
  for (const PodName& pod : pods) argv.push_back(pod.name_space + "/" + pod.name);
  std::string out;
  EXPECT_EQ(testing::runCommand(argv, &out, tmp.sub("out")), 0) << out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string randomName(std::mt19937& random, size_t maxLength) {
  static const std::string kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789-.";
  std::string name(1 + random() % maxLength, 'a');
  for (char& c : name) c = kAlphabet[random() % kAlphabet.size()];
  return name;
}

TEST(PodsFingerprintPeerTest, EqualsTheSchedulerPluginsForSetsOfEverySize) {
  std::mt19937 random(20261128);
  for (size_t size : {0, 1, 2, 3, 7, 16, 110, 250}) {
    std::vector<PodName> pods;
    for (size_t i = 0; i < size; ++i) pods.push_back({randomName(random, 63), randomName(random, 253)});
    EXPECT_EQ(podsFingerprint(pods), peersFingerprint(pods)) << size << " pods";
  }
}

TEST(PodsFingerprintPeerTest, EqualsTheSchedulerPluginsForUnusualNames) {
  const std::vector<std::vector<PodName>> sets = {
      {{"default", "web-0"}},
      {{"kube-system", "etcd-node-1"}, {"kube-system", "kube-apiserver-node-1"}},
      {{"a", std::string(253, 'x')}, {std::string(63, 'n'), "b"}},
      {{"ns", "n\xc3\xa9"}, {"ns", "with space"}, {"ns", "0"}},
      {{"default", "a"}, {"default", "a"}},  // the same pod twice counts twice, as the plugin counts it
  };
  for (const auto& pods : sets) EXPECT_EQ(podsFingerprint(pods), peersFingerprint(pods));
}

}  // namespace
}  // namespace vri::topology_export

// vri-nrt-exporter: the node's NodeResourceTopology object, kept in line with vrid's ledger
// (topology-export/topology_exporter.h). It reads vrid on its read-only socket and writes the one
// object named after the node; it needs no other permission than on noderesourcetopologies.
//
//   vri-nrt-exporter [--node-name=NAME] [--kubeconfig=PATH] [--vrid=/run/vri/vri.sock]
//                    [--min-interval-ms=200] [--retry-ms=1000] [--api-timeout-ms=5000]
//                    [--evict-after-refusals=N]
//   vri-nrt-exporter --delete [--node-name=NAME] [--kubeconfig=PATH]
//
// The node's name may also come from VRI_NODE_NAME (the unit's /etc/vri/nrt-exporter.env).
// Without --kubeconfig it takes a pod's service-account credentials. SIGTERM or SIGINT stops it;
// the object stays (it goes stale: see docs/operating.md); --delete removes it, as the package's removal
// does. With --evict-after-refusals, a pod VRI refuses that many times in a row is evicted
// (topology-export/refused_pod_evictor.h; deploy/refused-pod-evictor-rbac.yaml's rights).
#include <curl/curl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <thread>

#include "base/version.h"
#include "kubelet-bridge/grpc_vrid_client.h"
#include "kubelet-bridge/program_log.h"
#include "proto/unix_channel.h"
#include "topology-export/refused_pod_evictor.h"
#include "topology-export/topology_exporter.h"

namespace {

void logLine(const std::string& line) { vri::logProgramLine("vri-nrt-exporter", line); }

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  if (vri::answeredVersion(argc, argv, "vri-nrt-exporter")) return 0;
  CLI::App app{"The node's NodeResourceTopology object, kept in line with vrid's ledger", "vri-nrt-exporter"};
  std::string nodeName = hostName();
  std::string kubeconfig;
  std::string vrid = "/run/vri/vri.sock";
  bool remove = false;
  int minIntervalMs = 200, retryMs = 1000, apiTimeoutMs = 5000, evictAfter = 0;
  app.add_option("--node-name", nodeName, "the Node's name, and the object's (default: the host name)")
      ->envname("VRI_NODE_NAME");
  app.add_option("--kubeconfig", kubeconfig, "credentials for the API server (default: the pod's service account)");
  app.add_option("--vrid", vrid, "vrid's read-only socket")
      ->check(CLI::Validator([](const std::string& path) { return path.starts_with("/") ? "" : "an absolute path"; },
                             "PATH"));
  app.add_option("--min-interval-ms", minIntervalMs, "the least time between two writes")->check(CLI::Range(1, 60000));
  app.add_option("--retry-ms", retryMs, "the wait after a failed read or write")->check(CLI::Range(1, 600000));
  app.add_option("--api-timeout-ms", apiTimeoutMs, "each call to the API server")->check(CLI::Range(1, 600000));
  app.add_option(
         "--evict-after-refusals", evictAfter,
         "evict a pod VRI refuses this many times in a row, for its controller to place it elsewhere (0: never)")
      ->check(CLI::Range(0, 1000))
      ->envname("VRI_EVICT_AFTER_REFUSALS");
  app.add_flag("--delete", remove, "delete the node's object and exit");
  CLI11_PARSE(app, argc, argv);

  if (auto named = vri::topology_export::checkNodeName(nodeName); !named.ok()) {
    std::fprintf(stderr, "vri-nrt-exporter: %s\n", named.error().message().c_str());
    return 2;
  }
  auto credentials = kubeconfig.empty() ? vri::topology_export::inClusterCredentials()
                                        : vri::topology_export::readKubeconfig(kubeconfig);
  if (!credentials.ok()) {
    std::fprintf(stderr, "vri-nrt-exporter: %s\n", credentials.error().message().c_str());
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);  // before any thread: libcurl's own setup is not thread-safe
  vri::topology_export::KubeApi api(*credentials, std::chrono::milliseconds(apiTimeoutMs));
  vri::topology_export::KubeApi evictorApi(std::move(credentials).value(), std::chrono::milliseconds(apiTimeoutMs));

  if (remove) {
    const auto deleted = vri::topology_export::deleteTopologyObject(api, nodeName);
    if (!deleted.ok()) {
      std::fprintf(stderr, "vri-nrt-exporter: %s\n", deleted.error().message().c_str());
      return 1;
    }
    logLine("deleted NodeResourceTopology " + nodeName + " (if it was there)");
    return 0;
  }

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  vri::GrpcVridClient vridClient(vri::vridChannel(vrid, "vri-nrt-exporter"));
  vri::topology_export::TopologyExporterOptions options;
  options.nodeName = nodeName;
  options.minInterval = std::chrono::milliseconds(minIntervalMs);
  options.retryInterval = std::chrono::milliseconds(retryMs);
  options.log = logLine;
  vri::GrpcVridClient evictorVrid(vri::vridChannel(vrid, "vri-nrt-exporter"));
  vri::topology_export::RefusedPodEvictorOptions evicting;
  evicting.nodeName = nodeName;
  evicting.refusals = evictAfter;
  evicting.log = logLine;
  vri::topology_export::RefusedPodEvictor evictor(evictorVrid, evictorApi, evicting);
  if (evictAfter > 0) {
    evictor.start();
    options.onEvent = [&evictor](const vri::v1::Event& event) { evictor.onEvent(event); };
    logLine("evicting a pod VRI refuses " + std::to_string(evictAfter) + " times in a row");
  }
  vri::topology_export::TopologyExporter exporter(vridClient, api, options);
  std::thread publishing([&] { exporter.run(); });
  logLine("exporting NodeResourceTopology " + nodeName + " to " + api.server() + "; vrid at " + vrid);
  int signal = 0;
  sigwait(&stop, &signal);
  exporter.stop();
  publishing.join();
  const auto c = exporter.counters();
  logLine(std::string("stopping on ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT") + ": " + std::to_string(c.events) +
          " events, " + std::to_string(c.passes) + " objects built, " + std::to_string(c.writes) + " written, " +
          std::to_string(c.unchanged) + " unchanged, " + std::to_string(c.failures) + " failures");
  return 0;
}

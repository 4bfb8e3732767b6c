// TopologyExporter: keeps the node's NodeResourceTopology object in line with vrid's ledger.
//
// One thread follows vrid's events (Watch, on the read-only socket): every event marks the object
// stale. The publishing thread (run()) then reads the node and its pods from vrid, builds the
// object and writes it if it differs from what it last wrote: decisions that come faster than
// `minInterval` are coalesced into one write, so the API server sees at most 1 s / minInterval
// writes a second, however fast vrid decides. vrid never waits for any of it: the exporter is a
// reader of vrid, in its own process. While the API server is away the object stays stale and is
// written again every `retryInterval` until a write lands; while vrid is away the object stays as
// it was (stale, not wrong in shape) and is rebuilt when vrid is back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kubelet-bridge/vrid_client.h"
#include "topology-export/kube_api.h"

namespace vri::topology_export {

struct TopologyExporterOptions {
  std::string nodeName;
  std::chrono::milliseconds minInterval{200};     // between two writes: at most 5 a second
  std::chrono::milliseconds retryInterval{1000};  // after a failed write or read
  std::chrono::milliseconds vridTimeout{2000};    // per call to vrid
  // Each of vrid's events as it comes, on the thread that follows them: must not block.
  std::function<void(const v1::Event&)> onEvent = [](const v1::Event&) {};
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

struct ExporterCounters {
  uint64_t events = 0;     // vrid's events seen
  uint64_t passes = 0;     // objects built
  uint64_t writes = 0;     // objects written (created or patched)
  uint64_t unchanged = 0;  // objects built equal to the last written: no write
  uint64_t failures = 0;   // reads from vrid or writes to the API server that failed
};

// The object's path on the API server; its collection's path.
std::string topologyObjectPath(const std::string& nodeName);
inline constexpr const char* kTopologyCollectionPath = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies";

// A node's name as Kubernetes allows it (a DNS subdomain: lowercase letters, digits, '-' and '.',
// at most 253, starting and ending with a letter or digit).
Result<void> checkNodeName(const std::string& name);

class TopologyExporter {
 public:
  TopologyExporter(VridClient& vrid, KubeApi& api, TopologyExporterOptions options);
  ~TopologyExporter();

  // Publishes until stop(); follows vrid's events on a thread of its own meanwhile.
  void run();
  void stop();
  ExporterCounters counters() const;

 private:
  void followEvents();
  Result<void> publishOnce();
  Result<void> write(const std::string& body);

  VridClient& vrid_;
  KubeApi& api_;
  TopologyExporterOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stale_ = true;  // the first pass writes, whatever the object says now
  bool stopping_ = false;
  EventStream* stream_ = nullptr;  // the one being followed, to cancel on stop
  ExporterCounters counters_;
  std::string lastWritten_;  // the body of the last write that landed
  std::thread follower_;
};

// Deletes the node's object; absent already counts as done.
Result<void> deleteTopologyObject(KubeApi& api, const std::string& nodeName);

}  // namespace vri::topology_export

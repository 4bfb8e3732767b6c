// Decision-to-object time of vri-nrt-exporter: from a decision's answer in vrid until the node's
// NodeResourceTopology object in the API server says it, at N live tenants while pods come and go.
//
//   nrt_export_latency [--vrid PATH] [--exporter PATH] [--cluster-dir /run/vri-test-cluster]
//                      [--tenants 100,1000] [--rate 20] [--seconds 20] [--poll-ms 10]
//
// Needs the control plane of tests/cluster/cluster-fixture.sh (`up`): the exporter writes with the
// fixture's nrt-exporter.kubeconfig (deploy/nrt-exporter-rbac.yaml's rights), this program reads
// with admin.kubeconfig. Per configuration: vrid on a synthetic 64-CPU machine (cgroups that do not
// exist) holding N tenants (three Burstable pods to one Guaranteed one of 50m), the exporter
// following it; then for --seconds, --rate decisions a second, each releasing a Guaranteed pod or
// admitting a new one, so that every decision changes the object's pods fingerprint. A reader polls
// the object every --poll-ms; a decision's time is from its answer until the first object that
// says it or a later decision (coalesced writes skip the states between). The floor beside it: one
// GET of the object (what reading, and about what one write, costs here) and the exporter's
// --min-interval-ms (200), the most a decision waits behind the previous write.
//
// The last lines are one JSON object per configuration.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/vri.grpc.pb.h"
#include "topology-export/kube_api.h"
#include "topology-export/kube_credentials.h"
#include "topology-export/pods_fingerprint.h"

namespace {

using Clock = std::chrono::steady_clock;
using vri::topology_export::PodName;

struct Options {
  std::string vrid, exporter;
  std::string clusterDir = "/run/vri-test-cluster";
  std::vector<int> tenants{100, 1000};
  int rate = 20;
  int seconds = 20;
  int pollMs = 10;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "nrt_export_latency: %s\n", message.c_str());
  return 1;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(static_cast<double>(values.size()) * p))];
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* out = std::freopen(log.c_str(), "a", stderr);
    if (out == nullptr || ::dup2(::fileno(stderr), 1) < 0) ::_exit(126);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

void stop(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One pod of the churn: Guaranteed ones are in the fingerprint, Burstable ones only load the ledger.
class Pods {
 public:
  explicit Pods(vri::v1::Vri::Stub& admin) : admin_(admin) {}

  bool admit(bool guaranteed) {
    const int n = next_++;
    char uid[40];
    std::snprintf(uid, sizeof uid, "6b000000-0000-4000-8000-%012d", n);
    vri::v1::AdmitContainerRequest request;
    request.set_pod_uid(uid);
    request.set_pod_name("bench/pod-" + std::to_string(n));
    request.set_qos(guaranteed ? vri::v1::GUARANTEED : vri::v1::BURSTABLE);
    request.set_container_name("app");
    request.set_container_id("c-" + std::to_string(n));
    request.set_cpu_request_milli(guaranteed ? 50 : 20);
    request.set_cpu_limit_milli(guaranteed ? 50 : 0);
    request.set_memory_limit_bytes(guaranteed ? 16ULL << 20 : 0);
    grpc::ClientContext context;
    vri::v1::ContainerAllocation placed;
    if (const grpc::Status status = admin_.AdmitContainer(&context, request, &placed); !status.ok()) {
      lastError = status.error_message();
      return false;
    }
    if (guaranteed) guaranteed_.push_back({uid, "pod-" + std::to_string(n)});
    return true;
  }
  bool releaseOldestGuaranteed() {
    if (guaranteed_.empty()) return false;
    vri::v1::ReleasePodRequest request;
    request.set_pod_uid(guaranteed_.front().first);
    grpc::ClientContext context;
    vri::v1::Released released;
    if (!admin_.ReleasePod(&context, request, &released).ok()) return false;
    guaranteed_.erase(guaranteed_.begin());
    return true;
  }
  std::string lastError;  // vrid's reason for the last refusal

  std::string fingerprint() const {
    std::vector<PodName> names;
    for (const auto& [uid, name] : guaranteed_) names.push_back({"bench", name});
    return vri::topology_export::podsFingerprint(names);
  }

 private:
  vri::v1::Vri::Stub& admin_;
  int next_ = 0;
  std::vector<std::pair<std::string, std::string>> guaranteed_;  // uid, name; oldest first
};

// The object's fingerprint as the API server has it now, and what the GET took.
struct Reading {
  Clock::time_point at;
  std::string fingerprint;
  double getMs = 0;
};

Reading readObject(vri::topology_export::KubeApi& api, const std::string& node) {
  const auto start = Clock::now();
  auto reply = api.call("GET", "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/" + node);
  Reading r{Clock::now(), "", std::chrono::duration<double, std::milli>(Clock::now() - start).count()};
  if (!reply.ok() || reply->status != 200) return r;
  const auto object = nlohmann::json::parse(reply->body, nullptr, false);
  if (!object.is_object() || !object.contains("attributes")) return r;
  for (const auto& a : object["attributes"])
    if (a.value("name", "") == "nodeTopologyPodsFingerprint") r.fingerprint = a.value("value", "");
  return r;
}

struct Figures {
  int decisions = 0, failures = 0, unseen = 0;
  double p50Ms = 0, p99Ms = 0, maxMs = 0, getP50Ms = 0;
  long writes = -1;
};

Figures runConfiguration(const Options& o, int tenants, vri::topology_export::KubeApi& reader, std::string* error) {
  Figures f;
  char pattern[] = "/var/tmp/nrt-export-latency-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    *error = "mkdtemp failed";
    return f;
  }
  const std::string dir = pattern;
  const std::string node = "vri-bench-" + std::to_string(::getpid()) + "-" + std::to_string(tenants);
  std::ofstream(dir + "/vrid.conf").close();
  ::chmod((dir + "/vrid.conf").c_str(), 0600);
  const pid_t vrid =
      spawn({o.vrid, "--config=" + dir + "/vrid.conf", "--topology=synthetic:pack:2 numa:2(memory=16GiB) core:16 pu:2",
             "--state-dir=" + dir + "/state", "--socket=" + dir + "/ro.sock", "--admin-socket=" + dir + "/admin.sock",
             "--kubelet-cgroup-root=/nrt-bench-absent", "--machine-partition=nrt-bench-absent/machine",
             "--libvirt-layout=no-systemd", "--libvirt-uri=", "--log-level=warning", "--reconcile-interval=0"},
            dir + "/vrid.log");
  auto channel = grpc::CreateChannel("unix:" + dir + "/admin.sock", grpc::InsecureChannelCredentials());
  pid_t exporter = -1;
  const auto cleanUp = [&] {
    stop(exporter);
    stop(vrid);
    spawn({o.exporter, "--delete", "--node-name=" + node, "--kubeconfig=" + o.clusterDir + "/nrt-exporter.kubeconfig"},
          dir + "/delete.log");
    ::wait(nullptr);
    std::filesystem::remove_all(dir);
  };
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    *error = "vrid did not come up: " + readFile(dir + "/vrid.log");
    cleanUp();
    return f;
  }
  auto admin = vri::v1::Vri::NewStub(channel);
  Pods pods(*admin);
  for (int i = 0; i < tenants; ++i) {
    if (!pods.admit(i % 4 == 0)) {
      *error = "admitting tenant " + std::to_string(i) + " failed: " + pods.lastError;
      cleanUp();
      return f;
    }
  }
  exporter = spawn({o.exporter, "--node-name=" + node, "--kubeconfig=" + o.clusterDir + "/nrt-exporter.kubeconfig",
                    "--vrid=" + dir + "/ro.sock", "--retry-ms=200"},
                   dir + "/exporter.log");
  const std::string first = pods.fingerprint();
  const auto settle = Clock::now() + std::chrono::seconds(30);
  while (readObject(reader, node).fingerprint != first) {
    if (Clock::now() > settle) {
      *error = "the first object never came: " + readFile(dir + "/exporter.log");
      cleanUp();
      return f;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(o.pollMs));
  }

  // The reader's view, meanwhile: every object it saw, with when.
  std::mutex mutex;
  std::vector<Reading> readings;
  std::atomic<bool> churning{true};
  std::thread poller([&] {
    while (churning) {
      Reading r = readObject(reader, node);
      {
        std::lock_guard lock(mutex);
        readings.push_back(std::move(r));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(o.pollMs));
    }
  });
  std::map<std::string, int> decisionOf;  // fingerprint -> the decision that made it
  std::vector<Clock::time_point> answered;
  const auto period = std::chrono::microseconds(1000000 / std::max(1, o.rate));
  auto due = Clock::now();
  const auto end = due + std::chrono::seconds(o.seconds);
  for (int n = 0; Clock::now() < end; ++n) {
    std::this_thread::sleep_until(due);
    due += period;
    const bool ok = n % 2 == 0 ? pods.releaseOldestGuaranteed() : pods.admit(true);
    if (!ok) {
      ++f.failures;
      continue;
    }
    decisionOf[pods.fingerprint()] = static_cast<int>(answered.size());
    answered.push_back(Clock::now());
  }
  const std::string last = pods.fingerprint();
  const auto drain = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    {
      std::lock_guard lock(mutex);
      if (!readings.empty() && readings.back().fingerprint == last) break;
    }
    if (Clock::now() > drain) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(o.pollMs));
  }
  churning = false;
  poller.join();

  // Each decision: the first reading after its answer that says it or a later one.
  std::vector<double> latencies, gets;
  size_t r = 0;
  for (size_t d = 0; d < answered.size(); ++d) {
    while (r < readings.size()) {
      const auto it = decisionOf.find(readings[r].fingerprint);
      if (readings[r].at >= answered[d] && it != decisionOf.end() && static_cast<size_t>(it->second) >= d) break;
      ++r;
    }
    if (r == readings.size()) {
      ++f.unseen;
      continue;
    }
    latencies.push_back(std::chrono::duration<double, std::milli>(readings[r].at - answered[d]).count());
  }
  for (const Reading& reading : readings) gets.push_back(reading.getMs);
  f.decisions = static_cast<int>(answered.size());
  f.p50Ms = percentile(latencies, 0.5);
  f.p99Ms = percentile(latencies, 0.99);
  f.maxMs = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  f.getP50Ms = percentile(gets, 0.5);
  stop(exporter);
  exporter = -1;
  const std::string log = readFile(dir + "/exporter.log");
  if (const size_t at = log.rfind(" written, "); at != std::string::npos) {
    const size_t from = log.rfind(", ", at - 1);
    if (from != std::string::npos) f.writes = std::stol(log.substr(from + 2, at - from - 2));
  }
  cleanUp();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const auto build = std::filesystem::canonical("/proc/self/exe").parent_path().parent_path();
  o.vrid = (build / "vri/vrid").string();
  o.exporter = (build / "topology-export/vri-nrt-exporter").string();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq), value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return fail("no value for " + flag);
    }
    if (flag == "--vrid") {
      o.vrid = value;
    } else if (flag == "--exporter") {
      o.exporter = value;
    } else if (flag == "--cluster-dir") {
      o.clusterDir = value;
    } else if (flag == "--tenants") {
      o.tenants.clear();
      std::stringstream list(value);
      for (std::string n; std::getline(list, n, ',');) o.tenants.push_back(std::stoi(n));
    } else if (flag == "--rate") {
      o.rate = std::max(1, std::stoi(value));
    } else if (flag == "--seconds") {
      o.seconds = std::max(1, std::stoi(value));
    } else if (flag == "--poll-ms") {
      o.pollMs = std::max(1, std::stoi(value));
    } else {
      return fail("unknown flag " + flag);
    }
  }
  auto credentials = vri::topology_export::readKubeconfig(o.clusterDir + "/admin.kubeconfig");
  if (!credentials.ok()) {
    return fail(credentials.error().message() + " (start the control plane: tests/cluster/cluster-fixture.sh up)");
  }
  vri::topology_export::KubeApi reader(std::move(*credentials), std::chrono::seconds(5));

  std::vector<std::string> lines;
  for (int tenants : o.tenants) {
    std::string error;
    const Figures f = runConfiguration(o, tenants, reader, &error);
    if (!error.empty()) return fail(std::to_string(tenants) + " tenants: " + error);
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"bench\":\"nrt_export_latency\",\"tenants\":%d,\"rate_per_s\":%d,\"seconds\":%d,"
                  "\"decisions\":%d,\"failed\":%d,\"unseen\":%d,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"max_ms\":%.1f,"
                  "\"writes\":%ld,\"poll_ms\":%d,\"floor_get_p50_ms\":%.2f,\"floor_min_interval_ms\":200}",
                  tenants, o.rate, o.seconds, f.decisions, f.failures, f.unseen, f.p50Ms, f.p99Ms, f.maxMs, f.writes,
                  o.pollMs, f.getP50Ms);
    std::printf("%d tenants: %d decisions, decision to object p50 %.1f ms, p99 %.1f ms, max %.1f ms; %ld writes\n",
                tenants, f.decisions, f.p50Ms, f.p99Ms, f.maxMs, f.writes);
    lines.push_back(line);
  }
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  return 0;
}

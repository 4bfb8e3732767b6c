// vri-nri-plugin's Synchronize against the number of pods the runtime reports: the time from the
// last part to the answer (NRI gives the request 2 s; the plugin's budget is half), and until the
// ledger sync that did not fit in the answer is done. The plugin runs in this process on a real unix
// socket, the runtime's side written as containerd's NRI writes it (tests/support/nri_runtime_peer.h);
// vrid is the in-memory one of the unit tests (tests/support/fake_vrid.h), whose AdmitPod takes
// --admit-ms (what a real vrid's admission costs on the node; 0: the plugin's own work alone).
//
//   nri_sync_scale [--pods=1000,10000,30000] [--admit-ms=0,1] [--part-pods=1000]
//
// Each configuration: vrid knows none of the pods (all adopted) and knows all of them (a plugin
// restart). Last lines: one JSON object per configuration.
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kubelet-bridge/nri-plugin/nri_plugin.h"
#include "tests/support/fake_vrid.h"
#include "tests/support/nri_runtime_peer.h"

namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using Clock = std::chrono::steady_clock;
constexpr char kPlugin[] = "nri.pkg.api.v1alpha1.Plugin";

std::vector<int> numbers(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

std::string uidOf(int n) {
  char uid[40];
  std::snprintf(uid, sizeof uid, "0b1c2d3e-0000-4000-8000-%012d", n);
  return uid;
}

api::PodSandbox pod(int n) {
  api::PodSandbox p;
  p.set_id("sandbox-" + std::to_string(n));
  p.set_uid(uidOf(n));
  p.set_name("pod-" + std::to_string(n));
  p.set_namespace_("default");
  (*p.mutable_labels())["io.kubernetes.pod.uid"] = p.uid();
  p.mutable_linux()->set_cgroup_parent("/kubepods/burstable/pod" + p.uid());
  return p;
}

struct Figures {
  double answerMs = -1;  // last part sent → answer read
  double doneMs = -1;    // last part sent → "the ledger sync is done" (or the answer, when it all fit)
  size_t adoptedByAnswer = 0;
  bool answered = false;
};

class Bench {
 public:
  explicit Bench(std::string dir) : dir_(std::move(dir)) {}

  Figures run(int pods, int admitMs, int partPods, bool vridKnowsThem) {
    vri::testing::FakeVrid vrid;
    vrid.slowPodAdmits(std::chrono::milliseconds(admitMs));
    for (int n = 0; n < pods && vridKnowsThem; ++n) vrid.holdPod(uidOf(n), "sandbox-" + std::to_string(n), {});
    const std::string path = dir_ + "/nri.sock";
    ::unlink(path.c_str());
    const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 1) != 0) {
      std::perror("nri_sync_scale: the socket");
      std::exit(1);
    }
    std::mutex logMutex;
    std::condition_variable logged;
    bool deferred = false;
    Clock::time_point done{};
    vri::NriPluginOptions options;
    options.socket = path;
    options.log = [&](const std::string& line) {
      std::lock_guard lock(logMutex);
      if (line.find("goes on after Synchronize's answer") != std::string::npos) deferred = true;
      if (line.find("the ledger sync is done") != std::string::npos) done = Clock::now();
      logged.notify_all();
    };
    vri::NriPlugin plugin(vrid, options);
    std::thread session([&] { (void)plugin.runOnce(); });
    vri::testing::NriRuntimePeer runtime(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    Figures f;
    auto registering = runtime.next();
    api::ConfigureRequest configure;
    configure.set_runtime_name("containerd");
    configure.set_runtime_version("v2.2.9");
    configure.set_nri_version("v0.12.3");
    runtime.request(1, kPlugin, "Configure", configure.SerializeAsString(), std::chrono::seconds(2));
    answer(runtime, 1);
    uint32_t stream = 3;
    Clock::time_point last{};
    for (int first = 0; first < pods || first == 0; first += partPods) {
      api::SynchronizeRequest part;
      for (int n = first; n < std::min(pods, first + partPods); ++n) *part.add_pods() = pod(n);
      const bool more = first + partPods < pods;
      part.set_more(more);
      last = Clock::now();
      runtime.request(stream, kPlugin, "Synchronize", part.SerializeAsString(), std::chrono::seconds(2));
      f.answered = answer(runtime, stream);
      stream += 2;
      if (!more) break;
    }
    f.answerMs = std::chrono::duration<double, std::milli>(Clock::now() - last).count();
    f.adoptedByAnswer = vrid.podAdmits().size();
    if (registering) runtime.respond(registering->message.streamId, api::Empty().SerializeAsString());
    // The rest between requests: the runtime is idle, as after a registration.
    {
      std::unique_lock lock(logMutex);
      if (deferred) logged.wait_for(lock, std::chrono::minutes(5), [&] { return done != Clock::time_point{}; });
      const Clock::time_point end = deferred ? done
                                             : last + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double, std::milli>(f.answerMs));
      f.doneMs = end == Clock::time_point{} ? -1 : std::chrono::duration<double, std::milli>(end - last).count();
    }
    plugin.stop();
    session.join();
    ::close(listener);
    return f;
  }

 private:
  // The plugin's answer on `stream`, past its unsolicited updates; false when none came.
  static bool answer(vri::testing::NriRuntimePeer& runtime, uint32_t stream) {
    while (auto got = runtime.next(std::chrono::seconds(30))) {
      if (got->conn == vri::nri::kRuntimeServiceConn) {
        runtime.respond(got->message.streamId, api::UpdateContainersResponse().SerializeAsString());
        continue;
      }
      if (got->message.streamId != stream) continue;
      vri::ttrpc::Response response;
      return response.ParseFromString(got->message.payload) && response.status().code() == 0;
    }
    return false;
  }
  const std::string dir_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string podsList = "1000,10000,30000", admitList = "0,1";
  int partPods = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--pods=", 0) == 0)
      podsList = arg.substr(7);
    else if (arg.rfind("--admit-ms=", 0) == 0)
      admitList = arg.substr(11);
    else if (arg.rfind("--part-pods=", 0) == 0)
      partPods = std::atoi(arg.c_str() + 12);
    else {
      std::fprintf(stderr, "usage: nri_sync_scale [--pods=N,...] [--admit-ms=N,...] [--part-pods=N]\n");
      return 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);  // as vri-nri-plugin does: a runtime that went away is an error, not a kill
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  char dirTemplate[] = "/tmp/nri-sync-scale.XXXXXX";
  const char* dir = ::mkdtemp(dirTemplate);
  if (dir == nullptr) return 1;
  Bench bench(dir);
  std::vector<std::string> json;
  for (int admitMs : numbers(admitList)) {
    for (int pods : numbers(podsList)) {
      for (bool known : {false, true}) {
        const Figures f = bench.run(pods, admitMs, partPods, known);
        std::printf(
            "%6d pods, vrid %s them, AdmitPod %d ms: answered %s in %.1f ms (%zu adopted by then), "
            "ledger sync done at %.1f ms\n",
            pods, known ? "knows" : "does not know", admitMs, f.answered ? "ok" : "NOT OK", f.answerMs,
            f.adoptedByAnswer, f.doneMs);
        char line[400];
        std::snprintf(line, sizeof line,
                      "{\"pods\":%d,\"vrid_knows_them\":%s,\"admit_ms\":%d,\"answered\":%s,\"answer_ms\":%.1f,"
                      "\"adopted_by_answer\":%zu,\"sync_done_ms\":%.1f,\"target_met\":%s}",
                      pods, known ? "true" : "false", admitMs, f.answered ? "true" : "false", f.answerMs,
                      f.adoptedByAnswer, f.doneMs, f.answered && f.answerMs < 1000 ? "true" : "false");
        json.push_back(line);
      }
    }
  }
  ::rmdir(dir);
  for (const std::string& line : json) std::printf("%s\n", line.c_str());
  return 0;
}

#include "kubelet-bridge/ledger_sync.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "kubelet-bridge/cri_translate.h"

namespace vri {

namespace {

std::string shortId(const std::string& id) { return id.substr(0, 13); }

// The config the runtime keeps in a verbose status's info, parsed as this proto's message.
template <typename Config>
Result<Config> configFrom(const google::protobuf::Map<std::string, std::string>& info) {
  const auto found = info.find("info");
  if (found == info.end()) return Error::notFound("its verbose status has no info");
  const std::optional<std::string> json = jsonMember(found->second, "config");
  if (!json) return Error::notFound("its verbose status info has no config");
  Config config;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(*json, &config, options).ok())
    return Error::invalidArgument("its config does not parse as CRI runtime.v1");
  return config;
}

struct Known {
  std::set<std::string> ids;                       // every bound runtime id
  std::map<std::string, const v1::PodInfo*> pods;  // by UID
};

// Something vrid holds that the runtime no longer has, released by its id.
struct Release {
  bool pod = false;  // else a container
  std::string id;
  std::string what;  // for the log
};

}  // namespace

struct LedgerSync::Work {
  Work(const LedgerSyncCalls& c, v1::TenantList t) : calls(c), tenants(std::move(t)) {}

  void release(const Release& gone) {
    Result<bool> released = false;
    if (gone.pod) {
      v1::ReleasePodRequest release;
      release.set_sandbox_id(gone.id);
      released = calls.vrid.releasePod(scope(), release);
    } else {
      v1::ReleaseContainerRequest release;
      release.set_container_id(gone.id);
      released = calls.vrid.releaseContainer(scope(), release);
    }
    if (!released.ok()) {
      calls.log(gone.what + "; releasing it failed: " + released.error().message());
    } else if (*released) {
      calls.log(gone.what + "; released");
    }
  }

  // A ready sandbox vrid does not know: its pod, admitted with it bound.
  void adoptSandbox(const runtime::v1::PodSandbox& sandbox) {
    const auto pod = known.pods.find(sandbox.metadata().uid());
    if (pod != known.pods.end() && !pod->second->sandbox_id().empty()) return;  // the pod has its own sandbox
    auto config = sandboxConfig(sandbox.id());
    auto admit = config.ok() ? cri::admitPodRequest(*config) : Result<v1::AdmitPodRequest>(config.error());
    if (!admit.ok()) {
      calls.log("sandbox " + shortId(sandbox.id()) + " not adopted: " + admit.error().message());
      return;
    }
    admit->set_sandbox_id(sandbox.id());
    auto adopted = calls.vrid.admitPod(scope(), *admit);
    calls.log("pod " + admit->pod_name() +
              (adopted.ok() ? ": running, adopted with sandbox " + shortId(sandbox.id())
                            : " not adopted: " + adopted.error().message()));
    if (adopted.ok()) adopted_.insert(sandbox.id());
  }

  // A running container vrid does not know, in a sandbox it knows or adopted: adopted on the CPUs it
  // runs on. False when vrid's node is not available (no container can be adopted then).
  bool adoptContainer(const runtime::v1::Container& container) {
    if (!known.ids.count(container.pod_sandbox_id()) && !adopted_.count(container.pod_sandbox_id())) return true;
    if (allCpus.empty()) {
      auto node = calls.vrid.node(scope());
      if (!node.ok()) {
        calls.log("running containers not adopted: vrid's node: " + node.error().message());
        return false;
      }
      allCpus = node->online_cpu_list();
    }
    auto sandbox = sandboxConfig(container.pod_sandbox_id());
    if (!sandbox.ok()) {
      calls.log("container " + shortId(container.id()) + " not adopted: its sandbox: " + sandbox.error().message());
      return true;
    }
    const auto pod = known.pods.find(sandbox->metadata().uid());
    if (pod != known.pods.end()) {
      for (const v1::ContainerInfo& c : pod->second->containers()) {
        if (c.resources().name() == container.metadata().name()) return true;  // vrid holds it under another id
      }
    }
    auto status = calls.runtime.containerStatus(scope(), container.id(), true);
    if (!status.ok()) {
      calls.log("container " + shortId(container.id()) + " not adopted: " + status.error().message());
      return true;
    }
    runtime::v1::CreateContainerRequest as_created;
    as_created.set_pod_sandbox_id(container.pod_sandbox_id());
    *as_created.mutable_sandbox_config() = *sandbox;
    if (auto config = configFrom<runtime::v1::ContainerConfig>(status->info()); config.ok())
      *as_created.mutable_config() = *config;
    auto admit = cri::admitContainerRequest(as_created);
    if (!admit.ok()) {
      calls.log("container " + shortId(container.id()) + " not adopted: " + admit.error().message());
      return true;
    }
    const std::string running = status->status().resources().linux().cpuset_cpus();
    admit->set_container_id(container.id());
    admit->set_running_cpus(running.empty() ? allCpus : running);
    auto adopted = calls.vrid.admitContainer(scope(), *admit);
    calls.log("container " + admit->pod_name() + "/" + admit->container_name() +
              (adopted.ok() ? ": running, adopted on CPUs " + admit->running_cpus()
                            : " not adopted: " + adopted.error().message()));
    return true;
  }

  CallScope scope() const {
    CallScope scope = CallScope::within(calls.timeout);
    scope.deadline = std::min(scope.deadline, until);
    return scope;
  }
  bool late() const { return std::chrono::system_clock::now() >= until; }
  bool forgotten(const std::string& id) const { return forgottenIds.count(id) > 0; }

  Result<runtime::v1::PodSandboxConfig> sandboxConfig(const std::string& id) {
    if (const auto cached = configs_.find(id); cached != configs_.end()) return cached->second;
    VRI_ASSIGN_OR_RETURN(const auto status, calls.runtime.podSandboxStatus(scope(), id, true));
    VRI_ASSIGN_OR_RETURN(auto config, configFrom<runtime::v1::PodSandboxConfig>(status.info()));
    configs_[id] = config;
    return config;
  }

  const LedgerSyncCalls calls;
  const v1::TenantList tenants;  // what `known` points into
  Known known;
  std::deque<Release> releases;
  std::deque<runtime::v1::PodSandbox> sandboxes;  // ready, vrid does not know them
  std::deque<runtime::v1::Container> containers;  // running, vrid does not know them
  std::set<std::string> forgottenIds;             // removed by the runtime since the lists
  std::string allCpus;                            // vrid's node's, once asked
  std::chrono::system_clock::time_point until = std::chrono::system_clock::time_point::max();
  std::map<std::string, runtime::v1::PodSandboxConfig> configs_;  // by sandbox id, as fetched
  std::set<std::string> adopted_;                                 // sandboxes adopted by this sync
};

std::optional<std::string> jsonMember(const std::string& json, const std::string& key) {
  google::protobuf::Struct object;
  google::protobuf::util::JsonParseOptions options;
  if (!google::protobuf::util::JsonStringToMessage(json, &object, options).ok()) return std::nullopt;
  const auto member = object.fields().find(key);
  if (member == object.fields().end()) return std::nullopt;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(member->second, &out).ok()) return std::nullopt;
  return out;
}

std::string verboseInfoWithConfig(const google::protobuf::Message& config) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(config, &json);
  return "{\"config\":" + json + "}";
}

std::unique_ptr<LedgerSync> LedgerSync::plan(const LedgerSyncCalls& calls, v1::TenantList tenants) {
  auto work = std::make_unique<Work>(calls, std::move(tenants));
  auto sandboxes = calls.runtime.listPodSandboxes(work->scope());
  auto containers = sandboxes.ok() ? calls.runtime.listContainers(work->scope(), "")
                                   : Result<std::vector<runtime::v1::Container>>(sandboxes.error());
  if (!containers.ok()) {
    calls.log("the runtime's lists are not available (" + containers.error().message() +
              "); the ledger is not checked against them this time");
    return nullptr;
  }
  std::set<std::string> present;
  for (const auto& s : *sandboxes) present.insert(s.id());
  for (const auto& c : *containers) present.insert(c.id());
  Known& known = work->known;
  // What vrid adopted from the cgroups alone (its start-up, --init-ledger) is named by ids: the pod
  // "adopted/<uid>", each container (the sandbox's among them) by its runtime id. Adopted again here,
  // under the runtime's names, on the same CPUs.
  std::set<std::string> podsFromCgroups, containersUnderTheirIds;
  for (const v1::Tenant& tenant : work->tenants.tenants()) {
    const v1::PodInfo& pod = tenant.pod();
    known.pods[pod.uid()] = &pod;
    if (pod.sandbox_id().empty() && pod.name() == "adopted/" + pod.uid()) podsFromCgroups.insert(pod.uid());
    for (const v1::ContainerInfo& c : pod.containers()) {
      if (!c.resources().id().empty()) known.ids.insert(c.resources().id());
      if (!c.resources().id().empty() && c.resources().name() == c.resources().id())
        containersUnderTheirIds.insert(c.resources().id());
    }
    if (pod.sandbox_id().empty()) continue;  // not run by a shim: not ours to judge
    known.ids.insert(pod.sandbox_id());
    if (!present.count(pod.sandbox_id())) {
      work->releases.push_back(
          {true, pod.sandbox_id(), "pod " + pod.name() + ": its sandbox is gone from the runtime"});
      continue;
    }
    for (const v1::ContainerInfo& c : pod.containers()) {
      if (c.resources().id().empty()) continue;
      if (!present.count(c.resources().id())) {
        work->releases.push_back({false, c.resources().id(),
                                  "container " + pod.name() + "/" + c.resources().name() + ": gone from the runtime"});
      }
    }
  }
  for (runtime::v1::PodSandbox& sandbox : *sandboxes) {
    if (sandbox.state() == runtime::v1::SANDBOX_READY &&
        (!known.ids.count(sandbox.id()) || podsFromCgroups.count(sandbox.metadata().uid())))
      work->sandboxes.push_back(std::move(sandbox));
  }
  for (runtime::v1::Container& container : *containers) {
    if (container.state() == runtime::v1::CONTAINER_RUNNING &&
        (!known.ids.count(container.id()) || containersUnderTheirIds.count(container.id())))
      work->containers.push_back(std::move(container));
  }
  return std::unique_ptr<LedgerSync>(new LedgerSync(std::move(work)));
}

LedgerSync::LedgerSync(std::unique_ptr<Work> work) : work_(std::move(work)) {}
LedgerSync::~LedgerSync() = default;

bool LedgerSync::carryOn(std::chrono::system_clock::time_point until) {
  Work& w = *work_;
  w.until = until;
  // What is gone first: it frees what the adoptions may need.
  for (; !w.releases.empty(); w.releases.pop_front()) {
    if (w.late()) return false;
    w.release(w.releases.front());
  }
  for (; !w.sandboxes.empty(); w.sandboxes.pop_front()) {
    if (w.late()) return false;
    if (!w.forgotten(w.sandboxes.front().id())) w.adoptSandbox(w.sandboxes.front());
  }
  for (; !w.containers.empty(); w.containers.pop_front()) {
    if (w.late()) return false;
    const runtime::v1::Container& container = w.containers.front();
    if (w.forgotten(container.id()) || w.forgotten(container.pod_sandbox_id())) continue;
    if (!w.adoptContainer(container)) {
      w.containers.clear();
      break;
    }
  }
  return true;
}

void LedgerSync::adoptNow(const std::string& sandboxId, std::chrono::system_clock::time_point until) {
  Work& w = *work_;
  w.until = until;
  for (auto s = w.sandboxes.begin(); s != w.sandboxes.end(); ++s) {
    if (s->id() != sandboxId) continue;
    if (!w.forgotten(sandboxId)) w.adoptSandbox(*s);
    w.sandboxes.erase(s);
    break;
  }
  for (auto c = w.containers.begin(); c != w.containers.end();) {
    if (c->pod_sandbox_id() != sandboxId) {
      ++c;
      continue;
    }
    if (!w.forgotten(c->id()) && !w.adoptContainer(*c)) break;
    c = w.containers.erase(c);
  }
}

void LedgerSync::forget(const std::string& runtimeId) { work_->forgottenIds.insert(runtimeId); }

size_t LedgerSync::remaining() const {
  return work_->releases.size() + work_->sandboxes.size() + work_->containers.size();
}

void syncLedger(const LedgerSyncCalls& calls, const v1::TenantList& tenants) {
  if (auto sync = LedgerSync::plan(calls, tenants)) sync->carryOn(std::chrono::system_clock::time_point::max());
}

}  // namespace vri

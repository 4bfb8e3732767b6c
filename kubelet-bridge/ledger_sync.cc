#include "kubelet-bridge/ledger_sync.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

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

class Sync {
 public:
  Sync(const LedgerSyncCalls& calls) : calls_(calls) {}

  void releaseGone(const v1::TenantList& tenants, const std::set<std::string>& present) {
    for (const v1::Tenant& tenant : tenants.tenants()) {
      const v1::PodInfo& pod = tenant.pod();
      if (pod.sandbox_id().empty()) continue;  // not run by a shim: not ours to judge
      if (!present.count(pod.sandbox_id())) {
        v1::ReleasePodRequest release;
        release.set_sandbox_id(pod.sandbox_id());
        said("pod " + pod.name() + ": its sandbox is gone from the runtime", calls_.vrid.releasePod(scope(), release));
        continue;
      }
      for (const v1::ContainerInfo& c : pod.containers()) {
        if (c.resources().id().empty() || present.count(c.resources().id())) continue;
        v1::ReleaseContainerRequest release;
        release.set_container_id(c.resources().id());
        said("container " + pod.name() + "/" + c.resources().name() + ": gone from the runtime",
             calls_.vrid.releaseContainer(scope(), release));
      }
    }
  }

  // A ready sandbox vrid does not know: its pod, admitted with it bound.
  void adoptSandbox(const runtime::v1::PodSandbox& sandbox, const Known& known) {
    const auto pod = known.pods.find(sandbox.metadata().uid());
    if (pod != known.pods.end() && !pod->second->sandbox_id().empty()) return;  // the pod has its own sandbox
    auto config = sandboxConfig(sandbox.id());
    auto admit = config.ok() ? cri::admitPodRequest(*config) : Result<v1::AdmitPodRequest>(config.error());
    if (!admit.ok()) {
      calls_.log("sandbox " + shortId(sandbox.id()) + " not adopted: " + admit.error().message());
      return;
    }
    admit->set_sandbox_id(sandbox.id());
    auto adopted = calls_.vrid.admitPod(scope(), *admit);
    calls_.log("pod " + admit->pod_name() +
               (adopted.ok() ? ": running, adopted with sandbox " + shortId(sandbox.id())
                             : " not adopted: " + adopted.error().message()));
    if (adopted.ok()) adopted_.insert(sandbox.id());
  }

  // A running container vrid does not know, in a sandbox it does: adopted on the CPUs it runs on.
  void adoptContainer(const runtime::v1::Container& container, const Known& known, const std::string& allCpus) {
    auto sandbox = sandboxConfig(container.pod_sandbox_id());
    if (!sandbox.ok()) {
      calls_.log("container " + shortId(container.id()) + " not adopted: its sandbox: " + sandbox.error().message());
      return;
    }
    const auto pod = known.pods.find(sandbox->metadata().uid());
    if (pod != known.pods.end()) {
      for (const v1::ContainerInfo& c : pod->second->containers()) {
        if (c.resources().name() == container.metadata().name()) return;  // vrid holds it under another id
      }
    }
    auto status = calls_.runtime.containerStatus(scope(), container.id(), true);
    if (!status.ok()) {
      calls_.log("container " + shortId(container.id()) + " not adopted: " + status.error().message());
      return;
    }
    runtime::v1::CreateContainerRequest as_created;
    as_created.set_pod_sandbox_id(container.pod_sandbox_id());
    *as_created.mutable_sandbox_config() = *sandbox;
    if (auto config = configFrom<runtime::v1::ContainerConfig>(status->info()); config.ok())
      *as_created.mutable_config() = *config;
    auto admit = cri::admitContainerRequest(as_created);
    if (!admit.ok()) {
      calls_.log("container " + shortId(container.id()) + " not adopted: " + admit.error().message());
      return;
    }
    const std::string running = status->status().resources().linux().cpuset_cpus();
    admit->set_container_id(container.id());
    admit->set_running_cpus(running.empty() ? allCpus : running);
    auto adopted = calls_.vrid.admitContainer(scope(), *admit);
    calls_.log("container " + admit->pod_name() + "/" + admit->container_name() +
               (adopted.ok() ? ": running, adopted on CPUs " + admit->running_cpus()
                             : " not adopted: " + adopted.error().message()));
  }

  bool adopted(const std::string& sandboxId) const { return adopted_.count(sandboxId) > 0; }
  CallScope scope() const {
    CallScope scope = CallScope::within(calls_.timeout);
    scope.deadline = std::min(scope.deadline, calls_.until);
    return scope;
  }

 private:
  Result<runtime::v1::PodSandboxConfig> sandboxConfig(const std::string& id) {
    if (const auto cached = configs_.find(id); cached != configs_.end()) return cached->second;
    VRI_ASSIGN_OR_RETURN(const auto status, calls_.runtime.podSandboxStatus(scope(), id, true));
    VRI_ASSIGN_OR_RETURN(auto config, configFrom<runtime::v1::PodSandboxConfig>(status.info()));
    configs_[id] = config;
    return config;
  }
  void said(const std::string& what, const Result<bool>& released) {
    if (!released.ok()) {
      calls_.log(what + "; releasing it failed: " + released.error().message());
    } else if (*released) {
      calls_.log(what + "; released");
    }
  }

  const LedgerSyncCalls& calls_;
  std::map<std::string, runtime::v1::PodSandboxConfig> configs_;  // by sandbox id, as fetched
  std::set<std::string> adopted_;                                 // sandboxes adopted by this pass
};

}  // namespace

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

void syncLedger(const LedgerSyncCalls& calls, const v1::TenantList& tenants) {
  Sync sync(calls);
  auto sandboxes = calls.runtime.listPodSandboxes(sync.scope());
  auto containers = sandboxes.ok() ? calls.runtime.listContainers(sync.scope(), "")
                                   : Result<std::vector<runtime::v1::Container>>(sandboxes.error());
  if (!containers.ok()) {
    calls.log("the runtime's lists are not available (" + containers.error().message() +
              "); the ledger is not checked against them this time");
    return;
  }
  std::set<std::string> present;
  for (const auto& s : *sandboxes) present.insert(s.id());
  for (const auto& c : *containers) present.insert(c.id());
  sync.releaseGone(tenants, present);

  Known known;
  for (const v1::Tenant& tenant : tenants.tenants()) {
    const v1::PodInfo& pod = tenant.pod();
    known.pods[pod.uid()] = &pod;
    if (!pod.sandbox_id().empty()) known.ids.insert(pod.sandbox_id());
    for (const v1::ContainerInfo& c : pod.containers()) {
      if (!c.resources().id().empty()) known.ids.insert(c.resources().id());
    }
  }
  for (const runtime::v1::PodSandbox& sandbox : *sandboxes) {
    if (sandbox.state() != runtime::v1::SANDBOX_READY || known.ids.count(sandbox.id())) continue;
    sync.adoptSandbox(sandbox, known);
  }
  std::string all_cpus;
  for (const runtime::v1::Container& container : *containers) {
    if (container.state() != runtime::v1::CONTAINER_RUNNING || known.ids.count(container.id())) continue;
    if (!known.ids.count(container.pod_sandbox_id()) && !sync.adopted(container.pod_sandbox_id())) continue;
    if (all_cpus.empty()) {
      auto node = calls.vrid.node(sync.scope());
      if (!node.ok()) {
        calls.log("running containers not adopted: vrid's node: " + node.error().message());
        return;
      }
      all_cpus = node->online_cpu_list();
    }
    sync.adoptContainer(container, known, all_cpus);
  }
}

}  // namespace vri

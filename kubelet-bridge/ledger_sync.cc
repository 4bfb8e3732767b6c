#include "kubelet-bridge/ledger_sync.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <map>
#include <set>

#include "kubelet-bridge/cri_translate.h"
#include "kubelet-bridge/upstream_call.h"

namespace vri {

namespace {

std::string method(const char* name) { return std::string("/runtime.v1.RuntimeService/") + name; }

// The config containerd keeps in a verbose status's info, parsed as this proto's message.
template <typename Config>
std::optional<Config> configFrom(const google::protobuf::Map<std::string, std::string>& info) {
  const auto found = info.find("info");
  if (found == info.end()) return std::nullopt;
  const std::optional<std::string> json = jsonMember(found->second, "config");
  if (!json) return std::nullopt;
  Config config;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(*json, &config, options).ok()) return std::nullopt;
  return config;
}

struct Known {
  std::set<std::string> ids;                       // every bound runtime id
  std::map<std::string, const v1::PodInfo*> pods;  // by UID
};

void releaseGone(const LedgerSyncCalls& calls, const v1::TenantList& tenants, const std::set<std::string>& present) {
  for (const v1::Tenant& tenant : tenants.tenants()) {
    const v1::PodInfo& pod = tenant.pod();
    if (pod.sandbox_id().empty()) continue;  // not run by a shim: not ours to judge
    if (!present.count(pod.sandbox_id())) {
      v1::ReleasePodRequest release;
      release.set_sandbox_id(pod.sandbox_id());
      v1::Released released;
      if (calls.vrid.ReleasePod(calls.context().get(), release, &released).ok() && released.released())
        calls.log("pod " + pod.name() + ": its sandbox is gone from containerd; released");
      continue;
    }
    for (const v1::ContainerInfo& c : pod.containers()) {
      if (c.resources().id().empty() || present.count(c.resources().id())) continue;
      v1::ReleaseContainerRequest release;
      release.set_container_id(c.resources().id());
      v1::Released released;
      if (calls.vrid.ReleaseContainer(calls.context().get(), release, &released).ok() && released.released())
        calls.log("container " + pod.name() + "/" + c.resources().name() + ": gone from containerd; released");
    }
  }
}

std::optional<runtime::v1::PodSandboxConfig> sandboxConfig(const LedgerSyncCalls& calls, const std::string& id) {
  runtime::v1::PodSandboxStatusRequest ask;
  ask.set_pod_sandbox_id(id);
  ask.set_verbose(true);
  runtime::v1::PodSandboxStatusResponse status;
  if (!callUpstream(calls.containerd, *calls.context(), method("PodSandboxStatus"), ask, &status).ok())
    return std::nullopt;
  return configFrom<runtime::v1::PodSandboxConfig>(status.info());
}

// A ready sandbox vrid does not know: its pod, admitted with it bound.
void adoptSandbox(const LedgerSyncCalls& calls, const runtime::v1::PodSandbox& sandbox, const Known& known,
                  std::map<std::string, runtime::v1::PodSandboxConfig>& configs) {
  const auto pod = known.pods.find(sandbox.metadata().uid());
  if (pod != known.pods.end() && !pod->second->sandbox_id().empty()) return;  // the pod has its own sandbox
  const std::optional<runtime::v1::PodSandboxConfig> config = sandboxConfig(calls, sandbox.id());
  auto admit = config ? cri::admitPodRequest(*config) : Error::invalidArgument("no config in its status");
  if (!admit.ok()) {
    calls.log("sandbox " + sandbox.id().substr(0, 13) + " not adopted: " + admit.error().message());
    return;
  }
  admit->set_sandbox_id(sandbox.id());
  v1::PodAllocation allocation;
  const grpc::Status adopted = calls.vrid.AdmitPod(calls.context().get(), *admit, &allocation);
  if (!adopted.ok()) {
    calls.log("pod " + admit->pod_name() + " not adopted: " + adopted.error_message());
    return;
  }
  configs[sandbox.id()] = *config;
  calls.log("pod " + admit->pod_name() + ": running, adopted with sandbox " + sandbox.id().substr(0, 13));
}

// A running container vrid does not know, in a sandbox it does: adopted on the CPUs it runs on.
void adoptContainer(const LedgerSyncCalls& calls, const runtime::v1::Container& container, const Known& known,
                    std::map<std::string, runtime::v1::PodSandboxConfig>& configs, const std::string& allCpus) {
  auto sandbox = configs.find(container.pod_sandbox_id());
  if (sandbox == configs.end()) {
    if (!known.ids.count(container.pod_sandbox_id())) return;  // its pod is not vrid's
    const std::optional<runtime::v1::PodSandboxConfig> config = sandboxConfig(calls, container.pod_sandbox_id());
    if (!config) return;
    sandbox = configs.emplace(container.pod_sandbox_id(), *config).first;
  }
  const auto pod = known.pods.find(sandbox->second.metadata().uid());
  if (pod != known.pods.end()) {
    for (const v1::ContainerInfo& c : pod->second->containers()) {
      if (c.resources().name() == container.metadata().name()) return;  // vrid holds it under another id
    }
  }
  runtime::v1::ContainerStatusRequest ask;
  ask.set_container_id(container.id());
  ask.set_verbose(true);
  runtime::v1::ContainerStatusResponse status;
  if (!callUpstream(calls.containerd, *calls.context(), method("ContainerStatus"), ask, &status).ok()) return;
  runtime::v1::CreateContainerRequest as_created;
  as_created.set_pod_sandbox_id(container.pod_sandbox_id());
  *as_created.mutable_sandbox_config() = sandbox->second;
  if (auto config = configFrom<runtime::v1::ContainerConfig>(status.info())) *as_created.mutable_config() = *config;
  auto admit = cri::admitContainerRequest(as_created);
  if (!admit.ok()) {
    calls.log("container " + container.id().substr(0, 13) + " not adopted: " + admit.error().message());
    return;
  }
  const std::string running = status.status().resources().linux().cpuset_cpus();
  admit->set_container_id(container.id());
  admit->set_running_cpus(running.empty() ? allCpus : running);
  v1::ContainerAllocation allocation;
  const grpc::Status adopted = calls.vrid.AdmitContainer(calls.context().get(), *admit, &allocation);
  calls.log("container " + admit->pod_name() + "/" + admit->container_name() +
            (adopted.ok() ? ": running, adopted on CPUs " + admit->running_cpus()
                          : " not adopted: " + adopted.error_message()));
}

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

void syncLedger(const LedgerSyncCalls& calls, const v1::TenantList& tenants) {
  runtime::v1::ListPodSandboxResponse sandboxes;
  runtime::v1::ListContainersResponse containers;
  if (!callUpstream(calls.containerd, *calls.context(), method("ListPodSandbox"), runtime::v1::ListPodSandboxRequest(),
                    &sandboxes)
           .ok() ||
      !callUpstream(calls.containerd, *calls.context(), method("ListContainers"), runtime::v1::ListContainersRequest(),
                    &containers)
           .ok()) {
    calls.log("containerd's lists are not available; the ledger is not checked against them this time");
    return;
  }
  std::set<std::string> present;
  for (const auto& s : sandboxes.items()) present.insert(s.id());
  for (const auto& c : containers.containers()) present.insert(c.id());
  releaseGone(calls, tenants, present);

  Known known;
  for (const v1::Tenant& tenant : tenants.tenants()) {
    const v1::PodInfo& pod = tenant.pod();
    known.pods[pod.uid()] = &pod;
    if (!pod.sandbox_id().empty()) known.ids.insert(pod.sandbox_id());
    for (const v1::ContainerInfo& c : pod.containers()) {
      if (!c.resources().id().empty()) known.ids.insert(c.resources().id());
    }
  }
  std::map<std::string, runtime::v1::PodSandboxConfig> adopted;  // sandbox id -> config, as fetched
  for (const runtime::v1::PodSandbox& sandbox : sandboxes.items()) {
    if (sandbox.state() != runtime::v1::SANDBOX_READY || known.ids.count(sandbox.id())) continue;
    adoptSandbox(calls, sandbox, known, adopted);
  }
  std::string all_cpus;
  for (const runtime::v1::Container& container : containers.containers()) {
    if (container.state() != runtime::v1::CONTAINER_RUNNING || known.ids.count(container.id())) continue;
    if (!known.ids.count(container.pod_sandbox_id()) && !adopted.count(container.pod_sandbox_id())) continue;
    if (all_cpus.empty()) {
      v1::Node node;
      if (!calls.vrid.GetNode(calls.context().get(), v1::GetNodeRequest(), &node).ok()) return;
      all_cpus = node.online_cpu_list();
    }
    adoptContainer(calls, container, known, adopted, all_cpus);
  }
}

}  // namespace vri

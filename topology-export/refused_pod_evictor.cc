#include "topology-export/refused_pod_evictor.h"

#include <ctime>
#include <nlohmann/json.hpp>

namespace vri::topology_export {

namespace {

std::string nowRfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

std::string podUidOfTenant(const std::string& tenant) {
  constexpr std::string_view kPod = "pod/";
  if (!tenant.starts_with(kPod)) return "";
  const std::string rest = tenant.substr(kPod.size());
  return rest.substr(0, rest.find('/'));
}

RefusedPodEvictor::RefusedPodEvictor(VridClient& vrid, KubeApi& api, RefusedPodEvictorOptions options)
    : vrid_(vrid), api_(api), options_(std::move(options)) {}

RefusedPodEvictor::~RefusedPodEvictor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RefusedPodEvictor::start() {
  thread_ = std::thread([this] { run(); });
}

void RefusedPodEvictor::onEvent(const v1::Event& event) {
  if (podUidOfTenant(event.tenant()).empty()) return;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(event);
  }
  wake_.notify_all();
}

void RefusedPodEvictor::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const v1::Event event = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    handle(event);
    lock.lock();
  }
}

void RefusedPodEvictor::handle(const v1::Event& event) {
  const std::string uid = podUidOfTenant(event.tenant());
  switch (event.kind()) {
    case v1::Event::ADMITTED:
    case v1::Event::ADOPTED:
    case v1::Event::RELEASED: refusals_.erase(uid); return;
    case v1::Event::REFUSED: break;
    default: return;
  }
  const int seen = ++refusals_[uid];
  if (evictedPods_.count(uid) != 0) return;
  if (seen < options_.refusals) {
    options_.log("pod " + uid + ": refused " + std::to_string(seen) + " of " + std::to_string(options_.refusals) +
                 " times in a row before its eviction");
    return;
  }
  if (auto evicted = evict(uid, event.detail()); !evicted.ok()) {
    options_.log("pod " + uid + ": refused " + std::to_string(seen) +
                 " times, not evicted: " + evicted.error().message() + " (asked again at its next refusal)");
    return;
  }
  evictedPods_.insert(uid);
  refusals_.erase(uid);
}

Result<void> RefusedPodEvictor::evict(const std::string& uid, const std::string& reason) {
  VRI_ASSIGN_OR_RETURN(const v1::Tenant tenant, vrid_.getPod(CallScope::within(options_.vridTimeout), uid));
  const std::string& full = tenant.pod().name();  // namespace/name
  const size_t slash = full.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == full.size())
    return Error::failedPrecondition("vrid names it '" + full + "', not namespace/name");
  const std::string ns = full.substr(0, slash), name = full.substr(slash + 1);
  const std::string message = "VRI refused it " + std::to_string(options_.refusals) + " times on node " +
                              options_.nodeName + " (" + reason + "): evicted, for its controller to place it again";

  // The reason first, where `kubectl describe pod` shows it; its failure does not stop the eviction.
  const std::string stamp = nowRfc3339();
  const nlohmann::json record = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", name + ".vri-"}, {"namespace", ns}}},
      {"involvedObject", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"namespace", ns}, {"name", name}, {"uid", uid}}},
      {"reason", "VriRefused"},
      {"message", message},
      {"type", "Warning"},
      {"source", {{"component", "vri"}, {"host", options_.nodeName}}},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"count", 1}};
  auto recorded = api_.call("POST", "/api/v1/namespaces/" + ns + "/events", record.dump());
  if (!recorded.ok()) {
    options_.log("pod " + full + ": its Event not recorded: " + recorded.error().message());
  } else if (recorded->status >= 300) {
    options_.log("pod " + full + ": its Event not recorded: " + httpError("POST event", *recorded).message());
  }

  const nlohmann::json eviction = {{"apiVersion", "policy/v1"},
                                   {"kind", "Eviction"},
                                   {"metadata", {{"name", name}, {"namespace", ns}}},
                                   {"deleteOptions", {{"preconditions", {{"uid", uid}}}}}};
  VRI_ASSIGN_OR_RETURN(const HttpReply reply,
                       api_.call("POST", "/api/v1/namespaces/" + ns + "/pods/" + name + "/eviction", eviction.dump()));
  if (reply.status == 404) return Error::notFound("the API server has no pod " + full);
  if (reply.status >= 300) return httpError("POST eviction of " + full, reply);
  options_.log("pod " + full + ": " + message);
  return {};
}

}  // namespace vri::topology_export

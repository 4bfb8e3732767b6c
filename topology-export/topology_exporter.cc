#include "topology-export/topology_exporter.h"

#include "topology-export/topology_object.h"

namespace vri::topology_export {

std::string topologyObjectPath(const std::string& nodeName) {
  return std::string(kTopologyCollectionPath) + "/" + nodeName;
}

Result<void> checkNodeName(const std::string& name) {
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool ok = !name.empty() && name.size() <= 253 && alnum(name.front()) && alnum(name.back());
  for (char c : name) ok = ok && (alnum(c) || c == '-' || c == '.');
  if (!ok) {
    return Error::invalidArgument("node name '" + name +
                                  "' is not a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253)");
  }
  return {};
}

TopologyExporter::TopologyExporter(VridClient& vrid, KubeApi& api, TopologyExporterOptions options)
    : vrid_(vrid), api_(api), options_(std::move(options)) {}

TopologyExporter::~TopologyExporter() {
  stop();
  if (follower_.joinable()) follower_.join();
}

void TopologyExporter::stop() {
  std::lock_guard lock(mutex_);
  stopping_ = true;
  if (stream_ != nullptr) stream_->cancel();
  wake_.notify_all();
}

ExporterCounters TopologyExporter::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

void TopologyExporter::followEvents() {
  for (;;) {
    std::unique_ptr<EventStream> stream = vrid_.watch();
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stream_ = stream.get();
      stale_ = true;  // whatever happened before this stream is covered by the next pass
      wake_.notify_all();
    }
    v1::Event event;
    while (stream->next(event)) {
      options_.onEvent(event);
      std::lock_guard lock(mutex_);
      ++counters_.events;
      stale_ = true;
      wake_.notify_all();
    }
    const Error ended = stream->finish();
    std::unique_lock lock(mutex_);
    stream_ = nullptr;
    if (stopping_) return;
    options_.log("vrid's events: " + ended.message() + "; following again in " +
                 std::to_string(options_.retryInterval.count()) + " ms");
    wake_.wait_for(lock, options_.retryInterval, [&] { return stopping_; });
    if (stopping_) return;
  }
}

void TopologyExporter::run() {
  follower_ = std::thread([this] { followEvents(); });
  auto lastWrite = std::chrono::steady_clock::now() - options_.minInterval;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || stale_; });
    if (stopping_) return;
    // Decisions that come within minInterval of the last write wait for the next one, together.
    const auto due = lastWrite + options_.minInterval;
    if (wake_.wait_until(lock, due, [&] { return stopping_; })) return;
    stale_ = false;
    lock.unlock();
    const Result<void> published = publishOnce();
    lastWrite = std::chrono::steady_clock::now();
    lock.lock();
    if (!published.ok()) {
      ++counters_.failures;
      stale_ = true;
      options_.log(published.error().message() + "; trying again in " + std::to_string(options_.retryInterval.count()) +
                   " ms");
      if (wake_.wait_for(lock, options_.retryInterval, [&] { return stopping_; })) return;
    }
  }
}

Result<void> TopologyExporter::publishOnce() {
  const CallScope scope = CallScope::within(options_.vridTimeout);
  auto node = vrid_.node(scope);
  if (!node.ok()) return std::move(node).error().addContext("vrid's node");
  auto pods = vrid_.listPods(CallScope::within(options_.vridTimeout));
  if (!pods.ok()) return std::move(pods).error().addContext("vrid's pods");
  const std::string body = topologyObject(options_.nodeName, *node, *pods).dump();
  {
    std::lock_guard lock(mutex_);
    ++counters_.passes;
    if (body == lastWritten_) {
      ++counters_.unchanged;
      return {};
    }
  }
  VRI_TRY(write(body));
  std::lock_guard lock(mutex_);
  lastWritten_ = body;
  ++counters_.writes;
  return {};
}

// A merge patch of the whole object (its arrays replace the stored ones), or a create when there
// is none: no read first, and no conflict with a resourceVersion another writer moved.
Result<void> TopologyExporter::write(const std::string& body) {
  const std::string path = topologyObjectPath(options_.nodeName);
  auto patched = api_.call("PATCH", path, body, "application/merge-patch+json");
  if (!patched.ok()) return std::move(patched).error();
  if (patched->status == 200) return {};
  if (patched->status != 404) return httpError("PATCH " + path, *patched);
  auto created = api_.call("POST", kTopologyCollectionPath, body);
  if (!created.ok()) return std::move(created).error();
  if (created->status == 201 || created->status == 200) {
    options_.log("created NodeResourceTopology " + options_.nodeName);
    return {};
  }
  return httpError("POST " + std::string(kTopologyCollectionPath), *created);
}

Result<void> deleteTopologyObject(KubeApi& api, const std::string& nodeName) {
  const std::string path = topologyObjectPath(nodeName);
  auto deleted = api.call("DELETE", path);
  if (!deleted.ok()) return std::move(deleted).error();
  if (deleted->status == 200 || deleted->status == 202 || deleted->status == 404) return {};
  return httpError("DELETE " + path, *deleted);
}

}  // namespace vri::topology_export

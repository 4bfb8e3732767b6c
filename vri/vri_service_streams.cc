// VriService's streams: Watch (vrid's events) and WatchUsage with GetUsage (the sampler's frames,
// read without the ledger, usage_sampler.h). Each stream holds one of the socket's stream slots.
#include "proto/grpc_status.h"
#include "vri/api_convert.h"
#include "vri/usage_convert.h"
#include "vri/vri_service.h"

namespace vri {

namespace {

Error samplingOff() { return Error::failedPrecondition("vrid does not sample usage (usage_interval_ms = 0)"); }

}  // namespace

grpc::Status VriService::Watch(Context* context, const v1::WatchRequest* request,
                               grpc::ServerWriter<v1::Event>* writer) {
  const StreamSlots::Slot slot(streams_);
  if (!slot.taken()) return streamRefused("Watch");
  if (request->recent_only()) {
    for (const Event& event : node_.recentEvents(request->recent())) {
      if (!writer->Write(toEventMessage(event))) break;
    }
    return {};
  }
  const auto subscription = node_.subscribe(request->recent());
  Event event;
  while (!context->IsCancelled()) {
    switch (subscription->next(std::chrono::milliseconds(200), event)) {
      case EventSubscription::Next::kClosed: return {};
      case EventSubscription::Next::kTimeout: break;
      case EventSubscription::Next::kEvent:
        if (!writer->Write(toEventMessage(event))) return {};  // the watcher went away
        break;
    }
  }
  return {};
}

Result<void> VriService::getUsage(const v1::GetUsageRequest& request, v1::UsageReport& reply) {
  if (usage_ == nullptr) return samplingOff();
  const auto& options = usage_->options();
  reply = usageReport(usage_->recent(static_cast<size_t>(request.history()) + 1), options.interval, options.history);
  return {};
}

grpc::Status VriService::WatchUsage(Context* context, const v1::WatchUsageRequest*,
                                    grpc::ServerWriter<v1::UsageReport>* writer) {
  if (usage_ == nullptr) return toGrpcStatus(samplingOff());
  const StreamSlots::Slot slot(streams_);
  if (!slot.taken()) return streamRefused("WatchUsage");
  const auto& options = usage_->options();
  // From the round after the latest: a watcher that wants the latest at once asks GetUsage.
  const FramePtr latest = usage_->latest();
  uint64_t sequence = latest ? latest->sequence : 0;
  while (!context->IsCancelled()) {
    // Woken at least every 200 ms to notice a caller that went away.
    const FramePtr frame = usage_->next(sequence, std::chrono::milliseconds(200));
    if (!frame) {
      if (usage_->stopped()) return grpc::Status::OK;
      continue;
    }
    sequence = frame->sequence;
    if (!writer->Write(usageReport({frame}, options.interval, options.history))) return grpc::Status::OK;
  }
  return grpc::Status::OK;
}

}  // namespace vri

// GetUsage and WatchUsage: the sampler's frames, read without the ledger (usage_sampler.h).
#include "vri/usage_convert.h"
#include "vri/vri_service.h"

namespace vri {

namespace {

const grpc::Status kSamplingOff(grpc::StatusCode::FAILED_PRECONDITION,
                                "vrid does not sample usage (usage_interval_ms = 0)");

}  // namespace

grpc::Status VriService::getUsage(const v1::GetUsageRequest& request, v1::UsageReport& reply) {
  if (usage_ == nullptr) return kSamplingOff;
  const auto& options = usage_->options();
  reply = usageReport(usage_->recent(static_cast<size_t>(request.history()) + 1), options.interval, options.history);
  return grpc::Status::OK;
}

grpc::Status VriService::WatchUsage(Context* context, const v1::WatchUsageRequest*,
                                    grpc::ServerWriter<v1::UsageReport>* writer) {
  if (usage_ == nullptr) return kSamplingOff;
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

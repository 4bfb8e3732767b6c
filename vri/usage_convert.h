// Usage frames as the API's messages.
#pragma once

#include <vector>

#include "proto/vri.pb.h"
#include "vri/usage_frame.h"

namespace vri {

void fillUsageSample(const UsageFrame& frame, v1::UsageSample& out);
// `frames` the latest first; `historyKept` the configured usage_history.
v1::UsageReport usageReport(const std::vector<FramePtr>& frames, std::chrono::milliseconds interval,
                            size_t historyKept);

}  // namespace vri

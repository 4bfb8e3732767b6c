// vrid's metrics in Prometheus' text exposition format (version 0.0.4), rendered at each scrape
// from what vrid already keeps: the ledger's published state, the latest usage round, the call
// counters and the reconcile outcomes. Nothing is kept per tenant between scrapes, so a released
// tenant's series are gone from the next scrape on.
//
// Labels are bounded: tenants by their key ("pod/<uid>", "vm/<uuid>"), kind and name (one
// vri_tenant_info series), CPUs by id, calls by method, clients by VRI program, outcomes by gRPC code.
// No cpuset is ever a label.
#pragma once

#include <string>

#include "vri/call_metrics.h"
#include "vri/node_manager.h"
#include "vri/usage_sampler.h"

namespace vri {

// `usage` null: usage is not sampled (no usage series).
std::string renderMetrics(const NodeManager& node, const UsageSampler* usage, const CallMetrics& calls);

// Every metric family's name, in the order rendered (docs/operating.md's list is checked against it).
const std::vector<std::string>& metricNames();

}  // namespace vri

#include "vri/metrics_text.h"

#include <fmt/format.h>

#include <map>

#include "accounting/capacity_books.h"

namespace vri {

namespace {

// A family's header lines.
struct Family {
  const char* name;
  const char* type;  // counter | gauge | histogram
  const char* help;
};

constexpr Family kNodeCpus{"vri_node_cpus", "gauge",
                           "CPUs by pool: online, reserved, shared (the shared pool) and exclusive (held by tenants)"};
constexpr Family kCpuCapacity{"vri_node_cpu_capacity_cores", "gauge", "the node's CPUs, in cores"};
constexpr Family kCpuAllocatable{"vri_node_cpu_allocatable_cores", "gauge",
                                 "CPU left for pods and VMs after the node's reservations, in cores"};
constexpr Family kCpuAllocated{"vri_node_cpu_allocated_cores", "gauge", "CPU admitted, by tenant kind, in cores"};
constexpr Family kMemCapacity{"vri_node_memory_capacity_bytes", "gauge", "the node's regular memory"};
constexpr Family kMemAllocatable{"vri_node_memory_allocatable_bytes", "gauge",
                                 "regular memory left for pods and VMs after the node's reservations"};
constexpr Family kMemAllocated{"vri_node_memory_allocated_bytes", "gauge", "regular memory admitted, by tenant kind"};
constexpr Family kHugepagesCapacity{"vri_numa_hugepages_capacity_bytes", "gauge",
                                    "hugepages a NUMA node has, by node and page size (what the kernel reserved)"};
constexpr Family kHugepagesAllocated{"vri_numa_hugepages_allocated_bytes", "gauge",
                                     "hugepages admitted on a NUMA node, by node, page size and tenant kind"};
constexpr Family kSharedTenants{"vri_node_shared_tenants", "gauge", "tenants that run in the shared pool"};
constexpr Family kWritesPending{"vri_cgroup_writes_pending", "gauge",
                                "1 while cgroup writes that failed wait to be retried"};
constexpr Family kPolicyPending{"vri_policy_pending_options", "gauge",
                                "placement policy options vrid's configuration file sets otherwise than the "
                                "ledger runs, waiting for vrictl config apply"};
constexpr Family kTenantInfo{"vri_tenant_info", "gauge", "one series per tenant VRI holds, with its name"};
constexpr Family kTenantExclusive{"vri_tenant_exclusive_cpus", "gauge", "CPUs a tenant holds exclusively"};
constexpr Family kTenantMemoryAdmitted{"vri_tenant_memory_admitted_bytes", "gauge",
                                       "memory admitted for a tenant (limits, overheads)"};
constexpr Family kTenantCpu{"vri_tenant_cpu_usage_seconds_total", "counter", "CPU time a tenant's cgroup used"};
constexpr Family kTenantPeriods{"vri_tenant_cpu_periods_total", "counter",
                                "CFS enforcement periods of a tenant's CPU limit that elapsed"};
constexpr Family kTenantThrottledPeriods{"vri_tenant_cpu_throttled_periods_total", "counter",
                                         "periods in which a tenant ran out of its CPU quota"};
constexpr Family kTenantThrottled{"vri_tenant_cpu_throttled_seconds_total", "counter",
                                  "time a tenant was held back by its CPU quota"};
constexpr Family kTenantMemory{"vri_tenant_memory_usage_bytes", "gauge",
                               "memory a tenant's cgroup uses (v2 memory.current, v1 memory.usage_in_bytes)"};
constexpr Family kCpuBusy{"vri_cpu_busy_seconds_total", "counter", "time a CPU was not idle (/proc/stat)"};
constexpr Family kUsageRounds{"vri_usage_rounds_total", "counter", "usage sampling rounds"};
constexpr Family kUsageRound{"vri_usage_round_seconds", "gauge", "how long the last usage round took"};
constexpr Family kUsageFiles{"vri_usage_files_open", "gauge", "usage files kept open by the sampler"};
constexpr Family kUsageCpu{"vri_usage_sampler_cpu_seconds_total", "counter", "CPU time the sampling thread used"};
constexpr Family kCalls{"vri_calls_total", "counter", "calls vrid answered, by call, calling program and gRPC code"};
constexpr Family kCallDuration{"vri_call_duration_seconds", "histogram",
                               "how long vrid took to answer, by calling program and call"};
constexpr Family kDecisionDuration{
    "vri_decision_duration_seconds", "histogram",
    "how long deciding calls took on the decision thread, from taking the request up to the reply"};
constexpr Family kRefusals{"vri_decision_refusals_total", "counter", "deciding calls refused, by call and reason"};
constexpr Family kReconciles{"vri_reconciles_total", "counter",
                             "reconciles that could write, by result: clean, repaired or failed"};
constexpr Family kReconcileDiffs{"vri_reconcile_differences_total", "counter",
                                 "differences between the ledger and the cgroupfs that reconciles found"};

constexpr const Family* kFamilies[] = {&kNodeCpus,
                                       &kCpuCapacity,
                                       &kCpuAllocatable,
                                       &kCpuAllocated,
                                       &kMemCapacity,
                                       &kMemAllocatable,
                                       &kMemAllocated,
                                       &kHugepagesCapacity,
                                       &kHugepagesAllocated,
                                       &kSharedTenants,
                                       &kWritesPending,
                                       &kPolicyPending,
                                       &kTenantInfo,
                                       &kTenantExclusive,
                                       &kTenantMemoryAdmitted,
                                       &kTenantCpu,
                                       &kTenantPeriods,
                                       &kTenantThrottledPeriods,
                                       &kTenantThrottled,
                                       &kTenantMemory,
                                       &kCpuBusy,
                                       &kUsageRounds,
                                       &kUsageRound,
                                       &kUsageFiles,
                                       &kUsageCpu,
                                       &kCalls,
                                       &kCallDuration,
                                       &kDecisionDuration,
                                       &kRefusals,
                                       &kReconciles,
                                       &kReconcileDiffs};

// A label value as the format wants it: backslash, double quote and newline escaped.
std::string escaped(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

class Writer {
 public:
  void header(const Family& f) {
    fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
  }
  // `labels` already formatted: `a="x",b="y"` (empty: none).
  template <typename Number>
  void sample(std::string_view name, std::string_view labels, Number value) {
    if (labels.empty()) {
      fmt::format_to(std::back_inserter(out_), "{} {}\n", name, value);
    } else {
      fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, value);
    }
  }
  void histogram(const Family& f, std::string_view labels, const LatencyHistogram& h) {
    const std::string sep = labels.empty() ? "" : std::string(labels) + ",";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
      cumulative += h.buckets[i];
      fmt::format_to(std::back_inserter(out_), "{}_bucket{{{}le=\"{}\"}} {}\n", f.name, sep, kLatencyBuckets[i],
                     cumulative);
    }
    fmt::format_to(std::back_inserter(out_), "{}_bucket{{{}le=\"+Inf\"}} {}\n", f.name, sep, h.count);
    sample(std::string(f.name) + "_sum", labels, h.sumSeconds);
    sample(std::string(f.name) + "_count", labels, h.count);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

double seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

struct TenantRow {
  std::string key, kind, name;
  int exclusive = 0;
  uint64_t admittedBytes = 0;
  std::string labels = {};  // `tenant="…",kind="…"`, formatted once for all its series
};

}  // namespace

const std::vector<std::string>& metricNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Family* f : kFamilies) out.push_back(f->name);
    return out;
  }();
  return names;
}

std::string renderMetrics(const NodeManager& node, const UsageSampler* usage, const CallMetrics& calls) {
  Writer w;
  const StatePtr state = node.state();
  const CapacityBooks books = node.capacity();

  // The grants, as GetNode's exclusive_cpus shows them (held-back siblings included), by tenant.
  int exclusive_cpus = 0;
  std::map<std::string, int> exclusive_by_tenant;  // "pod/<uid>" from "pod/<uid>/<container>"
  for (const auto& [owner, grant] : state->grants()) {
    exclusive_cpus += grant.all().count();
    exclusive_by_tenant[owner.substr(0, owner.find('/', owner.find('/') + 1))] += grant.all().count();
  }
  const auto held = [&](const std::string& key) {
    const auto it = exclusive_by_tenant.find(key);
    return it == exclusive_by_tenant.end() ? 0 : it->second;
  };
  w.header(kNodeCpus);
  w.sample(kNodeCpus.name, R"(pool="online")", node.topology().onlineCpus().count());
  w.sample(kNodeCpus.name, R"(pool="reserved")", state->reserved().count());
  w.sample(kNodeCpus.name, R"(pool="shared")", state->shared().count());
  w.sample(kNodeCpus.name, R"(pool="exclusive")", exclusive_cpus);
  const auto cores = [](uint64_t milli) { return static_cast<double>(milli) / 1000; };
  w.header(kCpuCapacity);
  w.sample(kCpuCapacity.name, "", cores(books.cpuMilli.capacity));
  w.header(kCpuAllocatable);
  w.sample(kCpuAllocatable.name, "", cores(books.cpuMilli.allocatable()));
  w.header(kCpuAllocated);
  w.sample(kCpuAllocated.name, R"(kind="pod")", cores(books.cpuMilli.pods));
  w.sample(kCpuAllocated.name, R"(kind="vm")", cores(books.cpuMilli.vms));
  const ResourceBooks* memory = nullptr;
  for (const MemoryBooks& m : books.memory)
    if (m.numaNode == MemoryBooks::kWholeNode && m.resource == kRegularMemory) memory = &m.books;
  if (memory != nullptr) {
    w.header(kMemCapacity);
    w.sample(kMemCapacity.name, "", memory->capacity);
    w.header(kMemAllocatable);
    w.sample(kMemAllocatable.name, "", memory->allocatable());
    w.header(kMemAllocated);
    w.sample(kMemAllocated.name, R"(kind="pod")", memory->pods);
    w.sample(kMemAllocated.name, R"(kind="vm")", memory->vms);
  }
  // Pods' pages beside VMs': the same per-node books.
  std::vector<const MemoryBooks*> pages;
  for (const MemoryBooks& m : books.memory)
    if (m.numaNode != MemoryBooks::kWholeNode && m.resource != kRegularMemory && m.books.capacity > 0)
      pages.push_back(&m);
  const auto pageLabels = [](const MemoryBooks& m) {
    return fmt::format(R"(numa_node="{}",page_size="{}")", m.numaNode, m.resource);
  };
  w.header(kHugepagesCapacity);
  for (const MemoryBooks* m : pages) w.sample(kHugepagesCapacity.name, pageLabels(*m), m->books.capacity);
  w.header(kHugepagesAllocated);
  for (const MemoryBooks* m : pages) {
    w.sample(kHugepagesAllocated.name, pageLabels(*m) + R"(,kind="pod")", m->books.pods);
    w.sample(kHugepagesAllocated.name, pageLabels(*m) + R"(,kind="vm")", m->books.vms);
  }
  w.header(kSharedTenants);
  w.sample(kSharedTenants.name, "", state->totals.sharedTenants);  // as GetNode says
  w.header(kWritesPending);
  w.sample(kWritesPending.name, "", node.writesPending() ? 1 : 0);
  w.header(kPolicyPending);
  w.sample(kPolicyPending.name, "", node.facts().pendingPolicy.size());

  // Tenants: what the ledger holds, joined with the latest round by key.
  std::vector<TenantRow> rows;
  rows.reserve(state->pods.size() + state->vms.size());
  for (const auto& [uid, pod] : state->pods) {
    TenantRow r{"pod/" + uid, "pod", pod.spec.name};
    r.exclusive = held(r.key);
    r.admittedBytes = podMemoryBytes(pod);
    rows.push_back(std::move(r));
  }
  for (const auto& [uuid, vm] : state->vms) {
    TenantRow r{"vm/" + uuid, "vm", vm.spec.cpu.name};
    r.exclusive = held(r.key);
    r.admittedBytes = node.vmMemoryBytes(vm);
    rows.push_back(std::move(r));
  }
  for (TenantRow& r : rows) r.labels = fmt::format(R"(tenant="{}",kind="{}")", escaped(r.key), r.kind);
  w.header(kTenantInfo);
  for (const TenantRow& r : rows)
    w.sample(kTenantInfo.name, fmt::format(R"({},name="{}")", r.labels, escaped(r.name)), 1);
  w.header(kTenantExclusive);
  for (const TenantRow& r : rows) w.sample(kTenantExclusive.name, r.labels, r.exclusive);
  w.header(kTenantMemoryAdmitted);
  for (const TenantRow& r : rows) w.sample(kTenantMemoryAdmitted.name, r.labels, r.admittedBytes);

  const FramePtr frame = usage != nullptr ? usage->latest() : nullptr;
  std::vector<std::pair<const TenantRow*, const TenantSample*>> measured;
  if (frame) {
    for (const TenantRow& r : rows) {
      const TenantSample* s = frame->find(r.key);
      if (s != nullptr && s->measured) measured.emplace_back(&r, s);
    }
  }
  w.header(kTenantCpu);
  for (const auto& [r, s] : measured) w.sample(kTenantCpu.name, r->labels, seconds(s->cpu.usageNs));
  w.header(kTenantPeriods);
  for (const auto& [r, s] : measured) w.sample(kTenantPeriods.name, r->labels, s->cpu.periods);
  w.header(kTenantThrottledPeriods);
  for (const auto& [r, s] : measured) w.sample(kTenantThrottledPeriods.name, r->labels, s->cpu.throttledPeriods);
  w.header(kTenantThrottled);
  for (const auto& [r, s] : measured) w.sample(kTenantThrottled.name, r->labels, seconds(s->cpu.throttledNs));
  w.header(kTenantMemory);
  for (const auto& [r, s] : measured)
    if (s->memoryBytes) w.sample(kTenantMemory.name, r->labels, *s->memoryBytes);
  w.header(kCpuBusy);
  if (frame) {
    for (const CpuSample& c : frame->cpus)
      w.sample(kCpuBusy.name, fmt::format(R"(cpu="{}")", c.cpu), seconds(c.busyNs));
  }
  if (usage != nullptr) {
    const SamplerStats stats = usage->stats();
    w.header(kUsageRounds);
    w.sample(kUsageRounds.name, "", stats.rounds);
    w.header(kUsageRound);
    w.sample(kUsageRound.name, "", std::chrono::duration<double>(stats.lastRound).count());
    w.header(kUsageFiles);
    w.sample(kUsageFiles.name, "", stats.filesOpen);
    w.header(kUsageCpu);
    w.sample(kUsageCpu.name, "", std::chrono::duration<double>(stats.threadCpu).count());
  }

  const CallMetrics::Snapshot counted = calls.snapshot();
  w.header(kCalls);
  for (const auto& [key, n] : counted.calls) {
    const auto& [call, client, code] = key;
    w.sample(kCalls.name, fmt::format(R"(call="{}",client="{}",code="{}")", call, client, code), n);
  }
  w.header(kCallDuration);
  for (const auto& [key, h] : counted.callLatency)
    w.histogram(kCallDuration, fmt::format(R"(client="{}",call="{}")", key.first, key.second), h);
  w.header(kDecisionDuration);
  for (const auto& [call, h] : counted.decisionLatency)
    w.histogram(kDecisionDuration, fmt::format(R"(call="{}")", call), h);
  w.header(kRefusals);
  for (const auto& [key, n] : counted.refusals)
    w.sample(kRefusals.name, fmt::format(R"(call="{}",reason="{}")", key.first, key.second), n);

  const NodeManager::ReconcileOutcomes reconciles = node.reconcileOutcomes();
  w.header(kReconciles);
  w.sample(kReconciles.name, R"(result="clean")", reconciles.clean);
  w.sample(kReconciles.name, R"(result="repaired")", reconciles.repaired);
  w.sample(kReconciles.name, R"(result="failed")", reconciles.failed);
  w.header(kReconcileDiffs);
  w.sample(kReconcileDiffs.name, "", reconciles.differences);
  return w.take();
}

}  // namespace vri

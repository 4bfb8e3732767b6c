#include "vri/usage_convert.h"

namespace vri {

void fillUsageSample(const UsageFrame& frame, v1::UsageSample& out) {
  out.set_sequence(frame.sequence);
  out.set_time_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(frame.at.time_since_epoch()).count());
  for (const TenantSample& s : frame.tenants) {
    v1::TenantUsage& t = *out.add_tenants();
    t.set_tenant(s.label->key);
    t.set_kind(tenantKindName(s.label->kind));
    t.set_name(s.label->name);
    if (s.label->cgroup) t.set_cgroup(s.label->cgroup->str());
    t.set_measured(s.measured);
    if (!s.measured) continue;
    t.set_cpu_seconds_total(static_cast<double>(s.cpu.usageNs) / 1e9);
    t.set_periods_total(s.cpu.periods);
    t.set_throttled_periods_total(s.cpu.throttledPeriods);
    t.set_throttled_seconds_total(static_cast<double>(s.cpu.throttledNs) / 1e9);
    t.set_rates(s.rates);
    t.set_cpu_cores(s.cpuCores);
    t.set_throttled_fraction(s.throttledFraction);
    t.set_memory_measured(s.memoryBytes.has_value());
    t.set_memory_bytes(s.memoryBytes.value_or(0));
  }
  for (const CpuSample& c : frame.cpus) {
    v1::CpuUsage& cpu = *out.add_cpus();
    cpu.set_cpu(c.cpu);
    cpu.set_busy(c.busy);
    cpu.set_busy_seconds_total(static_cast<double>(c.busyNs) / 1e9);
  }
}

v1::UsageReport usageReport(const std::vector<FramePtr>& frames, std::chrono::milliseconds interval,
                            size_t historyKept) {
  v1::UsageReport report;
  report.set_interval_ms(static_cast<uint32_t>(interval.count()));
  report.set_history_kept(static_cast<uint32_t>(historyKept));
  for (const FramePtr& frame : frames) fillUsageSample(*frame, *report.add_samples());
  return report;
}

}  // namespace vri

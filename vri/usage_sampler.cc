#include "vri/usage_sampler.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <cerrno>

namespace vri {

namespace {

// The CPU time a v2-format cpu.stat counts.
Result<uint64_t> usageOfCpuStat(std::string_view text) {
  VRI_ASSIGN_OR_RETURN(CpuCounters counters, parseCpuStatV2(text));
  return counters.usageNs;
}

}  // namespace

const TenantSample* UsageFrame::find(const std::string& key) const {
  const auto it = std::lower_bound(tenants.begin(), tenants.end(), key,
                                   [](const TenantSample& s, const std::string& k) { return s.label->key < k; });
  return it != tenants.end() && it->label->key == key ? &*it : nullptr;
}

Result<UsageSources> findUsageSources(const CgroupFs& fs, const std::string& cgroupRoot, CgroupVersion version,
                                      bool readV1Memory) {
  UsageSources sources;
  sources.version = version;
  if (version == CgroupVersion::kV2) {
    sources.memory = "";
    return sources;
  }
  VRI_ASSIGN_OR_RETURN(CgroupMounts mounts, readCgroupMounts(fs));
  VRI_ASSIGN_OR_RETURN(sources.cpu, v1Hierarchy(mounts, "cpu", cgroupRoot).context("usage: the cpu hierarchy"));
  VRI_ASSIGN_OR_RETURN(sources.cpuacct,
                       v1Hierarchy(mounts, "cpuacct", cgroupRoot).context("usage: the cpuacct hierarchy"));
  // A hybrid host's unified hierarchy (systemd's /sys/fs/cgroup/unified) counts every cgroup's CPU time
  // too: where a tenant is in no cpuacct cgroup (libvirt may leave QEMU in cpuacct's root), it is read there.
  std::string root(cgroupRoot);
  while (root.size() > 1 && root.ends_with('/')) root.pop_back();
  if (mounts.unified.starts_with(root + "/") && mounts.unified.find('/', root.size() + 1) == std::string::npos)
    sources.unified = mounts.unified.substr(root.size() + 1);
  if (readV1Memory) {
    auto memory = v1Hierarchy(mounts, "memory", cgroupRoot);
    if (memory.ok()) sources.memory = *memory;  // no memory hierarchy: memory is not measured
  }
  return sources;
}

UsageSampler::UsageSampler(const CgroupFs& fs, UsageSources sources, const TreeLayout& layout,
                           std::function<StatePtr()> state, UsageSamplerOptions options, const Clock& clock,
                           Logger& log)
    : fs_(fs),
      sources_(std::move(sources)),
      namer_(makeKubeletNamer(layout.driver, layout.kubeletParent)),
      state_(std::move(state)),
      options_(options),
      clock_(clock),
      log_(log) {}

UsageSampler::~UsageSampler() { stop(); }

void UsageSampler::start() {
  thread_ = std::thread([this] { run(); });
  ::pthread_setname_np(thread_.native_handle(), "vri-usage");  // as top -H and the benchmark find it
}

void UsageSampler::stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  published_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void UsageSampler::run() {
  Clock::TimePoint due = clock_.now();
  while (true) {
    sampleOnce();
    // The next round at a fixed rate from the first: a slow round does not push the rest back.
    due += options_.interval;
    const Clock::TimePoint now = clock_.now();
    if (due < now) due = now;
    MutexLock lock(mutex_);
    while (!stopping_ && !clock_.waitUntil(lock, published_, due)) {
    }
    if (stopping_) return;
  }
}

FramePtr UsageSampler::latest() const {
  MutexLock lock(mutex_);
  return frames_.empty() ? nullptr : frames_.back();
}

std::vector<FramePtr> UsageSampler::recent(size_t count) const {
  MutexLock lock(mutex_);
  std::vector<FramePtr> out;
  for (auto it = frames_.rbegin(); it != frames_.rend() && out.size() < count; ++it) out.push_back(*it);
  return out;
}

FramePtr UsageSampler::next(uint64_t sequence, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mutex_);
  while (true) {
    if (stopping_) return nullptr;
    if (!frames_.empty() && frames_.back()->sequence > sequence) return frames_.back();
    if (lock.waitUntil(published_, deadline) == std::cv_status::timeout) {
      if (!stopping_ && !frames_.empty() && frames_.back()->sequence > sequence) return frames_.back();
      return nullptr;
    }
  }
}

SamplerStats UsageSampler::stats() const {
  MutexLock lock(mutex_);
  return stats_;
}

void UsageSampler::follow(const LedgerState& state) {
  std::map<std::string, std::shared_ptr<const TenantLabel>> wanted;
  for (const auto& [uid, pod] : state.pods) {
    auto label = std::make_shared<TenantLabel>();
    label->key = "pod/" + uid;
    label->kind = TenantKind::kPod;
    label->id = uid;
    label->name = pod.spec.name;
    if (!pod.spec.outsideKubeletTree) {
      auto path = namer_->pod(pod.spec.qos, uid);
      if (path.ok()) label->cgroup = *path;
    }
    wanted.emplace(label->key, std::move(label));
  }
  for (const auto& [uuid, vm] : state.vms) {
    auto label = std::make_shared<TenantLabel>();
    label->key = "vm/" + uuid;
    label->kind = TenantKind::kVm;
    label->id = uuid;
    label->name = vm.spec.cpu.name;
    if (const CgroupPath* scope = state.vmScope(uuid)) label->cgroup = *scope;
    wanted.emplace(label->key, std::move(label));
  }
  // Both sorted by key: one pass keeps what is unchanged, closes what went, adds what came.
  auto have = tenants_.begin();
  for (auto& [key, label] : wanted) {
    while (have != tenants_.end() && have->first < key) have = tenants_.erase(have);
    if (have != tenants_.end() && have->first == key) {
      const TenantLabel& old = *have->second.label;
      if (old.cgroup == label->cgroup && old.name == label->name) {
        ++have;
        continue;
      }
      have = tenants_.erase(have);  // its cgroup moved (a VM started): opened afresh
    }
    TenantFiles files;
    files.label = std::move(label);
    tenants_.emplace_hint(have, key, std::move(files));
  }
  tenants_.erase(have, tenants_.end());
}

Result<std::unique_ptr<KeptFile>> UsageSampler::keep(const CgroupDir& dir, const char* file, bool& reopened) const {
  auto kept = fs_.keepOpen(dir, file);
  if (kept.ok() || kept.error().sysErrno() != EMFILE) return kept;
  // Out of descriptors (the open-file limit): this file is read by its path each round instead.
  reopened = true;
  if (!warnedFileLimit_) {
    warnedFileLimit_ = true;
    log_.warning("usage: the open-file limit is reached; files beyond it are opened again at every round");
  }
  return fs_.CgroupFs::keepOpen(dir, file);
}

void UsageSampler::open(TenantFiles& t) {
  t.cpuStat.reset();
  t.cpuacct.reset();
  t.memory.reset();
  t.reopened = false;
  t.haveLast = false;
  t.opened = true;
  if (!t.label->cgroup) return;
  const CgroupPath& path = *t.label->cgroup;
  auto stat = keep({sources_.cpu, path}, "cpu.stat", t.reopened);
  if (!stat.ok()) {
    t.opened = false;  // not there yet (a VM starting, a pod before its cgroup): tried again next round
    return;
  }
  t.cpuStat = std::move(*stat);
  if (sources_.version == CgroupVersion::kV1) {
    auto usage = keep({sources_.cpuacct, path}, "cpuacct.usage", t.reopened);
    t.cpuFromUnified = !usage.ok() && sources_.unified;
    if (t.cpuFromUnified) usage = keep({*sources_.unified, path}, "cpu.stat", t.reopened);
    if (!usage.ok()) {
      // No CPU time to read anywhere yet: not measured, and looked for again next round.
      t.cpuStat.reset();
      t.opened = false;
      return;
    }
    t.cpuacct = std::move(*usage);
  }
  openMemory(t);
}

void UsageSampler::openMemory(TenantFiles& t) {
  t.memoryTriedAt = sequence_;
  if (!sources_.memory || !t.label->cgroup) return;
  // v1: the memory hierarchy is kubelet's and the runtime's (vrid makes nothing there unless it
  // manages memory), so a pod's memory cgroup may come later than its others, or never.
  auto memory = keep({*sources_.memory, *t.label->cgroup},
                     sources_.version == CgroupVersion::kV2 ? "memory.current" : "memory.usage_in_bytes", t.reopened);
  if (memory.ok()) t.memory = std::move(*memory);
}

TenantSample UsageSampler::read(TenantFiles& t, Clock::TimePoint now) {
  TenantSample s;
  s.label = t.label;
  if (!t.opened) open(t);
  if (!t.cpuStat) return s;
  auto stat = t.cpuStat->read();
  Result<CpuCounters> counters =
      !stat.ok() ? Result<CpuCounters>(stat.error())
                 : (sources_.version == CgroupVersion::kV2 ? parseCpuStatV2(*stat) : parseCpuStatV1(*stat));
  if (counters.ok() && t.cpuacct) {
    auto usage = t.cpuacct->read();
    // cpuacct.usage, or the unified hierarchy's cpu.stat (its usage_usec) on a hybrid host.
    const Result<uint64_t> ns = !usage.ok()        ? Result<uint64_t>(usage.error())
                                : t.cpuFromUnified ? usageOfCpuStat(*usage)
                                                   : parseCounterFile(*usage);
    if (ns.ok()) {
      counters->usageNs = *ns;
    } else {
      counters = ns.error();
    }
  }
  if (!counters.ok()) {
    // The cgroup went (or moved) under the kept file: opened again next round, from its path.
    t.opened = false;
    t.cpuStat.reset();
    return s;
  }
  s.measured = true;
  s.cpu = *counters;
  if (!t.memory && sequence_ - t.memoryTriedAt >= kMemoryRetryRounds) openMemory(t);
  if (t.memory) {
    auto text = t.memory->read();
    auto bytes = text.ok() ? parseCounterFile(*text) : Result<uint64_t>(text.error());
    if (bytes.ok()) {
      s.memoryBytes = *bytes;
    } else {
      t.memory.reset();  // its cgroup went: looked for again in a later round
    }
  }
  if (t.haveLast && now > t.lastAt && s.cpu.usageNs >= t.last.usageNs) {
    const double seconds = std::chrono::duration<double>(now - t.lastAt).count();
    s.rates = true;
    s.cpuCores = static_cast<double>(s.cpu.usageNs - t.last.usageNs) / 1e9 / seconds;
    const uint64_t periods = s.cpu.periods - std::min(s.cpu.periods, t.last.periods);
    const uint64_t throttled = s.cpu.throttledPeriods - std::min(s.cpu.throttledPeriods, t.last.throttledPeriods);
    s.throttledFraction = periods == 0 ? 0.0 : static_cast<double>(throttled) / static_cast<double>(periods);
  }
  t.last = s.cpu;
  t.lastAt = now;
  t.haveLast = true;
  return s;
}

std::vector<CpuSample> UsageSampler::readCpus(Clock::TimePoint now) {
  std::vector<CpuSample> out;
  if (!cpus_.stat) {
    auto stat = fs_.keepProcOpen("stat");
    if (!stat.ok()) return out;
    cpus_.stat = std::move(*stat);
  }
  auto text = cpus_.stat->read();
  auto times = text.ok() ? parseProcStat(*text, options_.ticksPerSecond) : Result<std::vector<CpuTime>>(text.error());
  if (!times.ok()) {
    cpus_.stat.reset();
    return out;
  }
  std::map<int, CpuTime> now_times;
  for (const CpuTime& t : *times) {
    CpuSample s;
    s.cpu = t.cpu;
    s.busyNs = t.busyNs;
    const auto last = cpus_.last.find(t.cpu);
    if (last != cpus_.last.end() && t.totalNs > last->second.totalNs && t.busyNs >= last->second.busyNs)
      s.busy =
          static_cast<double>(t.busyNs - last->second.busyNs) / static_cast<double>(t.totalNs - last->second.totalNs);
    out.push_back(s);
    now_times[t.cpu] = t;
  }
  cpus_.last = std::move(now_times);
  cpus_.lastAt = now;
  return out;
}

void UsageSampler::sampleOnce() {
  const auto started = std::chrono::steady_clock::now();
  const StatePtr state = state_();
  if (state && !(state == followed_)) {
    follow(*state);
    followed_ = state;
  }
  auto frame = std::make_shared<UsageFrame>();
  frame->sequence = ++sequence_;
  frame->at = std::chrono::system_clock::now();
  frame->interval = options_.interval;
  const Clock::TimePoint now = clock_.now();
  frame->tenants.reserve(tenants_.size());
  size_t open_files = 0, reopened = 0;
  for (auto& [key, files] : tenants_) {
    frame->tenants.push_back(read(files, now));
    const size_t kept = (files.cpuStat ? 1 : 0) + (files.cpuacct ? 1 : 0) + (files.memory ? 1 : 0);
    (files.reopened ? reopened : open_files) += kept;
  }
  frame->cpus = readCpus(now);
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  {
    MutexLock lock(mutex_);
    frames_.push_back(std::move(frame));
    while (frames_.size() > std::max<size_t>(options_.history, 1)) frames_.pop_front();
    ++stats_.rounds;
    stats_.tenants = tenants_.size();
    stats_.filesOpen = open_files + (cpus_.stat ? 1 : 0);
    stats_.filesReopened = reopened;
    stats_.lastRound = took;
    if (timespec cpu{}; ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
      stats_.threadCpu = std::chrono::seconds(cpu.tv_sec) + std::chrono::nanoseconds(cpu.tv_nsec);
  }
  published_.notify_all();
}

}  // namespace vri

#include "cgroup-model/cgroup_backend.h"

#include <algorithm>
#include <charconv>

#include "base/text.h"

namespace vri {

namespace {

// A file's content when it exists, nullopt when it does not.
std::optional<std::string> readIfPresent(const CgroupFs& fs, const CgroupDir& dir, std::string_view file) {
  auto text = fs.read(dir, file);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

Result<std::vector<int>> parseTaskList(const std::string& text, const std::string& where) {
  std::vector<int> tasks;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    int id = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), id);
    if (ec != std::errc() || ptr != line.data() + line.size()) {
      return Error::invalidArgument("unreadable task id " + line + " in " + where);
    }
    tasks.push_back(id);
  }
  return tasks;
}

class V1Backend : public CgroupBackend {
 public:
  explicit V1Backend(std::map<std::string, std::string> hierarchies) : hierarchies_(std::move(hierarchies)) {}

  CgroupVersion version() const override { return CgroupVersion::kV1; }
  std::string primaryHierarchy() const override {
    const auto it = hierarchies_.find("cpuset");
    return it == hierarchies_.end() ? std::string("cpuset") : it->second;
  }
  std::vector<std::string> hierarchies() const override {
    std::vector<std::string> out = {primaryHierarchy()};
    for (const auto& [controller, hierarchy] : hierarchies_) {
      if (std::find(out.begin(), out.end(), hierarchy) == out.end()) out.push_back(hierarchy);
    }
    return out;
  }

  Result<std::vector<ControlFile>> files(const CgroupSettings& s) const override {
    std::vector<ControlFile> out;
    const auto add = [&](const char* controller, std::string file, std::string value, FileKind kind) -> Result<void> {
      const auto it = hierarchies_.find(controller);
      if (it == hierarchies_.end()) {
        return Error::failedPrecondition(std::string("no cgroup v1 hierarchy has the ") + controller +
                                         " controller, needed for " + file);
      }
      out.push_back({it->second, std::move(file), std::move(value), kind});
      return {};
    };
    if (s.cpus) VRI_TRY(add("cpuset", "cpuset.cpus", s.cpus->format(), FileKind::kCpus));
    if (s.mems) VRI_TRY(add("cpuset", "cpuset.mems", s.mems->format(), FileKind::kMems));
    if (s.cpusExclusive || s.partitionRoot)
      return Error::failedPrecondition("cpuset partitions need cgroup v2; this node runs v1");
    if (s.shares) VRI_TRY(add("cpu", "cpu.shares", s.shares->format(), FileKind::kPlain));
    if (s.cpuMax) {
      VRI_TRY(add("cpu", "cpu.cfs_period_us", s.cpuMax->formatV1Period(), FileKind::kPlain));
      VRI_TRY(add("cpu", "cpu.cfs_quota_us", s.cpuMax->formatV1Quota(), FileKind::kPlain));
    }
    if (s.memoryMax) VRI_TRY(add("memory", "memory.limit_in_bytes", s.memoryMax->formatV1Memory(), FileKind::kPlain));
    for (const auto& [size, limit] : s.hugetlbMax) {
      VRI_TRY(add("hugetlb", "hugetlb." + hugepageSizeName(size) + ".limit_in_bytes", limit.formatV1Memory(),
                  FileKind::kPlain));
    }
    if (s.pidsMax) VRI_TRY(add("pids", "pids.max", s.pidsMax->formatV2(), FileKind::kPlain));
    return out;
  }

  std::vector<std::string> controllers(const CgroupSettings&) const override { return {}; }

  Result<CgroupSettings> readSettings(const CgroupFs& fs, const CgroupPath& path) const override {
    if (!fs.exists({primaryHierarchy(), path}))
      return Error::notFound("no cgroup " + primaryHierarchy() + ":" + path.str());
    CgroupSettings s;
    const auto at = [&](const char* controller) -> std::optional<CgroupDir> {
      const auto it = hierarchies_.find(controller);
      if (it == hierarchies_.end() || !fs.exists({it->second, path})) return std::nullopt;
      return CgroupDir{it->second, path};
    };
    if (auto dir = at("cpuset")) {
      if (auto text = readIfPresent(fs, *dir, "cpuset.cpus")) s.cpus = toOptional(CpuSet::parse(*text));
      if (auto text = readIfPresent(fs, *dir, "cpuset.mems")) s.mems = toOptional(CpuSet::parse(*text));
    }
    if (auto dir = at("cpu")) {
      if (auto text = readIfPresent(fs, *dir, "cpu.shares")) s.shares = toOptional(CpuShares::parse(*text));
      auto quota = readIfPresent(fs, *dir, "cpu.cfs_quota_us");
      auto period = readIfPresent(fs, *dir, "cpu.cfs_period_us");
      if (quota && period) s.cpuMax = toOptional(CpuMax::parseV1(*quota, *period));
    }
    if (auto dir = at("memory")) {
      if (auto text = readIfPresent(fs, *dir, "memory.limit_in_bytes"))
        s.memoryMax = toOptional(Limit::parseV1Memory(*text));
    }
    if (auto dir = at("pids")) {
      if (auto text = readIfPresent(fs, *dir, "pids.max")) s.pidsMax = toOptional(Limit::parseV2(*text));
    }
    return s;
  }

  Result<std::vector<int>> readTasks(const CgroupFs& fs, const CgroupPath& path, bool threads) const override {
    const CgroupDir dir{primaryHierarchy(), path};
    VRI_ASSIGN_OR_RETURN(std::string text, fs.read(dir, threads ? "tasks" : "cgroup.procs"));
    return parseTaskList(text, dir.describe());
  }

 private:
  template <typename T>
  static std::optional<T> toOptional(Result<T> result) {
    if (!result.ok()) return std::nullopt;
    return std::move(result).value();
  }

  std::map<std::string, std::string> hierarchies_;
};

class V2Backend : public CgroupBackend {
 public:
  CgroupVersion version() const override { return CgroupVersion::kV2; }
  std::string primaryHierarchy() const override { return ""; }
  std::vector<std::string> hierarchies() const override { return {""}; }

  Result<std::vector<ControlFile>> files(const CgroupSettings& s) const override {
    std::vector<ControlFile> out;
    if (s.cpus) out.push_back({"", "cpuset.cpus", s.cpus->format(), FileKind::kCpus});
    if (s.mems) out.push_back({"", "cpuset.mems", s.mems->format(), FileKind::kMems});
    if (s.cpusExclusive) out.push_back({"", "cpuset.cpus.exclusive", s.cpusExclusive->format(), FileKind::kExclusive});
    if (s.partitionRoot) {
      out.push_back({"", "cpuset.cpus.partition", std::string(*s.partitionRoot ? kPartitionRoot : kPartitionMember),
                     FileKind::kPartition});
    }
    if (s.shares) out.push_back({"", "cpu.weight", sharesToWeight(*s.shares).format(), FileKind::kPlain});
    if (s.cpuMax) out.push_back({"", "cpu.max", s.cpuMax->formatV2(), FileKind::kPlain});
    if (s.memoryMax) out.push_back({"", "memory.max", s.memoryMax->formatV2(), FileKind::kPlain});
    if (s.memoryMin) out.push_back({"", "memory.min", std::to_string(*s.memoryMin), FileKind::kPlain});
    if (s.memoryLow) out.push_back({"", "memory.low", std::to_string(*s.memoryLow), FileKind::kPlain});
    for (const auto& [size, limit] : s.hugetlbMax) {
      out.push_back({"", "hugetlb." + hugepageSizeName(size) + ".max", limit.formatV2(), FileKind::kPlain});
    }
    if (s.pidsMax) out.push_back({"", "pids.max", s.pidsMax->formatV2(), FileKind::kPlain});
    return out;
  }

  Result<CgroupSettings> readSettings(const CgroupFs& fs, const CgroupPath& path) const override {
    const CgroupDir dir{"", path};
    if (!fs.exists(dir)) return Error::notFound("no cgroup :" + path.str());
    CgroupSettings s;
    const auto parsed = [](auto result) -> std::optional<typename decltype(result)::value_type> {
      if (!result.ok()) return std::nullopt;
      return std::move(result).value();
    };
    if (auto text = readIfPresent(fs, dir, "cpuset.cpus")) s.cpus = parsed(CpuSet::parse(*text));
    if (auto text = readIfPresent(fs, dir, "cpuset.mems")) s.mems = parsed(CpuSet::parse(*text));
    if (auto text = readIfPresent(fs, dir, "cpuset.cpus.exclusive")) s.cpusExclusive = parsed(CpuSet::parse(*text));
    // `root invalid (...)` is no root partition: the kernel does not honour it.
    if (auto text = readIfPresent(fs, dir, "cpuset.cpus.partition")) s.partitionRoot = trimmed(*text) == kPartitionRoot;
    if (auto text = readIfPresent(fs, dir, "cpu.weight")) {
      if (auto weight = parsed(CpuWeight::parse(*text))) s.shares = weightToShares(*weight);
    }
    if (auto text = readIfPresent(fs, dir, "cpu.max")) s.cpuMax = parsed(CpuMax::parseV2(*text));
    if (auto text = readIfPresent(fs, dir, "memory.max")) s.memoryMax = parsed(Limit::parseV2(*text));
    if (auto text = readIfPresent(fs, dir, "pids.max")) s.pidsMax = parsed(Limit::parseV2(*text));
    return s;
  }

  Result<std::vector<int>> readTasks(const CgroupFs& fs, const CgroupPath& path, bool threads) const override {
    const CgroupDir dir{"", path};
    VRI_ASSIGN_OR_RETURN(std::string text, fs.read(dir, threads ? "cgroup.threads" : "cgroup.procs"));
    return parseTaskList(text, dir.describe());
  }

  std::vector<std::string> controllers(const CgroupSettings& s) const override {
    std::vector<std::string> out;
    if (s.cpus || s.mems || s.cpusExclusive || s.partitionRoot) out.push_back("cpuset");
    if (s.shares || s.cpuMax) out.push_back("cpu");
    if (s.memoryMax || s.memoryMin || s.memoryLow) out.push_back("memory");
    if (!s.hugetlbMax.empty()) out.push_back("hugetlb");
    if (s.pidsMax) out.push_back("pids");
    return out;
  }
};

}  // namespace

std::unique_ptr<CgroupBackend> makeV1Backend(std::map<std::string, std::string> hierarchies) {
  return std::make_unique<V1Backend>(std::move(hierarchies));
}

std::unique_ptr<CgroupBackend> makeV2Backend() { return std::make_unique<V2Backend>(); }

bool sameControlValue(const ControlFile& desired, std::string_view current) {
  if (desired.kind == FileKind::kPartition) return trimmed(current) == desired.value;
  if (desired.kind != FileKind::kPlain) {
    auto a = CpuSet::parse(desired.value);
    auto b = CpuSet::parse(current);
    return a.ok() && b.ok() && *a == *b;
  }
  const std::string_view file = desired.file;
  if (file == "memory.limit_in_bytes" || file.ends_with(".limit_in_bytes")) {
    auto a = Limit::parseV1Memory(desired.value);
    auto b = Limit::parseV1Memory(current);
    if (!a.ok() || !b.ok()) return false;
    if (!a->value || !b->value) return a->value == b->value;
    return *a->value / 4096 == *b->value / 4096;
  }
  if (file == "cpu.max") {
    auto a = CpuMax::parseV2(desired.value);
    auto b = CpuMax::parseV2(current);
    return a.ok() && b.ok() && *a == *b;
  }
  return desired.value == current;
}

Result<std::string> readControlValue(const CgroupFs& fs, const CgroupBackend& backend, const CgroupDir& dir,
                                     const std::string& file) {
  auto value = fs.read(dir, file);
  if (!value.ok() && value.error().code() == ErrorCode::kNotFound && backend.version() == CgroupVersion::kV2)
    return std::string();
  return value;
}

}  // namespace vri

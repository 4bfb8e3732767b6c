#include "cgroup-model/fixture_cgroupfs.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/quote.h"
#include "cgroup-model/cgroup_values.h"
#include "cgroup-model/kernel_cgroupfs.h"

namespace vri {

namespace fs = std::filesystem;

namespace {

constexpr char kUnlimitedV1[] = "9223372036854771712";
constexpr uint64_t kHugepageSizes[] = {2ULL << 20, 1ULL << 30};

Result<void> putFile(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error::fromErrno(errno, "create fixture file " + path);
  out << content;
  if (content.empty() || content.back() != '\n') out << '\n';
  if (!out) return Error::fromErrno(errno, "write fixture file " + path);
  return {};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::string joinLines(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += item + "\n";
  return out;
}

bool isPid(std::string_view text) {
  int pid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size() && pid > 0;
}

// The v1 default files of each controller, and their v2 counterparts.
std::vector<std::pair<std::string, std::string>> v1Defaults(std::string_view controller) {
  if (controller == "cpuset") return {{"cpuset.cpus", ""}, {"cpuset.mems", ""}};
  if (controller == "cpu") {
    return {{"cpu.shares", "1024"},
            {"cpu.cfs_quota_us", "-1"},
            {"cpu.cfs_period_us", "100000"},
            {"cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0"}};
  }
  if (controller == "cpuacct") return {{"cpuacct.usage", "0"}};
  if (controller == "memory") return {{"memory.limit_in_bytes", kUnlimitedV1}, {"memory.usage_in_bytes", "0"}};
  if (controller == "pids") return {{"pids.max", "max"}};
  if (controller == "hugetlb") {
    std::vector<std::pair<std::string, std::string>> files;
    for (uint64_t size : kHugepageSizes)
      files.push_back({"hugetlb." + hugepageSizeName(size) + ".limit_in_bytes", kUnlimitedV1});
    return files;
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> v2Defaults(std::string_view controller, bool partitions) {
  if (controller == "cpuset" && partitions) {
    return {
        {"cpuset.cpus", ""}, {"cpuset.mems", ""}, {"cpuset.cpus.exclusive", ""}, {"cpuset.cpus.partition", "member"}};
  }
  if (controller == "cpuset") return {{"cpuset.cpus", ""}, {"cpuset.mems", ""}};
  if (controller == "cpu") return {{"cpu.weight", "100"}, {"cpu.max", "max 100000"}};
  if (controller == "memory")
    return {{"memory.max", "max"}, {"memory.min", "0"}, {"memory.low", "0"}, {"memory.current", "0"}};
  if (controller == "pids") return {{"pids.max", "max"}};
  if (controller == "hugetlb") {
    std::vector<std::pair<std::string, std::string>> files;
    for (uint64_t size : kHugepageSizes) files.push_back({"hugetlb." + hugepageSizeName(size) + ".max", "max"});
    return files;
  }
  return {};
}

bool isLimitFile(std::string_view file) {
  return file == "memory.max" || file == "memory.min" || file == "memory.low" || file == "pids.max" ||
         (file.starts_with("hugetlb.") && file.ends_with(".max"));
}

}  // namespace

Result<FixtureCgroupFs> FixtureCgroupFs::create(std::string directory, CgroupVersion version,
                                                std::vector<FixtureHierarchy> hierarchies, CpuSet onlineCpus,
                                                CpuSet onlineMems) {
  if (!directory.starts_with('/')) return Error::invalidArgument("fixture directory must be absolute");
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) return Error::fromErrno(error.value(), "create fixture directory " + directory);
  if (!fs::is_empty(directory, error))
    return Error::failedPrecondition("fixture directory " + directory + " is not empty");
  FixtureCgroupFs fixture(std::move(directory), version, std::move(hierarchies), std::move(onlineCpus),
                          std::move(onlineMems));
  fs::create_directories(fixture.directory_ + "/proc/self", error);
  if (error) return Error::fromErrno(error.value(), "create fixture proc directory");
  std::string mountinfo;
  int mount_id = 30;
  for (const FixtureHierarchy& h : fixture.hierarchies_) {
    const CgroupDir root{h.name, {}};
    fs::create_directories(fixture.dirPath(root), error);
    if (error) return Error::fromErrno(error.value(), "create fixture hierarchy " + h.name);
    VRI_TRY(fixture.createControllerFiles(root, h.controllers, true));
    const std::string mount_point = fixture.directory_ + "/cgroup" + (h.name.empty() ? "" : "/" + h.name);
    std::string options = "rw";
    for (const std::string& c : h.controllers) options += "," + c;
    ++mount_id;
    mountinfo += std::to_string(mount_id) + " 25 0:" + std::to_string(mount_id) + " / " + mount_point +
                 " rw,relatime - " +
                 (version == CgroupVersion::kV2 ? "cgroup2 cgroup2 rw" : "cgroup cgroup " + options) + "\n";
  }
  VRI_TRY(fixture.setProcFile("self/mountinfo", mountinfo));
  return fixture;
}

Result<FixtureCgroupFs> FixtureCgroupFs::createV1(std::string directory, CpuSet onlineCpus, CpuSet onlineMems) {
  return create(std::move(directory), CgroupVersion::kV1,
                {{"cpuset", {"cpuset"}},
                 {"cpu,cpuacct", {"cpu", "cpuacct"}},
                 {"memory", {"memory"}},
                 {"hugetlb", {"hugetlb"}},
                 {"pids", {"pids"}}},
                std::move(onlineCpus), std::move(onlineMems));
}

Result<FixtureCgroupFs> FixtureCgroupFs::createV2(std::string directory, CpuSet onlineCpus, CpuSet onlineMems) {
  return create(std::move(directory), CgroupVersion::kV2, {{"", {"cpuset", "cpu", "memory", "hugetlb", "pids"}}},
                std::move(onlineCpus), std::move(onlineMems));
}

std::string FixtureCgroupFs::dirPath(const CgroupDir& dir) const {
  std::string path = directory_ + "/cgroup";
  if (!dir.hierarchy.empty()) path += "/" + dir.hierarchy;
  if (!dir.path.isRoot()) path += "/" + dir.path.str();
  return path;
}

std::string FixtureCgroupFs::filePath(const CgroupDir& dir, std::string_view file) const {
  return dirPath(dir) + "/" + std::string(file);
}

const FixtureHierarchy* FixtureCgroupFs::hierarchy(std::string_view name) const {
  for (const FixtureHierarchy& h : hierarchies_) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

std::vector<std::string> FixtureCgroupFs::v2Controllers(const CgroupDir& dir) const {
  auto text = readWholeFile(filePath(dir, "cgroup.controllers"));
  std::vector<std::string> controllers;
  if (!text.ok()) return controllers;
  std::istringstream words(*text);
  for (std::string word; words >> word;) controllers.push_back(word);
  return controllers;
}

bool FixtureCgroupFs::hasController(const CgroupDir& dir, std::string_view controller) const {
  if (version_ == CgroupVersion::kV2) {
    const auto controllers = v2Controllers(dir);
    return std::find(controllers.begin(), controllers.end(), controller) != controllers.end();
  }
  const FixtureHierarchy* h = hierarchy(dir.hierarchy);
  return h != nullptr && std::find(h->controllers.begin(), h->controllers.end(), controller) != h->controllers.end();
}

Result<void> FixtureCgroupFs::createControllerFiles(const CgroupDir& dir, const std::vector<std::string>& controllers,
                                                    bool isRoot) {
  const std::string base = dirPath(dir) + "/";
  if (version_ == CgroupVersion::kV1) {
    VRI_TRY(putFile(base + "tasks", ""));
    VRI_TRY(putFile(base + "cgroup.procs", ""));
    for (const std::string& controller : controllers) {
      for (const auto& [file, value] : v1Defaults(controller)) VRI_TRY(putFile(base + file, value));
    }
    if (isRoot && std::find(controllers.begin(), controllers.end(), "cpuset") != controllers.end()) {
      VRI_TRY(putFile(base + "cpuset.cpus", onlineCpus_.format()));
      VRI_TRY(putFile(base + "cpuset.mems", onlineMems_.format()));
    }
    return {};
  }
  VRI_TRY(putFile(base + "cgroup.procs", ""));
  VRI_TRY(putFile(base + "cgroup.threads", ""));
  VRI_TRY(putFile(base + "cgroup.subtree_control", ""));
  std::string offered;
  for (const std::string& c : controllers) offered += (offered.empty() ? "" : " ") + c;
  VRI_TRY(putFile(base + "cgroup.controllers", offered));
  if (isRoot) {
    VRI_TRY(putFile(base + "cpuset.cpus.effective", onlineCpus_.format()));
    VRI_TRY(putFile(base + "cpuset.mems.effective", onlineMems_.format()));
    return {};
  }
  VRI_TRY(putFile(base + "cgroup.type", "domain"));
  // Every v2 cgroup counts its CPU time; the throttling fields come with the cpu controller.
  VRI_TRY(putFile(base + "cpu.stat",
                  std::find(controllers.begin(), controllers.end(), "cpu") != controllers.end()
                      ? "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0"
                      : "usage_usec 0\nuser_usec 0\nsystem_usec 0"));
  for (const std::string& controller : controllers) {
    for (const auto& [file, value] : v2Defaults(controller, partitions_)) VRI_TRY(putFile(base + file, value));
  }
  return {};
}

Result<void> FixtureCgroupFs::setCounter(const CgroupDir& dir, std::string_view file, std::string_view value) {
  if (file != "cpu.stat" && file != "cpuacct.usage" && file != "memory.usage_in_bytes" && file != "memory.current")
    return Error::invalidArgument("not a usage counter: " + std::string(file));
  if (!exists(dir)) return Error::fromErrno(ENOENT, "open " + filePath(dir, file));
  return putFile(filePath(dir, file), value);  // made where missing: a hybrid host's unified cgroups have cpu.stat
}

Result<std::string> FixtureCgroupFs::read(const CgroupDir& dir, std::string_view file) const {
  VRI_TRY(validateControlFileName(file));
  if (hierarchy(dir.hierarchy) == nullptr) return Error::fromErrno(ENOENT, "open " + filePath(dir, file));
  return readWholeFile(filePath(dir, file));
}

Error FixtureCgroupFs::refuse(int err, const CgroupDir& dir, std::string_view file, std::string_view value) const {
  return Error::fromErrno(err, "write " + quoteForMessage(value) + " to " + filePath(dir, file));
}

Result<std::string> FixtureCgroupFs::checkedValue(std::string_view file, std::string_view value,
                                                  const CgroupDir& dir) const {
  std::string text(value);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const auto invalid = [&](int err = EINVAL) { return refuse(err, dir, file, value); };
  if (file == "cpu.shares") {
    uint64_t shares = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), shares);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return invalid();
    return std::to_string(std::clamp<uint64_t>(shares, CpuShares::kMin, CpuShares::kMax));  // the kernel clamps
  }
  if (file == "cpu.weight") {
    auto weight = CpuWeight::parse(text);
    if (!weight.ok()) return invalid(ERANGE);
    return text;
  }
  if (file == "cpu.max") {
    auto max = CpuMax::parseV2(text);
    if (!max.ok()) return invalid();
    if (text.find(' ') == std::string::npos) {  // quota only: the period stays
      auto current = CpuMax::parseV2(*readWholeFile(filePath(dir, file)));
      if (current.ok()) max->periodUs = current->periodUs;
    }
    return max->formatV2();
  }
  if (file == "cpu.cfs_quota_us") {
    if (!CpuMax::parseV1(text, "100000").ok()) return invalid();
    return text;
  }
  if (file == "cpu.cfs_period_us") {
    if (!CpuMax::parseV1("-1", text).ok()) return invalid();
    return text;
  }
  if (file == "memory.limit_in_bytes" || (file.starts_with("hugetlb.") && file.ends_with(".limit_in_bytes"))) {
    auto limit = Limit::parseV1Memory(text);
    if (!limit.ok()) return invalid();
    if (!limit->value) return std::string(kUnlimitedV1);
    return std::to_string(*limit->value / 4096 * 4096);  // the kernel keeps whole pages
  }
  if (isLimitFile(file)) {
    if (!Limit::parseV2(text).ok()) return invalid();
    return text;
  }
  return text;
}

Result<void> FixtureCgroupFs::write(const CgroupDir& dir, std::string_view file, std::string_view value) {
  VRI_TRY(validateControlFileName(file));
  if (hierarchy(dir.hierarchy) == nullptr || !fs::exists(filePath(dir, file))) {
    return Error::fromErrno(ENOENT, "open " + filePath(dir, file));
  }
  if (file == "cpuset.cpus" || file == "cpuset.mems") {
    VRI_TRY(writeCpuset(dir, file, value));
    if (partitions_ && file == "cpuset.cpus") VRI_TRY(invalidatePartitionsBeside(dir));
  } else if (partitions_ && (file == "cpuset.cpus.exclusive" || file == "cpuset.cpus.partition")) {
    VRI_TRY(file == "cpuset.cpus.exclusive" ? writeExclusive(dir, value) : writePartition(dir, value));
  } else if (file == "tasks" || file == "cgroup.procs" || file == "cgroup.threads") {
    VRI_TRY(writeProcess(dir, file, value));
  } else if (file == "cgroup.subtree_control") {
    VRI_TRY(writeSubtreeControl(dir, value));
  } else if (file == "cgroup.type") {
    if (value != "threaded" && value != "threaded\n") return refuse(EINVAL, dir, file, value);
    if (!dir.path.parent().isRoot()) {
      // The parent becomes (or is) the thread root: a valid domain delegating no domain controller.
      const CgroupDir parent{dir.hierarchy, dir.path.parent()};
      VRI_ASSIGN_OR_RETURN(const bool valid, isValidDomain(parent));
      VRI_ASSIGN_OR_RETURN(const std::string parent_type, read(parent, "cgroup.type"));
      VRI_ASSIGN_OR_RETURN(const bool domain_delegated, delegatesDomainControllers(parent));
      if ((!valid && parent_type != "threaded") || domain_delegated) return refuse(EOPNOTSUPP, dir, file, value);
      if (parent_type == "domain") VRI_TRY(putFile(filePath(parent, "cgroup.type"), "domain threaded"));
    }
    VRI_TRY(putFile(filePath(dir, file), "threaded"));
  } else if (file.ends_with(".effective") || file == "cgroup.controllers" || file == "cpuacct.usage") {
    return refuse(EACCES, dir, file, value);  // read-only files
  } else {
    VRI_ASSIGN_OR_RETURN(std::string stored, checkedValue(file, value, dir));
    VRI_TRY(putFile(filePath(dir, file), stored));
  }
  ++writes_;
  return {};
}

Result<void> FixtureCgroupFs::store(const CgroupDir& dir, std::string_view file, std::string_view value) {
  return putFile(filePath(dir, file), value);
}

Result<void> FixtureCgroupFs::writeProcess(const CgroupDir& dir, std::string_view file, std::string_view value) {
  std::string pid(value);
  while (!pid.empty() && pid.back() == '\n') pid.pop_back();
  if (!isPid(pid)) return refuse(EINVAL, dir, file, value);
  if (version_ == CgroupVersion::kV1) {
    if (hasController(dir, "cpuset") && !dir.path.isRoot()) {
      VRI_ASSIGN_OR_RETURN(const std::string cpus, read(dir, "cpuset.cpus"));
      VRI_ASSIGN_OR_RETURN(const std::string mems, read(dir, "cpuset.mems"));
      if (cpus.empty() || mems.empty()) return refuse(ENOSPC, dir, file, value);
    }
  } else if (file == "cgroup.procs" && !dir.path.isRoot()) {
    // No internal processes in a domain that delegates domain controllers; none below a thread root.
    VRI_ASSIGN_OR_RETURN(const std::string type, read(dir, "cgroup.type"));
    if (type == "threaded") {
      // A whole process may move within its threaded domain, not into it from outside.
      VRI_ASSIGN_OR_RETURN(const bool inside, inThreadedDomainOf(dir, pid));
      if (!inside) return refuse(EOPNOTSUPP, dir, file, value);
    }
    VRI_ASSIGN_OR_RETURN(const bool valid, type == "threaded" ? Result<bool>(true) : isValidDomain(dir));
    if (!valid) return refuse(EOPNOTSUPP, dir, file, value);
    VRI_ASSIGN_OR_RETURN(const bool domain_delegated, delegatesDomainControllers(dir));
    if (type == "domain" && domain_delegated) return refuse(EBUSY, dir, file, value);
  }
  // A process is in one cgroup per hierarchy: take it out of the others.
  const std::vector<std::string> list_files = version_ == CgroupVersion::kV1
                                                  ? std::vector<std::string>{"tasks", "cgroup.procs"}
                                                  : std::vector<std::string>{"cgroup.procs", "cgroup.threads"};
  const std::string root = dirPath({dir.hierarchy, {}});
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (std::find(list_files.begin(), list_files.end(), name) == list_files.end()) continue;
    auto members = lines(*readWholeFile(entry.path().string()));
    const auto kept = std::remove(members.begin(), members.end(), pid);
    if (kept != members.end()) {
      members.erase(kept, members.end());
      VRI_TRY(putFile(entry.path().string(), joinLines(members)));
    }
  }
  for (const std::string& list : list_files) {
    auto members = lines(*readWholeFile(filePath(dir, list)));
    members.push_back(pid);
    VRI_TRY(putFile(filePath(dir, list), joinLines(members)));
  }
  return {};
}

Result<void> FixtureCgroupFs::writeSubtreeControl(const CgroupDir& dir, std::string_view value) {
  const auto offered = v2Controllers(dir);
  VRI_ASSIGN_OR_RETURN(const std::string delegated, read(dir, "cgroup.subtree_control"));
  std::vector<std::string> enabled = lines(delegated);
  if (!enabled.empty()) {
    std::istringstream words(enabled.front());
    enabled.clear();
    for (std::string word; words >> word;) enabled.push_back(word);
  }
  std::istringstream tokens{std::string(value)};
  std::vector<std::string> added;
  for (std::string token; tokens >> token;) {
    if (token.size() < 2 || (token[0] != '+' && token[0] != '-'))
      return refuse(EINVAL, dir, "cgroup.subtree_control", value);
    const std::string controller = token.substr(1);
    if (std::find(offered.begin(), offered.end(), controller) == offered.end()) {
      return refuse(ENOENT, dir, "cgroup.subtree_control", value);
    }
    const auto at = std::find(enabled.begin(), enabled.end(), controller);
    if (token[0] == '+' && at == enabled.end()) {
      enabled.push_back(controller);
      added.push_back(controller);
    } else if (token[0] == '-' && at != enabled.end()) {
      enabled.erase(at);
    }
  }
  const bool adds_domain_controller = std::any_of(added.begin(), added.end(), [](const std::string& c) {
    return c != "cpuset" && c != "cpu" && c != "pids" && c != "perf_event";
  });
  if (!dir.path.isRoot() && adds_domain_controller) {
    VRI_ASSIGN_OR_RETURN(const std::string type, read(dir, "cgroup.type"));
    VRI_ASSIGN_OR_RETURN(const std::string procs, read(dir, "cgroup.procs"));
    VRI_ASSIGN_OR_RETURN(const bool thread_root, isThreadRoot(dir));
    if (type != "domain" || thread_root) return refuse(EOPNOTSUPP, dir, "cgroup.subtree_control", value);
    if (!procs.empty()) return refuse(EBUSY, dir, "cgroup.subtree_control", value);  // no internal processes
  }
  std::string text;
  for (const std::string& c : enabled) text += (text.empty() ? "" : " ") + c;
  VRI_TRY(putFile(filePath(dir, "cgroup.subtree_control"), text));
  VRI_ASSIGN_OR_RETURN(auto names, children(dir));
  for (const std::string& name : names) {
    const CgroupDir child{dir.hierarchy, *dir.path.child(name)};
    VRI_TRY(putFile(filePath(child, "cgroup.controllers"), text));
    for (const std::string& controller : added) {
      for (const auto& [file, default_value] : v2Defaults(controller, partitions_)) {
        if (!fs::exists(filePath(child, file))) VRI_TRY(putFile(filePath(child, file), default_value));
      }
    }
  }
  return {};
}

Result<void> FixtureCgroupFs::mkdir(const CgroupDir& dir) {
  const std::string path = dirPath(dir);
  if (hierarchy(dir.hierarchy) == nullptr || !fs::is_directory(dirPath({dir.hierarchy, dir.path.parent()}))) {
    return Error::fromErrno(ENOENT, "mkdir " + path);
  }
  if (fs::exists(path)) return Error::fromErrno(EEXIST, "mkdir " + path);
  std::error_code error;
  fs::create_directory(path, error);
  if (error) return Error::fromErrno(error.value(), "mkdir " + path);
  std::vector<std::string> controllers;
  if (version_ == CgroupVersion::kV1) {
    controllers = hierarchy(dir.hierarchy)->controllers;
  } else {
    VRI_ASSIGN_OR_RETURN(const std::string delegated,
                         read({dir.hierarchy, dir.path.parent()}, "cgroup.subtree_control"));
    std::istringstream words(delegated);
    for (std::string word; words >> word;) controllers.push_back(word);
  }
  VRI_TRY(createControllerFiles(dir, controllers, false));
  ++mkdirs_;
  return {};
}

Result<void> FixtureCgroupFs::rmdir(const CgroupDir& dir) {
  const std::string path = dirPath(dir);
  if (dir.path.isRoot()) return Error::fromErrno(EBUSY, "rmdir " + path);
  if (!exists(dir)) return Error::fromErrno(ENOENT, "rmdir " + path);
  VRI_ASSIGN_OR_RETURN(auto names, children(dir));
  if (!names.empty()) return Error::fromErrno(EBUSY, "rmdir " + path);
  VRI_ASSIGN_OR_RETURN(const std::string procs, read(dir, "cgroup.procs"));
  if (!procs.empty()) return Error::fromErrno(EBUSY, "rmdir " + path);
  if (version_ == CgroupVersion::kV2) {
    VRI_ASSIGN_OR_RETURN(const std::string threads, read(dir, "cgroup.threads"));
    if (!threads.empty()) return Error::fromErrno(EBUSY, "rmdir " + path);
  }
  std::error_code error;
  fs::remove_all(path, error);
  if (error) return Error::fromErrno(error.value(), "rmdir " + path);
  ++rmdirs_;
  return {};
}

bool FixtureCgroupFs::exists(const CgroupDir& dir) const {
  return hierarchy(dir.hierarchy) != nullptr && fs::is_directory(dirPath(dir));
}

Result<std::vector<std::string>> FixtureCgroupFs::children(const CgroupDir& dir) const {
  if (!exists(dir)) return Error::fromErrno(ENOENT, "opendir " + dirPath(dir));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dirPath(dir))) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> FixtureCgroupFs::readProc(std::string_view relative) const {
  if (relative.empty() || relative.starts_with('/') || relative.find("..") != std::string_view::npos) {
    return Error::invalidArgument("invalid proc path " + quoteForMessage(relative));
  }
  return readWholeFile(directory_ + "/proc/" + std::string(relative));
}

Result<void> FixtureCgroupFs::setProcFile(std::string_view relative, std::string_view content) {
  if (relative.empty() || relative.starts_with('/') || relative.find("..") != std::string_view::npos) {
    return Error::invalidArgument("invalid proc path " + quoteForMessage(relative));
  }
  const fs::path path = fs::path(directory_) / "proc" / std::string(relative);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) return Error::fromErrno(error.value(), "create " + path.parent_path().string());
  return putFile(path.string(), content);
}

}  // namespace vri

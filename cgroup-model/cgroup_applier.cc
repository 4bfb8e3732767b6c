#include "cgroup-model/cgroup_applier.h"

#include <algorithm>
#include <cerrno>
#include <set>
#include <sstream>

#include "base/quote.h"
#include "base/text.h"

namespace vri {

std::string CgroupOp::describe() const {
  switch (kind) {
    case Kind::kMkdir: return "mkdir " + dir.describe();
    case Kind::kRmdir: return "rmdir " + dir.describe();
    case Kind::kWrite: return "write " + quoteForMessage(value) + " to " + dir.describe() + "/" + file;
  }
  return "?";
}

namespace {

bool isCpuSetFile(FileKind kind) {
  return kind == FileKind::kCpus || kind == FileKind::kMems || kind == FileKind::kExclusive;
}

std::set<std::string> words(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.insert(word);
  return out;
}

// The plan under construction, with what the cgroupfs will hold once the
// operations so far have run.
class Planner {
 public:
  Planner(const CgroupFs& fs, const CgroupBackend& backend, const DesiredTree& desired)
      : fs_(fs), backend_(backend), desired_(desired) {}

  Result<std::vector<CgroupOp>> run() {
    VRI_TRY(checkShape());
    VRI_TRY(collect());
    VRI_TRY(createAndDelegate());
    VRI_TRY(dissolvePartitions());
    VRI_TRY(widenCpusets());
    VRI_TRY(writePlainValues());
    VRI_TRY(removeUndesired());
    VRI_TRY(narrowCpusets());
    VRI_TRY(formPartitions());
    return std::move(ops_);
  }

 private:
  const CgroupPath* rootOf(const CgroupPath& path, const std::vector<CgroupPath>& roots) const {
    for (const CgroupPath& root : roots) {
      if (path.isWithin(root)) return &root;
    }
    return nullptr;
  }
  bool isRoot(const CgroupPath& path) const {
    const auto& m = desired_.managedRoots;
    const auto& a = desired_.adoptedRoots;
    return std::find(m.begin(), m.end(), path) != m.end() || std::find(a.begin(), a.end(), path) != a.end();
  }
  bool adopted(const CgroupPath& path) const { return rootOf(path, desired_.adoptedRoots) != nullptr; }

  Result<void> checkShape() const {
    for (const auto& [path, spec] : desired_.cgroups) {
      if (!rootOf(path, desired_.managedRoots) && !rootOf(path, desired_.adoptedRoots)) {
        return Error::invalidArgument("cgroup " + quoteForMessage(path.str()) + " is outside every managed root");
      }
      if (!isRoot(path) && !desired_.cgroups.count(path.parent())) {
        return Error::invalidArgument("cgroup " + quoteForMessage(path.str()) + " has no parent in the desired tree");
      }
    }
    return {};
  }

  // Files, hierarchies and (v2) controllers of every desired cgroup; a
  // cgroup exists wherever it or a descendant has something to set.
  Result<void> collect() {
    for (const auto& [path, spec] : desired_.cgroups) {
      VRI_ASSIGN_OR_RETURN(files_[path], backend_.files(spec.settings));
      auto& needs = hierarchies_[path];
      for (const std::string& hierarchy : backend_.hierarchies()) needs.insert(hierarchy);
      for (const ControlFile& file : files_[path]) needs.insert(file.hierarchy);
      for (const std::string& c : backend_.controllers(spec.settings)) controllers_[path].insert(c);
    }
    for (auto it = desired_.cgroups.rbegin(); it != desired_.cgroups.rend(); ++it) {
      const CgroupPath parent = it->first.parent();
      if (it->first.isRoot() || !desired_.cgroups.count(parent)) continue;
      controllers_[parent].insert(controllers_[it->first].begin(), controllers_[it->first].end());
    }
    // Every hierarchy, even with nothing desired: a managed root with no cgroups left is removed everywhere.
    for (const std::string& hierarchy : backend_.hierarchies()) allHierarchies_.insert(hierarchy);
    for (const auto& [path, needs] : hierarchies_) allHierarchies_.insert(needs.begin(), needs.end());
    // Cpuset files are checked against the parent's desired value up front.
    for (const auto& [path, files] : files_) {
      for (const ControlFile& file : files) {
        if (file.kind == FileKind::kPlain || backend_.version() != CgroupVersion::kV1) continue;
        const auto parent = files_.find(path.parent());
        if (path.isRoot() || parent == files_.end()) continue;
        for (const ControlFile& mine : parent->second) {
          if (mine.file == file.file && !CpuSet::parse(file.value)->isSubsetOf(*CpuSet::parse(mine.value))) {
            return Error::invalidArgument("desired " + file.file + " " + file.value + " of " +
                                          quoteForMessage(path.str()) + " is not inside its parent's " + mine.value);
          }
        }
      }
    }
    return {};
  }

  bool existsNow(const CgroupDir& dir) const { return created_.count(dir) || fs_.exists(dir); }

  void add(CgroupOp::Kind kind, CgroupDir dir, std::string file = {}, std::string value = {}) {
    ops_.push_back({kind, std::move(dir), std::move(file), std::move(value)});
  }

  // v2: the controllers of `wanted` that `dir` does not delegate yet.
  Result<std::set<std::string>> undelegated(const CgroupDir& dir, const std::set<std::string>& wanted) const {
    std::set<std::string> current;
    if (fs_.exists(dir)) {
      VRI_ASSIGN_OR_RETURN(std::string text, fs_.read(dir, "cgroup.subtree_control"));
      current = words(text);
    }
    std::set<std::string> missing;
    for (const std::string& c : wanted) {
      if (!current.count(c)) missing.insert(c);
    }
    return missing;
  }

  void addDelegation(const CgroupDir& dir, const std::set<std::string>& controllers) {
    std::string value;
    for (const std::string& c : controllers) value += (value.empty() ? "+" : " +") + c;
    if (!value.empty()) add(CgroupOp::Kind::kWrite, dir, "cgroup.subtree_control", value);
  }

  // v2: makes `dir` delegate `wanted` controllers to its children.
  Result<void> delegate(const CgroupDir& dir, const std::set<std::string>& wanted) {
    VRI_ASSIGN_OR_RETURN(const std::set<std::string> missing, undelegated(dir, wanted));
    addDelegation(dir, missing);
    return {};
  }

  // v2: as delegate(), after making the ancestors offer what `dir` lacks: a pod
  // placed alone under a QoS cgroup that delegates no memory yet needs its QoS
  // cgroup and kubepods to delegate memory first. Ancestors are only read when
  // `dir` has something new to delegate.
  Result<void> delegateFromAbove(const CgroupDir& dir, const std::set<std::string>& wanted) {
    VRI_ASSIGN_OR_RETURN(const std::set<std::string> missing, undelegated(dir, wanted));
    if (missing.empty()) return {};
    if (!dir.path.isRoot() && fs_.exists(dir)) {
      VRI_ASSIGN_OR_RETURN(std::string offered_text, fs_.read(dir, "cgroup.controllers"));
      const std::set<std::string> offered = words(offered_text);
      std::set<std::string> lacking;
      for (const std::string& c : missing) {
        if (!offered.count(c)) lacking.insert(c);
      }
      if (!lacking.empty()) VRI_TRY(delegateFromAbove({dir.hierarchy, dir.path.parent()}, lacking));
    }
    addDelegation(dir, missing);
    return {};
  }

  Result<void> createAndDelegate() {
    const bool v2 = backend_.version() == CgroupVersion::kV2;
    for (const auto& [path, spec] : desired_.cgroups) {
      const bool is_adopted = adopted(path);
      for (const std::string& hierarchy : hierarchies_[path]) {
        const CgroupDir dir{hierarchy, path};
        const bool existed = fs_.exists(dir);
        if (is_adopted) {
          // Others create these: a missing one (and so its subtree) is left alone.
          if (!existed) skipped_.insert(dir);
          if (!existed || !v2) continue;
          // Its parent delegates what VRI sets here (libvirt does not delegate hugetlb, for one).
          if (isRoot(path) && !path.isRoot())
            VRI_TRY(delegateFromAbove({hierarchy, path.parent()}, controllers_[path]));
        } else {
          if (v2 && isRoot(path) && !path.isRoot()) {
            VRI_TRY(delegateFromAbove({hierarchy, path.parent()}, controllers_[path]));
          }
          if (!existed) {
            add(CgroupOp::Kind::kMkdir, dir);
            created_.insert(dir);
          }
          if (!v2) continue;
        }
        if (spec.threaded) {
          std::string type = "domain";
          if (existed) {
            VRI_ASSIGN_OR_RETURN(type, fs_.read(dir, "cgroup.type"));
          }
          if (type != "threaded") add(CgroupOp::Kind::kWrite, dir, "cgroup.type", "threaded");
        }
        std::set<std::string> for_children;
        for (auto child = desired_.cgroups.upper_bound(path);
             child != desired_.cgroups.end() && child->first.isWithin(path); ++child) {
          if (child->first.depth() == path.depth() + 1) {
            for_children.insert(controllers_[child->first].begin(), controllers_[child->first].end());
          }
        }
        VRI_TRY(delegate(dir, for_children));
      }
    }
    return {};
  }

  // A cgroup below an adopted root that does not exist, or one inside it.
  bool isSkipped(const CgroupDir& dir) const {
    for (const CgroupDir& skipped : skipped_) {
      if (skipped.hierarchy == dir.hierarchy && dir.path.isWithin(skipped.path)) return true;
    }
    return false;
  }

  // Read once per plan (a partition's exclusive CPUs are asked for twice): nothing is written while planning.
  Result<std::string> currentValue(const CgroupDir& dir, const std::string& file) const {
    if (created_.count(dir) || !fs_.exists(dir)) return std::string();
    const auto key = std::make_pair(dir, file);
    if (const auto read = valuesRead_.find(key); read != valuesRead_.end()) return read->second;
    VRI_ASSIGN_OR_RETURN(std::string value, readControlValue(fs_, backend_, dir, file));
    return valuesRead_[key] = std::move(value);
  }

  bool hasChildren(const CgroupDir& dir) const {
    for (auto child = desired_.cgroups.upper_bound(dir.path);
         child != desired_.cgroups.end() && child->first.isWithin(dir.path); ++child) {
      if (hierarchies_.at(child->first).count(dir.hierarchy)) return true;
    }
    if (created_.count(dir) || !fs_.exists(dir)) return false;
    // Listed once per cgroup, however many cpuset files it has.
    const auto cached = hasChildrenOnDisk_.find(dir);
    if (cached != hasChildrenOnDisk_.end()) return cached->second;
    auto names = fs_.children(dir);
    return hasChildrenOnDisk_[dir] = !names.ok() || !names->empty();
  }

  // The partition file's value, and whether the cgroup's exclusive CPUs change in this plan.
  struct PartitionFile {
    const ControlFile* partition = nullptr;
    bool exclusiveChanges = false;
  };
  Result<PartitionFile> partitionFile(const CgroupPath& path, const std::vector<ControlFile>& files) const {
    PartitionFile out;
    for (const ControlFile& file : files) {
      if (file.kind == FileKind::kPartition) out.partition = &file;
      if (file.kind != FileKind::kExclusive) continue;
      VRI_ASSIGN_OR_RETURN(std::string current, currentValue({file.hierarchy, path}, file.file));
      out.exclusiveChanges = !sameControlValue(file, current);
    }
    return out;
  }

  // A partition that goes, or whose CPUs change, returns to `member` before any cpuset moves: its
  // parents' exclusive CPUs may then shrink, and a sibling may take its CPUs. Leaves first.
  Result<void> dissolvePartitions() {
    for (auto it = files_.rbegin(); it != files_.rend(); ++it) {
      VRI_ASSIGN_OR_RETURN(const PartitionFile found, partitionFile(it->first, it->second));
      if (found.partition == nullptr) continue;
      const CgroupDir dir{found.partition->hierarchy, it->first};
      if (isSkipped(dir)) continue;
      VRI_ASSIGN_OR_RETURN(std::string current, currentValue(dir, found.partition->file));
      const bool is_root = trimmed(current).starts_with(kPartitionRoot);
      const bool wants_root = found.partition->value == kPartitionRoot;
      if (is_root && (!wants_root || found.exclusiveChanges)) {
        add(CgroupOp::Kind::kWrite, dir, found.partition->file, std::string(kPartitionMember));
        current = kPartitionMember;
      }
      partitionNow_[dir] = std::string(trimmed(current));
    }
    return {};
  }

  // Partitions are formed last, once their own, their ancestors' exclusive CPUs and their siblings'
  // narrower cpusets are in place: a sibling that still held a partition's CPUs would leave it
  // `root invalid`. An invalid one is repaired the only way the kernel accepts: member, then root.
  Result<void> formPartitions() {
    for (const auto& [path, files] : files_) {
      for (const ControlFile& file : files) {
        if (file.kind != FileKind::kPartition || file.value != kPartitionRoot) continue;
        const CgroupDir dir{file.hierarchy, path};
        if (isSkipped(dir)) continue;
        const std::string& now = partitionNow_[dir];
        if (now == kPartitionRoot) continue;
        if (now.starts_with(kPartitionRoot)) add(CgroupOp::Kind::kWrite, dir, file.file, std::string(kPartitionMember));
        add(CgroupOp::Kind::kWrite, dir, file.file, file.value);
      }
    }
    return {};
  }

  Result<void> widenCpusets() {
    for (const auto& [path, files] : files_) {
      for (const ControlFile& file : files) {
        if (!isCpuSetFile(file.kind)) continue;
        const CgroupDir dir{file.hierarchy, path};
        if (isSkipped(dir)) continue;
        VRI_ASSIGN_OR_RETURN(std::string current_text, currentValue(dir, file.file));
        auto current = CpuSet::parse(current_text);
        if (!current.ok()) return std::move(current).context(dir.describe() + "/" + file.file).error();
        const CpuSet wanted = *CpuSet::parse(file.value);
        CpuSet after = *current;
        if (!wanted.isSubsetOf(*current)) {
          after = hasChildren(dir) ? (*current | wanted) : wanted;
          add(CgroupOp::Kind::kWrite, dir, file.file, after.format());
        }
        afterWiden_[{dir, file.file}] = after;
      }
    }
    return {};
  }

  Result<void> writePlainValues() {
    for (const auto& [path, files] : files_) {
      for (const ControlFile& file : files) {
        if (file.kind != FileKind::kPlain) continue;
        const CgroupDir dir{file.hierarchy, path};
        if (isSkipped(dir)) continue;
        if (!created_.count(dir) && fs_.exists(dir)) {
          // A file that is not there yet appears with a delegation planned above (v2).
          auto current = fs_.read(dir, file.file);
          if (!current.ok() && current.error().sysErrno() != ENOENT) return current.error();
          if (current.ok() && sameControlValue(file, *current)) continue;
        }
        add(CgroupOp::Kind::kWrite, dir, file.file, file.value);
      }
    }
    return {};
  }

  bool desiredIn(const CgroupDir& dir) const {
    const auto it = hierarchies_.find(dir.path);
    return it != hierarchies_.end() && it->second.count(dir.hierarchy);
  }

  Result<void> collectUndesired(const CgroupDir& dir, std::vector<CgroupDir>& out) const {
    VRI_ASSIGN_OR_RETURN(auto names, fs_.children(dir));
    for (const std::string& name : names) {
      auto child_path = dir.path.child(name);
      if (!child_path.ok()) return std::move(child_path).context("found under " + dir.describe()).error();
      const CgroupDir child{dir.hierarchy, *child_path};
      VRI_TRY(collectUndesired(child, out));
      if (!desiredIn(child)) out.push_back(child);
    }
    return {};
  }

  Result<void> removeUndesired() {
    std::vector<CgroupDir> doomed;
    for (const CgroupPath& root : desired_.managedRoots) {
      for (const std::string& hierarchy : allHierarchies_) {
        const CgroupDir dir{hierarchy, root};
        if (!fs_.exists(dir)) continue;
        VRI_TRY(collectUndesired(dir, doomed));
        if (!desiredIn(dir) && !root.isRoot()) doomed.push_back(dir);
      }
    }
    std::stable_sort(doomed.begin(), doomed.end(),
                     [](const CgroupDir& a, const CgroupDir& b) { return a.path.depth() > b.path.depth(); });
    for (const CgroupDir& dir : doomed) add(CgroupOp::Kind::kRmdir, dir);
    return {};
  }

  Result<void> narrowCpusets() {
    for (auto it = files_.rbegin(); it != files_.rend(); ++it) {
      for (const ControlFile& file : it->second) {
        if (!isCpuSetFile(file.kind)) continue;
        const CgroupDir dir{file.hierarchy, it->first};
        if (isSkipped(dir)) continue;
        const CpuSet wanted = *CpuSet::parse(file.value);
        if (afterWiden_.at({dir, file.file}) == wanted) continue;
        if (backend_.version() == CgroupVersion::kV1 && adopted(it->first)) {
          VRI_TRY(narrowStrangers(dir, file.file, wanted));
        }
        add(CgroupOp::Kind::kWrite, dir, file.file, file.value);
      }
    }
    return {};
  }

  // v1: the kernel refuses to narrow a cpuset below a child's. A child VRI does not know (a
  // container created while VRI was away, not yet adopted) is narrowed first to what it keeps of
  // `within` (all of `within` if nothing), its own such children before it. v2's effective sets do
  // this by themselves. Desired children are narrowed in their own turn, before their parent.
  Result<void> narrowStrangers(const CgroupDir& dir, const std::string& file, const CpuSet& within) {
    if (created_.count(dir) || !fs_.exists(dir)) return {};
    VRI_ASSIGN_OR_RETURN(auto names, fs_.children(dir));
    for (const std::string& name : names) {
      auto child_path = dir.path.child(name);
      if (!child_path.ok()) return std::move(child_path).context("found under " + dir.describe()).error();
      const CgroupDir child{dir.hierarchy, *child_path};
      if (desiredIn(child)) continue;
      VRI_ASSIGN_OR_RETURN(std::string text, readControlValue(fs_, backend_, child, file));
      auto current = CpuSet::parse(text);
      if (!current.ok()) return std::move(current).context(child.describe() + "/" + file).error();
      if (current->isSubsetOf(within)) continue;
      CpuSet kept = *current & within;
      if (kept.empty()) kept = within;
      VRI_TRY(narrowStrangers(child, file, kept));
      add(CgroupOp::Kind::kWrite, child, file, kept.format());
    }
    return {};
  }

  const CgroupFs& fs_;
  const CgroupBackend& backend_;
  const DesiredTree& desired_;
  std::map<CgroupPath, std::vector<ControlFile>> files_;
  std::map<CgroupPath, std::set<std::string>> hierarchies_;
  std::map<CgroupPath, std::set<std::string>> controllers_;
  std::set<std::string> allHierarchies_;
  std::set<CgroupDir> created_;
  std::set<CgroupDir> skipped_;
  mutable std::map<CgroupDir, bool> hasChildrenOnDisk_;
  mutable std::map<std::pair<CgroupDir, std::string>, std::string> valuesRead_;
  std::map<std::pair<CgroupDir, std::string>, CpuSet> afterWiden_;
  std::map<CgroupDir, std::string> partitionNow_;  // each partition file once dissolvePartitions() ran
  std::vector<CgroupOp> ops_;
};

}  // namespace

Result<std::vector<CgroupOp>> CgroupApplier::plan(const DesiredTree& desired) const {
  return Planner(fs_, backend_, desired).run();
}

Result<std::vector<CgroupOp>> CgroupApplier::apply(const DesiredTree& desired) {
  VRI_ASSIGN_OR_RETURN(std::vector<CgroupOp> ops, plan(desired));
  // An adopted cgroup its owner removed since the plan was made (a container that exited, a VM that
  // stopped) is skipped with what is left of it: the next reconcile sees it gone. A file missing from
  // a cgroup that is still there is an error (a controller not delegated).
  const auto goneWithItsOwner = [&](const CgroupOp& op, const Error& error) {
    if (op.kind == CgroupOp::Kind::kMkdir || error.sysErrno() != ENOENT || fs_.exists(op.dir)) return false;
    return std::any_of(desired.adoptedRoots.begin(), desired.adoptedRoots.end(),
                       [&](const CgroupPath& root) { return op.dir.path.isWithin(root); });
  };
  std::vector<CgroupOp> done_ops;
  done_ops.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const CgroupOp& op = ops[i];
    Result<void> done = op.kind == CgroupOp::Kind::kMkdir   ? fs_.mkdir(op.dir)
                        : op.kind == CgroupOp::Kind::kRmdir ? fs_.rmdir(op.dir)
                                                            : fs_.write(op.dir, op.file, op.value);
    if (!done.ok() && goneWithItsOwner(op, done.error())) continue;
    if (done.ok()) done_ops.push_back(op);
    if (!done.ok()) {
      std::string why;
      if (op.file == "cpuset.cpus.exclusive" && done.error().sysErrno() == EINVAL) {
        why =
            "; the kernel refuses exclusive CPUs a sibling holds exclusively, or that would leave a sibling "
            "none of its cpuset.cpus";
      }
      return std::move(done)
          .context("apply step " + std::to_string(i + 1) + " of " + std::to_string(ops.size()) + " (" + op.describe() +
                   why + ")")
          .error();
    }
  }
  return done_ops;
}

}  // namespace vri

#include "cgroup-model/drift.h"

#include <set>

#include "base/quote.h"

namespace vri {

std::string Drift::describe() const {
  switch (kind) {
    case Kind::kValue:
      if (verifiedOnly) {
        return dir.describe() + " " + file + " is " + (actual.empty() ? "absent" : quoteForMessage(actual)) +
               ", the ledger holds " + quoteForMessage(desired) + " (kubelet and the runtime write it, VRI does not)";
      }
      return dir.describe() + " " + file + " is " + quoteForMessage(actual) + ", VRI wants " + quoteForMessage(desired);
    case Kind::kMissing: return dir.describe() + " is gone; VRI expects it";
    case Kind::kUnknown: return dir.describe() + " is not known to VRI";
  }
  return "?";
}

namespace {

// The cgroups under `dir` that VRI does not know. A directory that vanished while it was read
// holds none; any other failure to list one is the caller's: the drift would be incomplete.
Result<void> findUnknown(const CgroupFs& fs, const CgroupDir& dir, const std::set<CgroupPath>& known,
                         std::vector<Drift>& out) {
  auto names = fs.children(dir);
  if (!names.ok()) {
    if (names.error().code() == ErrorCode::kNotFound) return {};
    return std::move(names).context("list " + dir.describe()).error();
  }
  for (const std::string& name : *names) {
    // A name no cgroup path can hold (CgroupPath refuses it) is no cgroup VRI could have made or
    // adopted, and none it could name in a report: it is left alone.
    auto path = dir.path.child(name);
    if (!path.ok()) continue;
    const CgroupDir child{dir.hierarchy, *path};
    if (!known.count(*path)) {
      out.push_back({Drift::Kind::kUnknown, child, {}, {}, {}});
      continue;
    }
    VRI_TRY(findUnknown(fs, child, known, out));
  }
  return {};
}

}  // namespace

Result<std::vector<Drift>> detectDrift(const CgroupFs& fs, const CgroupBackend& backend, const DesiredTree& desired) {
  std::vector<Drift> drift;
  std::set<CgroupPath> known;
  for (const auto& [path, spec] : desired.cgroups) known.insert(path);
  for (const auto& [path, spec] : desired.cgroups) {
    VRI_ASSIGN_OR_RETURN(std::vector<ControlFile> files, backend.files(spec.settings));
    VRI_ASSIGN_OR_RETURN(const std::vector<ControlFile> verified, backend.files(spec.verified));
    const size_t written = files.size();
    files.insert(files.end(), verified.begin(), verified.end());
    std::set<std::string> missing_in;
    const CgroupDir primary{backend.primaryHierarchy(), path};
    if (!fs.exists(primary)) {
      // Report a vanished subtree once, at its top.
      if (path.isRoot() || fs.exists({primary.hierarchy, path.parent()}) || !known.count(path.parent())) {
        drift.push_back({Drift::Kind::kMissing, primary, {}, {}, {}});
      }
      continue;
    }
    for (size_t i = 0; i < files.size(); ++i) {
      const ControlFile& file = files[i];
      const CgroupDir dir{file.hierarchy, path};
      if (!fs.exists(dir)) {
        if (missing_in.insert(file.hierarchy).second) drift.push_back({Drift::Kind::kMissing, dir, {}, {}, {}});
        continue;
      }
      auto current = readControlValue(fs, backend, dir, file.file);
      if (!current.ok()) return std::move(current).context("read " + dir.describe() + "/" + file.file).error();
      if (!sameControlValue(file, *current))
        drift.push_back({Drift::Kind::kValue, dir, file.file, *current, file.value, i >= written});
    }
  }
  std::vector<CgroupPath> roots = desired.managedRoots;
  roots.insert(roots.end(), desired.adoptedRoots.begin(), desired.adoptedRoots.end());
  for (const CgroupPath& root : roots) {
    const CgroupDir dir{backend.primaryHierarchy(), root};
    if (fs.exists(dir)) VRI_TRY(findUnknown(fs, dir, known, drift));
  }
  return drift;
}

}  // namespace vri

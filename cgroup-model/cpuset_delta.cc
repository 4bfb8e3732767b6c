#include "cgroup-model/cpuset_delta.h"

#include <cerrno>

namespace vri {

namespace {
bool absent(const Error& error) { return error.sysErrno() == ENOENT; }
}  // namespace

const std::string& CpusetDeltaWriter::format(const CpuSet& cpus) {
  for (const auto& [set, text] : formatted_) {
    if (set == cpus) return text;
  }
  if (formatted_.size() >= 8) formatted_.erase(formatted_.begin());
  formatted_.emplace_back(cpus, cpus.format());
  return formatted_.back().second;
}

Result<void> CpusetDeltaWriter::write(const CgroupDir& dir, std::string_view file, const CpuSet& value,
                                      DeltaWriteReport& report) {
  auto done = fs_.write(dir, file, format(value));
  if (done.ok()) {
    ++report.writes;
    return {};
  }
  if (absent(done.error())) {
    ++report.skipped;
    return {};
  }
  return done;
}

Result<void> CpusetDeltaWriter::narrowUnknownChildren(const CgroupDir& dir, std::string_view file, const CpuSet& limit,
                                                      DeltaWriteReport& report) {
  auto names = fs_.children(dir);
  if (!names.ok()) return absent(names.error()) ? Result<void>() : Result<void>(names.error());
  for (const std::string& name : *names) {
    auto path = dir.path.child(name);
    if (!path.ok()) continue;  // not a name VRI could have made or narrows
    const CgroupDir child{dir.hierarchy, *path};
    auto text = fs_.read(child, file);
    if (!text.ok()) {
      if (absent(text.error())) continue;
      return text.error();
    }
    auto current = CpuSet::parse(*text);
    if (!current.ok()) return std::move(current).context(child.describe()).error();
    if (current->isSubsetOf(limit)) continue;
    CpuSet narrowed = *current & limit;
    if (narrowed.empty()) narrowed = limit;
    VRI_TRY(narrowUnknownChildren(child, file, narrowed, report));
    VRI_TRY(write(child, file, narrowed, report));
  }
  return {};
}

Result<DeltaWriteReport> CpusetDeltaWriter::apply(const std::vector<CpusetChange>& changes,
                                                  const std::vector<PlainWrite>& plain) {
  DeltaWriteReport report;
  for (const CpusetChange& c : changes) {
    const CpuSet &before = *c.before, &after = *c.after;
    if (before == after) continue;
    if (c.leaf) {
      VRI_TRY(write(*c.dir, c.file, after, report));
    } else if (!after.isSubsetOf(before)) {
      VRI_TRY(write(*c.dir, c.file, before | after, report));
    }
  }
  for (const PlainWrite& w : plain) {
    auto done = fs_.write(w.dir, w.file, w.value);
    if (done.ok()) {
      ++report.writes;
    } else if (absent(done.error())) {
      ++report.skipped;
    } else {
      return done.error();
    }
  }
  for (auto it = changes.rbegin(); it != changes.rend(); ++it) {
    const CpusetChange& c = *it;
    const CpuSet &before = *c.before, &after = *c.after;
    if (c.leaf || before == after || before.isSubsetOf(after)) continue;
    auto narrowed = write(*c.dir, c.file, after, report);
    if (!narrowed.ok() && narrowed.error().sysErrno() == EBUSY && version_ == CgroupVersion::kV1) {
      // A child VRI does not know holds CPUs outside the new value: narrow it first, then the parent.
      VRI_TRY(narrowUnknownChildren(*c.dir, c.file, after, report));
      narrowed = write(*c.dir, c.file, after, report);
    }
    VRI_TRY(std::move(narrowed));
  }
  return report;
}

}  // namespace vri

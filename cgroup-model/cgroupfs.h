// CgroupFs: the one interface through which VRI touches kernel files.
//
// A cgroup is addressed by its hierarchy — the directory a v1 hierarchy is
// mounted on below the cgroup root ("cpuset", "cpu,cpuacct"), or "" for the v2
// unified hierarchy — and its path inside it. /proc files (mountinfo, a
// process's cgroups and threads) go through here too, so a test can replace
// the whole kernel view with a fixture.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cgroup-model/cgroup_path.h"

namespace vri {

struct CgroupDir {
  std::string hierarchy;
  CgroupPath path;

  std::string describe() const;  // "cpuset:kubepods/pod1", ":machine" for v2
  friend bool operator==(const CgroupDir&, const CgroupDir&) = default;
  friend auto operator<=>(const CgroupDir&, const CgroupDir&) = default;
};

// A file opened once and read again and again (usage counters sampled every second): on the
// kernel one open(2), then one pread(2) from the start per read, which the kernel answers with the
// counters as they are now. A read fails once the cgroup is gone (ENODEV or ENOENT).
class KeptFile {
 public:
  virtual ~KeptFile() = default;
  // The file's content without its trailing newline.
  virtual Result<std::string> read() = 0;
};

class CgroupFs {
 public:
  virtual ~CgroupFs() = default;

  // The file's content without its trailing newline.
  virtual Result<std::string> read(const CgroupDir& dir, std::string_view file) const = 0;
  // One write(2) of `value`, as the kernel expects; the errno of a refusal is kept.
  virtual Result<void> write(const CgroupDir& dir, std::string_view file, std::string_view value) = 0;
  virtual Result<void> mkdir(const CgroupDir& dir) = 0;
  virtual Result<void> rmdir(const CgroupDir& dir) = 0;
  virtual bool exists(const CgroupDir& dir) const = 0;
  // Names of the child cgroups, sorted.
  virtual Result<std::vector<std::string>> children(const CgroupDir& dir) const = 0;
  // A file below the proc root, e.g. "self/mountinfo" or "1234/cgroup".
  virtual Result<std::string> readProc(std::string_view relative) const = 0;

  // The same files kept open, for reading many times; fails as read() and readProc() do when the
  // file is not there. By default each read goes through read()/readProc() again.
  virtual Result<std::unique_ptr<KeptFile>> keepOpen(const CgroupDir& dir, std::string_view file) const;
  virtual Result<std::unique_ptr<KeptFile>> keepProcOpen(std::string_view relative) const;
};

// File names are VRI's own constants; this refuses anything that could leave the directory.
Result<void> validateControlFileName(std::string_view file);

}  // namespace vri

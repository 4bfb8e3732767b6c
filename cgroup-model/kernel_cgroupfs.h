// The real CgroupFs: plain system calls below a configurable cgroup root and proc root.
#pragma once

#include <string>

#include "cgroup-model/cgroupfs.h"

namespace vri {

class KernelCgroupFs : public CgroupFs {
 public:
  // Both roots must be absolute ("/sys/fs/cgroup", "/proc").
  static Result<KernelCgroupFs> create(std::string cgroupRoot, std::string procRoot = "/proc");

  Result<std::string> read(const CgroupDir& dir, std::string_view file) const override;
  Result<void> write(const CgroupDir& dir, std::string_view file, std::string_view value) override;
  Result<void> mkdir(const CgroupDir& dir) override;
  Result<void> rmdir(const CgroupDir& dir) override;
  bool exists(const CgroupDir& dir) const override;
  Result<std::vector<std::string>> children(const CgroupDir& dir) const override;
  Result<std::string> readProc(std::string_view relative) const override;
  Result<std::unique_ptr<KeptFile>> keepOpen(const CgroupDir& dir, std::string_view file) const override;
  Result<std::unique_ptr<KeptFile>> keepProcOpen(std::string_view relative) const override;

  const std::string& cgroupRoot() const { return cgroupRoot_; }
  // The absolute directory of `dir`.
  std::string directory(const CgroupDir& dir) const;

 private:
  KernelCgroupFs(std::string cgroupRoot, std::string procRoot)
      : cgroupRoot_(std::move(cgroupRoot)), procRoot_(std::move(procRoot)) {}

  std::string cgroupRoot_;
  std::string procRoot_;
};

// Whole-file helpers shared with the fixture.
Result<std::string> readWholeFile(const std::string& path);
Result<void> writeWholeFile(const std::string& path, std::string_view value);
// `path` kept open (kept_file.cc): each read is one pread(2) from offset 0.
Result<std::unique_ptr<KeptFile>> openKeptFile(const std::string& path);

}  // namespace vri

// Wraps a CgroupFs and makes its Nth mutation (mkdir, write or rmdir) fail
// with EIO, as a kernel or a crash part way through an apply would.
#pragma once

#include <cerrno>

#include "cgroup-model/cgroupfs.h"

namespace vri::testing {

class FailingCgroupFs : public CgroupFs {
 public:
  FailingCgroupFs(CgroupFs& inner, int failAt) : inner_(inner), failAt_(failAt) {}

  Result<std::string> read(const CgroupDir& dir, std::string_view file) const override {
    return inner_.read(dir, file);
  }
  Result<void> write(const CgroupDir& dir, std::string_view file, std::string_view value) override {
    if (trip())
      return Error::fromErrno(EIO, "write " + std::string(value) + " to " + dir.describe() + "/" + std::string(file));
    return inner_.write(dir, file, value);
  }
  Result<void> mkdir(const CgroupDir& dir) override {
    if (trip()) return Error::fromErrno(EIO, "mkdir " + dir.describe());
    return inner_.mkdir(dir);
  }
  Result<void> rmdir(const CgroupDir& dir) override {
    if (trip()) return Error::fromErrno(EIO, "rmdir " + dir.describe());
    return inner_.rmdir(dir);
  }
  bool exists(const CgroupDir& dir) const override { return inner_.exists(dir); }
  Result<std::vector<std::string>> children(const CgroupDir& dir) const override { return inner_.children(dir); }
  Result<std::string> readProc(std::string_view relative) const override { return inner_.readProc(relative); }

  bool tripped() const { return mutations_ > failAt_; }

 private:
  bool trip() { return mutations_++ == failAt_; }

  CgroupFs& inner_;
  int failAt_;
  int mutations_ = 0;
};

}  // namespace vri::testing

// Wraps a CgroupFs and makes mutations (mkdir, write or rmdir) fail with EIO,
// as a kernel or a crash part way through an apply would: the Nth one, the
// one n steps from now, or every one while `failing` is set.
#pragma once

#include <atomic>
#include <cerrno>

#include "cgroup-model/cgroupfs.h"

namespace vri::testing {

class FailingCgroupFs : public CgroupFs {
 public:
  explicit FailingCgroupFs(CgroupFs& inner, int failAt = -1) : inner_(inner), failAt_(failAt) {}

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

  bool tripped() const { return failAt_ >= 0 && mutations_ > failAt_; }
  // The mutation `n` steps from now fails, once.
  void failOnceAfter(int n) { failAt_ = mutations_ + n; }
  std::atomic<bool> failing{false};

 private:
  bool trip() {
    const int index = mutations_++;
    return failing || index == failAt_;
  }

  CgroupFs& inner_;
  std::atomic<int> failAt_;
  std::atomic<int> mutations_{0};
};

}  // namespace vri::testing

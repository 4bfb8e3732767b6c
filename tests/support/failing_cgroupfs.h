// Wraps a CgroupFs and makes mutations (mkdir, write or rmdir) fail, as a
// kernel or a crash part way through an apply would: the Nth one, the one n
// steps from now, every one while `failing` is set (all with EIO), or, once
// failAtRandom() is called, each with a given chance and an errno drawn from a
// list (EBUSY, ENOSPC, EACCES: what cpuset and cgroup writes really return),
// from a seeded generator so that a run can be repeated.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <random>
#include <vector>

#include "cgroup-model/cgroupfs.h"

namespace vri::testing {

class FailingCgroupFs : public CgroupFs {
 public:
  explicit FailingCgroupFs(CgroupFs& inner, int failAt = -1) : inner_(inner), failAt_(failAt) {}

  Result<std::string> read(const CgroupDir& dir, std::string_view file) const override {
    return inner_.read(dir, file);
  }
  Result<void> write(const CgroupDir& dir, std::string_view file, std::string_view value) override {
    if (const int error = trip(); error != 0)
      return Error::fromErrno(error, "write " + std::string(value) + " to " + dir.describe() + "/" + std::string(file));
    return inner_.write(dir, file, value);
  }
  Result<void> mkdir(const CgroupDir& dir) override {
    if (const int error = trip(); error != 0) return Error::fromErrno(error, "mkdir " + dir.describe());
    return inner_.mkdir(dir);
  }
  Result<void> rmdir(const CgroupDir& dir) override {
    if (const int error = trip(); error != 0) return Error::fromErrno(error, "rmdir " + dir.describe());
    return inner_.rmdir(dir);
  }
  bool exists(const CgroupDir& dir) const override { return inner_.exists(dir); }
  Result<std::vector<std::string>> children(const CgroupDir& dir) const override { return inner_.children(dir); }
  Result<std::string> readProc(std::string_view relative) const override { return inner_.readProc(relative); }

  bool tripped() const { return failAt_ >= 0 && mutations_ > failAt_; }
  // The mutation `n` steps from now fails, once.
  void failOnceAfter(int n) { failAt_ = mutations_ + n; }
  std::atomic<bool> failing{false};

  // From now on each mutation fails with `probability`, its errno drawn from `errnos`, while `random` is set.
  void failAtRandom(uint64_t seed, double probability, std::vector<int> errnos) {
    std::lock_guard lock(randomMutex_);
    generator_.seed(seed);
    probability_ = probability;
    errnos_ = std::move(errnos);
    random = true;
  }
  std::atomic<bool> random{false};
  int injected() const { return injected_; }  // failures made so far, in every mode

 private:
  int trip() {
    const int index = mutations_++;
    int error = failing || index == failAt_ ? EIO : 0;
    if (error == 0 && random) {
      std::lock_guard lock(randomMutex_);
      if (std::uniform_real_distribution<double>(0, 1)(generator_) < probability_ && !errnos_.empty())
        error = errnos_[std::uniform_int_distribution<size_t>(0, errnos_.size() - 1)(generator_)];
    }
    if (error != 0) ++injected_;
    return error;
  }

  CgroupFs& inner_;
  std::atomic<int> failAt_;
  std::atomic<int> mutations_{0};
  std::atomic<int> injected_{0};
  std::mutex randomMutex_;
  std::mt19937_64 generator_;
  double probability_ = 0;
  std::vector<int> errnos_;
};

}  // namespace vri::testing

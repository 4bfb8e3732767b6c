// Decorators that time what a decision asks of the kernel and of systemd, for bench/decision_scale.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cgroup-model/cgroupfs.h"
#include "systemd/systemd_units.h"

namespace vri::bench {

using Clock = std::chrono::steady_clock;

// Times every call and counts the mutations.
class TimingCgroupFs : public vri::CgroupFs {
  template <typename F>
  auto timed(F f) const -> decltype(f()) {
    const auto start = Clock::now();
    auto out = f();
    nanos += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    return out;
  }

 public:
  explicit TimingCgroupFs(vri::CgroupFs& inner) : inner_(inner) {}
  vri::Result<std::string> read(const vri::CgroupDir& d, std::string_view f) const override {
    return timed([&] { return inner_.read(d, f); });
  }
  vri::Result<void> write(const vri::CgroupDir& d, std::string_view f, std::string_view v) override {
    ++writes;
    return timed([&] { return inner_.write(d, f, v); });
  }
  vri::Result<void> mkdir(const vri::CgroupDir& d) override {
    ++writes;
    return timed([&] { return inner_.mkdir(d); });
  }
  vri::Result<void> rmdir(const vri::CgroupDir& d) override {
    ++writes;
    return timed([&] { return inner_.rmdir(d); });
  }
  bool exists(const vri::CgroupDir& d) const override {
    return timed([&] { return inner_.exists(d); });
  }
  vri::Result<std::vector<std::string>> children(const vri::CgroupDir& d) const override {
    return timed([&] { return inner_.children(d); });
  }
  vri::Result<std::string> readProc(std::string_view r) const override {
    return timed([&] { return inner_.readProc(r); });
  }
  void reset() {
    nanos = 0;
    writes = 0;
  }
  mutable int64_t nanos = 0;
  int writes = 0;

 private:
  vri::CgroupFs& inner_;
};

// Times every call to systemd (systemd mode).
class TimingUnits : public vri::SystemdUnits {
 public:
  explicit TimingUnits(vri::SystemdUnits& inner) : inner_(inner) {}
  vri::Result<void> setProperties(const std::string& unit, const std::vector<vri::UnitProperty>& properties) override {
    ++calls;
    const auto start = Clock::now();
    auto out = inner_.setProperties(unit, properties);
    nanos += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    return out;
  }
  void reset() {
    nanos = 0;
    calls = 0;
  }
  int64_t nanos = 0;
  int calls = 0;

 private:
  vri::SystemdUnits& inner_;
};

}  // namespace vri::bench

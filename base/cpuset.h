// CpuSet: a set of logical CPU ids in the kernel's list format ("0-3,8,10-11").
//
// Bitset-backed: 64 CPUs per word, stored only up to the highest CPU present,
// so sets on small machines stay a few words while ids up to kMaxCpus - 1 are
// allowed. The stored form is normalised (no trailing zero words), which makes
// equality a plain word comparison.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace vri {

class CpuSet {
 public:
  // Linux's NR_CPUS ceiling on the largest distributions.
  static constexpr int kMaxCpus = 8192;

  CpuSet() = default;
  CpuSet(std::initializer_list<int> cpus);

  // Strict parse of the list format. Accepts "" (the empty set, as an empty
  // cpuset.cpus reads) and ranges or ids in any order, overlapping or not.
  // Rejects everything else ("3-1", "1-2-3", "a", ",", "0-", "-1", " 1",
  // "1\n", ids >= kMaxCpus) with a message that quotes the input. Callers
  // reading kernel files strip the trailing newline first.
  static Result<CpuSet> parse(std::string_view text);

  // All CPUs first..last inclusive; requires 0 <= first <= last < kMaxCpus.
  static CpuSet range(int first, int last);

  // The canonical list format: ascending, ranges of 2+ CPUs folded ("0-3,8").
  std::string format() const;

  // Precondition for add/remove/contains: 0 <= cpu < kMaxCpus (aborts otherwise:
  // CPU ids from outside the process are validated by parse or the topology).
  void add(int cpu);
  void remove(int cpu);
  bool contains(int cpu) const;

  int count() const;
  bool empty() const { return words_.empty(); }
  int first() const;  // the lowest CPU, or -1 when empty
  int last() const;   // the highest CPU, or -1 when empty

  bool isSubsetOf(const CpuSet& other) const;
  bool intersects(const CpuSet& other) const;

  CpuSet& operator|=(const CpuSet& other);
  CpuSet& operator&=(const CpuSet& other);
  CpuSet& operator-=(const CpuSet& other);  // set difference
  friend CpuSet operator|(CpuSet a, const CpuSet& b) { return a |= b; }
  friend CpuSet operator&(CpuSet a, const CpuSet& b) { return a &= b; }
  friend CpuSet operator-(CpuSet a, const CpuSet& b) { return a -= b; }
  friend bool operator==(const CpuSet& a, const CpuSet& b) = default;

  // The lowest `n` CPUs of the set (all of them when n >= count()).
  CpuSet lowest(int n) const;
  std::vector<int> toVector() const;

  // Forward iteration in ascending order: `for (int cpu : set)`.
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = int;
    using difference_type = std::ptrdiff_t;
    using pointer = const int*;
    using reference = int;

    Iterator(const CpuSet* set, int cpu) : set_(set), cpu_(cpu) {}
    int operator*() const { return cpu_; }
    Iterator& operator++() {
      cpu_ = set_->nextFrom(cpu_ + 1);
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.cpu_ == b.cpu_; }

   private:
    const CpuSet* set_;
    int cpu_;
  };
  Iterator begin() const { return {this, first()}; }
  Iterator end() const { return {this, -1}; }

 private:
  // The lowest CPU >= from, or -1.
  int nextFrom(int from) const;
  void trim();

  std::vector<uint64_t> words_;
};

}  // namespace vri

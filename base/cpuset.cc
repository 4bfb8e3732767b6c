#include "base/cpuset.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>

#include "base/quote.h"

namespace vri {

namespace {

constexpr int kWordBits = 64;

void requireValidCpu(int cpu) {
  if (cpu < 0 || cpu >= CpuSet::kMaxCpus) {
    std::fprintf(stderr, "CpuSet: CPU id %d outside [0, %d)\n", cpu, CpuSet::kMaxCpus);
    std::abort();
  }
}

// Parses one CPU id; `element` is the list element it came from (for messages).
Result<int> parseCpuId(std::string_view digits, std::string_view element) {
  if (digits.empty()) {
    return Error::invalidArgument(quoteForMessage(element) + " is not an id or a range");
  }
  long value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return Error::invalidArgument(quoteForMessage(element) + " is not a CPU id or a range");
    value = value * 10 + (c - '0');
    if (value >= CpuSet::kMaxCpus) break;  // no overflow: reported just below
  }
  if (value >= CpuSet::kMaxCpus) {
    return Error::invalidArgument("CPU id " + quoteForMessage(digits) + " is out of range (the largest is " +
                                  std::to_string(CpuSet::kMaxCpus - 1) + ")");
  }
  if (digits.size() > 1 && digits.front() == '0') {
    return Error::invalidArgument("CPU id " + quoteForMessage(digits) + " has a leading zero");
  }
  return static_cast<int>(value);
}

Result<void> addElement(CpuSet& set, std::string_view element) {
  if (element.empty()) return Error::invalidArgument("empty element before or after a comma");
  if (element.size() > 1 && element[0] == '-' && element[1] >= '0' && element[1] <= '9') {
    return Error::invalidArgument("negative CPU id in " + quoteForMessage(element));
  }
  const auto dash = element.find('-');
  if (dash == std::string_view::npos) {
    VRI_ASSIGN_OR_RETURN(int cpu, parseCpuId(element, element));
    set.add(cpu);
    return {};
  }
  if (element.find('-', dash + 1) != std::string_view::npos) {
    return Error::invalidArgument(quoteForMessage(element) + " is not an id or a range");
  }
  const std::string_view low_text = element.substr(0, dash);
  const std::string_view high_text = element.substr(dash + 1);
  if (high_text.empty()) return Error::invalidArgument("range " + quoteForMessage(element) + " has no end");
  VRI_ASSIGN_OR_RETURN(int low, parseCpuId(low_text, element));
  VRI_ASSIGN_OR_RETURN(int high, parseCpuId(high_text, element));
  if (low > high) {
    return Error::invalidArgument("range " + quoteForMessage(element) + " runs backwards");
  }
  set |= CpuSet::range(low, high);
  return {};
}

}  // namespace

CpuSet::CpuSet(std::initializer_list<int> cpus) {
  for (int cpu : cpus) add(cpu);
}

Result<CpuSet> CpuSet::parse(std::string_view text) {
  CpuSet set;
  if (text.empty()) return set;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view element =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto added = addElement(set, element);
    if (!added.ok()) return std::move(added).context("invalid cpuset " + quoteForMessage(text)).error();
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return set;
}

CpuSet CpuSet::range(int first, int last) {
  requireValidCpu(first);
  requireValidCpu(last);
  CpuSet set;
  if (first > last) return set;
  set.words_.assign(static_cast<size_t>(last / kWordBits + 1), 0);
  const int first_word = first / kWordBits;
  const int last_word = last / kWordBits;
  for (int w = first_word; w <= last_word; ++w) {
    const int lo = (w == first_word) ? first % kWordBits : 0;
    const int hi = (w == last_word) ? last % kWordBits : kWordBits - 1;
    const uint64_t high_mask = hi == kWordBits - 1 ? ~uint64_t{0} : ((uint64_t{1} << (hi + 1)) - 1);
    const uint64_t low_mask = ~((uint64_t{1} << lo) - 1);
    set.words_[static_cast<size_t>(w)] = high_mask & low_mask;
  }
  return set;
}

std::string CpuSet::format() const {
  std::string out;
  int cpu = first();
  while (cpu >= 0) {
    int end = cpu;
    while (end + 1 < kMaxCpus && contains(end + 1)) ++end;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (end > cpu) {
      out += '-';
      out += std::to_string(end);
    }
    cpu = nextFrom(end + 1);
  }
  return out;
}

void CpuSet::add(int cpu) {
  requireValidCpu(cpu);
  const auto word = static_cast<size_t>(cpu / kWordBits);
  if (word >= words_.size()) words_.resize(word + 1, 0);
  words_[word] |= uint64_t{1} << (cpu % kWordBits);
}

void CpuSet::remove(int cpu) {
  requireValidCpu(cpu);
  const auto word = static_cast<size_t>(cpu / kWordBits);
  if (word >= words_.size()) return;
  words_[word] &= ~(uint64_t{1} << (cpu % kWordBits));
  trim();
}

bool CpuSet::contains(int cpu) const {
  requireValidCpu(cpu);
  const auto word = static_cast<size_t>(cpu / kWordBits);
  return word < words_.size() && (words_[word] >> (cpu % kWordBits)) & 1U;
}

int CpuSet::count() const {
  int total = 0;
  for (uint64_t w : words_) total += std::popcount(w);
  return total;
}

int CpuSet::first() const { return nextFrom(0); }

int CpuSet::last() const {
  if (words_.empty()) return -1;
  const auto top = words_.size() - 1;
  return static_cast<int>(top) * kWordBits + (kWordBits - 1 - std::countl_zero(words_[top]));
}

int CpuSet::nextFrom(int from) const {
  if (from < 0) from = 0;
  auto word = static_cast<size_t>(from / kWordBits);
  if (word >= words_.size()) return -1;
  uint64_t bits = words_[word] & (~uint64_t{0} << (from % kWordBits));
  while (true) {
    if (bits != 0) return static_cast<int>(word) * kWordBits + std::countr_zero(bits);
    if (++word >= words_.size()) return -1;
    bits = words_[word];
  }
}

bool CpuSet::isSubsetOf(const CpuSet& other) const {
  if (words_.size() > other.words_.size()) return false;  // normalised: our top word is non-zero
  for (size_t i = 0; i < words_.size(); ++i) {
    if ((words_[i] & ~other.words_[i]) != 0) return false;
  }
  return true;
}

bool CpuSet::intersects(const CpuSet& other) const {
  const size_t n = std::min(words_.size(), other.words_.size());
  for (size_t i = 0; i < n; ++i) {
    if ((words_[i] & other.words_[i]) != 0) return true;
  }
  return false;
}

CpuSet& CpuSet::operator|=(const CpuSet& other) {
  if (other.words_.size() > words_.size()) words_.resize(other.words_.size(), 0);
  for (size_t i = 0; i < other.words_.size(); ++i) words_[i] |= other.words_[i];
  return *this;
}

CpuSet& CpuSet::operator&=(const CpuSet& other) {
  if (words_.size() > other.words_.size()) words_.resize(other.words_.size());
  for (size_t i = 0; i < words_.size(); ++i) words_[i] &= other.words_[i];
  trim();
  return *this;
}

CpuSet& CpuSet::operator-=(const CpuSet& other) {
  const size_t n = std::min(words_.size(), other.words_.size());
  for (size_t i = 0; i < n; ++i) words_[i] &= ~other.words_[i];
  trim();
  return *this;
}

CpuSet CpuSet::lowest(int n) const {
  CpuSet out;
  for (int cpu : *this) {
    if (n-- <= 0) break;
    out.add(cpu);
  }
  return out;
}

std::vector<int> CpuSet::toVector() const {
  std::vector<int> cpus;
  cpus.reserve(static_cast<size_t>(count()));
  for (int cpu : *this) cpus.push_back(cpu);
  return cpus;
}

void CpuSet::trim() {
  while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

}  // namespace vri

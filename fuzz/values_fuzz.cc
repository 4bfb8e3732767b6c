// CpuSet, Kubernetes quantities and cgroup control-file values, as read from cgroupfs, kubelet and
// the API. Whatever parses must format to a text that parses to the same value, and formatting
// is canonical (formatting that again changes nothing).
#include "base/cpuset.h"
#include "base/quantity.h"
#include "cgroup-model/cgroup_values.h"
#include "fuzz/fuzz_input.h"

using namespace vri;

namespace {

template <typename T, typename Parse, typename Format>
void roundTrip(std::string_view text, Parse parse, Format format) {
  const Result<T> parsed = parse(text);
  if (!parsed.ok()) return;
  const std::string formatted = format(*parsed);
  const Result<T> again = parse(formatted);
  VRI_FUZZ_CHECK(again.ok());
  VRI_FUZZ_CHECK(*again == *parsed);
  VRI_FUZZ_CHECK(format(*again) == formatted);
}

// A value that parses also maps into the other cgroup version's range.
template <typename T, typename Other>
void mapsIntoRange(std::string_view text, Other (*map)(T)) {
  if (const Result<T> parsed = T::parse(text); parsed.ok()) {
    const Other mapped = map(*parsed);
    VRI_FUZZ_CHECK(mapped.value >= Other::kMin && mapped.value <= Other::kMax);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  switch (in.kind % 8) {
    case 0: roundTrip<CpuSet>(in.text, CpuSet::parse, [](const CpuSet& s) { return s.format(); }); break;
    case 1: {
      roundTrip<Quantity>(in.text, Quantity::parse, [](const Quantity& q) { return q.toString(); });
      if (auto q = Quantity::parse(in.text); q.ok()) VRI_FUZZ_CHECK(q->milliValue() >= 0);
      break;
    }
    case 2:
      roundTrip<CpuShares>(in.text, CpuShares::parse, [](const CpuShares& s) { return s.format(); });
      mapsIntoRange<CpuShares, CpuWeight>(in.text, sharesToWeight);
      break;
    case 3:
      roundTrip<CpuWeight>(in.text, CpuWeight::parse, [](const CpuWeight& w) { return w.format(); });
      mapsIntoRange<CpuWeight, CpuShares>(in.text, weightToShares);
      break;
    case 4: roundTrip<CpuMax>(in.text, CpuMax::parseV2, [](const CpuMax& m) { return m.formatV2(); }); break;
    case 5: {
      const auto f = fuzz::fields(in.text);
      const std::string_view quota = f[0], period = f.size() > 1 ? f[1] : std::string_view("100000");
      const Result<CpuMax> parsed = CpuMax::parseV1(quota, period);
      if (!parsed.ok()) break;
      const Result<CpuMax> again = CpuMax::parseV1(parsed->formatV1Quota(), parsed->formatV1Period());
      VRI_FUZZ_CHECK(again.ok());
      VRI_FUZZ_CHECK(*again == *parsed);
      break;
    }
    case 6: roundTrip<Limit>(in.text, Limit::parseV2, [](const Limit& l) { return l.formatV2(); }); break;
    case 7: roundTrip<Limit>(in.text, Limit::parseV1Memory, [](const Limit& l) { return l.formatV1Memory(); }); break;
  }
  return 0;
}

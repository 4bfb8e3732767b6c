// CpuSet, Kubernetes quantities and cgroup control-file values, as read from cgroupfs, kubelet and
// the API. Whatever parses must format to a text that parses to the same value, and formatting
// is canonical (formatting that again changes nothing).
#include "cgroup-model/cgroup_values.h"
#include "cgroup-model/cpuset.h"
#include "cgroup-model/quantity.h"
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
      if (auto s = CpuShares::parse(in.text); s.ok()) {
        const CpuWeight w = sharesToWeight(*s);
        VRI_FUZZ_CHECK(w.value >= CpuWeight::kMin && w.value <= CpuWeight::kMax);
      }
      break;
    case 3:
      roundTrip<CpuWeight>(in.text, CpuWeight::parse, [](const CpuWeight& w) { return w.format(); });
      if (auto w = CpuWeight::parse(in.text); w.ok()) {
        const CpuShares s = weightToShares(*w);
        VRI_FUZZ_CHECK(s.value >= CpuShares::kMin && s.value <= CpuShares::kMax);
      }
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

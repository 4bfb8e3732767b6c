// vrictl top's table and map's busy drawing from hand-made usage rounds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "vrictl/map_view.h"
#include "vrictl/top_view.h"

namespace vri::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::UsageReport report() {
  v1::UsageReport r;
  r.set_interval_ms(1000);
  v1::UsageSample& s = *r.add_samples();
  const auto add = [&](const char* tenant, const char* kind, const char* name, double cores, double throttled,
                       uint64_t periods, uint64_t memory) {
    v1::TenantUsage& t = *s.add_tenants();
    t.set_tenant(tenant);
    t.set_kind(kind);
    t.set_name(name);
    t.set_measured(true);
    t.set_rates(true);
    t.set_cpu_cores(cores);
    t.set_throttled_fraction(throttled);
    t.set_periods_total(periods);
    t.set_memory_measured(true);
    t.set_memory_bytes(memory);
  };
  add("pod/a", "pod", "shop/web", 0.25, 0.5, 40, 300ULL << 20);
  add("vm/b", "vm", "database", 2.0, 0, 0, 4ULL << 30);
  add("pod/c", "pod", "shop/batch", 0.75, 0.9, 40, 10ULL << 20);
  v1::TenantUsage& unmeasured = *s.add_tenants();
  unmeasured.set_tenant("vm/d");
  unmeasured.set_kind("vm");
  unmeasured.set_name("stopped");
  for (int cpu = 0; cpu < 2; ++cpu) {
    v1::CpuUsage& c = *s.add_cpus();
    c.set_cpu(cpu);
    c.set_busy(cpu == 0 ? 0.5 : 1.0);
  }
  return r;
}

v1::Node node() {
  v1::Node n;
  (*n.mutable_exclusive_cpus())["vm/b"] = "2-3";
  return n;
}

std::vector<std::string> names(const std::string& table) {
  std::vector<std::string> order = {"shop/web", "database", "shop/batch", "stopped"};
  std::sort(order.begin(), order.end(),
            [&](const std::string& a, const std::string& b) { return table.find(a) < table.find(b); });
  return order;
}

TEST(TopViewTest, RowsAreSortedByTheChosenColumn) {
  TopScreen screen;
  const std::string by_cpu = formatTop(report(), node(), screen, {});
  EXPECT_EQ(names(by_cpu), (std::vector<std::string>{"database", "shop/batch", "shop/web", "stopped"}));
  screen.sort = TopSort::kMemory;
  EXPECT_EQ(names(formatTop(report(), node(), screen, {})),
            (std::vector<std::string>{"database", "shop/web", "shop/batch", "stopped"}));
  screen.sort = TopSort::kThrottled;
  EXPECT_EQ(names(formatTop(report(), node(), screen, {})),
            (std::vector<std::string>{"shop/batch", "shop/web", "database", "stopped"}));
  screen.sort = TopSort::kName;
  EXPECT_EQ(names(formatTop(report(), node(), screen, {})),
            (std::vector<std::string>{"database", "shop/batch", "shop/web", "stopped"}));
  EXPECT_EQ(topSortForKey('m'), TopSort::kMemory);
  EXPECT_EQ(topSortForKey('x'), std::nullopt);
  EXPECT_EQ(parseTopSort("throttled"), TopSort::kThrottled);
}

TEST(TopViewTest, EachRowShowsCpusUseThrottlingAndMemory) {
  TopScreen screen;
  screen.keys = true;
  const std::string table = formatTop(report(), node(), screen, {});
  EXPECT_THAT(table, HasSubstr("4 tenants, sampled every 1000 ms; sorted by cpu  (c cpu, m memory, t throttled"));
  EXPECT_THAT(table, HasSubstr("CPUs busy: 75% of 2 CPUs"));
  EXPECT_THAT(table, HasSubstr("database    vm    2-3             200.0   no limit     4.0 GiB"));
  EXPECT_THAT(table, HasSubstr("shop/web    pod   shared           25.0      50.0%   300.0 MiB"));
  EXPECT_THAT(table, HasSubstr("stopped     vm    shared              -          -           -"));
  screen.rows = 2;
  const std::string cut = formatTop(report(), node(), screen, {});
  EXPECT_THAT(cut, HasSubstr("... 2 more"));
  EXPECT_THAT(cut, Not(HasSubstr("shop/web")));
}

TEST(TopViewTest, TheMapDrawsEachCpusBusyShare) {
  v1::Node n;
  for (int id = 0; id < 4; ++id) {
    v1::CpuInfo& cpu = *n.add_cpus();
    cpu.set_id(id);
    cpu.set_core(id / 2);
  }
  n.set_shared_cpus("0-3");
  v1::UsageSample busy;
  const double shares[] = {0.01, 0.42, 0.97, 0.5};
  for (int id = 0; id < 4; ++id) {
    v1::CpuUsage& c = *busy.add_cpus();
    c.set_cpu(id);
    c.set_busy(shares[id]);
  }
  const std::string map = formatMap(n, {}, {}, &busy);
  EXPECT_THAT(map, HasSubstr("busy over the last round"));
  EXPECT_THAT(map, HasSubstr("cores 0-1      .4 #5"));
  EXPECT_THAT(formatMap(n, {}, {}), Not(HasSubstr("busy"))) << "no round: the map alone";
  EXPECT_THAT(mapAsJson(n, {}, &busy), HasSubstr("\"busy\": 0.97"));
}

}  // namespace
}  // namespace vri::ctl

// The metrics text as Prometheus reads it: every family announced, names and labels within the
// conventions and the fixed label set, values from the ledger, the usage round and the calls, and
// a released tenant's series gone. (promtool checks the real endpoint: tests/root/usage_root_test.cc.)
#include "vri/metrics_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/test_paths.h"
#include "tests/vri/decision_pipeline_harness.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

UsageSampler v1Sampler(Pipeline& p, Logger& log) {
  UsageSources s;
  s.version = CgroupVersion::kV1;
  s.cpu = s.cpuacct = "cpu,cpuacct";
  return UsageSampler(
      p.fs, s, p.layout, [&p] { return p.node->state(); }, UsageSamplerOptions{}, p.clock, log);
}

TEST(MetricsTextTest, EveryFamilyIsAnnouncedWithinTheConventions) {
  Pipeline p;
  Logger log(LogLevel::kError);
  UsageSampler sampler = v1Sampler(p, log);
  CallMetrics calls;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 2)).ok());
  sampler.sampleOnce();
  calls.record("AdmitContainer", "vri-cri-shim/0.1.0 grpc-c++/1.51.1", true, 0, std::chrono::milliseconds(3));
  calls.record("AdmitVm", "vri-hook/0.1.0", true, 8, std::chrono::milliseconds(30));
  calls.record("GetNode", "curl/8", false, 0, std::chrono::microseconds(100));
  const std::string text = renderMetrics(*p.node, &sampler, calls);

  const std::set<std::string> allowed_labels = {"pool", "kind",   "tenant", "name", "cpu",       "call",     "client",
                                                "code", "reason", "result", "le",   "numa_node", "page_size"};
  std::map<std::string, std::string> types;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(# TYPE (\S+) (\S+))"))) {
      types[m[1]] = m[2];
      EXPECT_EQ(std::string(m[1]).ends_with("_total"), m[2] == "counter") << m[1];
      continue;
    }
    if (line.starts_with("#")) continue;
    ASSERT_TRUE(std::regex_match(line, m, std::regex(R"(([a-z_]+)(\{(.*)\})? (\S+))"))) << line;
    const std::string labels = m[3];
    static const std::regex label(R"re(([a-z_]+)="((?:[^"\\]|\\.)*)")re");
    for (std::sregex_iterator it(labels.begin(), labels.end(), label), end; it != end; ++it) {
      EXPECT_TRUE(allowed_labels.count((*it)[1])) << "label " << (*it)[1] << " in " << line;
      EXPECT_FALSE(std::regex_match((*it)[2].str(), std::regex(R"(\d+[-,]\d+.*)"))) << "a cpuset in " << line;
    }
  }
  for (const std::string& name : metricNames()) EXPECT_TRUE(types.count(name)) << name << " is not announced";
  EXPECT_EQ(types.size(), metricNames().size());
  // Units in the names: seconds and bytes.
  EXPECT_EQ(types["vri_call_duration_seconds"], "histogram");
  EXPECT_EQ(types["vri_tenant_memory_usage_bytes"], "gauge");

  // Values: the ledger's, the round's, the calls'.
  EXPECT_THAT(text, HasSubstr("vri_tenant_exclusive_cpus{tenant=\"pod/" + uid(1) + "\",kind=\"pod\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("vri_node_cpus{pool=\"exclusive\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("vri_tenant_cpu_usage_seconds_total{tenant=\"pod/" + uid(1) + "\",kind=\"pod\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vri_calls_total{call=\"AdmitVm\",client=\"vri-hook\",code=\"RESOURCE_EXHAUSTED\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vri_calls_total{call=\"GetNode\",client=\"other\",code=\"OK\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vri_decision_refusals_total{call=\"AdmitVm\",reason=\"RESOURCE_EXHAUSTED\"} 1\n"));
  // A histogram's buckets are cumulative and end with +Inf at the count: 3 ms falls in le=0.005.
  EXPECT_THAT(text, HasSubstr("vri_decision_duration_seconds_bucket{call=\"AdmitContainer\",le=\"0.0025\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("vri_decision_duration_seconds_bucket{call=\"AdmitContainer\",le=\"0.005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vri_decision_duration_seconds_bucket{call=\"AdmitContainer\",le=\"10\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vri_decision_duration_seconds_bucket{call=\"AdmitContainer\",le=\"+Inf\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("vri_decision_duration_seconds_count{call=\"AdmitContainer\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("vri_decision_duration_seconds_count{call=\"GetNode\"}"))) << "not a decision";
}

TEST(MetricsTextTest, NamesAreEscapedAndAReleasedTenantsSeriesGo) {
  Pipeline p;
  Logger log(LogLevel::kError);
  UsageSampler sampler = v1Sampler(p, log);
  CallMetrics calls;
  PodSpec odd = pod(uid(1), QosClass::kBurstable);
  odd.name = "ns/a \"quoted\" \\ name";
  ASSERT_TRUE(p.node->admitContainer(odd, shared("c1", 100)).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(2), QosClass::kBurstable), shared("c2", 100)).ok());
  sampler.sampleOnce();
  std::string text = renderMetrics(*p.node, &sampler, calls);
  EXPECT_THAT(text, HasSubstr(R"(name="ns/a \"quoted\" \\ name"} 1)"));
  EXPECT_THAT(text, HasSubstr(uid(2)));
  ASSERT_TRUE(p.node->releasePod(uid(2)).ok());
  // Before the sampler's next round as after it: the series go with the tenant.
  EXPECT_THAT(renderMetrics(*p.node, &sampler, calls), Not(HasSubstr(uid(2))));
  sampler.sampleOnce();
  EXPECT_THAT(renderMetrics(*p.node, &sampler, calls), Not(HasSubstr(uid(2))));
  // Without sampling, the usage families are announced and empty.
  text = renderMetrics(*p.node, nullptr, calls);
  EXPECT_THAT(text, HasSubstr("# TYPE vri_tenant_cpu_usage_seconds_total counter\n# HELP"));
}

TEST(MetricsTextTest, TheOperatorsGuideListsEveryMetric) {
  std::ifstream in(std::string(VRI_SOURCE_DIR) + "/docs/operating.md");
  std::stringstream readme;
  readme << in.rdbuf();
  for (const std::string& name : metricNames())
    EXPECT_THAT(readme.str(), HasSubstr("| `" + name + "` |")) << "docs/operating.md's list of metrics lacks " << name;
}

TEST(MetricsTextTest, ClientsAreVrisProgramsOrOther) {
  EXPECT_EQ(clientProgram("vri-hook/0.1.0-1 grpc-c++/1.51.1 grpc-c/29.0.0"), "vri-hook");
  EXPECT_EQ(clientProgram("vri-cri-shim/0.1.0"), "vri-cri-shim");
  EXPECT_EQ(clientProgram("vri-nri-plugin/0.1.0"), "vri-nri-plugin");
  EXPECT_EQ(clientProgram("vrictl/0.1.0"), "vrictl");
  EXPECT_EQ(clientProgram("vri-invented/1"), "other");
  EXPECT_EQ(clientProgram(""), "other");
  EXPECT_EQ(grpcCodeName(8), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(grpcCodeName(99), "UNKNOWN");
}

}  // namespace
}  // namespace vri::testing

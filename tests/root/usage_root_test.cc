// Usage and metrics on the real cgroup v1 kernel, as root: vrid samples busy processes placed in
// its pods' cgroups (cpu, cpuacct) in a private subtree; what it reports is checked against the
// processes' own CPU time and the kernel's throttling, `vrictl top` is driven through a
// pseudo-terminal, and the metrics endpoint is scraped, checked with promtool and compared with
// vrictl --json.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "proto/vri.grpc.pb.h"
#include "tests/root/real_v1_subtree.h"
#include "tests/support/eventually.h"
#include "tests/support/loopback_http.h"
#include "tests/support/pseudo_terminal.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kGuaranteed[] = "0e000000-0000-4000-8000-0000000000a1";
constexpr char kBurstable[] = "0e000000-0000-4000-8000-0000000000b2";

std::string body(const std::string& answer) {
  const size_t at = answer.find("\r\n\r\n");
  return at == std::string::npos ? "" : answer.substr(at + 4);
}

// The value of the series `name{labels}` in a scrape; NaN when it is not there.
double seriesValue(const std::string& scrape, const std::string& series) {
  const size_t at = scrape.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(scrape.substr(at + series.size() + 2));
}

// A process that spins until killed, placed in `cgroups` (cgroup.procs files) first.
pid_t spinIn(const std::vector<std::string>& cgroups) {
  const pid_t test = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Ends with the test, whichever way it ends: a failed assertion returns before the spinners
    // are reaped, and a spinner left behind would hold ctest's output open for ever.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != test) ::_exit(0);
    for (const std::string& dir : cgroups) std::ofstream(dir + "/cgroup.procs") << ::getpid();
    for (;;) asm volatile("" ::: "memory");  // spins: the compiler may not drop the loop
  }
  return pid;
}

// Ends a spinner and returns the CPU time it used, from the kernel's accounting of the reaped child.
double reapSeconds(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  rusage used{};
  ::wait4(pid, &status, 0, &used);
  return static_cast<double>(used.ru_utime.tv_sec + used.ru_stime.tv_sec) +
         static_cast<double>(used.ru_utime.tv_usec + used.ru_stime.tv_usec) / 1e6;
}

v1::AdmitContainerRequest container(const std::string& uid, const std::string& name, v1::Qos qos, int64_t request,
                                    int64_t limit, const std::string& id) {
  v1::AdmitContainerRequest r;
  r.set_pod_uid(uid);
  r.set_pod_name(name);
  r.set_qos(qos);
  r.set_container_name("app");
  r.set_container_id(id);
  r.set_cpu_request_milli(request);
  r.set_cpu_limit_milli(limit);
  r.set_memory_limit_bytes(64ULL << 20);
  return r;
}

const v1::TenantUsage* find(const v1::UsageReport& report, const std::string& tenant) {
  if (report.samples().empty()) return nullptr;
  for (const v1::TenantUsage& t : report.samples(0).tenants())
    if (t.tenant() == tenant) return &t;
  return nullptr;
}

TEST(UsageRootTest, BusyProcessesInRealCgroupsAreMeasuredShownAndExported) {
  RealV1Subtree subtree("usage");
  ASSERT_NO_FATAL_FAILURE(subtree.make());
  const std::string promtool = std::string(VRI_BINARY_DIR) + "/promtool";
  ASSERT_EQ(::access(promtool.c_str(), X_OK), 0) << "needs promtool at " << promtool << " (scripts/get-promtool.sh)";
  const std::string memory_subtree = "/sys/fs/cgroup/memory/" + subtree.root();
  const int port = freeLoopbackPort();
  TempDir tmp;
  VridProcess vrid(tmp, "vrid",
                   {"--topology=live", "--ownership=everything", "--kubelet-cgroup-root=/" + subtree.root(),
                    "--machine-partition=" + subtree.root() + "/machine",
                    "--cgroup-v1-controllers=cpuset,cpu,cpuacct,pids", "--system-reserved-cpu=1",
                    "--usage-interval-ms=200", "--usage-v1-memory=true", "--metrics-port=" + std::to_string(port),
                    "--metrics-token-file=" + writeMetricsToken(tmp.sub("metrics.token"))});
  ASSERT_TRUE(vrid.start());
  auto stub = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid.adminSocket(), grpc::InsecureChannelCredentials()));
  const auto admit = [&](const v1::AdmitContainerRequest& r) {
    grpc::ClientContext c;
    v1::ContainerAllocation placed;
    return stub->AdmitContainer(&c, r, &placed);
  };
  ASSERT_TRUE(admit(container(kGuaranteed, "usage/guaranteed", v1::GUARANTEED, 1000, 1000, "c0ffeea1")).ok());
  ASSERT_TRUE(admit(container(kBurstable, "usage/burstable", v1::BURSTABLE, 100, 200, "c0ffeeb2")).ok());
  // One refusal, to be counted by reason: more CPUs than the node has.
  EXPECT_EQ(admit(container("0e000000-0000-4000-8000-0000000000c3", "usage/too-big", v1::GUARANTEED, 64000, 64000,
                            "c0ffeec3"))
                .error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);

  const auto containerDirs = [&](const std::string& pod) {
    std::vector<std::string> dirs;
    for (const std::string& h : subtree.hierarchies()) dirs.push_back(subtree.dir(h) + pod);
    return dirs;
  };
  const pid_t guaranteed = spinIn(containerDirs(std::string("/kubepods/pod") + kGuaranteed + "/c0ffeea1"));
  const pid_t burstable = spinIn(containerDirs(std::string("/kubepods/burstable/pod") + kBurstable + "/c0ffeeb2"));

  const auto usage = [&] {
    grpc::ClientContext c;
    v1::UsageReport report;
    EXPECT_TRUE(stub->GetUsage(&c, {}, &report).ok());
    return report;
  };
  // The Guaranteed pod spins on its own CPU; the Burstable one is held to 0.2 of a CPU by its quota.
  v1::UsageReport report;
  ASSERT_TRUE(eventually(
      [&] {
        report = usage();
        const v1::TenantUsage* g = find(report, std::string("pod/") + kGuaranteed);
        const v1::TenantUsage* b = find(report, std::string("pod/") + kBurstable);
        return g && b && g->rates() && b->rates() && g->cpu_cores() > 0.5 && b->throttled_fraction() > 0.5;
      },
      std::chrono::seconds(30)))
      << report.DebugString();
  const v1::TenantUsage* b = find(report, std::string("pod/") + kBurstable);
  EXPECT_LE(b->cpu_cores(), 0.35) << "the quota is 0.2 of a CPU";
  EXPECT_GT(b->throttled_periods_total(), 0u);
  EXPECT_GT(b->throttled_seconds_total(), 0.0);
  EXPECT_EQ(report.interval_ms(), 200u);
  ASSERT_EQ(report.samples(0).cpus_size(), subtree.cpus().count());
  // Memory: the v1 memory hierarchy is read, but vrid made nothing there (memory is not among its
  // controllers), so there is nothing of these pods to read.
  EXPECT_FALSE(find(report, std::string("pod/") + kGuaranteed)->memory_measured());
  EXPECT_FALSE(std::filesystem::exists(memory_subtree));

  // vrictl top at a terminal: the pods, sorted by CPU, then by memory; q quits.
  {
    Terminal terminal({VRICTL_BINARY, "--socket", vrid.socket(), "top"}, tmp.path());
    EXPECT_TRUE(terminal.shows("sorted by cpu"));
    EXPECT_TRUE(terminal.shows("usage/guaranteed"));
    terminal.type("m");
    EXPECT_TRUE(terminal.shows("sorted by memory"));
    terminal.type("q");
    EXPECT_EQ(terminal.exitCodeWithin(std::chrono::seconds(10 * timeScale())), 0);
  }

  // The CPU time vrid reports is the processes' own, once they have stopped.
  const double guaranteed_used = reapSeconds(guaranteed);
  const double burstable_used = reapSeconds(burstable);
  ASSERT_TRUE(eventually([&] {
    report = usage();
    const v1::TenantUsage* g = find(report, std::string("pod/") + kGuaranteed);
    return g && g->rates() && g->cpu_cores() == 0;  // a round after both ended
  }));
  EXPECT_NEAR(find(report, std::string("pod/") + kGuaranteed)->cpu_seconds_total(), guaranteed_used, 0.02);
  EXPECT_NEAR(find(report, std::string("pod/") + kBurstable)->cpu_seconds_total(), burstable_used, 0.02);

  // The endpoint: promtool finds nothing wrong, and the values are vrictl's.
  EXPECT_THAT(loopbackHttp(port, "GET", "/metrics", ""), HasSubstr("401"));  // no token, no metrics
  EXPECT_THAT(loopbackHttp(port, "GET", "/other"), HasSubstr("404"));
  EXPECT_THAT(loopbackHttp(port, "POST", "/metrics"), HasSubstr("405"));
  const std::string answer = loopbackHttp(port, "GET", "/metrics");
  ASSERT_THAT(answer, HasSubstr("200 OK"));
  EXPECT_THAT(answer, HasSubstr("text/plain; version=0.0.4"));
  const std::string scrape = body(answer);
  std::ofstream(tmp.sub("scrape.txt")) << scrape;
  std::string out;
  EXPECT_EQ(runCommand({"/bin/sh", "-c", promtool + " check metrics < " + tmp.sub("scrape.txt")}, &out,
                       tmp.sub("promtool.out")),
            0)
      << out;
  std::string top_json, pool_json;
  ASSERT_EQ(
      runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "top", "--once", "--json"}, &top_json, tmp.sub("top.json")),
      0);
  ASSERT_EQ(runCommand({VRICTL_BINARY, "--socket", vrid.socket(), "pool", "--json"}, &pool_json, tmp.sub("pool.json")),
            0);
  const std::string g_labels = std::string("{tenant=\"pod/") + kGuaranteed + "\",kind=\"pod\"}";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      top_json, m,
      std::regex(std::string("\"tenant\": \"pod/") + kGuaranteed + R"re("[^}]*"cpu_seconds_total": ([0-9.e+-]+))re")))
      << top_json;
  EXPECT_NEAR(seriesValue(scrape, "vri_tenant_cpu_usage_seconds_total" + g_labels), std::stod(m[1]), 1e-6);
  ASSERT_TRUE(std::regex_search(pool_json, m, std::regex(R"re("shared_cpus": "([0-9,-]+)")re"))) << pool_json;
  EXPECT_EQ(seriesValue(scrape, "vri_node_cpus{pool=\"shared\"}"), CpuSet::parse(m[1].str())->count());
  ASSERT_TRUE(
      std::regex_search(pool_json, m, std::regex(std::string("\"pod/") + kGuaranteed + R"re(/app": "([0-9,-]+)")re")))
      << pool_json;
  EXPECT_EQ(seriesValue(scrape, "vri_tenant_exclusive_cpus" + g_labels), CpuSet::parse(m[1].str())->count());
  EXPECT_EQ(seriesValue(scrape, "vri_decision_refusals_total{call=\"AdmitContainer\",reason=\"RESOURCE_EXHAUSTED\"}"),
            1);
  EXPECT_GE(seriesValue(scrape, "vri_calls_total{call=\"GetUsage\",client=\"other\",code=\"OK\"}"), 1);
  EXPECT_GE(seriesValue(scrape, "vri_calls_total{call=\"GetUsage\",client=\"vrictl\",code=\"OK\"}"), 1);
  EXPECT_THAT(scrape, HasSubstr("vri_tenant_cpu_throttled_periods_total{tenant=\"pod/" + std::string(kBurstable)));

  // A released tenant's series are gone.
  {
    grpc::ClientContext c;
    v1::ReleasePodRequest release;
    release.set_pod_uid(kBurstable);
    v1::Released released;
    ASSERT_TRUE(stub->ReleasePod(&c, release, &released).ok());
  }
  const std::string after = body(loopbackHttp(port, "GET", "/metrics"));
  EXPECT_THAT(after, Not(HasSubstr(kBurstable)));
  EXPECT_THAT(after, HasSubstr(kGuaranteed));
  stub.reset();
  EXPECT_EQ(vrid.stop(), 0);
  EXPECT_FALSE(std::filesystem::exists(memory_subtree)) << "vrid made something in the memory hierarchy";
}

}  // namespace
}  // namespace vri::testing

// What vrid's libvirt side asks of libvirtd for a running VM, per call, against
// a real libvirtd (root, tests/libvirt/libvirt-fixture.sh): a live vCPU pin (every
// shared-pool change re-pins running VMs), VRI's metadata record (a move, a
// start), counting the live vCPUs (the hot-plug poll, per VM per second), all
// domains' vCPU stats in one call (the poll's alternative), the live XML, and
// virConnectGetVersion as the floor: one round trip to libvirtd.
//
//   ./build/bench/libvirt_live_calls --calls 200
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kDomain[] =
    "<domain type='qemu'><name>vri-test-bench</name><uuid>5e1f0c2d-7a3b-4c5d-9e6f-0000000000b1</uuid>"
    "<memory unit='MiB'>96</memory><vcpu placement='static' current='1'>2</vcpu>"
    "<os><type arch='x86_64' machine='pc'>hvm</type></os><on_poweroff>destroy</on_poweroff>"
    "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices></domain>";
constexpr char kMetadata[] =
    "<domain><cpu policy='shared' thread-policy='prefer' emulator-threads='shared' iothreads='shared'/>"
    "<placement><vcpupin vcpu='0' pool='shared'/><vcpupin vcpu='1' pool='shared'/><emulatorpin pool='shared'/>"
    "</placement></domain>";

void report(const char* call, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  double sum = 0;
  for (double v : ms) sum += v;
  std::printf("{\"call\":\"%s\",\"calls\":%zu,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"mean_ms\":%.3f}\n", call, ms.size(),
              ms[ms.size() / 2], ms[ms.size() * 99 / 100], sum / static_cast<double>(ms.size()));
}

std::vector<double> timed(int calls, const std::function<bool()>& call) {
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    if (!call()) return {};
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 200;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(1, std::atoi(argv[i + 1]));
  }
  virConnectPtr conn = virConnectOpen("qemu:///system");
  if (conn == nullptr) {
    std::fprintf(stderr, "libvirt_live_calls: no libvirtd at qemu:///system (tests/libvirt/libvirt-fixture.sh up)\n");
    return 1;
  }
  virDomainPtr domain = virDomainCreateXML(conn, kDomain, 0);
  if (domain == nullptr) {
    std::fprintf(stderr, "libvirt_live_calls: %s\n", virGetLastErrorMessage());
    return 1;
  }
  const int cpus = virNodeGetCPUMap(conn, nullptr, nullptr, 0);
  std::vector<unsigned char> all(static_cast<size_t>(VIR_CPU_MAPLEN(cpus)), 0);
  for (int cpu = 0; cpu < cpus; ++cpu) VIR_USE_CPU(all.data(), cpu);
  unsigned long version = 0;
  std::vector<std::pair<const char*, std::vector<double>>> results;
  results.emplace_back("round trip (virConnectGetVersion)",
                       timed(calls, [&] { return virConnectGetVersion(conn, &version) == 0; }));
  results.emplace_back("live vCPU pin", timed(calls, [&] {
                         return virDomainPinVcpuFlags(domain, 0, all.data(), static_cast<int>(all.size()),
                                                      VIR_DOMAIN_AFFECT_LIVE) == 0;
                       }));
  results.emplace_back("live metadata record", timed(calls, [&] {
                         return virDomainSetMetadata(domain, VIR_DOMAIN_METADATA_ELEMENT, kMetadata, "vri",
                                                     "urn:vri:domain:1", VIR_DOMAIN_AFFECT_LIVE) == 0;
                       }));
  results.emplace_back("live vCPU count (one VM)",
                       timed(calls, [&] { return virDomainGetVcpusFlags(domain, VIR_DOMAIN_AFFECT_LIVE) >= 0; }));
  results.emplace_back("vCPU stats of all domains", timed(calls, [&] {
                         virDomainStatsRecordPtr* records = nullptr;
                         const int n = virConnectGetAllDomainStats(conn, VIR_DOMAIN_STATS_VCPU, &records,
                                                                   VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE);
                         if (records != nullptr) virDomainStatsRecordListFree(records);
                         return n >= 0;
                       }));
  results.emplace_back("live XML", timed(calls, [&] {
                         char* xml = virDomainGetXMLDesc(domain, 0);
                         const bool ok = xml != nullptr;
                         free(xml);
                         return ok;
                       }));
  virDomainDestroy(domain);
  virDomainFree(domain);
  virConnectClose(conn);
  for (auto& [call, ms] : results) {
    if (ms.empty()) {
      std::fprintf(stderr, "libvirt_live_calls: %s failed\n", call);
      return 1;
    }
  }
  for (auto& [call, ms] : results) report(call, std::move(ms));
  return 0;
}

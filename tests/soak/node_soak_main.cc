// vri-node-soak: pod and VM churn on one node while its daemons fail at random, seeded, with the node
// checked after every fault (node_checks.h). scripts/soak.sh runs it with the fixtures up and turns
// what it records into a report with plots; CI runs its five-minute form.
//
// Faults: vrid SIGKILLed idle, while libvirtd starts a VM (its hook waiting on vrid) and while the
// shim creates a container; the shim SIGKILLed mid-create; containerd and libvirtd restarted; vrid's
// state filesystem full while tenants come and go, then freed; a QEMU and a container's process
// killed while vrid is down. vrid is never killed in the run's last minutes, so that its growth can be
// measured on one process.
//
// Exit status: 0 when every check held and vrid was killed at least --min-vrid-kills times.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <random>
#include <thread>

#include "tests/soak/node_checks.h"
#include "tests/soak/soak_node.h"
#include "tests/soak/soak_record.h"
#include "tests/soak/tenants.h"
#include "tests/support/eventually.h"

namespace vri::soak {
namespace {

constexpr size_t kMaxVms = 2;    // two TCG guests keep a 2-CPU machine busy enough
constexpr size_t kMaxPods = 3;   // Guaranteed and Burstable: one exclusive CPU to fight over
constexpr int kChecksEvery = 8;  // churn steps between two checks without a fault

class Soak {
 public:
  Soak(SoakNode& node, SoakSettings settings, const std::string& out)
      : node_(node),
        tenants_(node),
        settings_(settings),
        random_(settings.seed),
        out_(out),
        record_(out, node.metricsPort(), settings) {}

  int run(int minVridKills) {
    std::string why;
    if (!node_.startVrid(&why) || !node_.startShim(&why)) {
      std::fprintf(stderr, "soak: the node did not start: %s\n", why.c_str());
      return 1;
    }
    record_.sampleVrid(node_.vridPid());
    const double end = settings_.minutes * 60;
    const double killsEnd = end - settings_.killFreeMinutes * 60;
    int churnSinceCheck = 0;
    while (record_.now() < end) {
      tenants_.retryRemovals();
      if (chance(0.3)) {
        runFault(record_.now() < killsEnd);
        churnSinceCheck = 0;
      } else {
        churn();
        if (++churnSinceCheck >= kChecksEvery) {
          record_.check("after churn", checkNode(node_, tenants_));
          churnSinceCheck = 0;
        }
      }
    }
    return finish(minVridKills);
  }

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(random_) < p; }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random_); }
  std::chrono::milliseconds upTo(int ms) {
    return std::chrono::milliseconds(std::uniform_int_distribution<int>(0, ms)(random_));
  }

  void churn() {
    std::vector<std::function<void()>> moves;
    if (tenants_.vms().size() < kMaxVms) moves.push_back([this] { startVm(); });
    if (!tenants_.vms().empty())
      moves.push_back([this] { record_.call("vm-destroy", tenants_.destroyVm(pick(tenants_.vms().size()))); });
    if (tenants_.pods().size() < kMaxPods) moves.push_back([this] { createPod(); });
    if (!tenants_.pods().empty())
      moves.push_back([this] { record_.call("pod-remove", tenants_.removePod(pick(tenants_.pods().size()))); });
    moves[pick(moves.size())]();
  }
  void startVm() {
    const bool dedicated = chance(0.5);
    record_.call(dedicated ? "vm-start-dedicated" : "vm-start-shared", tenants_.startVm(dedicated));
  }
  void createPod() {
    const bool guaranteed = chance(0.5);
    record_.call(guaranteed ? "pod-create-guaranteed" : "pod-create-burstable", tenants_.createPod(guaranteed));
  }

  // vrid back, as its supervisor would start it; the soak cannot go on without it.
  void restartVrid() {
    std::string why;
    if (!node_.startVrid(&why)) {
      record_.check("vrid restart", {{Violation::Kind::kDisagreement, "vrid does not start again: " + why}});
      throw std::runtime_error("vrid does not start again");
    }
    record_.sampleVrid(node_.vridPid());
  }
  void killVrid() {
    node_.killVrid();
    record_.sampleVrid(0);
    ++vridKills_;
  }

  // `during` on a thread of its own, vrid killed while it runs; vrid back before or after it ends.
  void killVridDuring(const std::function<void()>& during) {
    auto running = std::async(std::launch::async, during);
    std::this_thread::sleep_for(upTo(600));
    killVrid();
    const bool backFirst = chance(0.5);
    if (backFirst) restartVrid();
    running.wait();
    if (!backFirst) restartVrid();
  }

  void runFault(bool mayKillVrid) {
    struct Fault {
      const char* name;
      bool killsVrid;
      bool possible;
      std::function<std::string()> run;
    };
    const std::vector<Fault> faults = {
        {"vrid-kill", true, true,
         [this] {
           killVrid();
           std::this_thread::sleep_for(upTo(200));
           restartVrid();
           return std::string();
         }},
        {"vrid-kill-during-vm-start", true, tenants_.vms().size() < kMaxVms,
         [this] {
           killVridDuring([this] { startVm(); });
           return std::string();
         }},
        {"vrid-kill-during-pod-create", true, tenants_.pods().size() < kMaxPods,
         [this] {
           killVridDuring([this] { createPod(); });
           return std::string();
         }},
        {"qemu-killed-while-vrid-down", true, !tenants_.vms().empty(),
         [this] {
           killVrid();
           const std::string name = tenants_.vms()[pick(tenants_.vms().size())].name;
           const bool killed = tenants_.killQemu(name);
           // vrid comes back once libvirt has seen the QEMU die (and its hook found no vrid).
           testing::eventually([&] { return !tenants_.running(name); });
           restartVrid();
           return std::string(killed ? "" : "no QEMU to kill");
         }},
        {"container-killed-while-vrid-down", true, !tenants_.pods().empty(),
         [this] {
           killVrid();
           const bool killed = tenants_.killContainer(pick(tenants_.pods().size()));
           restartVrid();  // the container's end is the runtime's to notice, whenever vrid is back
           tenants_.retryRemovals();
           return std::string(killed ? "" : "no container process to kill");
         }},
        {"shim-kill-during-create", false, tenants_.pods().size() < kMaxPods,
         [this] {
           auto creating = std::async(std::launch::async, [this] { createPod(); });
           std::this_thread::sleep_for(upTo(300));
           node_.killShim();
           creating.wait();
           std::string why;
           if (!node_.startShim(&why)) throw std::runtime_error("the shim does not start again: " + why);
           tenants_.retryRemovals();
           return std::string();
         }},
        {"containerd-restart", false, true,
         [this] {
           std::string why;
           node_.restartContainerd(&why);
           return why;
         }},
        {"libvirtd-restart", false, true,
         [this] {
           std::string why;
           node_.restartLibvirtd(&why);
           return why;
         }},
        {"state-fs-full", false, true,
         [this] {
           node_.fillStateFs();
           for (int i = 0; i < 3; ++i) churn();  // decided or refused; either way nothing half-done
           node_.freeStateFs();
           tenants_.retryRemovals();
           return std::string();
         }},
    };
    std::vector<const Fault*> choices;
    for (const Fault& f : faults)
      if (f.possible && (mayKillVrid || !f.killsVrid)) choices.push_back(&f);
    // vrid's kills are the faults this soak is most about: as likely as all the others together.
    std::vector<double> weights;
    for (const Fault* f : choices) weights.push_back(f->killsVrid ? 2.0 : 1.0);
    const Fault& fault = *choices[std::discrete_distribution<size_t>(weights.begin(), weights.end())(random_)];
    std::fprintf(stderr, "soak: %.0f s: %s\n", record_.now(), fault.name);
    const std::string detail = fault.run();
    tenants_.retryRemovals();
    record_.fault(fault.name, detail, checkNode(node_, tenants_));
  }

  int finish(int minVridKills) {
    // Every tenant removed the way its owner removes it; then nothing may be left anywhere.
    while (!tenants_.vms().empty()) record_.call("vm-destroy", tenants_.destroyVm(0));
    while (!tenants_.pods().empty()) record_.call("pod-remove", tenants_.removePod(0));
    std::vector<std::string> leftBehind;
    // Removals that failed are tried again for a while, as kubelet's sync loop would.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!tenants_.retryRemovals() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::seconds(1));
    if (!tenants_.retryRemovals()) leftBehind.push_back("tenants whose removal kept failing");
    const std::vector<Violation> finalCheck = checkNode(node_, tenants_);
    grpc::ClientContext context;
    v1::TenantList list;
    if (node_.vri().ListTenants(&context, v1::ListTenantsRequest(), &list).ok())
      for (const v1::Tenant& tenant : list.tenants())
        leftBehind.push_back("ledger row left after every tenant was removed: " +
                             (tenant.has_vm() ? "vm " + tenant.vm().name() : "pod " + tenant.pod().uid()));
    record_.finish(finalCheck, leftBehind);
    std::ofstream(out_ + "/vrid.log") << node_.vridLog();
    std::ofstream(out_ + "/shim.log") << node_.shimLog();
    std::fprintf(stderr, "soak: %d vrid kills, %d violations\n", vridKills_, record_.totalViolations());
    if (vridKills_ < minVridKills) {
      std::fprintf(stderr, "soak: vrid was killed %d times, fewer than the %d asked for\n", vridKills_, minVridKills);
      return 1;
    }
    return record_.totalViolations() == 0 ? 0 : 1;
  }

  SoakNode& node_;
  NodeTenants tenants_;
  SoakSettings settings_;
  std::mt19937 random_;
  std::string out_;
  SoakRecord record_;
  int vridKills_ = 0;
};

}  // namespace
}  // namespace vri::soak

int main(int argc, char** argv) {
  CLI::App app{"Pod and VM churn on one node while its daemons fail at random; checks the node after every fault."};
  vri::soak::SoakSettings settings;
  std::string out = "soak";
  int minVridKills = 0;
  app.add_option("--minutes", settings.minutes, "how long to run")->check(CLI::PositiveNumber);
  app.add_option("--seed", settings.seed, "the seed of every random choice (printed)");
  app.add_option("--out", out, "the directory the records and the report go to");
  app.add_option("--min-vrid-kills", minVridKills, "fail unless vrid was killed at least this often");
  CLI11_PARSE(app, argc, argv);
  // vrid's growth is measured over its last stretch without a kill: 20 minutes of a long run, a fifth of a short one.
  settings.killFreeMinutes = settings.minutes > 25 ? 20 : settings.minutes / 5;
  std::fprintf(stderr, "soak: %.1f minutes, seed %u, out %s\n", settings.minutes, settings.seed, out.c_str());
  try {
    vri::soak::SoakNode node;
    vri::soak::Soak soak(node, settings, out);
    return soak.run(minVridKills);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "soak: %s\n", e.what());
    return 1;
  }
}

// Shrinking (and regrowing) the shared pool under many shared tenants on the
// cgroupfs fixture: the number of file writes must equal the number of
// cgroups whose value changes; prints both and the time an apply takes.
//
//   shared_pool_shrink [--tenants 1000] [--rounds 5] [--version v1|v2]
//
// Half the tenants are Burstable pods with one container, half are VMs with
// two shared vCPUs and an emulator thread group (made first, as libvirt would).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cgroup-model/fixture_cgroupfs.h"
#include "cgroup-model/node_tree.h"

namespace {

using vri::CgroupPath;
using vri::CpuSet;

int fail(const std::string& what) {
  std::fprintf(stderr, "shared_pool_shrink: %s\n", what.c_str());
  return 1;
}

double millisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int tenants = 1000, rounds = 5;
  vri::CgroupVersion version = vri::CgroupVersion::kV1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tenants")
      tenants = std::max(2, std::atoi(argv[i + 1]));
    else if (flag == "--rounds")
      rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--version")
      version = std::string(argv[i + 1]) == "v2" ? vri::CgroupVersion::kV2 : vri::CgroupVersion::kV1;
    else
      return fail("usage: shared_pool_shrink [--tenants N] [--rounds N] [--version v1|v2]");
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/vri-shrink-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return fail("mkdtemp failed");
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};

  const CpuSet all = CpuSet::range(0, 63);
  auto made = version == vri::CgroupVersion::kV1 ? vri::FixtureCgroupFs::createV1(dir + "/fx", all, CpuSet{0})
                                                 : vri::FixtureCgroupFs::createV2(dir + "/fx", all, CpuSet{0});
  if (!made.ok()) return fail(made.error().message());
  vri::FixtureCgroupFs& fs = *made;
  const auto backend = version == vri::CgroupVersion::kV1
                           ? vri::makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}})
                           : vri::makeV2Backend();
  vri::TreeLayout layout;
  layout.ownership = vri::Ownership::kEverything;
  const vri::LibvirtNamer namer(layout.libvirt, layout.machinePartition);

  std::vector<vri::PodCgroup> pods;
  std::vector<vri::VmCgroup> vms;
  for (int t = 0; t < tenants; ++t) {
    if (t % 2 == 0) {
      pods.push_back({"pod-" + std::to_string(t),
                      vri::QosClass::kBurstable,
                      {{"c", 100, 0, std::nullopt, std::nullopt, std::nullopt}},
                      0,
                      0,
                      {}});
      continue;
    }
    vri::VmCgroup vm;
    vm.scope = *namer.scope(t, "vm" + std::to_string(t));
    vm.cpuRequestMilli = 200;
    vm.vcpuCpus = {{0, std::nullopt}, {1, std::nullopt}};
    vms.push_back(vm);
  }
  // libvirt's part: the partition, each scope and its thread groups.
  const std::vector<std::string> hierarchies = version == vri::CgroupVersion::kV1
                                                   ? std::vector<std::string>{"cpuset", "cpu,cpuacct"}
                                                   : std::vector<std::string>{""};
  for (const std::string& h : hierarchies) {
    if (version == vri::CgroupVersion::kV2 && !fs.write({h, {}}, "cgroup.subtree_control", "+cpu +cpuset").ok()) {
      return fail("delegate from the root");
    }
    std::vector<CgroupPath> dirs = {layout.machinePartition};
    for (const auto& vm : vms) {
      dirs.push_back(vm.scope);
      for (int v = 0; v < 2; ++v) dirs.push_back(namer.vcpu(vm.scope, v));
      dirs.push_back(namer.emulator(vm.scope));
    }
    for (const CgroupPath& d : dirs) {
      if (!fs.mkdir({h, d}).ok()) return fail("mkdir " + d.str());
      if (version == vri::CgroupVersion::kV1 && h == "cpuset") {
        if (!fs.write({h, d}, "cpuset.cpus", all.format()).ok() || !fs.write({h, d}, "cpuset.mems", "0").ok()) {
          return fail("init cpuset of " + d.str());
        }
      }
      if (version == vri::CgroupVersion::kV2) {
        const bool leaf = d.depth() > layout.machinePartition.depth() + 1;
        if (!fs.write({h, d}, leaf ? "cgroup.type" : "cgroup.subtree_control", leaf ? "threaded" : "+cpu +cpuset")
                 .ok()) {
          return fail("init v2 " + d.str());
        }
      }
    }
  }

  vri::CgroupApplier applier(fs, *backend);
  const auto treeFor = [&](const CpuSet& shared) {
    vri::NodeResources node{shared, CpuSet{0}, 64000, 0, {}, {}, {}};
    return vri::buildDesiredTree(layout, node, pods, vms);
  };
  auto wide = treeFor(all);
  auto narrow = treeFor(CpuSet::range(0, 59));
  if (!wide.ok() || !narrow.ok()) return fail("build the desired trees");
  auto first = applier.apply(*wide);
  if (!first.ok()) return fail(first.error().message());

  // Cgroups whose desired value differs between the two trees.
  int changed = 0;
  for (const auto& [path, spec] : wide->cgroups) {
    const auto& other = narrow->cgroups.at(path).settings;
    if (spec.settings.cpus != other.cpus) ++changed;
    if (spec.settings.shares != other.shares) ++changed;
  }

  std::vector<double> apply_ms, plan_ms;
  bool all_equal = true;
  for (int round = 0; round < rounds * 2; ++round) {
    const vri::DesiredTree& target = round % 2 == 0 ? *narrow : *wide;
    auto start = std::chrono::steady_clock::now();
    auto planned = applier.plan(target);
    plan_ms.push_back(millisSince(start));
    if (!planned.ok()) return fail(planned.error().message());
    const int writes_before = fs.writes();
    start = std::chrono::steady_clock::now();
    auto done = applier.apply(target);
    apply_ms.push_back(millisSince(start));
    if (!done.ok()) return fail(done.error().message());
    const int writes = fs.writes() - writes_before;
    if (writes != changed) {
      all_equal = false;
      std::fprintf(stderr, "round %d: %d writes for %d changed cgroups\n", round, writes, changed);
    }
  }
  std::sort(apply_ms.begin(), apply_ms.end());
  std::sort(plan_ms.begin(), plan_ms.end());
  std::printf(
      "{\"version\":\"%s\",\"tenants\":%d,\"cgroups\":%zu,\"cgroups_changed\":%d,\"writes\":%s,"
      "\"apply_ms_median\":%.1f,\"plan_ms_median\":%.1f}\n",
      std::string(vri::cgroupVersionName(version)).c_str(), tenants, wide->cgroups.size(), changed,
      all_equal ? std::to_string(changed).c_str() : "\"mismatch\"", apply_ms[apply_ms.size() / 2],
      plan_ms[plan_ms.size() / 2]);
  return all_equal ? 0 : 1;
}

// The shared tenants of the CRI benchmarks, each with real cgroups, as decision_scale mixes them:
// BestEffort pods with one container, and shared one-vCPU VMs with a live process standing in for
// QEMU in their emulator group. On cgroup v1 they lie under the run's private root in the cpuset and
// cpu hierarchies; on v2 in the one hierarchy, with kubepods directly below the cgroup root (cpuset
// partitions need it there) and the VMs under the private root.
#pragma once

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "proto/vri.grpc.pb.h"

namespace vri::bench {

inline void write(const std::string& file, const std::string& value) { std::ofstream(file) << value; }

inline bool cgroupV2() { return std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers"); }

// Where a run's cgroups lie: on v1 under its private root in the cpuset and cpu hierarchies; on v2 in
// the one hierarchy, kubepods directly below the cgroup root (cpuset partitions need it there).
struct Layout {
  bool v2 = false;
  std::string root;  // the run's private cgroup
  std::vector<std::string> hierarchies() const {
    return v2 ? std::vector<std::string>{""} : std::vector<std::string>{"cpuset", "cpu"};
  }
  std::vector<std::string> kubepods() const {
    return v2 ? std::vector<std::string>{"kubepods"} : std::vector<std::string>{root, "kubepods"};
  }
  std::string kubeletRoot() const { return v2 ? "/" : "/" + root; }
};

// A cgroup made as runc or libvirt makes it: on v1 created with its parent's cpuset; on v2 with the
// cpuset and cpu controllers delegated to it by its parent. `threaded`: v2 thread groups (libvirt's
// vCPU and emulator groups).
inline void makeCgroup(const std::string& hierarchy, const std::vector<std::string>& parts, bool threaded = false) {
  const bool v2 = hierarchy.empty();
  std::string path = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/" + hierarchy;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string parent = path;
    path += "/" + parts[i];
    std::error_code ec;
    if (v2 && !std::filesystem::exists(path, ec)) {
      // A thread group's parent delegates once its children are threaded (libvirt's order).
      if (!threaded || i + 1 < parts.size()) write(parent + "/cgroup.subtree_control", "+cpuset +cpu");
      if (std::filesystem::create_directory(path, ec) && threaded && i + 1 == parts.size())
        write(path + "/cgroup.type", "threaded");
    } else if (std::filesystem::create_directory(path, ec) && hierarchy == "cpuset") {
      for (const char* file : {"/cpuset.mems", "/cpuset.cpus"}) {
        std::ifstream in(parent + file);
        std::string value;
        std::getline(in, value);
        write(path + file, value);
      }
    }
  }
}

// The cgroups a node has before any tenant: kubelet's kubepods with its QoS cgroups, and libvirt's machine
// partition. Made whatever the tenants, so that runs with few tenants and with many differ only in them.
inline void makeNodeCgroups(const Layout& layout) {
  for (const std::string& hierarchy : layout.hierarchies()) {
    for (const char* qos : {"burstable", "besteffort"}) {
      std::vector<std::string> parts = layout.kubepods();
      parts.push_back(qos);
      makeCgroup(hierarchy, parts);
    }
    makeCgroup(hierarchy, {layout.root, "machine"});
  }
}

// decision_scale's mix, half each: a BestEffort pod with one container ...
inline grpc::Status addPodTenant(vri::v1::Vri::Stub& admin, const Layout& layout, int n) {
  const std::string uid = layout.root + "-t" + std::to_string(n), id = "tenant" + std::to_string(n);
  std::vector<std::string> parts = layout.kubepods();
  parts.insert(parts.end(), {"besteffort", "pod" + uid, id});
  for (const std::string& hierarchy : layout.hierarchies()) makeCgroup(hierarchy, parts);
  grpc::ClientContext context;
  vri::v1::AdmitContainerRequest admit;
  admit.set_pod_uid(uid);
  admit.set_pod_name("bench/" + uid);
  admit.set_qos(vri::v1::BEST_EFFORT);
  admit.set_container_name("app");
  admit.set_container_id(id);
  vri::v1::ContainerAllocation allocation;
  return admin.AdmitContainer(&context, admit, &allocation);
}

// ... and a shared one-vCPU VM, started: its scope, emulator and vCPU groups as libvirt makes them (without
// systemd), a live process standing in for QEMU in the emulator group, and VmStarted.
inline grpc::Status addVmTenant(vri::v1::Vri::Stub& admin, const Layout& layout, int n, std::vector<pid_t>& qemus) {
  char uuid[40];
  std::snprintf(uuid, sizeof uuid, "8f0c0e01-0000-4000-8000-%012d", n);
  vri::v1::AdmitVmRequest vm;
  vm.set_uuid(uuid);
  vm.set_name("vm" + std::to_string(n));
  vm.set_vcpus(1);
  vm.set_memory_bytes(2 << 20);
  vri::v1::VmAllocation placed;
  grpc::ClientContext admit_context;
  if (grpc::Status admitted = admin.AdmitVm(&admit_context, vm, &placed); !admitted.ok()) return admitted;
  const std::string scope = "qemu-" + std::to_string(n) + "-vm" + std::to_string(n) + ".libvirt-qemu";
  const pid_t qemu = fork();
  if (qemu == 0) {
    pause();
    _exit(0);
  }
  qemus.push_back(qemu);
  for (const std::string& hierarchy : layout.hierarchies()) {
    makeCgroup(hierarchy, {layout.root, "machine", scope, "vcpu0"}, layout.v2);
    makeCgroup(hierarchy, {layout.root, "machine", scope, "emulator"}, layout.v2);
    const std::string dir = "/sys/fs/cgroup/" + hierarchy + (layout.v2 ? "" : "/") + layout.root + "/machine/" + scope;
    if (layout.v2) {  // the process in the scope, its thread in the threaded emulator group
      write(dir + "/cgroup.subtree_control", "+cpuset +cpu");
      write(dir + "/cgroup.procs", std::to_string(qemu));
      write(dir + "/emulator/cgroup.threads", std::to_string(qemu));
    } else {
      write(dir + "/emulator/cgroup.procs", std::to_string(qemu));
    }
  }
  grpc::ClientContext started_context;
  vri::v1::VmStartedRequest started;
  started.set_uuid(uuid);
  started.set_qemu_pid(qemu);
  vri::v1::VmStartedReply reply;
  return admin.VmStarted(&started_context, started, &reply);
}

}  // namespace vri::bench

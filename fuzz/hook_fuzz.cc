// vri-hook's inputs: its config file, libvirt's argv (operation and sub-operation) and the domain
// XML on stdin, as one input: `config \0 operation \0 sub-operation \0 xml`. The leading byte picks
// how vrid answers: it admits (an allocation built from the request, as vrid shapes one), it
// refuses, or it cannot be reached. vrid here is a stateless gRPC service in this process, one per
// way of answering, made once: the hook's reading and answering is what is fuzzed; vrid's own
// decisions are api_fuzz's.
//
// What the hook promises libvirt: exit 0 or 1; stderr empty or one line starting "vri: " (virsh
// shows it); stdout only for migrate and restore, and then a definition VRI takes whose pins are
// VRI's; a refusal by vrid fails prepare with vrid's reason; an operation the hook does not handle
// calls nobody and says nothing. A config the hook takes holds absolute paths without control
// characters and a timeout in range.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "fuzz/fuzz_input.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/hook.h"
#include "libvirt-bridge/hook_config.h"
#include "libvirt-bridge/vm_request.h"

using namespace vri;

namespace {

constexpr char kRefusal[] = "2 CPUs asked, 1 free";

enum class Answer { kAdmits, kRefuses, kUnreachable };

class StatelessVrid final : public v1::Vri::Service {
 public:
  explicit StatelessVrid(Answer answer) : answer_(answer) {}
  std::atomic<int> calls{0};

  grpc::Status AdmitVm(grpc::ServerContext*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override {
    ++calls;
    if (answer_ == Answer::kUnreachable) return {grpc::StatusCode::UNAVAILABLE, "connection refused"};
    if (answer_ == Answer::kRefuses) return {grpc::StatusCode::RESOURCE_EXHAUSTED, kRefusal};
    // As vrid shapes an allocation: every vCPU id, dedicated ones on a CPU each, the rest shared.
    const bool dedicated = request->cpu_policy() == v1::DEDICATED || !request->pinned_vcpu_cpus().empty();
    const int ids = std::max(request->max_vcpus(), request->vcpus());
    for (int vcpu = 0; vcpu < ids && vcpu < 1024; ++vcpu) reply->add_vcpu_cpus(dedicated ? vcpu % 8 : -1);
    reply->set_shared_cpus("0-7");
    for (uint32_t id : request->iothread_ids()) {
      reply->add_iothread_ids(id);
      reply->add_iothread_cpus(-1);
    }
    for (int i = request->iothread_ids_size(); i < request->iothreads() && i < 1024; ++i) reply->add_iothread_cpus(-1);
    if (!request->strict_numa_nodes().empty()) reply->set_cpuset_mems("0");
    return grpc::Status::OK;
  }
  grpc::Status VmStarted(grpc::ServerContext*, const v1::VmStartedRequest*, v1::VmStartedReply*) override {
    ++calls;
    if (answer_ == Answer::kUnreachable) return {grpc::StatusCode::UNAVAILABLE, "connection refused"};
    if (answer_ == Answer::kRefuses) return {grpc::StatusCode::NOT_FOUND, "no VM with that UUID"};
    return grpc::Status::OK;
  }
  grpc::Status ReleaseVm(grpc::ServerContext*, const v1::ReleaseVmRequest*, v1::Released*) override {
    ++calls;
    if (answer_ == Answer::kUnreachable) return {grpc::StatusCode::UNAVAILABLE, "connection refused"};
    return grpc::Status::OK;
  }

 private:
  const Answer answer_;
};

// One in-process server per way of answering, and a directory with a QEMU pid file for
// `started`, made once for the whole run.
struct Peers {
  Peers() {
    char dir[] = "/tmp/vri-hook-fuzz-XXXXXX";
    pidDir = ::mkdtemp(dir);
    std::ofstream(pidDir + "/guest.pid") << ::getpid() << "\n";
    for (int i = 0; i < 3; ++i) {
      services[i] = std::make_unique<StatelessVrid>(static_cast<Answer>(i));
      grpc::ServerBuilder builder;
      builder.RegisterService(services[i].get());
      servers[i] = builder.BuildAndStart();
      stubs[i] = v1::Vri::NewStub(servers[i]->InProcessChannel({}));
    }
  }
  ~Peers() { std::filesystem::remove_all(pidDir); }
  std::string pidDir;
  std::unique_ptr<StatelessVrid> services[3];
  std::unique_ptr<grpc::Server> servers[3];
  std::unique_ptr<v1::Vri::Stub> stubs[3];
};

bool hasControlCharacter(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

bool isOneLineFromVri(const std::string& err) {
  return err.rfind("vri: ", 0) == 0 && err.back() == '\n' && err.find('\n') == err.size() - 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Peers peers;
  const fuzz::Input in = fuzz::split(data, size);
  const std::vector<std::string_view> f = fuzz::fields(in.text);
  if (f.size() < 4) return 0;
  const size_t xmlStart = f[0].size() + f[1].size() + f[2].size() + 3;
  const std::string_view xml = in.text.substr(xmlStart);

  const Result<HookConfig> parsed = parseHookConfig(f[0], "hook.conf");
  if (!parsed.ok()) {
    VRI_FUZZ_CHECK(parsed.error().message().find('\n') == std::string::npos);
    return 0;
  }
  VRI_FUZZ_CHECK(parsed->socket.front() == '/' && !hasControlCharacter(parsed->socket));
  VRI_FUZZ_CHECK(parsed->qemuPidDir.front() == '/' && !hasControlCharacter(parsed->qemuPidDir));
  VRI_FUZZ_CHECK(parsed->timeoutMs >= 10 && parsed->timeoutMs <= 600000);
  HookConfig config = *parsed;
  config.qemuPidDir = peers.pidDir;  // read nothing outside the run's own directory
  config.timeoutMs = 10000;          // in process: a deadline that passes would be the harness's, not the hook's

  const int answer = in.kind % 3;
  StatelessVrid& vrid = *peers.services[answer];
  const int callsBefore = vrid.calls;
  const std::vector<std::string> args = {"guest", std::string(f[1]), std::string(f[2]), "-"};
  GrpcHookVrid hookVrid(*peers.stubs[answer], std::chrono::milliseconds(config.timeoutMs));
  const HookOutcome outcome = runHook(config, args, xml, hookVrid);

  if (!outcome.err.empty() && !isOneLineFromVri(outcome.err)) std::fprintf(stderr, "stderr: %s", outcome.err.c_str());
  VRI_FUZZ_CHECK(outcome.exitCode == 0 || outcome.exitCode == 1);
  VRI_FUZZ_CHECK(outcome.err.empty() || isOneLineFromVri(outcome.err));
  VRI_FUZZ_CHECK(outcome.exitCode == 0 || !outcome.err.empty());  // a failure says why
  if (!hookReadsDomainXml(args)) {
    VRI_FUZZ_CHECK(outcome.exitCode == 0 && outcome.out.empty() && outcome.err.empty());
    VRI_FUZZ_CHECK(vrid.calls == callsBefore);
    return 0;
  }
  const bool incoming = (f[1] == "migrate" || f[1] == "restore") && f[2] == "begin";
  if (!outcome.out.empty()) {
    VRI_FUZZ_CHECK(incoming && outcome.exitCode == 0);
    const Result<DomainXml> rewritten = parseDomainXml(outcome.out);
    VRI_FUZZ_CHECK(rewritten.ok());
    VRI_FUZZ_CHECK(rewritten->pinsAreVris());
    VRI_FUZZ_CHECK(rewritten->uuid == parseDomainXml(xml)->uuid);
  }
  const bool prepare = f[1] == "prepare" && f[2] == "begin";
  const Result<DomainXml> domain = parseDomainXml(xml);
  if ((prepare || incoming) && domain.ok() && vmRequestFromDomain(*domain).ok()) {
    if (answer == static_cast<int>(Answer::kRefuses)) {
      VRI_FUZZ_CHECK(outcome.exitCode == 1 && outcome.err.find(kRefusal) != std::string::npos);
    }
    if (answer == static_cast<int>(Answer::kAdmits)) VRI_FUZZ_CHECK(outcome.exitCode == 0);
  }
  return 0;
}

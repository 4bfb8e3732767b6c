// vri-hook's inputs: its config file, libvirt's argv (operation and sub-operation) and the domain
// XML on stdin, as one input: `config \0 operation \0 sub-operation \0 xml`. The leading byte picks
// how vrid answers: it admits (an allocation built from the request, as vrid shapes one), it
// refuses, or it cannot be reached. vrid here is a stateless HookVrid, one per way of answering:
// the hook's reading and answering is what is fuzzed, with the call and the answer each through
// the hook socket's encoding (vri-hook's hand-written side against protobuf's); vrid's own
// decisions are api_fuzz's.
//
// What the hook promises libvirt: exit 0 or 1; stderr empty or one line starting "vri: " (virsh
// shows it); stdout only for migrate and restore, and then a definition VRI takes whose pins are
// VRI's; a refusal by vrid fails prepare with vrid's reason; an operation the hook does not handle
// calls nobody and says nothing. A config the hook takes holds absolute paths without control
// characters and a timeout in range.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "fuzz/fuzz_input.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/hook.h"
#include "libvirt-bridge/hook_config.h"
#include "libvirt-bridge/hook_wire.h"
#include "libvirt-bridge/vm_request.h"
#include "proto/hook_call.pb.h"

using namespace vri;

namespace {

constexpr char kRefusal[] = "2 CPUs asked, 1 free";

enum class Answer { kAdmits, kRefuses, kUnreachable };

class StatelessVrid final : public HookVrid {
 public:
  explicit StatelessVrid(Answer answer) : answer_(answer) {}
  int calls = 0;

  Result<v1::VmAllocation> admitVm(const v1::AdmitVmRequest& request) override {
    ++calls;
    if (answer_ == Answer::kUnreachable) return Error(ErrorCode::kUnavailable, "connection refused");
    if (answer_ == Answer::kRefuses) return Error::resourceExhausted(kRefusal);
    // As vrid shapes an allocation: every vCPU id, dedicated ones on a CPU each, the rest shared.
    v1::VmAllocation reply;
    const bool dedicated = request.cpu_policy() == v1::DEDICATED || !request.pinned_vcpu_cpus().empty();
    const int ids = std::max(request.max_vcpus(), request.vcpus());
    for (int vcpu = 0; vcpu < ids && vcpu < 1024; ++vcpu) reply.add_vcpu_cpus(dedicated ? vcpu % 8 : -1);
    reply.set_shared_cpus("0-7");
    for (uint32_t id : request.iothread_ids()) {
      reply.add_iothread_ids(id);
      reply.add_iothread_cpus(-1);
    }
    for (int i = request.iothread_ids_size(); i < request.iothreads() && i < 1024; ++i) reply.add_iothread_cpus(-1);
    if (!request.strict_numa_nodes().empty()) reply.set_cpuset_mems("0");
    return reply;
  }
  Result<v1::VmStartedReply> vmStarted(const v1::VmStartedRequest&) override {
    ++calls;
    if (answer_ == Answer::kUnreachable) return Error(ErrorCode::kUnavailable, "connection refused");
    if (answer_ == Answer::kRefuses) return Error::notFound("no VM with that UUID");
    return v1::VmStartedReply();
  }
  Result<void> releaseVm(const v1::ReleaseVmRequest&) override {
    ++calls;
    if (answer_ == Answer::kUnreachable) return Error(ErrorCode::kUnavailable, "connection refused");
    return {};
  }

 private:
  const Answer answer_;
};

// A directory with a QEMU pid file for `started`, made once for the whole run.
struct Peers {
  Peers() {
    char dir[] = "/tmp/vri-hook-fuzz-XXXXXX";
    pidDir = ::mkdtemp(dir);
    std::ofstream(pidDir + "/guest.pid") << ::getpid() << "\n";
  }
  ~Peers() { std::filesystem::remove_all(pidDir); }
  std::string pidDir;
  StatelessVrid services[3] = {StatelessVrid(Answer::kAdmits), StatelessVrid(Answer::kRefuses),
                               StatelessVrid(Answer::kUnreachable)};
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
  // Whatever comes back on the hook socket: vri-hook's decoder never reads past it, and what it
  // takes is what protobuf's own parser reads there.
  if (const Result<HookAnswerFields> any = decodeHookAnswer(in.text); any.ok()) {
    hook::v1::HookAnswer reference;
    if (reference.ParseFromString(std::string(in.text))) {
      VRI_FUZZ_CHECK(reference.exit_code() == any->exitCode && reference.out() == any->out &&
                     reference.err() == any->err);
    }
  }
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
  StatelessVrid& vrid = peers.services[answer];
  const int callsBefore = vrid.calls;
  const std::vector<std::string> args = {"guest", std::string(f[1]), std::string(f[2]), "-"};
  if (!hookReadsDomainXml(args)) {
    // vri-hook answers these itself, from argv, and sends vrid nothing.
    VRI_FUZZ_CHECK(runHook(config, args, xml, vrid).exitCode == 0 && vrid.calls == callsBefore);
    return 0;
  }
  // The call as vri-hook encodes it, read by vrid with protobuf's own parser: the same call.
  const std::string frame = encodeHookCallFrame({.args = args, .domainXml = xml, .qemuPidDir = config.qemuPidDir});
  VRI_FUZZ_CHECK(hookFrameSize(frame) == frame.size() - kHookFrameHeaderBytes);
  hook::v1::HookCall call;
  VRI_FUZZ_CHECK(call.ParseFromString(frame.substr(kHookFrameHeaderBytes)));
  VRI_FUZZ_CHECK(call.args_size() == 4 && call.args(1) == args[1] && call.args(2) == args[2]);
  VRI_FUZZ_CHECK(call.domain_xml() == xml && call.qemu_pid_dir() == config.qemuPidDir);
  const HookOutcome outcome = runHook(config, args, call.domain_xml(), vrid);
  // The answer as vrid writes it, read back by vri-hook's own decoder: the same answer.
  hook::v1::HookAnswer sent;
  sent.set_exit_code(outcome.exitCode);
  sent.set_out(outcome.out);
  sent.set_err(outcome.err);
  const Result<HookAnswerFields> received = decodeHookAnswer(sent.SerializeAsString());
  VRI_FUZZ_CHECK(received.ok() && received->exitCode == outcome.exitCode && received->out == outcome.out &&
                 received->err == outcome.err);

  if (!outcome.err.empty() && !isOneLineFromVri(outcome.err)) std::fprintf(stderr, "stderr: %s", outcome.err.c_str());
  VRI_FUZZ_CHECK(outcome.exitCode == 0 || outcome.exitCode == 1);
  VRI_FUZZ_CHECK(outcome.err.empty() || isOneLineFromVri(outcome.err));
  VRI_FUZZ_CHECK(outcome.exitCode == 0 || !outcome.err.empty());  // a failure says why
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

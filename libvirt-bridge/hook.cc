#include "libvirt-bridge/hook.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "base/quote.h"
#include "libvirt-bridge/cputune_writer.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/qemu_pid.h"
#include "libvirt-bridge/vm_request.h"

namespace vri {

namespace {

enum class Operation { kPrepare, kStarted, kRelease, kReconnect, kIncoming, kOther };

Operation operationOf(const std::vector<std::string>& args) {
  if (args.size() < 3) return Operation::kOther;
  const std::string& op = args[1];
  const std::string& sub = args[2];
  if (op == "prepare" && sub == "begin") return Operation::kPrepare;
  if (op == "started" && sub == "begin") return Operation::kStarted;
  if ((op == "stopped" || op == "release") && sub == "end") return Operation::kRelease;
  if (op == "reconnect" && sub == "begin") return Operation::kReconnect;
  if ((op == "migrate" || op == "restore") && sub == "begin") return Operation::kIncoming;
  return Operation::kOther;
}

bool needsExclusiveCpus(const v1::AdmitVmRequest& request) {
  return request.cpu_policy() == v1::DEDICATED || request.cpu_policy() == v1::MIXED ||
         !request.pinned_vcpu_cpus().empty() || request.isolate_emulator() || request.isolate_iothreads();
}

bool unreachable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

class Hook {
 public:
  Hook(const HookConfig& config, v1::Vri::StubInterface& vrid) : config_(config), vrid_(vrid) {}

  HookOutcome run(Operation operation, std::string_view xml);

 private:
  void deadline(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(config_.timeoutMs));
  }
  HookOutcome fail(std::string message) const { return {1, "", "vri: " + message + "\n"}; }
  HookOutcome whenUnreachable(const v1::AdmitVmRequest& request, const grpc::Status& status) const;
  grpc::Status admit(const v1::AdmitVmRequest& request, v1::VmAllocation& allocation);
  grpc::Status started(const DomainXml& domain, const v1::AdmitVmRequest& request, std::string& why);
  std::string where() const { return "vrid at unix:" + config_.socket; }

  const HookConfig& config_;
  v1::Vri::StubInterface& vrid_;
};

HookOutcome Hook::whenUnreachable(const v1::AdmitVmRequest& request, const grpc::Status& status) const {
  const std::string why = where() + " did not answer (" + status.error_message() + ")";
  if (needsExclusiveCpus(request)) {
    return fail("VM " + request.name() + " asks for dedicated CPUs and " + why + "; it cannot be placed");
  }
  if (config_.whenUnreachable == WhenUnreachable::kRefuse) {
    return fail("VM " + request.name() + " not started: " + why + " (when_unreachable = refuse)");
  }
  return {0, "", "vri: " + why + "; shared VM " + request.name() + " starts and is adopted when vrid is back\n"};
}

grpc::Status Hook::admit(const v1::AdmitVmRequest& request, v1::VmAllocation& allocation) {
  grpc::ClientContext context;
  deadline(context);
  return vrid_.AdmitVm(&context, request, &allocation);
}

grpc::Status Hook::started(const DomainXml& domain, const v1::AdmitVmRequest& request, std::string& why) {
  const auto pid = readQemuPid(config_.qemuPidDir, domain.name);
  if (!pid.ok()) {
    why = pid.error().message();
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, why);
  }
  v1::VmStartedRequest started;
  started.set_uuid(domain.uuid);
  started.set_qemu_pid(*pid);
  v1::VmStartedReply reply;
  grpc::ClientContext context;
  deadline(context);
  grpc::Status status = vrid_.VmStarted(&context, started, &reply);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // Started while vrid was away, or vrid lost it: admit now, then place.
    v1::VmAllocation allocation;
    status = admit(request, allocation);
    if (status.ok()) {
      grpc::ClientContext again;
      deadline(again);
      status = vrid_.VmStarted(&again, started, &reply);
    }
  }
  why = status.error_message();
  return status;
}

HookOutcome Hook::run(Operation operation, std::string_view xml) {
  auto domain = parseDomainXml(xml);
  if (!domain.ok()) {
    // Without a readable definition nothing can be admitted; a stop still goes on.
    if (operation == Operation::kRelease || operation == Operation::kReconnect) {
      return {0, "", "vri: " + domain.error().message() + "\n"};
    }
    return fail(domain.error().message());
  }
  if (operation == Operation::kRelease) {
    v1::ReleaseVmRequest release;
    release.set_uuid(domain->uuid);
    v1::Released reply;
    grpc::ClientContext context;
    deadline(context);
    const grpc::Status status = vrid_.ReleaseVm(&context, release, &reply);
    // libvirt ignores this exit code; an unknown VM is already released.
    if (status.ok() || status.error_code() == grpc::StatusCode::NOT_FOUND) return {};
    return {0, "", "vri: release of VM " + domain->name + ": " + status.error_message() + "\n"};
  }
  auto request = vmRequestFromDomain(*domain);
  // restore/migrate print VRI's placement back, <memnode>s included: cells may be placed one by one.
  if (request.ok() && operation == Operation::kIncoming && !domain->hasUserPins()) request->set_align_cells(true);
  if (!request.ok()) {
    if (operation == Operation::kReconnect) return {0, "", "vri: " + request.error().message() + "\n"};
    return fail(request.error().message());
  }
  switch (operation) {
    case Operation::kPrepare:
    case Operation::kIncoming: {
      v1::VmAllocation allocation;
      const grpc::Status status = admit(*request, allocation);
      if (unreachable(status)) return whenUnreachable(*request, status);
      if (!status.ok()) return fail(status.error_message());
      if (operation == Operation::kPrepare || domain->hasUserPins()) return {};  // empty stdout: XML unchanged
      auto pins = vmPinsFrom(allocation);
      if (!pins.ok()) return fail("VM " + domain->name + ": " + pins.error().message());
      auto rewritten = writeVriPins(xml, *pins);
      if (!rewritten.ok()) return fail(rewritten.error().message());
      return {0, *rewritten, ""};
    }
    case Operation::kStarted: {
      std::string why;
      const grpc::Status status = started(*domain, *request, why);
      if (status.ok()) return {};
      if (unreachable(status)) return whenUnreachable(*request, status);
      if (needsExclusiveCpus(*request)) return fail("VM " + domain->name + " could not be placed: " + why);
      return {0, "", "vri: shared VM " + domain->name + " runs unplaced: " + why + "\n"};
    }
    case Operation::kReconnect: {
      // libvirt is re-attaching to a running VM: never fail it, adopt it if vrid is there.
      v1::VmAllocation allocation;
      const grpc::Status admitted = admit(*request, allocation);
      if (!admitted.ok() && admitted.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
        return {0, "", "vri: reconnect of VM " + domain->name + ": " + admitted.error_message() + "\n"};
      }
      std::string why;
      const grpc::Status status = started(*domain, *request, why);
      if (!status.ok()) return {0, "", "vri: reconnect of VM " + domain->name + ": " + why + "\n"};
      return {};
    }
    default: return {};
  }
}

}  // namespace

bool hookReadsDomainXml(const std::vector<std::string>& args) { return operationOf(args) != Operation::kOther; }

HookOutcome runHook(const HookConfig& config, const std::vector<std::string>& args, std::string_view domainXml,
                    v1::Vri::StubInterface& vrid) {
  const Operation operation = operationOf(args);
  if (operation == Operation::kOther) return {};
  HookOutcome outcome = Hook(config, vrid).run(operation, domainXml);
  // virsh shows the hook's stderr as one line; messages from libraries or vrid may hold breaks.
  if (!outcome.err.empty()) outcome.err = asOneLine(outcome.err) + "\n";
  return outcome;
}

}  // namespace vri

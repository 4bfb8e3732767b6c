#include "libvirt-bridge/hook.h"

#include "base/quote.h"
#include "libvirt-bridge/cputune_writer.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/qemu_pid.h"
#include "libvirt-bridge/vm_request.h"

namespace vri {

namespace {

using Operation = HookOperation;

bool needsExclusiveCpus(const v1::AdmitVmRequest& request) {
  return request.cpu_policy() == v1::DEDICATED || request.cpu_policy() == v1::MIXED ||
         !request.pinned_vcpu_cpus().empty() || request.isolate_emulator() || request.isolate_iothreads();
}

class Hook {
 public:
  Hook(const HookConfig& config, HookVrid& vrid) : config_(config), vrid_(vrid) {}

  HookOutcome run(Operation operation, std::string_view xml);

 private:
  HookOutcome fail(std::string message) const { return {1, "", "vri: " + message + "\n"}; }
  HookOutcome whenUnreachable(const v1::AdmitVmRequest& request, const Error& error) const;
  Result<void> started(const DomainXml& domain, const v1::AdmitVmRequest& request);
  std::string where() const { return "vrid at unix:" + config_.socket; }

  const HookConfig& config_;
  HookVrid& vrid_;
};

HookOutcome Hook::whenUnreachable(const v1::AdmitVmRequest& request, const Error& error) const {
  const std::string why = where() + " " + vrid_.unavailableMeans() + " (" + error.message() + ")";
  if (needsExclusiveCpus(request)) {
    return fail("VM " + request.name() + " asks for dedicated CPUs and " + why + "; it cannot be placed");
  }
  if (config_.whenUnreachable == WhenUnreachable::kRefuse) {
    return fail("VM " + request.name() + " not started: " + why + " (when_unreachable = refuse)");
  }
  return {0, "", "vri: " + why + "; shared VM " + request.name() + " starts, and vrid adopts it later\n"};
}

Result<void> Hook::started(const DomainXml& domain, const v1::AdmitVmRequest& request) {
  // No pid file: a precondition of the start that did not hold, not vrid's refusal.
  const auto pid = readQemuPid(config_.qemuPidDir, domain.name);
  if (!pid.ok()) return Error::failedPrecondition(pid.error().message());
  v1::VmStartedRequest started;
  started.set_uuid(domain.uuid);
  started.set_qemu_pid(*pid);
  auto placed = vrid_.vmStarted(started);
  if (!placed.ok() && placed.error().code() == ErrorCode::kNotFound) {
    // Started while vrid was away, or vrid lost it: admit now, then place.
    VRI_TRY(vrid_.admitVm(request));
    placed = vrid_.vmStarted(started);
  }
  if (!placed.ok()) return placed.error();
  return {};
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
    const Result<void> released = vrid_.releaseVm(release);
    // libvirt ignores this exit code; an unknown VM is already released.
    if (released.ok() || released.error().code() == ErrorCode::kNotFound) return {};
    return {0, "", "vri: release of VM " + domain->name + ": " + released.error().message() + "\n"};
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
      const auto allocation = vrid_.admitVm(*request);
      if (!allocation.ok() && vridUnreachable(allocation.error())) return whenUnreachable(*request, allocation.error());
      if (!allocation.ok()) return fail(allocation.error().message());
      if (operation == Operation::kPrepare || domain->hasUserPins()) return {};  // empty stdout: XML unchanged
      auto pins = vmPinsFrom(*allocation);
      if (!pins.ok()) return fail("VM " + domain->name + ": " + pins.error().message());
      auto rewritten = writeVriPins(xml, *pins);
      if (!rewritten.ok()) return fail(rewritten.error().message());
      return {0, *rewritten, ""};
    }
    case Operation::kStarted: {
      const Result<void> placed = started(*domain, *request);
      if (placed.ok()) return {};
      if (vridUnreachable(placed.error())) return whenUnreachable(*request, placed.error());
      const std::string why = placed.error().message();
      if (needsExclusiveCpus(*request)) return fail("VM " + domain->name + " could not be placed: " + why);
      return {0, "", "vri: shared VM " + domain->name + " runs unplaced: " + why + "\n"};
    }
    case Operation::kReconnect: {
      // libvirt is re-attaching to a running VM: never fail it, adopt it if vrid is there.
      const auto admitted = vrid_.admitVm(*request);
      if (!admitted.ok() && admitted.error().code() != ErrorCode::kFailedPrecondition) {
        return {0, "", "vri: reconnect of VM " + domain->name + ": " + admitted.error().message() + "\n"};
      }
      const Result<void> placed = started(*domain, *request);
      if (!placed.ok()) return {0, "", "vri: reconnect of VM " + domain->name + ": " + placed.error().message() + "\n"};
      return {};
    }
    default: return {};
  }
}

}  // namespace

HookOutcome runHook(const HookConfig& config, const std::vector<std::string>& args, std::string_view domainXml,
                    HookVrid& vrid) {
  const Operation operation = hookOperationOf(args);
  if (operation == Operation::kOther) return {};
  HookOutcome outcome = Hook(config, vrid).run(operation, domainXml);
  // virsh shows the hook's stderr as one line; messages from libraries or vrid may hold breaks.
  if (!outcome.err.empty()) outcome.err = asOneLine(outcome.err) + "\n";
  return outcome;
}

}  // namespace vri

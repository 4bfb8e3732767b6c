// VriService's MoveVm: a running VM's vCPUs and emulator moved live (vrictl vcpupin/emulatorpin).
// The decision runs on the decision thread like every other; libvirt's pins are then set on vrid's
// libvirt worker, and the call finishes there, with what libvirt answered.
#include "base/quote.h"
#include "proto/grpc_bytes.h"
#include "proto/grpc_status.h"
#include "vri/api_convert.h"
#include "vri/ledger_views.h"
#include "vri/vri_service.h"

namespace vri {

namespace {

Result<VmThreadMove> threadMoveFrom(const v1::ThreadPin& pin) {
  VmThreadMove move;
  move.thread = pin.thread() == v1::ThreadPin::EMULATOR ? VmThreadMove::Thread::kEmulator : VmThreadMove::Thread::kVcpu;
  move.id = pin.id();
  if (move.thread == VmThreadMove::Thread::kVcpu && move.id < 0) {
    return Error::invalidArgument("pins: vCPU id " + std::to_string(move.id) + " is negative");
  }
  if (pin.cpus() == "shared") return move;
  auto cpus = CpuSet::parse(pin.cpus());
  if (!cpus.ok()) return std::move(cpus).context("pins: " + move.name()).error();
  if (cpus->count() != 1) {
    return Error::invalidArgument("pins: " + move.name() + " given " + quoteForMessage(pin.cpus()) +
                                  ": a dedicated thread holds exactly one CPU of its own; give one CPU, or 'shared'");
  }
  move.cpu = cpus->first();
  return move;
}

v1::MoveVmReply::Live liveMessage(LivePinsOutcome::State state) {
  switch (state) {
    case LivePinsOutcome::State::kApplied: return v1::MoveVmReply::APPLIED;
    case LivePinsOutcome::State::kPending: return v1::MoveVmReply::PENDING;
    case LivePinsOutcome::State::kDefinitionFailed: return v1::MoveVmReply::DEFINITION_FAILED;
    case LivePinsOutcome::State::kNoLibvirt: return v1::MoveVmReply::NO_LIBVIRT;
  }
  return v1::MoveVmReply::LIVE_UNSPECIFIED;
}

}  // namespace

Result<std::string> VriService::moveVm(const v1::MoveVmRequest& request) {
  std::vector<VmThreadMove> moves;
  for (const v1::ThreadPin& pin : request.pins()) {
    VRI_ASSIGN_OR_RETURN(VmThreadMove move, threadMoveFrom(pin));
    moves.push_back(move);
  }
  std::string uuid;
  {
    const StatePtr state = node_.state();
    VRI_ASSIGN_OR_RETURN(const VmRecord* vm, findVm(*state, request.vm()));
    uuid = vm->spec.uuid;
  }
  VRI_TRY(node_.moveVm(uuid, moves));
  return uuid;
}

VriService::Reactor* VriService::MoveVm(CallbackContext* c, const Bytes* in, Bytes* out) {
  auto request = std::make_shared<v1::MoveVmRequest>();
  if (!fromBytes(*in, *request)) return refuseUnparsed(c, "MoveVm", v1::MoveVmRequest::descriptor()->full_name());
  return decideAsync(c, "MoveVm", Runs::kDecides, [this, request, out](const Finish& finish) {
    auto moved = moveVm(*request);
    if (!moved.ok()) return finish(toGrpcStatus(moved.error()));
    livePins_.setPins(*moved, request->config(), [this, uuid = *moved, out, finish](LivePinsOutcome outcome) {
      v1::MoveVmReply reply;
      const StatePtr state = node_.state();
      if (const VmRecord* vm = state->vm(uuid)) fillVm(*state, viewFacts(*state), *vm, *reply.mutable_vm());
      reply.set_live(liveMessage(outcome.state));
      reply.set_live_detail(outcome.detail);
      *out = toBytes(reply);
      finish(grpc::Status::OK);
    });
  });
}

}  // namespace vri

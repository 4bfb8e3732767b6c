// vrictl's text for what vrid reports rather than holds: events, reconcile, the topology.
#pragma once

#include <string>
#include <vector>

#include "google/protobuf/message.h"
#include "proto/vri.pb.h"
#include "vrictl/terminal_style.h"

namespace vri::ctl {

// "2026-11-26 07:01:02.345 UTC  ADMITTED  pod/<uid>/app  detail"
std::string formatEvent(const v1::Event& event, const TerminalStyle& style);
std::string formatReconcile(const v1::ReconcileReply& reply, bool dryRun);
// What a hand-back to kubelet's CPU manager wrote (or would write), and the steps left.
std::string formatHandBack(const v1::HandBackReply& reply, bool dryRun);
std::string formatTopology(const v1::Node& node);

// The API's message as JSON, with the proto's field names and every field shown; maps sorted by key.
std::string toJson(const google::protobuf::Message& message, bool oneLine = false);
// Only `fields` of `message`, as JSON (a view of a larger message: the pool of the node).
std::string fieldsAsJson(const google::protobuf::Message& message, const std::vector<std::string>& fields);

}  // namespace vri::ctl

// What vrid answers, made safe to print on a terminal. Names come from whoever created the tenant
// (a pod's spec, a domain's XML, a CRI client): an ESC or another control character in one would
// otherwise reach the operator's terminal raw, clear the screen or forge lines. JSON output needs
// none of this (its encoder escapes them) and keeps the names exact.
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <string_view>

namespace vri::ctl {

// `text` with each control character (C0, DEL, C1) and each byte that is not part of valid UTF-8
// written as "\xNN"; everything else, other languages' letters included, as it is.
std::string printableText(std::string_view text);

// Every string field of `message`, at any depth (repeated fields and maps included), made printable.
void makePrintable(google::protobuf::Message& message);

template <typename M>
M printable(M message) {
  makePrintable(message);
  return message;
}

}  // namespace vri::ctl

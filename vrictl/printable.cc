#include "vrictl/printable.h"

#include <google/protobuf/descriptor.h>

#include <cstdio>

namespace vri::ctl {

namespace {

void escape(std::string& out, unsigned char byte) {
  char hex[5];
  std::snprintf(hex, sizeof hex, "\\x%02x", byte);
  out += hex;
}

// The length of the valid UTF-8 sequence at the start of `text` (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0.
size_t utf8Length(std::string_view text) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto continuation = [&](size_t i) { return i < text.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char lead = b(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (lead == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (lead == 0xED && b(1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (lead == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (lead == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string printableText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char byte = static_cast<unsigned char>(text[i]);
    const size_t length = utf8Length(text.substr(i));
    if (length == 0 || byte < 0x20 || byte == 0x7F) {
      escape(out, byte);
      ++i;
    } else if (length == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      // U+0080..U+009F: the C1 controls (CSI among them), which some terminals obey.
      escape(out, byte);
      escape(out, static_cast<unsigned char>(text[i + 1]));
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

void makePrintable(google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  const google::protobuf::Reflection* reflection = message.GetReflection();
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor* field = descriptor->field(f);
    const bool text = field->type() == FieldDescriptor::TYPE_STRING;
    const bool nested = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!text && !nested) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        if (text) {
          reflection->SetRepeatedString(&message, field, i,
                                        printableText(reflection->GetRepeatedString(message, field, i)));
        } else {
          makePrintable(*reflection->MutableRepeatedMessage(&message, field, i));
        }
      }
    } else if (text) {
      const std::string value = reflection->GetString(message, field);
      if (!value.empty()) reflection->SetString(&message, field, printableText(value));
    } else if (reflection->HasField(message, field)) {
      makePrintable(*reflection->MutableMessage(&message, field));
    }
  }
}

}  // namespace vri::ctl

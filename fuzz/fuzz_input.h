// What every fuzz target shares: the input split into a leading byte that picks the message type
// within the target's family and the text after it, and a check that aborts (a finding, with the
// input that caused it) when a property the code promises does not hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace vri::fuzz {

struct Input {
  uint8_t kind = 0;       // which message type; targets take it modulo their count
  std::string_view text;  // the rest, as read from outside
};

inline Input split(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  return {data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1)};
}

// The text cut at NUL bytes, for inputs made of several fields (v1's quota and period).
inline std::vector<std::string_view> fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find('\0', start);
    out.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

#define VRI_FUZZ_CHECK(condition)                                                           \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)

}  // namespace vri::fuzz

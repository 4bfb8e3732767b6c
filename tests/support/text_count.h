#pragma once

#include <cstddef>
#include <string>

namespace vri::testing {

// How many times `what` occurs in `text` (overlapping occurrences counted): for log lines a test
// expects once, or a number of times.
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace vri::testing

// Golden files for vrictl's output: each command's text, normalised (the
// temporary directory, times, versions), compared with tests/vrictl/golden/.
// VRI_UPDATE_GOLDEN=1 writes the files instead (then read the diff before committing).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "base/version.h"
#include "tests/support/test_paths.h"

namespace vri::testing {

inline std::string normalised(std::string text, const std::string& tmp) {
  for (size_t at = text.find(tmp); at != std::string::npos; at = text.find(tmp, at))
    text.replace(at, tmp.size(), "<tmp>");
  text = std::regex_replace(text, std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC)"), "<time>");
  text = std::regex_replace(text, std::regex(R"("unix_millis": ?"\d+")"), R"("unix_millis": "<time>")");
  text = std::regex_replace(text, std::regex(R"(\(last call \d+ s ago\))"), "(last call <n> s ago)");
  text = std::regex_replace(text, std::regex(R"("seconds_since_last_call": ?"\d+")"),
                            R"("seconds_since_last_call": "<n>")");
  // The package's version, whatever the build made it (a package build adds +git<count>.<commit>).
  const std::string version(packageVersion());
  for (size_t at = text.find(version); at != std::string::npos; at = text.find(version, at))
    text.replace(at, version.size(), "<version>");
  return text;
}

// Compares `actual` with golden/<name>, or writes it there under VRI_UPDATE_GOLDEN.
inline ::testing::AssertionResult matchesGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(VRI_SOURCE_DIR) + "/tests/vrictl/golden/" + name;
  if (const char* update = std::getenv("VRI_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
    return ::testing::AssertionSuccess();
  }
  std::ifstream in(path);
  if (!in) return ::testing::AssertionFailure() << "no golden file " << path << " (VRI_UPDATE_GOLDEN=1 writes it)";
  std::stringstream expected;
  expected << in.rdbuf();
  if (expected.str() == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << name << " differs from its golden file.\n--- expected\n"
                                       << expected.str() << "--- actual\n"
                                       << actual;
}

}  // namespace vri::testing

// Every regular file under a directory with its content: the fixture's
// cgroupfs before and after a call that must change nothing.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace vri::testing {

inline std::map<std::string, std::string> snapshotFiles(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) {
      if (entry.is_directory()) files[entry.path().lexically_relative(root).string() + "/"] = "";
      continue;
    }
    std::ifstream in(entry.path());
    std::stringstream content;
    content << in.rdbuf();
    files[entry.path().lexically_relative(root)] = content.str();
  }
  return files;
}

}  // namespace vri::testing

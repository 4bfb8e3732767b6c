// The version every VRI program reports: the package's version, taken from
// debian/changelog when the build is configured.
#pragma once

#include <string>
#include <string_view>

namespace vri {

// "0.1.0-1", or what the package build put in debian/changelog.
std::string_view packageVersion();

// What `PROGRAM --version` prints: "vri-hook 0.1.0-1".
std::string versionLine(std::string_view program);

// When the command line is exactly `PROGRAM --version`: prints the version line
// and returns true (the program then exits 0).
bool answeredVersion(int argc, char** argv, std::string_view program);

// The gRPC user agent a VRI client sends ("vri-hook/0.1.0-1"), from which
// vrid learns which versions of its clients run.
std::string clientUserAgent(std::string_view program);

}  // namespace vri

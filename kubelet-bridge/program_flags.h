// The flags the kubelet side's two programs (vri-cri-shim, vri-nri-plugin) share, declared once
// for CLI11, and how both parse their command lines.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "kubelet-bridge/kubelet_pod_resources.h"

namespace vri::program_flags {

// A socket path: absolute.
inline CLI::Validator absoluteSocketPath() {
  return CLI::Validator(
      [](const std::string& path) { return !path.empty() && path[0] == '/' ? "" : "socket paths must be absolute"; },
      "ABSOLUTE PATH");
}

// --pod-resources: kubelet's pod-resources socket, to release a pod kubelet is done with;
// `--pod-resources=` (empty) turns that off.
inline void addPodResources(CLI::App& app, std::string& path) {
  app.add_option("--pod-resources", path,
                 "kubelet's pod-resources socket (" + std::string(kKubeletPodResourcesSocket) +
                     "), to release a pod kubelet is done with; empty: at sandbox removal")
      // CLI11 takes an empty value only from an option that may have none.
      ->expected(0, 1)
      ->check([](const std::string& p) { return p.empty() || p[0] == '/' ? "" : "an absolute path, or empty"; });
}

// Parses the command line: nothing when the program goes on, else the status to exit with (0 after
// --help, 2 for a usage error, which CLI11 has printed).
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace vri::program_flags

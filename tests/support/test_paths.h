// Where the tests find the source tree and this build's programs.
//
// The paths are compiled into one small object per build tree (test_paths.cc, which
// tests/CMakeLists.txt generates), not into the tests' own objects: a test's object then holds no
// absolute path, and the compiler cache's entry for it serves a checkout at any path, as CI's fresh
// clones are. The names are the ones the tests have always used.
#pragma once

namespace vri::test_paths {

extern const char* const kSourceDir;    // the repository
extern const char* const kBinaryDir;    // the build tree
extern const char* const kTestDataDir;  // tests/data
extern const char* const kVrid;
extern const char* const kVrictl;
extern const char* const kVriHook;
extern const char* const kCriShim;
extern const char* const kCriClient;
extern const char* const kNriPlugin;
extern const char* const kNrtExporter;
// "name=path,..." for every program the package ships that the tests run.
extern const char* const kPrograms;

}  // namespace vri::test_paths

#define VRI_SOURCE_DIR ::vri::test_paths::kSourceDir
#define VRI_BINARY_DIR ::vri::test_paths::kBinaryDir
#define VRI_TEST_DATA_DIR ::vri::test_paths::kTestDataDir
#define VRID_BINARY ::vri::test_paths::kVrid
#define VRICTL_BINARY ::vri::test_paths::kVrictl
#define VRI_HOOK_BINARY ::vri::test_paths::kVriHook
#define VRI_CRI_SHIM_BINARY ::vri::test_paths::kCriShim
#define VRI_CRI_CLIENT_BINARY ::vri::test_paths::kCriClient
#define VRI_NRI_PLUGIN_BINARY ::vri::test_paths::kNriPlugin
#define VRI_NRT_EXPORTER_BINARY ::vri::test_paths::kNrtExporter
#define VRI_PROGRAMS ::vri::test_paths::kPrograms

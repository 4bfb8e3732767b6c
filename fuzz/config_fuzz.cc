// vrid's configuration file and kubelet's configuration as vrid reads it (kubelet_config). A file
// vrid takes must print (--print-config) to a file that it takes to the same settings, whatever
// the file's spelling; kubelet's YAML is either read or refused, never a crash.
#include "fuzz/fuzz_input.h"
#include "vri/daemon_config.h"
#include "vri/kubelet_config.h"

using namespace vri;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  switch (in.kind % 2) {
    case 0: {
      DaemonConfig config = defaultConfig();
      if (!applyConfigText(config, in.text, "fuzz.conf").ok()) break;
      const std::string once = formatConfig(config);
      DaemonConfig again = defaultConfig();
      const Result<void> reread = applyConfigText(again, once, "printed.conf");
      if (!reread.ok()) std::fprintf(stderr, "%s\n", reread.error().message().c_str());
      VRI_FUZZ_CHECK(reread.ok());
      VRI_FUZZ_CHECK(formatConfig(again) == once);
      break;
    }
    case 1: (void)parseKubeletConfig(in.text, "fuzz.yaml"); break;
  }
  return 0;
}

// Drift: every difference between what VRI wants and what the cgroupfs holds.
#pragma once

#include <string>
#include <vector>

#include "cgroup-model/cgroup_applier.h"

namespace vri {

struct Drift {
  enum class Kind {
    kValue,    // a file holds something else (someone wrote a cpuset by hand)
    kMissing,  // a cgroup VRI expects is gone (a container vanished)
    kUnknown,  // a cgroup below a root VRI does not know (an unknown scope appeared)
  };
  Kind kind = Kind::kValue;
  CgroupDir dir;
  std::string file;     // kValue only
  std::string actual;   // kValue only
  std::string desired;  // kValue only
  // kValue only: a value kubelet or the runtime writes (pods' hugetlb limits), which VRI verifies and
  // never repairs: the difference stays until its owner writes it.
  bool verifiedOnly = false;
  std::string describe() const;
};

// Unknown cgroups are reported at their top-most level only.
Result<std::vector<Drift>> detectDrift(const CgroupFs& fs, const CgroupBackend& backend, const DesiredTree& desired);

}  // namespace vri

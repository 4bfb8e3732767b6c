// SystemdUnits: the one way VRI asks systemd to keep a unit's values.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "systemd/unit_properties.h"

namespace vri {

class SystemdUnits {
 public:
  virtual ~SystemdUnits() = default;
  // systemd's SetUnitProperties(unit, runtime = true, properties): kept until the next
  // boot and re-applied by systemd from then on. A call systemd does not answer in time
  // fails (DEADLINE_EXCEEDED) and is handled like a refused write.
  virtual Result<void> setProperties(const std::string& unit, const std::vector<UnitProperty>& properties) = 0;
};

}  // namespace vri

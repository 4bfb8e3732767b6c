// SdBusUnits: SystemdUnits over systemd's D-Bus API (org.freedesktop.systemd1.Manager),
// through libsystemd's sd-bus, on the system bus.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/thread_annotations.h"
#include "systemd/systemd_units.h"

struct sd_bus;

namespace vri {

// Whether systemd is the service manager here (sd_booted(): /run/systemd/system exists).
bool systemdIsRunning();

class SdBusUnits : public SystemdUnits {
 public:
  // Connects to the system bus. `timeout` bounds each call: systemd may not answer for
  // seconds during a daemon-reload, and a hook waits 3 s at most for its decision.
  static Result<std::unique_ptr<SdBusUnits>> connect(std::chrono::milliseconds timeout);
  ~SdBusUnits() override;

  Result<void> setProperties(const std::string& unit, const std::vector<UnitProperty>& properties) override;

 private:
  SdBusUnits(sd_bus* bus, std::chrono::milliseconds timeout) : bus_(bus), timeout_(timeout) {}
  // Reconnects after systemd re-executed or the bus dropped the connection.
  Result<void> reconnectLocked() VRI_REQUIRES(mutex_);

  Mutex mutex_;  // sd-bus connections are not thread-safe
  sd_bus* bus_ VRI_GUARDED_BY(mutex_);
  const std::chrono::milliseconds timeout_;
};

}  // namespace vri

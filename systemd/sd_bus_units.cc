#include "systemd/sd_bus_units.h"

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstring>

#include "base/quote.h"

namespace vri {

namespace {

// sd-bus returns negative errnos. A missed deadline comes named org.freedesktop.DBus.Error.Timeout
// ("Connection timed out"), which reads like a broken bus: it is said as what it is, with the
// setting that bounds it (`timeout`, when the caller has one).
Error busError(int r, const std::string& what, const sd_bus_error* error = nullptr,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  const int err = -r;
  if (err == ETIMEDOUT) {
    const std::string bound =
        timeout.count() > 0 ? " (systemd_timeout_ms = " + std::to_string(timeout.count()) + ")" : "";
    return Error(ErrorCode::kDeadlineExceeded, what + ": systemd did not answer in time" + bound, err);
  }
  if (error != nullptr && sd_bus_error_is_set(error)) {
    const std::string name = error->name, message = error->message ? error->message : "";
    const ErrorCode code = name == "org.freedesktop.systemd1.NoSuchUnit"      ? ErrorCode::kNotFound
                           : name == "org.freedesktop.DBus.Error.InvalidArgs" ? ErrorCode::kInvalidArgument
                                                                              : ErrorCode::kUnavailable;
    return Error(code, what + ": " + name + ": " + message, err);
  }
  return Error(ErrorCode::kUnavailable, what + ": " + std::strerror(err), err);
}

bool connectionLost(int r) { return r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE || r == -ESHUTDOWN; }

// Appends one (sv) entry of SetUnitProperties' a(sv).
int appendProperty(sd_bus_message* m, const UnitProperty& p) {
  int r = sd_bus_message_open_container(m, 'r', "sv");
  if (r < 0) return r;
  if ((r = sd_bus_message_append(m, "s", p.name.c_str())) < 0) return r;
  if (const auto* number = std::get_if<uint64_t>(&p.value)) {
    if ((r = sd_bus_message_append(m, "v", "t", *number)) < 0) return r;
  } else {
    const auto& mask = std::get<std::vector<uint8_t>>(p.value);
    if ((r = sd_bus_message_open_container(m, 'v', "ay")) < 0) return r;
    if ((r = sd_bus_message_append_array(m, 'y', mask.data(), mask.size())) < 0) return r;
    if ((r = sd_bus_message_close_container(m)) < 0) return r;
  }
  return sd_bus_message_close_container(m);
}

}  // namespace

bool systemdIsRunning() { return sd_booted() > 0; }

Result<std::unique_ptr<SdBusUnits>> SdBusUnits::connect(std::chrono::milliseconds timeout) {
  sd_bus* bus = nullptr;
  if (const int r = sd_bus_open_system(&bus); r < 0) return busError(r, "connecting to the system bus");
  return std::unique_ptr<SdBusUnits>(new SdBusUnits(bus, timeout));
}

SdBusUnits::~SdBusUnits() {
  MutexLock lock(mutex_);
  sd_bus_flush_close_unref(bus_);
}

Result<void> SdBusUnits::reconnectLocked() {
  sd_bus_flush_close_unref(bus_);
  bus_ = nullptr;
  if (const int r = sd_bus_open_system(&bus_); r < 0) return busError(r, "reconnecting to the system bus");
  return {};
}

Result<void> SdBusUnits::setProperties(const std::string& unit, const std::vector<UnitProperty>& properties) {
  std::string what = "systemd SetUnitProperties " + quoteForMessage(unit);
  for (const UnitProperty& p : properties) what += " " + p.describe();
  MutexLock lock(mutex_);
  for (int attempt = 0;; ++attempt) {
    sd_bus_message* m = nullptr;
    int r = sd_bus_message_new_method_call(bus_, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
    if (r >= 0) r = sd_bus_message_append(m, "sb", unit.c_str(), 1);  // runtime: until reboot
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "(sv)");
    for (const UnitProperty& p : properties) {
      if (r >= 0) r = appendProperty(m, p);
    }
    if (r >= 0) r = sd_bus_message_close_container(m);
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = nullptr;
    if (r >= 0) r = sd_bus_call(bus_, m, static_cast<uint64_t>(timeout_.count()) * 1000, &error, &reply);
    sd_bus_message_unref(m);
    sd_bus_message_unref(reply);
    if (r >= 0) return {};
    Error failed = busError(r, what, &error, timeout_);
    sd_bus_error_free(&error);
    // systemd re-executing (daemon-reexec, an upgrade) drops the connection: once more on a new one.
    if (attempt == 0 && connectionLost(r)) {
      VRI_TRY(reconnectLocked());
      continue;
    }
    return failed;
  }
}

}  // namespace vri

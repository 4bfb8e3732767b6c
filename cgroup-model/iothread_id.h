// An iothread's id as libvirt keeps it: an unsigned int, from 1 (<iothreadids><iothread id>,
// <iothreadpin iothread>, both read by virXMLPropUInt), so up to 4294967295. Its thread group in
// a VM's scope is "iothread<id>".
#pragma once

#include <cstdint>

namespace vri {

using IothreadId = uint32_t;

}  // namespace vri

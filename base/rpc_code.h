// VRI's error codes as the canonical RPC codes (google.rpc.Code), the numbers gRPC's status and
// ttRPC's (NRI's transport) both carry. The one table: proto/grpc_status.h turns it into gRPC's
// types, nri/ uses the numbers as they are, without gRPC's C++ runtime.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace vri {

// The code an error goes out with; INTERNAL (13) for none the table knows.
int32_t toRpcCode(ErrorCode code);
// An error that came in with `code` (not OK: the caller checks that first); UNKNOWN for a code
// the table does not know.
Error fromRpcCode(int32_t code, std::string message);

}  // namespace vri

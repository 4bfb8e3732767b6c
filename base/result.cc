#include "base/result.h"

#include <cerrno>
#include <cstring>

namespace vri {

std::string_view errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound: return "NOT_FOUND";
    case ErrorCode::kAlreadyExists: return "ALREADY_EXISTS";
    case ErrorCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case ErrorCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case ErrorCode::kPermissionDenied: return "PERMISSION_DENIED";
    case ErrorCode::kUnavailable: return "UNAVAILABLE";
    case ErrorCode::kInternal: return "INTERNAL";
    case ErrorCode::kCancelled: return "CANCELLED";
    case ErrorCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case ErrorCode::kAborted: return "ABORTED";
    case ErrorCode::kOutOfRange: return "OUT_OF_RANGE";
    case ErrorCode::kUnimplemented: return "UNIMPLEMENTED";
    case ErrorCode::kDataLoss: return "DATA_LOSS";
    case ErrorCode::kUnauthenticated: return "UNAUTHENTICATED";
    case ErrorCode::kUnknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

namespace {

ErrorCode codeForErrno(int err) {
  switch (err) {
    case ENOENT:
    case ESRCH: return ErrorCode::kNotFound;
    case EEXIST: return ErrorCode::kAlreadyExists;
    case EINVAL:
    case ERANGE:
    case ENAMETOOLONG: return ErrorCode::kInvalidArgument;
    case EACCES:
    case EPERM:
    case EROFS: return ErrorCode::kPermissionDenied;
    case ENOSPC:
    case ENOMEM: return ErrorCode::kResourceExhausted;
    case EBUSY:
    case ENOTEMPTY: return ErrorCode::kFailedPrecondition;
    default: return ErrorCode::kUnavailable;
  }
}

}  // namespace

Error Error::fromErrno(int err, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += std::strerror(err);
  return {codeForErrno(err), std::move(message), err};
}

Error& Error::addContext(std::string_view context) {
  std::string combined(context);
  combined += ": ";
  combined += message_;
  message_ = std::move(combined);
  return *this;
}

std::string Error::toString() const {
  std::string text(errorCodeName(code_));
  text += ": ";
  text += message_;
  return text;
}

}  // namespace vri

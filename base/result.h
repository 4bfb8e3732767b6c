// Result<T>: the one error type of every VRI library.
//
// A Result holds either a value or an Error. Errors carry a code (mapped to a
// gRPC status only at the service edge), a human-readable message and, when
// the failure came from the kernel, the errno. Callers add context as the
// error travels up, so the final message reads like a path through the code:
//   "apply pod 1234: write cpuset.cpus of kubepods/pod1234: Invalid argument"
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace vri {

enum class ErrorCode {
  kInvalidArgument,     // the caller's input is malformed or out of range
  kNotFound,            // the named thing does not exist
  kAlreadyExists,       // the thing exists and may not be created again
  kResourceExhausted,   // the request is well formed but does not fit
  kFailedPrecondition,  // the system is not in a state that allows this
  kPermissionDenied,    // the caller may not do this
  kUnavailable,         // a dependency (kernel, daemon) could not be reached
  kInternal,            // a broken invariant: a bug in VRI
  // What a peer (a runtime behind the CRI shim) may answer besides, carried
  // back to kubelet as it came.
  kCancelled,
  kDeadlineExceeded,
  kAborted,
  kOutOfRange,
  kUnimplemented,
  kDataLoss,
  kUnauthenticated,
  kUnknown,
};

std::string_view errorCodeName(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message, int sys_errno = 0)
      : code_(code), message_(std::move(message)), errno_(sys_errno) {}

  static Error invalidArgument(std::string message) { return {ErrorCode::kInvalidArgument, std::move(message)}; }
  static Error notFound(std::string message) { return {ErrorCode::kNotFound, std::move(message)}; }
  static Error resourceExhausted(std::string message) { return {ErrorCode::kResourceExhausted, std::move(message)}; }
  static Error failedPrecondition(std::string message) { return {ErrorCode::kFailedPrecondition, std::move(message)}; }
  static Error internal(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }

  // An error from a failed system call: "<what>: <strerror(err)>", with a code
  // derived from the errno (ENOENT -> kNotFound, EINVAL -> kInvalidArgument...).
  static Error fromErrno(int err, std::string_view what);

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The errno of the system call that failed, or 0 when none did.
  int sysErrno() const { return errno_; }

  // Prefixes the message with "<context>: ", keeping code and errno.
  Error& addContext(std::string_view context);

  // "INVALID_ARGUMENT: <message>"
  std::string toString() const;

 private:
  ErrorCode code_;
  std::string message_;
  int errno_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& { return std::get<1>(state_); }
  Error&& error() && { return std::get<1>(std::move(state_)); }

  // Adds context to an error; a value passes through untouched.
  Result context(std::string_view text) && {
    if (!ok()) std::get<1>(state_).addContext(text);
    return std::move(*this);
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  static Result success() { return {}; }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }

  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

  Result context(std::string_view text) && {
    if (error_) error_->addContext(text);
    return std::move(*this);
  }

 private:
  std::optional<Error> error_;
};

}  // namespace vri

#define VRI_CONCAT_INNER(a, b) a##b
#define VRI_CONCAT(a, b) VRI_CONCAT_INNER(a, b)

// Returns the error of a Result<...> expression from the enclosing function.
#define VRI_TRY(expr)                                                     \
  do {                                                                    \
    auto&& vri_try_result_ = (expr);                                      \
    if (!vri_try_result_.ok()) return std::move(vri_try_result_).error(); \
  } while (false)

// `VRI_ASSIGN_OR_RETURN(auto x, f());` declares x from f()'s value or returns
// f()'s error from the enclosing function. It expands to several statements:
// give it braces when it is the body of an if or a loop.
#define VRI_ASSIGN_OR_RETURN(lhs, expr) VRI_ASSIGN_OR_RETURN_IMPL(VRI_CONCAT(vri_result_, __LINE__), lhs, expr)
#define VRI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).error();   \
  lhs = std::move(tmp).value()

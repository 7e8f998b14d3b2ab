// loom::Error, the one exception type a user mistake ends in, and InternalError for bugs.
// Messages follow docs/errors.md: what is wrong, where (stage, axis, call), why, and how to fix it.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace loom {

/// A user mistake: a bad schedule, a bad argument, an unsupported request.
class Error : public std::runtime_error {
 public:
  /// An error whose what() is `message`, which follows docs/errors.md (what, where, why, how to fix).
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A schedule primitive was applied in a way that cannot be honoured.
class ScheduleError : public Error {
 public:
  using Error::Error;
};

/// A kernel was called with arguments that do not match its parameters.
class ArgumentError : public Error {
 public:
  using Error::Error;
};

/// An invariant of Loom itself failed: always a bug in Loom, never the user's fault.
class InternalError : public std::logic_error {
 public:
  /// An internal error; what() prefixes `message` with "loom internal error (please report): ".
  explicit InternalError(const std::string& message)
      : std::logic_error("loom internal error (please report): " + message) {}
};

/// Concatenates any streamable values into a string; used to build messages.
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

/// Throws InternalError when an invariant does not hold.
template <typename... Args>
inline void internal_check(bool condition, Args&&... message) {
  if (!condition) throw InternalError(cat(std::forward<Args>(message)...));
}

}  // namespace loom

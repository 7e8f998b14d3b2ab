// C functions that generated code calls by name (call_extern, e.g. from a tensor intrinsic's
// body): registered with their signature, so that the reference interpreter can call them
// too, and so that the JIT resolves the same names to the same addresses.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "loom/ir/dtype.hpp"
#include "loom/support/error.hpp"

namespace loom {

/// One argument or result of an extern C call, as the interpreter holds it.
union ExternCValue {
  /// One of: an integer (all integer types and bool), a floating-point value, or a pointer.
  /// @{
  int64_t i;
  double f;
  void* p;
  /// @}
};

/// A C function that kernels may call (register_extern_c()): its address, its signature as DTypes, and
/// a wrapper that calls it from the interpreter.
struct ExternCFunction {
  /// The C name, which the IR calls and the generated code links against.
  std::string name;
  void* address = nullptr;  ///< what generated code calls
  DType result;             ///< int32 for void functions (the call's value is 0)
  /// The parameter types, in order.
  std::vector<DType> params;
  std::function<ExternCValue(const std::vector<ExternCValue>&)> invoke;  ///< for the interpreter
};

namespace detail {
template <typename T>
DType extern_c_type() {
  if constexpr (std::is_pointer_v<T>) {
    return handle_type;
  } else if constexpr (std::is_same_v<T, bool>) {
    return boolean;
  } else if constexpr (std::is_floating_point_v<T>) {
    return DType(TypeCode::Float, sizeof(T) * 8);
  } else {
    static_assert(std::is_integral_v<T>, "extern C functions take integers, floats and pointers");
    return DType(std::is_signed_v<T> ? TypeCode::Int : TypeCode::UInt, sizeof(T) * 8);
  }
}
template <typename T>
T from_extern_c(ExternCValue v) {
  if constexpr (std::is_pointer_v<T>) {
    return static_cast<T>(v.p);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v.f);
  } else {
    return static_cast<T>(v.i);
  }
}
template <typename T>
ExternCValue to_extern_c(T x) {
  ExternCValue v;
  if constexpr (std::is_pointer_v<T>) {
    v.p = reinterpret_cast<void*>(x);
  } else if constexpr (std::is_floating_point_v<T>) {
    v.f = static_cast<double>(x);
  } else {
    v.i = static_cast<int64_t>(x);
  }
  return v;
}
}  // namespace detail

/// The process-wide table of extern C functions, by name; thread-safe. Users fill it with
/// register_extern_c().
class ExternCRegistry {
 public:
  /// The table every build and run uses.
  static ExternCRegistry& global() {
    static ExternCRegistry registry;
    return registry;
  }

  /// Registers `fn` under `name` (the name the IR calls), deriving its signature from the C++ types:
  /// integers, floats, bool and pointers. A later add() of the same name replaces it.
  template <typename R, typename... Args>
  void add(const std::string& name, R (*fn)(Args...)) {
    ExternCFunction f;
    f.name = name;
    f.address = reinterpret_cast<void*>(fn);
    f.result = std::is_void_v<R> ? i32 : detail::extern_c_type<R>();
    f.params = {detail::extern_c_type<Args>()...};
    f.invoke = [fn](const std::vector<ExternCValue>& args) {
      return call(fn, args, std::index_sequence_for<Args...>());
    };
    std::lock_guard<std::mutex> lock(mutex_);
    functions_[name] = std::move(f);
  }

  /// The function registered under `name`; throws a loom::Error that says how to register it.
  ExternCFunction get(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = functions_.find(name);
    if (it == functions_.end())
      throw Error(cat("extern C function '", name,
                      "' is called by generated code but not registered; call "
                      "loom::register_extern_c(\"",
                      name, "\", &", name, ") before running the kernel"));
    return it->second;
  }
  /// True when a function named `name` is registered.
  bool contains(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return functions_.count(name) > 0;
  }

 private:
  template <typename R, typename... Args, size_t... I>
  static ExternCValue call(R (*fn)(Args...), const std::vector<ExternCValue>& args,
                           std::index_sequence<I...>) {
    if (args.size() != sizeof...(Args))
      throw Error(
          cat("extern C function called with ", args.size(), " arguments; it takes ", sizeof...(Args)));
    if constexpr (std::is_void_v<R>) {
      fn(detail::from_extern_c<Args>(args[I])...);
      return detail::to_extern_c<int32_t>(0);
    } else {
      return detail::to_extern_c<R>(fn(detail::from_extern_c<Args>(args[I])...));
    }
  }

  mutable std::mutex mutex_;
  std::unordered_map<std::string, ExternCFunction> functions_;
};

/// Makes the C function `fn` callable by name from generated code and the interpreter.
template <typename R, typename... Args>
void register_extern_c(const std::string& name, R (*fn)(Args...)) {
  ExternCRegistry::global().add(name, fn);
}

}  // namespace loom

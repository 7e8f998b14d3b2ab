// Functions of a shared library opened with dlopen, resolved into typed function pointers: what the
// loaders of optional libraries (CUDA's driver and NVRTC, XGBoost) share. It remembers the first
// name the library lacks, so that each loader can say which one in its own error.
#pragma once

#include <dlfcn.h>

#include <string>

namespace loom {

/// Resolves names in one dlopen handle; `complete()` says whether every one was found.
class LibrarySymbols {
 public:
  explicit LibrarySymbols(void* handle) : handle_(handle) {}

  /// Sets `fn` to the library's function `name` (null when it has none).
  template <typename Function>
  void resolve(Function*& fn, const char* name) {
    fn = reinterpret_cast<Function*>(dlsym(handle_, name));
    if (!fn && first_missing_.empty()) first_missing_ = name;
  }

  /// Whether every name resolved so far was found.
  bool complete() const { return first_missing_.empty(); }
  /// The first name the library lacks ("" when none).
  const std::string& first_missing() const { return first_missing_; }

 private:
  void* handle_;
  std::string first_missing_;
};

}  // namespace loom

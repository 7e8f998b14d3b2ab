// The stand-in libcuda's call log (tests/fake_cuda/fake_libcuda.cpp), for the tests that run
// Target::cuda() kernels through it: what was launched, copied and waited for, on which stream.
#pragma once

#include <dlfcn.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

namespace loom::fake_cuda {

/// The fake driver's call log since the last call (which it clears).
inline std::string take_log() {
  const char* path = std::getenv("LOOM_CUDA_DRIVER_PATH");
  REQUIRE(path != nullptr);
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // the handle the driver loader opened
  REQUIRE(handle != nullptr);
  auto log = reinterpret_cast<const char* (*)(int)>(dlsym(handle, "loom_fake_cuda_log"));
  REQUIRE(reinterpret_cast<void*>(log) != nullptr);
  std::string text = log(1);
  dlclose(handle);
  return text;
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace loom::fake_cuda

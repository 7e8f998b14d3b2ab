// The whole of Loom's API: core.hpp plus build() and Kernel. Header-only (the default), including it
// in one translation unit also registers the LLVM CPU backend for the whole program (it needs LLVM
// 19's headers and library: link loom::jit). With LOOM_SEPARATE_COMPILATION (the CMake targets set
// it) it only declares, and the loom::jit library registers the backend.
#pragma once

#include "loom/core.hpp"

#include "loom/backend/build.hpp"
#include "loom/backend/lint.hpp"
#include "loom/runtime/kernel.hpp"

#if LOOM_HEADER_ONLY
#include "loom/backend/cpu/llvm_backend.hpp"
#endif

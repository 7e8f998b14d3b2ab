// The whole of Loom: core.hpp plus the backends that compile lowered functions. Including it in
// one translation unit registers the LLVM CPU backend for the whole program (link loom::jit);
// other files may include <loom/backend/build.hpp> alone to call build() without LLVM headers.
#pragma once

#include "loom/core.hpp"

#include "loom/backend/build.hpp"
#include "loom/backend/cpu/llvm_backend.hpp"
#include "loom/runtime/kernel.hpp"

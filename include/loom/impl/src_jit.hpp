// Separate compilation of the LLVM CPU backend (see impl/src.hpp): include it in one source file
// compiled with LLVM 19's headers and linked with libLLVM. The backend registers itself with build()
// when the program starts; the CMake target loom::jit asks the linker to keep this file's object
// (the symbol below) even though nothing calls into it by name.
#pragma once

#include "loom/impl/src_library.hpp"

#include "loom/backend/cpu/llvm_backend.hpp"

extern "C" {
/// Referenced by loom::jit's link options (-Wl,--undefined=loom_llvm_backend_linked).
extern const int loom_llvm_backend_linked;
const int loom_llvm_backend_linked = 1;
}

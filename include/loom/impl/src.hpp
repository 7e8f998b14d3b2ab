// Compiles every definition that Loom's public headers declare, for separate compilation: a
// program defines LOOM_SEPARATE_COMPILATION everywhere and includes this file in exactly one of its
// source files (and impl/src_jit.hpp, for the LLVM CPU backend, in one file linked with LLVM 19).
// The CMake target loom::loom compiles the same definitions in three parts (src_front.hpp,
// src_run.hpp, src_lib.hpp) so that they build in parallel.
#pragma once

#include "loom/impl/src_front.hpp"
#include "loom/impl/src_lib.hpp"
#include "loom/impl/src_run.hpp"

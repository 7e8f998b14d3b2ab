// The preamble of every impl/src_*.hpp: checks the mode and marks the translation unit as the
// library's, which the implementation files (*/impl/*.hpp) require in separate compilation.
#pragma once

#if !defined(LOOM_SEPARATE_COMPILATION)
#error \
    "loom/impl/src*.hpp compile Loom's definitions for separate compilation: define LOOM_SEPARATE_COMPILATION in every file of the program (header-only programs need no such file)"
#endif
#ifndef LOOM_COMPILING_LIBRARY
#define LOOM_COMPILING_LIBRARY
#endif

#include "loom/support/config.hpp"

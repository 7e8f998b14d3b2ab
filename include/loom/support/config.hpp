// How Loom is compiled into a program. Two modes, as in Asio:
// - header-only (the default of a bare #include <loom/loom.hpp>): every function is inline and its
//   definition is reachable from the header that declares it; nothing to build or link but Loom's
//   dependencies.
// - separate compilation (LOOM_SEPARATE_COMPILATION defined, as the CMake targets loom::loom and
//   loom::jit do for their users): the public headers only declare, and one translation unit
//   compiles the definitions (#include <loom/impl/src.hpp>, and <loom/impl/src_jit.hpp> for the
//   LLVM backend). A user's file then parses declarations only and compiles in seconds.
#pragma once

#if defined(LOOM_SEPARATE_COMPILATION)
#define LOOM_HEADER_ONLY 0
/// Marks a function that the library defines once (separate compilation) or that every
/// translation unit may define (header-only): on declarations and definitions alike.
#define LOOM_DECL
#else
#define LOOM_HEADER_ONLY 1
#define LOOM_DECL inline
#endif

/// Set by impl/src.hpp while it compiles the library's definitions.
#if defined(LOOM_COMPILING_LIBRARY)
#define LOOM_IN_LIBRARY 1
#else
#define LOOM_IN_LIBRARY 0
#endif

/// The first line of every file under an impl/ folder: such a file holds definitions that the
/// library compiles once in separate compilation, so a user's file must not include it.
#define LOOM_IMPLEMENTATION_FILE(public_header)                                                        \
  static_assert(LOOM_HEADER_ONLY || LOOM_IN_LIBRARY,                                                   \
                "this file is compiled into the loom library (LOOM_SEPARATE_COMPILATION is defined): " \
                "include <" public_header "> instead")

// libloom_jit: the LLVM CPU backend, compiled with LLVM 19's headers; it registers itself with
// build() when the program starts. See include/loom/impl/src_jit.hpp.
#include <loom/impl/src_jit.hpp>

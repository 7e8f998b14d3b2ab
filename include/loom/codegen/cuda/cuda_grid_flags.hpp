// CUDA C for the grid-flag intrinsics (ir/grid_flags.hpp): a release store after a device-wide
// fence, and a spin on an acquire load, as inline PTX (sm_70 and newer). The spin does not back
// off with __nanosleep: in the loop it made ptxas spill registers of Stream-K's f16 kernel on
// sm_80; Stream-K has one thread per block spin (then a barrier), which already keeps the rest of
// the block off the flag.
#pragma once

#include <string>

#include "loom/ir/grid_flags.hpp"

namespace loom::cuda {

/// The helper functions the calls use, emitted once before the kernels.
inline const char* grid_flags_prelude() {
  return "// Flags between the blocks of a grid: a release store after a device-wide fence, and a\n"
         "// spin on acquire loads (the reads after it see what the signalling block wrote before).\n"
         "__device__ __forceinline__ int loom_flag_signal(int* flags, int index, int value) {\n"
         "  __threadfence();\n"
         "  asm volatile(\"st.release.gpu.b32 [%0], %1;\" : : \"l\"(flags + index), \"r\"(value) : "
         "\"memory\");\n"
         "  return 0;\n"
         "}\n"
         "__device__ __forceinline__ int loom_flag_wait(const int* flags, int index, int value) {\n"
         "  int seen;\n"
         "  do {\n"
         "    asm volatile(\"ld.acquire.gpu.b32 %0, [%1];\" : \"=r\"(seen) : \"l\"(flags + index) : "
         "\"memory\");\n"
         "  } while (seen != value);\n"
         "  return 0;\n"
         "}\n";
}

/// The C call for `call` (a grid-flag intrinsic) given its arguments' C text.
inline std::string grid_flag_call_text(const CallNode* call, const std::string& flags,
                                       const std::string& index, const std::string& value) {
  const char* fn = call->name == loom::intrinsic::flag_signal ? "loom_flag_signal" : "loom_flag_wait";
  return cat(fn, "(", flags, ", ", index, ", ", value, ")");
}

}  // namespace loom::cuda

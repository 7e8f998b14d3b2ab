// The definitions a generated CUDA module starts with, only those its kernels use: half and
// bfloat16 headers, bit casts, grid-flag helpers and warp shuffles of any value type.
#pragma once

#include <string>
#include <unordered_set>

#include "loom/codegen/cuda/cuda_grid_flags.hpp"
#include "loom/support/error.hpp"

namespace loom::cuda::detail {

/// Definitions the kernels use, emitted once before them.
inline std::string prelude(const std::unordered_set<std::string>& helpers, bool fp16, bool bf16) {
  std::string s;
  if (fp16) s += "#include <cuda_fp16.h>\n";
  if (bf16) s += "#include <cuda_bf16.h>\n";
  if (fp16 || bf16) s += "\n";
  if (helpers.count("floordiv"))
    s += "// Integer division rounding toward negative infinity (the IR's floordiv).\n"
         "template <typename T> __device__ __forceinline__ T loom_floordiv(T a, T b) {\n"
         "  T q = a / b;\n"
         "  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
         "}\n";
  if (helpers.count("floormod"))
    s += "// The remainder of loom_floordiv: it has the sign of b.\n"
         "template <typename T> __device__ __forceinline__ T loom_floormod(T a, T b) {\n"
         "  T r = a % b;\n"
         "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
         "}\n";
  if (helpers.count("minmax"))
    s += "template <typename T> __device__ __forceinline__ T loom_min(T a, T b) { return b < a ? b : a; }\n"
         "template <typename T> __device__ __forceinline__ T loom_max(T a, T b) { return a < b ? b : a; }\n";
  if (helpers.count("reinterpret"))
    s += "template <typename To, typename From> __device__ __forceinline__ To loom_reinterpret(From x) {\n"
         "  To y;\n"
         "  memcpy(&y, &x, sizeof(To));\n"
         "  return y;\n"
         "}\n";
  if (helpers.count("lane_id"))  // not volatile: the compiler may read it once per kernel
    s += "__device__ __forceinline__ int loom_lane_id() {\n"
         "  int lane;\n"
         "  asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n"
         "  return lane;\n"
         "}\n";
  if (helpers.count("grid_flags")) s += grid_flags_prelude();
  if (helpers.count("shuffle")) {
    s += "// Warp shuffles of any value type (narrow integers travel as int).\n"
         "template <typename T> __device__ __forceinline__ T loom_shfl_down(unsigned mask, T v, int off, int "
         "w) {\n"
         "  return __shfl_down_sync(mask, v, off, w);\n"
         "}\n"
         "template <typename T> __device__ __forceinline__ T loom_shfl(unsigned mask, T v, int lane, int w) "
         "{\n"
         "  return __shfl_sync(mask, v, lane, w);\n"
         "}\n";
    for (const char* t : {"bool", "signed char", "unsigned char", "short", "unsigned short"}) {
      s += cat("template <> __device__ __forceinline__ ", t, " loom_shfl_down(unsigned mask, ", t,
               " v, int off, int w) {\n  return (", t, ")__shfl_down_sync(mask, (int)v, off, w);\n}\n");
      s += cat("template <> __device__ __forceinline__ ", t, " loom_shfl(unsigned mask, ", t,
               " v, int lane, int w) {\n  return (", t, ")__shfl_sync(mask, (int)v, lane, w);\n}\n");
    }
  }
  return s;
}

}  // namespace loom::cuda::detail

// The hand-written C++ peers that examples/blur_separable.cpp and examples/gemm_epilogue.cpp time
// Loom against: what a user writes by hand, compiled like hand-tuned host code (the flags are
// LOOM_EXAMPLE_PEER_FLAGS, set by examples/CMakeLists.txt: -O3 -march=native with GCC or Clang),
// not with the examples' own -O1. Each splits its rows over `threads` std::threads, so that it
// uses as many cores as Loom's thread pool does.
#pragma once

#include <string>

namespace example_peers {

/// The flags the peers were compiled with, without spaces as the bench lines name them (e.g.
/// "-O3-march=native"), and the compiler (e.g. "GNU-12.2.0").
/// @{
std::string flags();
std::string compiler();
/// @}

/// The classic two-pass separable 3x3 box blur of an h x w row-major image: first the horizontal
/// pass over the whole image into `tmp` (h x (w - 2)), then the vertical pass from `tmp` into
/// `out` ((h - 2) x (w - 2)), each pass's rows split over `threads` threads.
void blur_two_pass(const float* in, int h, int w, float* tmp, float* out, int threads);

/// out[i, j] = gelu(out[i, j] + bias[j]) over a rows x cols row-major matrix, in place, with
/// gelu(x) = x (1 + erf(x / sqrt(2))) / 2 (std::erf); the rows split over `threads` threads.
void bias_gelu(float* out, const float* bias, int rows, int cols, int threads);

}  // namespace example_peers

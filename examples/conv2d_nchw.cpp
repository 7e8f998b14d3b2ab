// A 3x3 convolution, NCHW, zero padding 1 (ResNet's 64-channel 56x56 layer): the padded input
// computed once at the root, then the output in register tiles of 8 output channels x 8 pixels
// of a row (8-lane vectors along the row, which 56 divides: no masked lanes; loom::lint has
// nothing to say), with fused multiply-adds, output channels in parallel. Checked against a
// plain C++ convolution in double precision, then timed against OpenBLAS doing the usual
// im2col + sgemm, in the same run, and printed as
//   loom-bench conv2d n= c= h= w= k= r= s= pad= threads= peer=openblas-<version>:<kernel>:im2col+sgemm
//     loom_ms= peer_ms= loom_gflops= peer_gflops= ratio=<peer time / loom time>
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <vector>

#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include "example_util.hpp"

using namespace loom;

namespace {

constexpr int N = 1, C = 64, H = 56, W = 56, K = 64, R = 3, S = 3, Pad = 1;
constexpr int Lanes = 8, OutTile = 8;

struct Conv {
  Tensor In = placeholder({N, C, H, W}, f32, "In");
  Tensor Wt = placeholder({K, C, R, S}, f32, "Wt");
  Tensor Padded = compute({N, C, H + 2 * Pad, W + 2 * Pad},
                          [&](Expr n, Expr c, Expr y, Expr x) {
                            return if_then_else(all(y >= Pad, y < H + Pad, x >= Pad, x < W + Pad),
                                                In(n, c, y - Pad, x - Pad), 0.0f);
                          },
                          "Padded", "", {"n", "c", "y", "x"});
  IterVar rc = reduce_axis(0, C, "rc"), ry = reduce_axis(0, R, "ry"), rx = reduce_axis(0, S, "rx");
  Tensor Out = compute({N, K, H, W},
                       [&](Expr n, Expr k, Expr y, Expr x) {
                         return sum(Padded(n, rc, y + ry, x + rx) * Wt(k, rc, ry, rx), {rc, ry, rx});
                       },
                       "Out", "", {"n", "k", "y", "x"});

  Schedule schedule() const {
    Schedule s = create_schedule(Out);
    auto [ko, ki] = s[Out].split(Out.axis(1), OutTile);
    auto [xo, xi] = s[Out].split(Out.axis(3), Lanes);
    s[Out].reorder({Out.axis(0), ko, Out.axis(2), xo, Out.reduce_axis(0), Out.reduce_axis(1),
                    Out.reduce_axis(2), ki, xi});
    s[Out].unroll(ki);
    s[Out].vectorize(xi);
    s[Out].pragma(xo, "fp_contract");
    s[Out].parallel(ko);
    // The padded copy: one pass over the input, in parallel over the channels.
    s[Padded].parallel(Padded.axis(1));
    return s;
  }
};

/// The peer: OpenBLAS's sgemm (with its threads) on the im2col matrix (C*R*S rows, H*W columns),
/// as frameworks do; the im2col copy is this plain loop on one thread, as a simple framework has it.
void im2col_sgemm(const Buffer<float>& in, const Buffer<float>& wt, std::vector<float>& cols,
                  Buffer<float>& out) {
  for (int c = 0; c < C; ++c)
    for (int ry = 0; ry < R; ++ry)
      for (int rx = 0; rx < S; ++rx) {
        float* row = cols.data() + static_cast<size_t>((c * R + ry) * S + rx) * H * W;
        for (int y = 0; y < H; ++y)
          for (int x = 0; x < W; ++x) {
            const int sy = y + ry - Pad, sx = x + rx - Pad;
            row[y * W + x] = sy >= 0 && sy < H && sx >= 0 && sx < W ? in(0, c, sy, sx) : 0.0f;
          }
      }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, H * W, C * R * S, 1.0f, wt.data(), C * R * S,
              cols.data(), H * W, 0.0f, out.data(), H * W);
}

}  // namespace

int main() {
  Conv conv;
  Schedule s = conv.schedule();
  LoweredFunc f = lower(s, {conv.In, conv.Wt, conv.Out}, "conv2d");
  for (const LintFinding& finding : lint(f)) std::cout << "lint: " << finding.message << "\n";
  Kernel kernel = build(s, {conv.In, conv.Wt, conv.Out}, Target::cpu(), "conv2d");

  Buffer<float> in({N, C, H, W}), wt({K, C, R, S}), out({N, K, H, W}), peer({N, K, H, W});
  example::fill_random(in, 1);
  example::fill_random(wt, 2);
  kernel(in, wt, out);
  // Every output against a double-precision loop.
  for (int k = 0; k < K; ++k)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        double expected = 0;
        for (int c = 0; c < C; ++c)
          for (int ry = 0; ry < R; ++ry)
            for (int rx = 0; rx < S; ++rx) {
              const int sy = y + ry - Pad, sx = x + rx - Pad;
              if (sy >= 0 && sy < H && sx >= 0 && sx < W)
                expected += static_cast<double>(in(0, c, sy, sx)) * static_cast<double>(wt(k, c, ry, rx));
            }
        example::expect_close(out(0, k, y, x), expected, "Out[0, k, y, x]", 1e-4);
      }
  std::vector<float> cols(static_cast<size_t>(C) * R * S * H * W);
  im2col_sgemm(in, wt, cols, peer);
  example::expect_all_close(peer, out, "OpenBLAS im2col+sgemm against Loom", 1e-4);

  // Alternating rounds, best of each: both see the same machine state.
  double loom_ms = 1e30, peer_ms = 1e30;
  for (int round = 0; round < 5; ++round) {
    loom_ms = std::min(loom_ms, tune::best_ms([&] { kernel(in, wt, out); }, 5));
    peer_ms = std::min(peer_ms, tune::best_ms([&] { im2col_sgemm(in, wt, cols, peer); }, 5));
  }
  const double flop = 2.0 * N * K * H * W * C * R * S;
  std::string version = openblas_get_config();  // "OpenBLAS 0.3.21 ..."
  version = "openblas-" + version.substr(9, version.find(' ', 9) - 9);
  std::printf(
      "loom-bench conv2d n=%d c=%d h=%d w=%d k=%d r=%d s=%d pad=%d threads=%d peer=%s:%s:im2col+sgemm "
      "loom_ms=%.3f peer_ms=%.3f loom_gflops=%.1f peer_gflops=%.1f ratio=%.3f\n",
      N, C, H, W, K, R, S, Pad, runtime::ThreadPool::global().num_threads(), version.c_str(),
      openblas_get_corename(), loom_ms, peer_ms, flop / loom_ms / 1e6, flop / peer_ms / 1e6,
      peer_ms / loom_ms);
  std::cout << "ok\n";
}

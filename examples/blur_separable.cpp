// Halide's classic separable 3x3 box blur of a 2002 x 3010 float image:
//   BlurX(y, x) = (In(y, x) + In(y, x + 1) + In(y, x + 2)) / 3
//   BlurY(y, x) = (BlurX(y, x) + BlurX(y + 1, x) + BlurX(y + 2, x)) / 3
// (the output is 2000 x 3008: two rows and two columns smaller, so nothing reads outside In).
// The schedule: strips of 32 output rows in parallel; in each strip, the 34 rows of BlurX that
// it reads are computed first (compute_at), into a per-strip buffer (409 KB, within a 1 MB L2
// cache) that BlurY reads back from cache, instead of the whole BlurX image (24 MB) going out to
// memory and back; both stages 16 floats wide (one AVX-512 register). 2000 is not
// a multiple of 32, so the last strip is a partial one; 3008 is a multiple of the 16 lanes, so no
// vector store is masked (loom::lint says nothing).
// Checked against a double-precision loop, then timed against the two-pass loop a user writes by
// hand (examples/peers/peers.cpp: the whole BlurX, then the whole BlurY, rows split over as many
// threads as Loom's pool has, compiled with -O3 -march=native), best of several calls each, and
// printed as
//   loom-bench blur m= n= threads= peer=cxx-two-pass<flags>:<compiler> peer_ms= loom_ms=
//     ratio=<peer time / loom time>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include "example_util.hpp"
#include "peers/peers.hpp"

using namespace loom;

namespace {

constexpr int H = 2002, W = 3010;      // the input image: rows, columns
constexpr int OH = H - 2, OW = W - 2;  // the output: 2000 x 3008
constexpr int Strip = 32, Lanes = 16;

struct Blur {
  Tensor In = placeholder({H, W}, f32, "In");
  Tensor BlurX =
      compute({H, OW}, [&](Expr y, Expr x) { return (In(y, x) + In(y, x + 1) + In(y, x + 2)) / 3.0f; },
              "BlurX", "", {"y", "x"});
  Tensor BlurY = compute(
      {OH, OW}, [&](Expr y, Expr x) { return (BlurX(y, x) + BlurX(y + 1, x) + BlurX(y + 2, x)) / 3.0f; },
      "BlurY", "", {"y", "x"});

  Schedule schedule() const {
    Schedule s = create_schedule(BlurY);
    auto [yo, yi] = s[BlurY].split(BlurY.axis(0), Strip);
    auto [xo, xi] = s[BlurY].split(BlurY.axis(1), Lanes);
    s[BlurY].vectorize(xi);
    s[BlurY].parallel(yo);
    // Per strip, the Strip + 2 rows of BlurX it reads (Loom infers the region; in the last,
    // partial strip a guard keeps it inside BlurX's 2002 rows).
    s[BlurX].compute_at(s[BlurY], yo);
    auto [bxo, bxi] = s[BlurX].split(BlurX.axis(1), Lanes);
    s[BlurX].vectorize(bxi);
    return s;
  }
};

}  // namespace

int main() {
  Blur blur;
  Schedule s = blur.schedule();
  LoweredFunc f = lower(s, {blur.In, blur.BlurY}, "blur");
  std::cout << f << "\n";
  for (const LintFinding& finding : lint(f)) std::cout << "lint: " << finding.message << "\n";
  Kernel kernel = build(s, {blur.In, blur.BlurY}, Target::cpu(), "blur");

  Buffer<float> in({H, W}), out({OH, OW}), peer({OH, OW});
  example::fill_random(in, 1);
  kernel(in, out);
  // Every output against the blur in double precision.
  auto at = [&](int y, int x) { return static_cast<double>(in(y, x)); };
  std::vector<double> blur_x(static_cast<size_t>(H) * OW);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < OW; ++x)
      blur_x[static_cast<size_t>(y) * OW + x] = (at(y, x) + at(y, x + 1) + at(y, x + 2)) / 3.0;
  for (int y = 0; y < OH; ++y)
    for (int x = 0; x < OW; ++x) {
      const double* column = blur_x.data() + static_cast<size_t>(y) * OW + x;
      example::expect_close(out(y, x), (column[0] + column[OW] + column[2 * OW]) / 3.0, "BlurY[y, x]", 1e-5);
    }

  const int threads = runtime::ThreadPool::global().num_threads();
  std::vector<float> tmp(static_cast<size_t>(H) * OW);
  auto run_peer = [&] { example_peers::blur_two_pass(in.data(), H, W, tmp.data(), peer.data(), threads); };
  run_peer();
  example::expect_all_close(peer, out, "the hand-written two-pass blur against Loom", 1e-5);

  // Alternating rounds, best of each: both see the same machine state.
  double loom_ms = 1e30, peer_ms = 1e30;
  for (int round = 0; round < 8; ++round) {
    loom_ms = std::min(loom_ms, tune::best_ms([&] { kernel(in, out); }, 5));
    peer_ms = std::min(peer_ms, tune::best_ms(run_peer, 5));
  }
  std::printf(
      "loom-bench blur m=%d n=%d threads=%d peer=cxx-two-pass%s:%s peer_ms=%.3f loom_ms=%.3f ratio=%.3f\n",
      OH, OW, threads, example_peers::flags().c_str(), example_peers::compiler().c_str(), peer_ms, loom_ms,
      peer_ms / loom_ms);
  std::cout << "ok\n";
}

// A small 3x3 convolution for the GPU, NCHW, zero padding 1 (N=1, C=8 -> K=16 channels, 30x30),
// run on the GPU simulator (Target::cuda_sim(): no GPU, driver or toolkit needed).
// The schedule, as in TVM's "optimize convolution on GPU" tutorial: one thread per output pixel,
// a block per 6 rows of one output channel (32 x 6 threads, a warp per row, 30 of its lanes with
// a pixel); for each group of 4 input channels the block's threads copy the padded input rows it
// needs (4 x 8 x 32 floats) and the weights (4 x 3 x 3) into shared memory together (cache_read
// + compute_at), then every thread adds up its 36 products from shared memory in a register
// (cache_write "local"). Lowering puts the __syncthreads() barriers between the copies and their
// uses. The padding is a compute stage (if_then_else) inlined into the copy, so the zeros are
// never stored in global memory.
// Checked against a plain C++ convolution in double precision. Prints the CUDA C, whether NVRTC
// compiled it, and the simulator's report (bank conflicts, races, modelled cycles).
// The simulator measures no GPU time. The "peer" is the simulator's clock model
// (runtime/sim_clock_model.hpp: per-warp instruction costs, blocks dispatched onto a modelled
// H100's SMs; a model for comparing schedules, not a GPU's time) on the naive mapping of the
// same convolution: one thread per output, no shared memory, the sum accumulated in global memory.
// The middle variant (a register accumulator, no shared memory) shows what each step is worth.
// Printed as
//   loom-bench gpu_conv_sim n= c= h= w= k= r= s= pad= device=<modelled GPU> naive_cycles=
//     loom_cycles= ratio=<naive cycles / loom cycles> (model cycles, not GPU time)
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <loom/loom.hpp>

#include "example_util.hpp"

using namespace loom;

namespace {

constexpr int N = 1, C = 8, H = 30, W = 30, K = 16, R = 3, S = 3, Pad = 1;
constexpr int BlockRows = 6;  // output rows per block: threadIdx.y
// Threads per row, threadIdx.x: a whole warp, of which the last two lanes (x = 30, 31) have no pixel
// and stay idle. With 30 threads per row instead, a warp would span two rows, and its threads
// (y, x) and (y + 1, x) would read the same shared-memory bank: the simulator then counts 1.8
// wavefronts per load of the input tile instead of 1.
constexpr int ThreadsX = 32;
constexpr int CStep = 4;  // input channels per shared-memory tile

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
};

/// Binds the loops of a shared-memory copy stage onto the block's 32 x 6 threads: all its axes
/// fused into one loop, whose consecutive elements go to consecutive threads (coalesced reads,
/// conflict-free shared stores: the input tile's rows are 32 floats, one warp each).
void bind_copy(Schedule& s, const Tensor& cache) {
  const std::vector<IterVar> axes = s[cache].leaf_axes();  // a copy: fuse replaces them
  IterVar fused = s[cache].fuse(axes);
  auto [rest, tx] = s[cache].split(fused, ThreadsX);
  auto [more, ty] = s[cache].split(rest, BlockRows);
  s[cache].bind(ty, thread_axis("threadIdx.y"));
  s[cache].bind(tx, thread_axis("threadIdx.x"));
}

/// Loom's schedule: shared-memory tiles of the padded input and of the weights, a register
/// accumulator (`shared` false: the register accumulator alone, the middle variant).
Schedule tiled_schedule(const Conv& cv, bool shared) {
  Schedule s = create_schedule(cv.Out);
  s[cv.Padded].compute_inline();  // read (in the copy, or in Out) as In or 0
  Tensor PS, WS;
  if (shared) {
    PS = s.cache_read(cv.Padded, "shared", {cv.Out});
    WS = s.cache_read(cv.Wt, "shared", {cv.Out});
  }
  Tensor OL = s.cache_write(cv.Out, "local");
  const Tensor& Out = cv.Out;
  IterVar nk = s[Out].fuse(Out.axis(0), Out.axis(1));
  auto [yo, yi] = s[Out].split(Out.axis(2), BlockRows);
  auto [xo, xi] = s[Out].split(Out.axis(3), ThreadsX);  // xo: one iteration; xi >= 30 is guarded
  s[Out].bind(nk, thread_axis("blockIdx.y"));
  s[Out].bind(yo, thread_axis("blockIdx.x"));
  s[Out].bind(yi, thread_axis("threadIdx.y"));
  s[Out].bind(xi, thread_axis("threadIdx.x"));
  // Each thread's sum in a register, over channel groups of CStep.
  s[OL].compute_at(s[Out], xi);
  auto [rco, rci] = s[OL].split(OL.reduce_axis(0), CStep);
  s[OL].pragma(rci, "fp_contract");  // the multiply-adds may be fused
  if (shared) {
    // One tile of each per channel group: the block's threads copy it, then all read it.
    for (const Tensor& cache : {PS, WS}) {
      s[cache].compute_at(s[OL], rco);
      bind_copy(s, cache);
    }
  }
  return s;
}

/// The naive mapping: every output element is one thread (blocks of 128), reading In and Wt
/// from global memory and adding each product to Out in global memory.
Schedule naive_schedule(const Conv& cv) {
  Schedule s = create_schedule(cv.Out);
  s[cv.Padded].compute_inline();
  IterVar all_outputs = s[cv.Out].fuse({cv.Out.axis(0), cv.Out.axis(1), cv.Out.axis(2), cv.Out.axis(3)});
  auto [bx, tx] = s[cv.Out].split(all_outputs, 128);
  s[cv.Out].bind(bx, thread_axis("blockIdx.x"));
  s[cv.Out].bind(tx, thread_axis("threadIdx.x"));
  return s;
}

/// Runs `s` on the simulator, checks Out against `expected`, returns the report.
SimReport run(const Conv& cv, const Schedule& s, const char* name, const Buffer<float>& in,
              const Buffer<float>& wt, const Buffer<float>& expected, bool print_source) {
  Kernel kernel = build(s, {cv.In, cv.Wt, cv.Out}, Target::cuda_sim("sm_80"), name);
  if (print_source) {
    std::cout << kernel.source() << "\n";
    // cuda_sim also compiles the CUDA C with NVRTC when the toolkit's libnvrtc is installed.
    if (kernel.ptx().empty())
      std::cout
          << "NVRTC: not available here, the CUDA C above was not compiled (it runs on the simulator)\n";
    else
      std::cout << "NVRTC: compiled the CUDA C above to " << kernel.ptx().size()
                << " bytes of PTX for sm_80\n";
  }
  Buffer<float> out({N, K, H, W});
  kernel(in, wt, out);
  example::expect_all_close(out, expected, name, 1e-5);
  return kernel.sim_report();
}

int64_t cycles(const SimReport& report) {
  int64_t total = 0;  // the launches run one after the other
  for (const SimLaunch& launch : report.launches) total += launch.simulated_cycles;
  return total;
}

}  // namespace

int main() {
  Conv cv;
  Buffer<float> in({N, C, H, W}), wt({K, C, R, S}), expected({N, K, H, W});
  example::fill_random(in, 1);
  example::fill_random(wt, 2);
  for (int k = 0; k < K; ++k)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        double acc = 0;
        for (int c = 0; c < C; ++c)
          for (int ry = 0; ry < R; ++ry)
            for (int rx = 0; rx < S; ++rx) {
              const int sy = y + ry - Pad, sx = x + rx - Pad;
              if (sy >= 0 && sy < H && sx >= 0 && sx < W)
                acc += static_cast<double>(in(0, c, sy, sx)) * static_cast<double>(wt(k, c, ry, rx));
            }
        expected(0, k, y, x) = static_cast<float>(acc);
      }

  const SimReport loom = run(cv, tiled_schedule(cv, true), "conv_shared", in, wt, expected, true);
  std::cout << "Loom's schedule (shared-memory tiles, register accumulator):\n" << loom.to_string() << "\n";
  const SimReport local = run(cv, tiled_schedule(cv, false), "conv_local", in, wt, expected, false);
  std::cout << "Register accumulator, no shared memory:\n" << local.to_string() << "\n";
  const SimReport naive = run(cv, naive_schedule(cv), "conv_naive", in, wt, expected, false);
  std::cout << "Naive mapping (one thread per output, accumulating in global memory):\n"
            << naive.to_string() << "\n";

  const std::string device = loom.launches.empty() ? "none" : loom.launches.front().device;
  std::printf("model cycles: naive %lld, register accumulator %lld, + shared-memory tiles %lld\n",
              static_cast<long long>(cycles(naive)), static_cast<long long>(cycles(local)),
              static_cast<long long>(cycles(loom)));
  std::printf(
      "loom-bench gpu_conv_sim n=%d c=%d h=%d w=%d k=%d r=%d s=%d pad=%d device=%s-model naive_cycles=%lld "
      "loom_cycles=%lld ratio=%.3f\n",
      N, C, H, W, K, R, S, Pad, device.c_str(), static_cast<long long>(cycles(naive)),
      static_cast<long long>(cycles(loom)),
      static_cast<double>(cycles(naive)) / static_cast<double>(cycles(loom)));
  std::cout << "ok\n";
}

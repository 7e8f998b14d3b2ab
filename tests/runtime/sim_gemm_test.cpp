// A 256x256x256 tiled GEMM kernel on the GPU simulator (16x16 threads, 16x16 shared tiles, two
// barriers per tile): the result matches C++ bit for bit, the counts are exact, and it is timed.
#include <loom/sim/simulator.hpp>

#include <doctest/doctest.h>

#include <chrono>

#include "sim_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// C = A x B, n a multiple of 16: block (bx, by) computes the 16x16 tile of C at (by, bx); each of
/// its threads accumulates one element in a local register while the block walks along k one
/// 16x16 tile of A and of B at a time, both staged in shared memory.
LoweredFunc tiled_gemm(int n) {
  const int t = 16;
  BufferParam A = buffer_param("A", f32, {n, n}), B = buffer_param("B", f32, {n, n}),
              C = buffer_param("C", f32, {n, n});
  Var bx("bx"), by("by"), tx("tx"), ty("ty"), ko("ko"), ki("ki");
  Var As("A.shared", handle_type), Bs("B.shared", handle_type), acc("C.local", handle_type);
  Stmt tile_step = seq({
      st(As, load(A, (by * t + ty) * n + ko * t + tx), ty * t + tx),
      st(Bs, load(B, (ko * t + ty) * n + bx * t + tx), ty * t + tx),
      syncthreads(),
      loop(ki, 0, t, st(acc, ld(acc, f32, 0) + ld(As, f32, ty * t + ki) * ld(Bs, f32, ki * t + tx), 0)),
      syncthreads(),
  });
  Stmt body = seq({st(acc, Expr(0.0f), 0), loop(ko, 0, n / t, tile_step),
                   store(C, ld(acc, f32, 0), (by * t + ty) * n + bx * t + tx)});
  body = allocate(As, f32, t * t, "shared",
                  allocate(Bs, f32, t * t, "shared", allocate(acc, f32, 1, "local", body)));
  body = bind(by, "blockIdx.y", n / t,
              bind(bx, "blockIdx.x", n / t, bind(ty, "threadIdx.y", t, bind(tx, "threadIdx.x", t, body))));
  return make_func("gemm", {param(A), param(B), param(C)}, body);
}

}  // namespace

TEST_CASE("sim: a 256^3 tiled GEMM with shared tiles matches C++ and is conflict- and race-free (timed)") {
  const int n = 256;
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  fill_random(a, 51);
  fill_random(b, 52);
  LoweredFunc f = tiled_gemm(n);
  auto start = std::chrono::steady_clock::now();
  SimReport report = simulate(f, {a, b, c});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("sim: 256x256x256 tiled GEMM (256 blocks of 16x16 threads) took " << seconds << " s\n"
                                                                            << report.to_string());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < n; ++k) sum = sum + a(i, k) * b(k, j);
      REQUIRE(c(i, j) == sum);
    }
  }
  CHECK(report.races.empty());
  CHECK(report.uninitialized_reads.empty());
  REQUIRE(report.launches.size() == 1);
  CHECK(report.launches[0].shared_bytes_per_block == 2 * 16 * 16 * 4);
  const int64_t blocks = 256, warps = 8, tiles = n / 16;
  for (const char* name : {"A.shared", "B.shared"}) {
    const SimSharedBuffer& s = report.buffer(name);
    CHECK(s.store.instructions == blocks * warps * tiles);
    CHECK(s.store.conflicts() == 0);
    CHECK(s.load.instructions == blocks * warps * tiles * 16);
    CHECK(s.load.wavefronts == s.load.instructions);  // a two-word broadcast, or 16 words of a row
  }
}

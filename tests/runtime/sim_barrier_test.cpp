// The GPU simulator's execution model on hand-written kernels: launch dimensions and grids, shared
// memory with barriers (a transpose, a tree reduction with barriers in a loop) and the errors for
// divergent barriers, mismatched launch extents and global allocations in a kernel.
#include <loom/sim/simulator.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "sim_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// out[b] = the sum of A[b*128 .. b*128+127], by the classic shared-memory tree: the stride
/// halves every iteration of a loop that holds the barrier (for (s = 64; s > 0; s /= 2)).
LoweredFunc tree_sum_func(int blocks) {
  const int threads = 128;
  BufferParam A = buffer_param("A", f32, {blocks * threads}), out = buffer_param("out", f32, {blocks});
  Var bx("bx"), tx("tx"), i("i"), sh("sh", handle_type), stride("stride", handle_type);
  Expr s = ld(stride, i32, 0);
  Stmt step = IfThenElseNode::make(tx < s, st(sh, ld(sh, f32, tx) + ld(sh, f32, tx + s), tx));
  Stmt body = seq({
      st(sh, load(A, bx * threads + tx), tx),
      st(stride, threads / 2, 0),
      syncthreads(),
      loop(i, 0, 7, seq({step, syncthreads(), st(stride, s / 2, 0)})),
      IfThenElseNode::make(tx == 0, store(out, ld(sh, f32, 0), bx)),
  });
  body = allocate(sh, f32, threads, "shared", allocate(stride, i32, 1, "local", body));
  body = bind(bx, "blockIdx.x", blocks, bind(tx, "threadIdx.x", threads, body));
  return make_func("tree_sum", {param(A), param(out)}, body);
}

/// A kernel of 64 threads (two warps) whose only statement is `inner`.
LoweredFunc two_warps(const std::string& name, const Var& tx, Stmt inner, const BufferParam& out) {
  return make_func(name, {param(out)}, bind(tx, "threadIdx.x", 64, inner));
}

}  // namespace

TEST_CASE("sim: a transpose through a shared tile, 2x2 blocks of 32x32 threads") {
  const int n = 64;
  for (int row : {32, 33}) {
    Buffer<float> a({n, n}), b({n, n});
    fill_random(a, 11);
    SimReport report = simulate(transpose_func(n, row), {a, b});
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) REQUIRE(b(i, j) == a(j, i));
    REQUIRE(report.launches.size() == 1);
    CHECK(report.launches[0].grid == SimDim3{2, 2, 1});
    CHECK(report.launches[0].block == SimDim3{32, 32, 1});
    CHECK(report.launches[0].warps_per_block == 32);
    CHECK(report.launches[0].shared_bytes_per_block == 32 * row * 4);
    CHECK(report.races.empty());
    CHECK(report.uninitialized_reads.empty());
  }
}

TEST_CASE("sim: a shared-memory tree reduction with the barrier inside a loop") {
  const int blocks = 5, threads = 128;
  Buffer<float> a({blocks * threads}), out({blocks});
  fill_random(a, 12);
  SimReport report = simulate(tree_sum_func(blocks), {a, out});
  for (int b = 0; b < blocks; ++b) {
    float v[threads];
    for (int t = 0; t < threads; ++t) v[t] = a(b * threads + t);
    for (int s = threads / 2; s > 0; s /= 2)
      for (int t = 0; t < s; ++t) v[t] = v[t] + v[t + s];
    CHECK(out(b) == v[0]);
  }
  CHECK(report.races.empty());
  // 8 stores of sh per block (4 warps x (1 initial + ...)): what matters is that every access
  // pattern here is conflict-free (consecutive words, or one broadcast word).
  CHECK(report.buffer("sh").load.conflicts() == 0);
  CHECK(report.buffer("sh").store.conflicts() == 0);
}

TEST_CASE("sim: a 2D grid of 2D blocks sees every (blockIdx, threadIdx) once, also when launched in a loop") {
  const int gx = 3, gy = 2, bx_ = 8, by_ = 4, width = gx * bx_, reps = 3;
  BufferParam out = buffer_param("out", i32, {reps, gy * by_, width});
  Var r("r"), bx("bx"), by("by"), tx("tx"), ty("ty");
  Expr value = r * 10000 + by * 1000 + bx * 100 + ty * 10 + tx;
  Expr index = r * (gy * by_ * width) + (by * by_ + ty) * width + bx * bx_ + tx;
  Stmt kernel =
      bind(by, "blockIdx.y", gy,
           bind(bx, "blockIdx.x", gx,
                bind(ty, "threadIdx.y", by_, bind(tx, "threadIdx.x", bx_, store(out, value, index)))));
  Buffer<int32_t> o({reps, gy * by_, width});
  SimReport report = simulate(make_func("grid", {param(out)}, loop(r, 0, reps, kernel)), {o});
  for (int rep = 0; rep < reps; ++rep)
    for (int y = 0; y < gy * by_; ++y)
      for (int x = 0; x < width; ++x)
        REQUIRE(o(rep, y, x) == rep * 10000 + (y / by_) * 1000 + (x / bx_) * 100 + (y % by_) * 10 + x % bx_);
  REQUIRE(report.launches.size() == reps);
  CHECK(report.launches[0].kernel == "grid_kernel0");
  CHECK(report.launches[2].grid == SimDim3{gx, gy, 1});
  CHECK(report.launches[2].block == SimDim3{bx_, by_, 1});
  CHECK(report.launches[2].warps_per_block == 1);
}

TEST_CASE("sim: launch extents may use host values; vthread loops inside a kernel run serially") {
  Var n("n"), tx("tx"), bx("bx"), v("v");
  BufferParam out = buffer_param("out", i32, {n});
  // Two blocks of n/2 threads; each thread writes its element twice through a vthread loop.
  Stmt body =
      bind(bx, "blockIdx.x", 2,
           bind(tx, "threadIdx.x", floordiv(n, 2),
                bind(v, "vthread", 2,
                     store(out, load(out, bx * floordiv(n, 2) + tx) + v + 1, bx * floordiv(n, 2) + tx))));
  LoweredFunc f = make_func("vthread", {param(out)}, body, {n});
  Buffer<int32_t> o({100});
  o.fill(0);
  SimReport report = simulate(f, {o});
  for (int i = 0; i < 100; ++i) CHECK(o(i) == 3);
  CHECK(report.launches.at(0).block == SimDim3{50, 1, 1});
  CHECK(report.launches.at(0).warps_per_block == 2);
}

TEST_CASE("sim: threads of a partial last warp and a guard narrower than the block") {
  // 40 threads: warp 1 has 8 lanes. A branch on tx is divergent but holds no barrier.
  BufferParam out = buffer_param("out", i32, {40});
  Var tx("tx");
  Stmt body = bind(tx, "threadIdx.x", 40,
                   IfThenElseNode::make(tx % 3 == 0, store(out, tx * 2, tx), store(out, 0 - tx, tx)));
  Buffer<int32_t> o({40});
  simulate(make_func("partial", {param(out)}, body), {o});
  for (int t = 0; t < 40; ++t) CHECK(o(t) == (t % 3 == 0 ? 2 * t : -t));
}

TEST_CASE("sim: a barrier in a branch taken by the whole block is fine") {
  BufferParam A = buffer_param("A", i32, {64}), out = buffer_param("out", i32, {64});
  Var tx("tx"), sh("sh", handle_type);
  Stmt body = IfThenElseNode::make(
      load(A, 0) >= 0, seq({st(sh, load(A, tx), tx), syncthreads(), store(out, ld(sh, i32, 63 - tx), tx)}));
  LoweredFunc f = make_func("uniform", {param(A), param(out)},
                            bind(tx, "threadIdx.x", 64, allocate(sh, i32, 64, "shared", body)));
  Buffer<int32_t> a({64}), o({64});
  for (int i = 0; i < 64; ++i) a(i) = i * 7;
  SimReport report = simulate(f, {a, o});
  for (int i = 0; i < 64; ++i) CHECK(o(i) == (63 - i) * 7);
  CHECK(report.races.empty());
}

TEST_CASE("sim: a barrier reached by part of a warp is an error that names the barrier") {
  BufferParam out = buffer_param("out", i32, {64});
  Var tx("tx");
  LoweredFunc f = two_warps("diverge", tx, IfThenElseNode::make(tx < 16, syncthreads()), out);
  Buffer<int32_t> o({64});
  std::string message = simulate_error(f, {o});
  CHECK(message.find("barrier in divergent control flow") != std::string::npos);
  CHECK(message.find("barrier #1 of kernel diverge_kernel0") != std::string::npos);
  CHECK(message.find("if (") != std::string::npos);
  CHECK(message.find("lanes 0-15 of warp 0") != std::string::npos);
  // interpret() runs the same machinery.
  CHECK_THROWS_WITH_AS(interpret(f, {o}), doctest::Contains("divergent control flow"), Error);
}

TEST_CASE("sim: a barrier reached by some warps while others finish or wait elsewhere is an error") {
  BufferParam out = buffer_param("out", i32, {64});
  Var tx("tx"), i("i");
  Buffer<int32_t> o({64});
  SUBCASE("one warp skips it") {
    std::string message =
        simulate_error(two_warps("skip", tx, IfThenElseNode::make(tx < 32, syncthreads()), out), {o});
    CHECK(message.find("barrier in divergent control flow") != std::string::npos);
    CHECK(message.find("warp 0 waits at barrier #1 of kernel skip_kernel0") != std::string::npos);
    CHECK(message.find("warp 1 finished the kernel") != std::string::npos);
  }
  SUBCASE("two different barriers") {
    std::string message = simulate_error(
        two_warps("two", tx, IfThenElseNode::make(tx < 32, syncthreads(), syncthreads()), out), {o});
    CHECK(message.find("warp 0 waits at barrier #1") != std::string::npos);
    CHECK(message.find("warp 1 waits at barrier #2") != std::string::npos);
    CHECK(message.find("else of if") != std::string::npos);
  }
  SUBCASE("a loop whose trip count differs between warps") {
    std::string message =
        simulate_error(two_warps("trips", tx, loop(i, 0, tx / 32 + 1, syncthreads()), out), {o});
    CHECK(message.find("barrier in divergent control flow") != std::string::npos);
    CHECK(message.find("(in: for i)") != std::string::npos);
  }
}

TEST_CASE("sim: loops bound to one tag with different extents are an error naming both") {
  BufferParam out = buffer_param("out", i32, {64});
  Var bx("bx"), t1("t1"), t2("t2");
  Stmt body = bind(bx, "blockIdx.x", 1,
                   seq({bind(t1, "threadIdx.x", 32, store(out, t1, t1)),
                        bind(t2, "threadIdx.x", 64, store(out, t2, t2))}));
  Buffer<int32_t> o({64});
  std::string message = simulate_error(make_func("mismatch", {param(out)}, body), {o});
  CHECK(message.find("threadIdx.x") != std::string::npos);
  CHECK(message.find("32 (loop 't1')") != std::string::npos);
  CHECK(message.find("64 (loop 't2')") != std::string::npos);
}

TEST_CASE(
    "sim: launch-time errors: a global allocation, an extent from inside the kernel, too many threads") {
  BufferParam out = buffer_param("out", i32, {64});
  Var tx("tx"), ty("ty"), g("g", handle_type);
  Buffer<int32_t> o({64});
  std::string message = simulate_error(
      make_func("global", {param(out)},
                bind(tx, "threadIdx.x", 32, allocate(g, i32, 4, "global", store(out, ld(g, i32, 0), tx)))),
      {o});
  CHECK(message.find("cannot allocate global memory") != std::string::npos);
  message = simulate_error(
      make_func("inner", {param(out)},
                bind(tx, "threadIdx.x", 8, bind(ty, "threadIdx.y", tx + 1, store(out, ty, tx)))),
      {o});
  CHECK(message.find("a variable bound inside the kernel") != std::string::npos);
  message =
      simulate_error(make_func("big", {param(out)},
                               bind(tx, "threadIdx.x", 64, bind(ty, "threadIdx.y", 32, store(out, tx, tx)))),
                     {o});
  CHECK(message.find("2048 threads is more than 1024") != std::string::npos);
}

TEST_CASE("sim: an error inside one warp of a block with barriers unwinds the others cleanly") {
  // Warp 1 stores out of bounds after the barrier, while warp 0 is suspended at the next one.
  BufferParam out = buffer_param("out", i32, {40});
  Var tx("tx");
  LoweredFunc f = two_warps("oob", tx, seq({syncthreads(), store(out, tx, tx), syncthreads()}), out);
  Buffer<int32_t> o({40});
  for (int rep = 0; rep < 3; ++rep)
    CHECK(simulate_error(f, {o}).find("out-of-bounds store to buffer 'out'") != std::string::npos);
}

TEST_CASE("sim: shared and local accesses are bounds-checked like any other") {
  BufferParam out = buffer_param("out", i32, {64});
  Var tx("tx"), sh("sh", handle_type), reg("reg", handle_type);
  Buffer<int32_t> o({64});
  LoweredFunc shared =
      two_warps("shared_oob", tx,
                allocate(sh, i32, 64, "shared",
                         seq({st(sh, tx, tx), syncthreads(), store(out, ld(sh, i32, tx + 1), tx)})),
                out);
  CHECK(simulate_error(shared, {o}).find("out-of-bounds load from buffer 'sh': index 64") !=
        std::string::npos);
  LoweredFunc local = two_warps("local_oob", tx, allocate(reg, i32, 2, "local", st(reg, tx, tx % 3)), out);
  CHECK(simulate_error(local, {o}).find("out-of-bounds store to buffer 'reg': index 2") != std::string::npos);
}

TEST_CASE("sim: one compiled function runs many times, also from two host threads at once") {
  const int blocks = 8, threads = 128;
  InterpretedFunc f(tree_sum_func(blocks));
  Buffer<float> a({blocks * threads});
  fill_random(a, 13);
  auto run = [&](Buffer<float>& out) { f.run(bind_arguments(f.func(), {a, out})); };
  Buffer<float> first({blocks});
  run(first);
  std::vector<Buffer<float>> outs(2, Buffer<float>({blocks}));
  std::thread other([&] {
    for (int rep = 0; rep < 5; ++rep) run(outs[0]);
  });
  for (int rep = 0; rep < 5; ++rep) run(outs[1]);
  other.join();
  for (int b = 0; b < blocks; ++b) {
    CHECK(outs[0](b) == first(b));
    CHECK(outs[1](b) == first(b));
  }
  SimReport report = f.simulate(bind_arguments(f.func(), {a, first}));
  CHECK(report.launches.size() == 1);
}

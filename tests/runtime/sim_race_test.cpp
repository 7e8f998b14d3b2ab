// Shared-memory race detection and uninitialized reads in the GPU simulator: a missing barrier is
// reported (or thrown), the barrier removes it; lanes of one warp count as different threads, a
// thread re-reading its own write is fine, a __syncwarp orders the lanes of its own warp only,
// and fresh shared memory reads as the poison value.
#include <loom/sim/simulator.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

const SimRace* race_on(const SimReport& report, int64_t element) {
  auto it = std::find_if(report.races.begin(), report.races.end(),
                         [&](const SimRace& r) { return r.element == element; });
  return it == report.races.end() ? nullptr : &*it;
}

/// 64 threads (two warps): sh[tx] = A[tx]; [barrier;] out[tx] = sh[(tx + 1) % 64].
LoweredFunc rotate_func(bool with_barrier) {
  BufferParam A = buffer_param("A", f32, {64}), out = buffer_param("out", f32, {64});
  Var tx("tx"), sh("sh", handle_type);
  std::vector<Stmt> body{st(sh, load(A, tx), tx)};
  if (with_barrier) body.push_back(syncthreads());
  body.push_back(store(out, ld(sh, f32, floormod(tx + 1, 64)), tx));
  return make_func(with_barrier ? "rotate_synced" : "rotate", {param(A), param(out)},
                   bind(tx, "threadIdx.x", 64, allocate(sh, f32, 64, "shared", seq(body))));
}

}  // namespace

TEST_CASE("sim races: a missing barrier between a shared write and another thread's read") {
  Buffer<float> a({64}), out({64});
  fill_random(a, 31);
  SUBCASE("is reported once per element, naming both threads") {
    SimReport report = simulate_keep_races(rotate_func(false), {a, out});
    CHECK(report.races.size() == 64);
    const SimRace* r = race_on(report, 5);
    REQUIRE(r != nullptr);
    CHECK(r->buffer == "sh");
    CHECK(r->kind == SimRaceKind::ReadWrite);
    CHECK(r->first.thread == SimDim3{5, 0, 0});   // wrote sh[5]
    CHECK(r->second.thread == SimDim3{4, 0, 0});  // then read it: same warp, another lane
    CHECK_FALSE(r->second_wrote);
    // Warp 0 runs first, so thread 31 reads sh[32] before warp 1 has written it: an
    // uninitialized read, and then a race when thread 32 writes it.
    const SimRace* across = race_on(report, 32);
    REQUIRE(across != nullptr);
    CHECK(across->first.thread == SimDim3{31, 0, 0});
    CHECK(across->second.thread == SimDim3{32, 0, 0});
    CHECK(across->second_wrote);
    REQUIRE(report.uninitialized_reads.size() == 1);
    CHECK(report.uninitialized_reads[0].element == 32);
    CHECK(report.uninitialized_reads[0].reader.thread == SimDim3{31, 0, 0});
    CHECK(std::isnan(out(31)));  // the poison, a NaN as float32
    CHECK(report.to_string().find("read/write race on sh[") != std::string::npos);
  }
  SUBCASE("is an error by default, in simulate() and interpret()") {
    CHECK_THROWS_WITH_AS(simulate(rotate_func(false), {a, out}),
                         doctest::Contains("shared-memory data races"), Error);
    CHECK_THROWS_WITH_AS(interpret(rotate_func(false), {a, out}),
                         doctest::Contains("with no barrier between"), Error);
  }
  SUBCASE("goes away with the barrier") {
    SimReport report = simulate(rotate_func(true), {a, out});
    CHECK(report.races.empty());
    CHECK(report.uninitialized_reads.empty());
    for (int t = 0; t < 64; ++t) CHECK(out(t) == a((t + 1) % 64));
  }
}

TEST_CASE("sim races: read-then-write by another thread, write/write, and a thread's own re-read") {
  BufferParam out = buffer_param("out", i32, {64});
  Var tx("tx"), sh("sh", handle_type);
  auto kernel = [&](const std::string& name, Stmt body) {
    return make_func(name, {param(out)}, bind(tx, "threadIdx.x", 64, allocate(sh, i32, 65, "shared", body)));
  };
  Buffer<int32_t> o({64});
  SUBCASE("a read, then another thread's write in the same interval") {
    Stmt body = seq({st(sh, tx, tx), IfThenElseNode::make(tx == 0, st(sh, 0, 64)), syncthreads(),
                     store(out, ld(sh, i32, tx + 1), tx), st(sh, tx * 2, tx)});
    SimReport report = simulate_keep_races(kernel("war", body), {o});
    const SimRace* r = race_on(report, 1);
    REQUIRE(r != nullptr);
    CHECK(r->first.thread == SimDim3{0, 0, 0});   // read sh[1]
    CHECK(r->second.thread == SimDim3{1, 0, 0});  // then wrote it
    CHECK(r->second_wrote);
    CHECK(report.races.size() == 63);  // sh[1..63]; sh[64] is only read
  }
  SUBCASE("every thread writes one element") {
    SimReport report = simulate_keep_races(kernel("waw", st(sh, tx, 0)), {o});
    REQUIRE(report.races.size() == 1);
    CHECK(report.races[0].kind == SimRaceKind::WriteWrite);
    CHECK(report.races[0].first.thread == SimDim3{0, 0, 0});
    CHECK(report.races[0].second.thread == SimDim3{1, 0, 0});
  }
  SUBCASE("a thread reading back its own write, twice, is no race") {
    Stmt body = seq({st(sh, tx * 3, tx), st(sh, ld(sh, i32, tx) + 1, tx), store(out, ld(sh, i32, tx), tx)});
    SimReport report = simulate(kernel("own", body), {o});
    CHECK(report.races.empty());
    for (int t = 0; t < 64; ++t) CHECK(o(t) == 3 * t + 1);
  }
}

TEST_CASE("sim races: a shared buffer reused across loop iterations needs its second barrier") {
  // The tiled-GEMM shape: each iteration fills sh, synchronizes, reads a neighbour's element. The
  // Allocate sits inside the loop, yet every iteration sees the same memory (as CUDA's static
  // __shared__ arrays do), so without a barrier at the end of the body, iteration k+1's writes race
  // with iteration k's reads.
  BufferParam out = buffer_param("out", i32, {64});
  Var tx("tx"), k("k"), sh("sh", handle_type);
  for (bool second_barrier : {false, true}) {
    CAPTURE(second_barrier);
    std::vector<Stmt> body{st(sh, tx + k * 100, tx), syncthreads(),
                           store(out, load(out, tx) + ld(sh, i32, 63 - tx), tx)};
    if (second_barrier) body.push_back(syncthreads());
    LoweredFunc f =
        make_func("reuse", {param(out)},
                  bind(tx, "threadIdx.x", 64, loop(k, 0, 3, allocate(sh, i32, 64, "shared", seq(body)))));
    Buffer<int32_t> o({64});
    o.fill(0);
    SimReport report = simulate_keep_races(f, {o});
    CHECK(report.races.empty() == second_barrier);
    if (second_barrier)
      for (int t = 0; t < 64; ++t) CHECK(o(t) == 3 * (63 - t) + 300);
  }
}

TEST_CASE("sim: reads of never-written shared memory are reported, not errors, and read the poison") {
  BufferParam out = buffer_param("out", i32, {32});
  Var tx("tx"), sh("sh", handle_type);
  // Even threads write; everyone reads its own element after a barrier: odd elements are fresh.
  Stmt body = seq(
      {IfThenElseNode::make(tx % 2 == 0, st(sh, tx, tx)), syncthreads(), store(out, ld(sh, i32, tx), tx)});
  LoweredFunc f =
      make_func("fresh", {param(out)}, bind(tx, "threadIdx.x", 32, allocate(sh, i32, 32, "shared", body)));
  Buffer<int32_t> o({32});
  SimReport report = simulate(f, {o});
  CHECK(report.races.empty());
  CHECK(report.buffer("sh").uninitialized_reads == 16);
  REQUIRE(report.uninitialized_reads.size() == 16);
  CHECK(report.uninitialized_reads[0].element == 1);
  for (int t = 0; t < 32; ++t)
    CHECK(o(t) == (t % 2 == 0 ? t : static_cast<int32_t>(SimReport::kSharedPoisonWord)));
  CHECK(report.to_string().find("reads of uninitialized shared memory: 16") != std::string::npos);
}

namespace {

/// Two warps, each summing its own 32 elements of A through shared memory in a tree (lanes below s
/// add sh[tx + s] for s = 16, 8, 4, 2, 1), lane 0 writing out[warp]; `warp_syncs` puts a
/// __syncwarp after the fill and after each step, as warp-level CUDA code must since Volta.
/// `shift` makes each warp start from the other warp's elements (a mistake __syncwarp cannot fix).
LoweredFunc warp_tree_sum(bool warp_syncs, int shift = 0) {
  BufferParam A = buffer_param("A", f32, {64}), out = buffer_param("out", f32, {2});
  Var tx("tx"), sh("sh", handle_type);
  const Expr lane = floormod(tx, 32);
  std::vector<Stmt> body{st(sh, load(A, tx), tx)};
  if (warp_syncs) body.push_back(syncwarp());
  for (int s = 16; s >= 1; s /= 2) {
    const Expr from = floormod(tx + s + shift, 64);
    body.push_back(IfThenElseNode::make(lane < s, st(sh, ld(sh, f32, tx) + ld(sh, f32, from), tx)));
    if (warp_syncs) body.push_back(syncwarp());
  }
  body.push_back(IfThenElseNode::make(lane == 0, store(out, ld(sh, f32, tx), floordiv(tx, 32))));
  return make_func(warp_syncs ? "warp_sum_synced" : "warp_sum", {param(A), param(out)},
                   bind(tx, "threadIdx.x", 64, allocate(sh, f32, 64, "shared", seq(body))));
}

}  // namespace

TEST_CASE("sim races: __syncwarp orders the lanes of its warp, not other warps") {
  Buffer<float> a({64}), out({2});
  fill_random(a, 7);
  SUBCASE("a warp-level tree sum races without __syncwarp") {
    SimReport report = simulate_keep_races(warp_tree_sum(false), {a, out});
    REQUIRE_FALSE(report.races.empty());
    // Lane 0 reads sh[16], which lane 16 wrote in the fill, in the same barrier interval.
    const SimRace* r = race_on(report, 16);
    REQUIRE(r != nullptr);
    CHECK(r->first.thread == SimDim3{16, 0, 0});
    CHECK(r->second.thread == SimDim3{0, 0, 0});
  }
  SUBCASE("and is race-free and right with it") {
    SimReport report = simulate(warp_tree_sum(true), {a, out});
    CHECK(report.races.empty());
    for (int w = 0; w < 2; ++w) {
      double sum = 0;
      for (int l = 0; l < 32; ++l) sum += a(32 * w + l);
      CHECK(out(w) == doctest::Approx(sum).epsilon(1e-5));
    }
  }
  SUBCASE("a __syncwarp does not order another warp's writes") {
    // Lane 31 of warp 0 reads sh[32 + ...] of warp 1 in the first step (and warp 1 wraps around
    // onto warp 0's): both warps' __syncwarp calls are no barrier between them.
    SimReport report = simulate_keep_races(warp_tree_sum(true, 1), {a, out});
    REQUIRE_FALSE(report.races.empty());
    for (const SimRace& r : report.races) CHECK(r.first.thread.x / 32 != r.second.thread.x / 32);
  }
  SUBCASE("a __syncwarp reached by some lanes of a warp only is an error") {
    BufferParam o = buffer_param("out", f32, {64});
    Var tx("tx");
    LoweredFunc f = make_func(
        "divergent_syncwarp", {param(o)},
        bind(tx, "threadIdx.x", 64,
             seq({IfThenElseNode::make(floormod(tx, 32) < 8, syncwarp()), store(o, cast(f32, tx), tx)})));
    Buffer<float> b({64});
    CHECK_THROWS_WITH_AS(simulate(f, {b}),
                         doctest::Contains("__syncwarp in divergent control flow: __syncwarp #1 of kernel "
                                           "divergent_syncwarp"),
                         Error);
    CHECK_THROWS_WITH_AS(simulate(f, {b}), doctest::Contains("was reached by lanes 0-7 of warp 0"), Error);
  }
}

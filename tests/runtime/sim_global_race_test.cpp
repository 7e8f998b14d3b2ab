// The simulator's global-memory race check (sim/global_races.hpp): blocks writing one element, a
// block's threads racing on global memory, partials handed from block to block through grid flags
// (with the barrier before the signal and after the wait, and each of them missing), a transitive
// chain of flags, kernel boundaries, f16 neighbours, and lib's Stream-K GEMM in every decomposition
// (and with the barrier before its signal, or after its wait, removed).
#include <loom/backend/build.hpp>
#include <loom/ir/grid_flags.hpp>
#include <loom/ir/mutator.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>
#include <loom/lib/streamk_gemm.hpp>
#include <loom/sim/simulator.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace sim_global_race_test {

/// `blocks` blocks of `threads` threads (bx, tx) running `body`.
Stmt grid(const Var& bx, const Var& tx, int blocks, int threads, Stmt body) {
  return bind(bx, "blockIdx.x", blocks, bind(tx, "threadIdx.x", threads, std::move(body)));
}

std::vector<SimRace> global_races(const SimReport& r) {
  std::vector<SimRace> out;
  for (const SimRace& race : r.races)
    if (race.space == SimMemorySpace::Global) out.push_back(race);
  return out;
}

constexpr int kThreads = 64;  // two warps: barriers switch between them

/// Partials handed from one block to another through flags[0]: the writer block's threads each
/// write part[tx], then (after a barrier, unless `barrier_before_signal` is false) thread 0
/// signals; in the reader block thread 0 waits, and every thread reads part[63 - tx] into out[tx]:
/// after a barrier that follows the wait (`barrier_after_wait`), or before the wait
/// (`read_before_wait`). `writer` is the writer block's index (0 or 1).
struct Handoff {
  int writer = 1;
  bool barrier_before_signal = true;
  bool barrier_after_wait = true;
  bool read_before_wait = false;
};

LoweredFunc handoff(const Handoff& h) {
  BufferParam part = buffer_param("part", f32, {kThreads}), out = buffer_param("out", f32, {kThreads});
  Var flags("flags", handle_type), bx("bx", i32), tx("tx", i32);
  std::vector<Stmt> write = {store(part, cast(f32, tx) + 0.5f, tx)};
  if (h.barrier_before_signal) write.push_back(syncthreads());
  write.push_back(IfThenElseNode::make(tx == 0, flag_signal(flags, 0, 1)));
  const Stmt read = store(out, load(part, (kThreads - 1) - tx), tx);
  std::vector<Stmt> wait;
  if (h.read_before_wait) wait.push_back(read);
  wait.push_back(IfThenElseNode::make(tx == 0, flag_wait(flags, 0, 1)));
  // Every variant passes one barrier in the reader too, so that both blocks reach the same
  // number of barriers (their kernel is one program).
  wait.push_back(syncthreads());
  if (!h.read_before_wait) {
    if (h.barrier_after_wait) {
      wait.push_back(read);
    } else {
      wait.insert(wait.end() - 1, read);  // before the barrier: only thread 0 has waited
    }
  }
  if (!h.barrier_before_signal) write.push_back(syncthreads());
  Stmt body = IfThenElseNode::make(bx == h.writer, seq(write), seq(wait));
  body = grid(bx, tx, 2, kThreads, body);
  return make_func("handoff", {param(part), param(out)},
                   AllocateNode::make(flags, i32, {Expr(1)}, "global", body));
}

/// Runs a handoff variant; returns its global races (the result checked where it is race-free).
std::vector<SimRace> run_handoff(const Handoff& h) {
  Buffer<float> part({kThreads}), out({kThreads});
  const SimReport r = simulate_keep_races(handoff(h), {part, out});
  const std::vector<SimRace> races = global_races(r);
  if (races.empty())
    for (int t = 0; t < kThreads; ++t) CHECK(out.at_flat(t) == static_cast<float>(kThreads - 1 - t) + 0.5f);
  return races;
}

/// Whether `s` is `if (...) loom.flag_signal(...)` (or flag_wait).
bool is_flag_call(const Stmt& s, const char* name) {
  const IfThenElseNode* branch = s.as<IfThenElseNode>();
  const EvaluateNode* eval = branch ? branch->then_case.as<EvaluateNode>() : nullptr;
  const CallNode* call = eval ? eval->value.as<CallNode>() : nullptr;
  return call && call->name == name;
}

/// Drops every barrier right before a guarded flag_signal (`before_signal`), or every barrier
/// right after a guarded flag_wait: Stream-K's kernel with one of its orderings missing.
struct DropFlagBarriers : IRMutator {
  explicit DropFlagBarriers(bool before_signal) : before_signal(before_signal) {}
  bool before_signal;
  int dropped = 0;
  using IRMutator::visit;
  Stmt visit(const SeqNode* op) override {
    std::vector<Stmt> out;
    for (const Stmt& s : op->seq) {
      if (before_signal && is_flag_call(s, intrinsic::flag_signal) && !out.empty() &&
          out.back().as<BarrierNode>()) {
        out.pop_back();
        ++dropped;
      }
      if (!before_signal && s.as<BarrierNode>() && !out.empty() &&
          is_flag_call(out.back(), intrinsic::flag_wait)) {
        ++dropped;
        continue;
      }
      out.push_back(mutate(s));
    }
    return SeqNode::make(out);
  }
};

}  // namespace sim_global_race_test

using namespace sim_global_race_test;

TEST_CASE("sim global races: two blocks writing one element race; an elementwise or tiled kernel does not") {
  // Every block writes out[tx]: block 1's writes race with block 0's.
  BufferParam out = buffer_param("out", f32, {32});
  Var bx("bx", i32), tx("tx", i32);
  const LoweredFunc both =
      make_func("both", {param(out)}, grid(bx, tx, 2, 32, store(out, cast(f32, bx), tx)));
  Buffer<float> o({32});
  const SimReport r = simulate_keep_races(both, {o});
  const std::vector<SimRace> races = global_races(r);
  REQUIRE(races.size() == 32);
  const SimRace& race = races[5];
  CHECK(race.kind == SimRaceKind::WriteWrite);
  CHECK(race.buffer == "out");
  CHECK(race.element == 5);
  CHECK(race.byte_offset == 20);
  CHECK(race.first.block == SimDim3{0, 0, 0});
  CHECK(race.second.block == SimDim3{1, 0, 0});
  CHECK(race.first.thread == SimDim3{5, 0, 0});
  CHECK(
      race.str() ==
      "global-memory write/write race on out[5] (byte 20) in kernel both_kernel0: thread (5, 0, 0) of block "
      "(0, 0, 0) wrote it, then thread (5, 0, 0) of block (1, 0, 0) wrote it, with no barrier or flag "
      "signal/wait between");
  CHECK(r.to_string().find("data races: 32") != std::string::npos);

  // By default the launch throws, telling how to order blocks.
  const std::string error = simulate_error(both, {o});
  CHECK(error.find("kernel both_kernel0 has global-memory data races: 32 accesses touched an element of a "
                   "global buffer") != std::string::npos);
  CHECK(error.find("global-memory write/write race on out[0]") != std::string::npos);
  CHECK(
      error.find("passes a barrier after all its threads' writes, then one thread calls loom.flag_signal") !=
      std::string::npos);
  CHECK(error.find("before it reads") != std::string::npos);

  // Each block its own elements: no race.
  const LoweredFunc own =
      make_func("own", {param(out)}, grid(bx, tx, 2, 16, store(out, cast(f32, bx), bx * 16 + tx)));
  CHECK(global_races(simulate_keep_races(own, {o})).empty());

  // Through a schedule: elementwise over blocks of 128, and the tiled GEMM with shared tiles.
  Tensor A = placeholder({1000}, f32, "A");
  Tensor B = compute(
      {1000}, [&](Expr i) { return A(i) * 2.0f + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 128);
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.x"));
  Kernel f = build(s, {A, B}, Target::cuda_sim());
  Buffer<float> a({1000}), b({1000});
  for (int i = 0; i < 1000; ++i) a.at_flat(i) = static_cast<float>(i);
  f(a, b);
  CHECK(f.sim_report().races.empty());
  CHECK(b.at_flat(999) == 1999.0f);

  lib::TiledGemm g = lib::gpu_tiled_gemm(64, 16, f32);
  Kernel gemm = build(g.schedule, {g.A, g.B, g.C}, Target::cuda_sim());
  Buffer<float> ga({64, 64}), gb({64, 64}), gc({64, 64});
  for (int64_t i = 0; i < ga.num_elements(); ++i) ga.at_flat(i) = gb.at_flat(i) = 1.0f;
  gemm(ga, gb, gc);
  CHECK(gemm.sim_report().races.empty());
  CHECK(gc.at_flat(0) == 64.0f);
}

TEST_CASE("sim global races: within a block, a barrier orders threads; neighbouring f16 halves do not race") {
  BufferParam out = buffer_param("out", f32, {64});
  Var bx("bx", i32), tx("tx", i32);
  Buffer<float> o({64});
  // Thread tx writes out[tx]; thread tx then reads out[tx ^ 1], another thread's element.
  auto kernel = [&](bool barrier) {
    std::vector<Stmt> body = {store(out, cast(f32, tx), tx)};
    if (barrier) body.push_back(syncthreads());
    body.push_back(store(out, load(out, bitwise_xor(tx, 1)) + 1.0f, tx + 32));
    return make_func(barrier ? "fenced" : "unfenced", {param(out)}, grid(bx, tx, 1, 32, seq(body)));
  };
  const std::vector<SimRace> races = global_races(simulate_keep_races(kernel(false), {o}));
  REQUIRE(races.size() == 32);
  CHECK(races[0].kind == SimRaceKind::ReadWrite);
  CHECK(!races[0].second_wrote);
  CHECK(races[0].first.block == races[0].second.block);
  CHECK(races[0].first.thread != races[0].second.thread);
  CHECK(global_races(simulate_keep_races(kernel(true), {o})).empty());
  CHECK(o.at_flat(32) == 2.0f);  // out[1] + 1

  // Blocks writing alternate halves of 4-byte words: the shadow's granule is the 2-byte element.
  BufferParam h = buffer_param("h", f16, {64});
  const LoweredFunc halves =
      make_func("halves", {param(h)}, grid(bx, tx, 2, 32, store(h, cast(f16, bx), tx * 2 + bx)));
  Buffer<half> hb({64});
  CHECK(global_races(simulate_keep_races(halves, {hb})).empty());
}

TEST_CASE("sim global races: partials handed through a grid flag, with the barriers, are race-free") {
  for (int writer : {0, 1}) {  // the writer dispatched first, or the reader (which then suspends)
    CAPTURE(writer);
    CHECK(run_handoff(Handoff{writer, true, true, false}).empty());
  }
}

TEST_CASE("sim global races: a signal with no barrier after the other threads' writes is reported") {
  for (int writer : {0, 1}) {
    CAPTURE(writer);
    const std::vector<SimRace> races = run_handoff(Handoff{writer, false, true, false});
    // Thread 0 signals after its own write: only threads 1-63's partials are unpublished.
    REQUIRE(races.size() == kThreads - 1);
    for (const SimRace& r : races) {
      CHECK(r.buffer == "part");
      CHECK(r.kind == SimRaceKind::ReadWrite);
      CHECK(r.element != 0);
      // Whichever ran first, one access is the writer block's write and the other the reader's read.
      const SimThread& write = r.second_wrote ? r.second : r.first;
      const SimThread& read = r.second_wrote ? r.first : r.second;
      CHECK(write.block == SimDim3{writer, 0, 0});
      CHECK(read.block == SimDim3{1 - writer, 0, 0});
      CHECK(write.thread.x == r.element);
    }
    // The default: the launch throws.
    Buffer<float> part({kThreads}), out({kThreads});
    const std::string error = simulate_error(handoff(Handoff{writer, false, true, false}), {part, out});
    CHECK(error.find("global-memory data races") != std::string::npos);
  }
}

TEST_CASE("sim global races: reading the partials before the wait is reported") {
  for (int writer : {0, 1}) {
    CAPTURE(writer);
    const std::vector<SimRace> races = run_handoff(Handoff{writer, true, true, true});
    REQUIRE(races.size() == kThreads);
    int64_t found_by_write = 0;
    for (const SimRace& r : races) {
      const SimThread& write = r.second_wrote ? r.second : r.first;
      const SimThread& read = r.second_wrote ? r.first : r.second;
      CHECK(write.block == SimDim3{writer, 0, 0});
      CHECK(read.block == SimDim3{1 - writer, 0, 0});
      found_by_write += r.second_wrote;
    }
    // Reader block 0, dispatched first: its warp 0 reads and then suspends at the wait (thread 0
    // is in it) before warp 1 reads; block 1's writes find warp 0's reads, warp 1's reads find
    // the writes. Reader block 1 reads after every write.
    CHECK(found_by_write == (writer == 1 ? 32 : 0));
  }
}

TEST_CASE("sim global races: a thread other than the waiter reading before a barrier is reported") {
  for (int writer : {0, 1}) {
    CAPTURE(writer);
    const std::vector<SimRace> races = run_handoff(Handoff{writer, true, false, false});
    // Thread 0, the waiter, reads part[63] safely; threads 1-63 read part[62..0] unordered.
    REQUIRE(races.size() == kThreads - 1);
    for (const SimRace& r : races) {
      CHECK(r.element != kThreads - 1);
      const SimThread& read = r.second_wrote ? r.first : r.second;
      CHECK(read.block == SimDim3{1 - writer, 0, 0});
      CHECK(read.thread.x != 0);
    }
  }
}

TEST_CASE("sim global races: a chain of flags a -> b -> c orders a's writes before c's reads") {
  // Block 0 writes p[tx], block 1 (after waiting on block 0) writes q[tx], block 2 waits only on
  // block 1 and reads both. With `wait_first` false, block 1 signals before it waits: block 0's
  // writes are then not ordered before block 2's reads.
  for (bool wait_first : {true, false}) {
    CAPTURE(wait_first);
    BufferParam p = buffer_param("p", f32, {kThreads}), q = buffer_param("q", f32, {kThreads}),
                out = buffer_param("out", f32, {kThreads});
    Var flags("flags", handle_type), bx("bx", i32), tx("tx", i32);
    auto signal = [&](int flag) { return IfThenElseNode::make(tx == 0, flag_signal(flags, flag, 1)); };
    auto wait = [&](int flag) { return IfThenElseNode::make(tx == 0, flag_wait(flags, flag, 1)); };
    const Stmt a = seq({store(p, cast(f32, tx), tx), syncthreads(), signal(0), syncthreads()});
    const Stmt b_ordered =
        seq({wait(0), syncthreads(), store(q, load(p, tx) + 1.0f, tx), syncthreads(), signal(1)});
    const Stmt b_early = seq({store(q, cast(f32, tx) + 1.0f, tx), syncthreads(), signal(1), wait(0)});
    const Stmt c =
        seq({wait(1), syncthreads(),
             store(out, load(p, (kThreads - 1) - tx) + load(q, (kThreads - 1) - tx), tx), syncthreads()});
    Stmt body =
        IfThenElseNode::make(bx == 0, a, IfThenElseNode::make(bx == 1, wait_first ? b_ordered : b_early, c));
    body = grid(bx, tx, 3, kThreads, body);
    const LoweredFunc f = make_func("chain", {param(p), param(q), param(out)},
                                    AllocateNode::make(flags, i32, {Expr(2)}, "global", body));
    Buffer<float> pb({kThreads}), qb({kThreads}), ob({kThreads});
    const std::vector<SimRace> races = global_races(simulate_keep_races(f, {pb, qb, ob}));
    if (wait_first) {
      CHECK(races.empty());
      CHECK(ob.at_flat(0) == 2.0f * (kThreads - 1) + 1.0f);
    } else {
      REQUIRE(races.size() == kThreads);  // every element of p, none of q
      for (const SimRace& r : races) {
        CHECK(r.buffer == "p");
        CHECK(r.first.block == SimDim3{0, 0, 0});
        CHECK(r.second.block == SimDim3{2, 0, 0});
      }
    }
  }
}

TEST_CASE("sim global races: a kernel boundary orders one launch's writes before the next's reads") {
  // Block b writes out[b * 32 + tx]; then block b reads the element block 1 - b wrote.
  BufferParam out = buffer_param("out", f32, {64}), res = buffer_param("res", f32, {64});
  Var bx("bx", i32), tx("tx", i32), bx2("bx2", i32), tx2("tx2", i32);
  const Stmt write = store(out, cast(f32, bx * 32 + tx), bx * 32 + tx);
  const Stmt read = store(res, load(out, (1 - bx2) * 32 + tx2), bx2 * 32 + tx2);
  const Stmt read_same = store(res, load(out, (1 - bx) * 32 + tx), bx * 32 + tx);
  const LoweredFunc two = make_func("two", {param(out), param(res)},
                                    seq({grid(bx, tx, 2, 32, write), grid(bx2, tx2, 2, 32, read)}));
  Buffer<float> o({64}), r({64});
  const SimReport report = simulate_keep_races(two, {o, r});
  CHECK(report.launches.size() == 2);
  CHECK(report.races.empty());
  CHECK(r.at_flat(0) == 32.0f);
  // Within one kernel the same accesses race (block 0 reads what block 1 writes, or the reverse).
  const LoweredFunc one =
      make_func("one", {param(out), param(res)}, grid(bx, tx, 2, 32, seq({write, syncthreads(), read_same})));
  const std::vector<SimRace> races = global_races(simulate_keep_races(one, {o, r}));
  CHECK(races.size() == 64);
  // A second run of the two-kernel function starts clean too (each launch has a fresh shadow).
  CHECK(simulate_keep_races(two, {o, r}).races.empty());
}

TEST_CASE("sim global races: lib::streamk_gemm is race-free in every decomposition") {
  for (lib::Decomposition d : {lib::Decomposition::StreamKHybrid, lib::Decomposition::DataParallel,
                               lib::Decomposition::SplitK, lib::Decomposition::StreamK}) {
    const std::string name = lib::decomposition_name(d);
    CAPTURE(name);
    lib::StreamKConfig cfg;
    cfg.tile = lib::GemmTile{16, 16, 8};
    cfg.thread_m = 2;
    cfg.thread_n = 2;
    cfg.sms = 3;
    cfg.blocks_per_sm = 2;
    cfg.decomposition = d;
    cfg.split_k = d == lib::Decomposition::SplitK ? 3 : 0;
    lib::StreamKGemm g = lib::streamk_gemm(45, 37, 53, f32, cfg);
    CAPTURE(g.describe());
    Kernel f = build(g.func, Target::cuda_sim("sm_80"));
    Buffer<float> a({45, 53}), b({53, 37}), c({45, 37});
    for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = static_cast<float>(i % 7) - 3.0f;
    for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<float>(i % 5) - 2.0f;
    f(a, b, c);  // a race would throw
    CHECK(f.sim_report().races.empty());
    double expected = 0;
    for (int64_t k = 0; k < 53; ++k) expected += a(44, k) * b(k, 36);
    CHECK(std::fabs(c(44, 36) - expected) < 1e-3);
  }
}

TEST_CASE("sim global races: Stream-K without the barrier before its signal, or after its wait, races") {
  lib::StreamKConfig cfg;
  cfg.tile = lib::GemmTile{16, 16, 8};
  cfg.thread_m = 2;
  cfg.thread_n = 2;
  cfg.sms = 4;
  cfg.blocks_per_sm = 1;
  cfg.decomposition = lib::Decomposition::StreamK;
  lib::StreamKGemm g = lib::streamk_gemm(45, 37, 53, f32, cfg);
  for (bool before_signal : {true, false}) {
    CAPTURE(before_signal);
    DropFlagBarriers drop(before_signal);
    LoweredFunc racy = g.func;
    racy.body = drop.mutate(g.func.body);
    REQUIRE(drop.dropped > 0);
    Buffer<float> a({45, 53}), b({53, 37}), c({45, 37});
    for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = 1.0f;
    for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = 1.0f;
    const std::vector<SimRace> races = global_races(simulate_keep_races(racy, {a, b, c}));
    REQUIRE(!races.empty());
    for (const SimRace& r : races) {
      CHECK(r.buffer == "partials");
      CHECK(r.first.block != r.second.block);
    }
  }
}

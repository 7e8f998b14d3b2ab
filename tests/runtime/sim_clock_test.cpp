// The simulator's time model (runtime/sim_clock_model.hpp, sim/grid_scheduler.hpp): blocks dispatched
// in index order onto SMs x occupancy slots (waves), occupancy limited by shared memory, barrier
// timing, the cost of bank conflicts and uncoalesced global accesses, grid flags that suspend a
// block until a higher-numbered block signals, the deadlock error, and Stream-K's cycles.
#include <loom/ir/grid_flags.hpp>
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

namespace sim_clock_test {

/// Only loop iterations (10 cycles) and barriers (1000) cost anything: cycles are easy to predict.
SimOptions loops_only(GpuDeviceSpec device = GpuDeviceSpec::h100()) {
  SimOptions o;
  o.device = std::move(device);
  o.clock = SimClockModel{};
  o.clock.arith = o.clock.shared_wavefront = o.clock.global_sector = o.clock.shuffle = o.clock.flag = 0;
  o.clock.loop_iteration = 10;
  o.clock.barrier = 1000;
  return o;
}

/// A GPU of `sms` SMs that holds at most `blocks_per_sm` blocks each.
GpuDeviceSpec small_gpu(int sms, int blocks_per_sm) {
  GpuDeviceSpec d = GpuDeviceSpec::for_compute_capability(80, sms);
  d.max_blocks_per_sm = blocks_per_sm;
  return d;
}

/// `blocks` blocks of 32 threads; each thread runs a loop of `iterations` and writes its index.
/// With `shared_floats` > 0 the block also goes through a shared buffer of that many floats.
LoweredFunc uniform_blocks(int blocks, int iterations, int shared_floats = 0) {
  BufferParam out = buffer_param("out", f32, {blocks * 32});
  Var bx("bx"), tx("tx"), i("i"), sh("sh", handle_type);
  Stmt body = loop(i, 0, iterations, store(out, cast(f32, bx * 32 + tx), bx * 32 + tx));
  if (shared_floats > 0) {
    body = seq({st(sh, cast(f32, tx), tx), syncthreads(), body,
                store(out, ld(sh, f32, 31 - tx) + cast(f32, bx * 32), bx * 32 + tx)});
    body = allocate(sh, f32, shared_floats, "shared", body);
  }
  body = bind(bx, "blockIdx.x", blocks, bind(tx, "threadIdx.x", 32, body));
  return make_func("uniform", {param(out)}, body);
}

std::string error_of(const LoweredFunc& f, const std::vector<KernelArg>& args, const SimOptions& o) {
  try {
    simulate(f, args, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

/// Two blocks of 32 threads: block `waiter` waits for flags[0] == 1, which thread 0 of the other
/// block sets after a loop of `work` iterations; then every thread writes its block index.
LoweredFunc flag_pair(int waiter, int work) {
  Var flags("flags", handle_type), bx("bx", i32), tx("tx", i32), i("i", i32);
  BufferParam out = buffer_param("out", f32, {64});
  Stmt signal = seq({loop(i, 0, work, store(out, cast(f32, i), bx * 32 + tx)),
                     IfThenElseNode::make(tx == 0, flag_signal(flags, 0, 1))});
  Stmt body = seq({IfThenElseNode::make(bx == waiter, flag_wait(flags, 0, 1), signal),
                   store(out, cast(f32, bx), bx * 32 + tx)});
  body = bind(bx, "blockIdx.x", 2, bind(tx, "threadIdx.x", 32, body));
  return make_func("flags", {param(out)}, AllocateNode::make(flags, i32, {Expr(1)}, "global", body));
}

}  // namespace sim_clock_test

using namespace sim_clock_test;

TEST_CASE("sim clock: blocks go in index order onto SMs x blocks-per-SM slots, in waves") {
  // 2 SMs x 2 blocks: 12 equal blocks take 3 waves; block b starts when block b - 4 ends.
  const int blocks = 12, iterations = 7;
  Buffer<float> out({blocks * 32});
  const SimReport r = simulate(uniform_blocks(blocks, iterations), {out}, loops_only(small_gpu(2, 2)));
  REQUIRE(r.launches.size() == 1);
  const SimLaunch& l = r.launches[0];
  CHECK(l.device == "sm_80 with 2 SMs");
  CHECK(l.sms == 2);
  CHECK(l.blocks_per_sm == 2);
  CHECK(l.limiter == "blocks");
  const int64_t block = 10 * iterations;  // one block's cycles: its loop
  REQUIRE(l.block_start.size() == static_cast<size_t>(blocks));
  for (int b = 0; b < blocks; ++b) {
    CAPTURE(b);
    CHECK(l.block_start[b] == (b / 4) * block);
    CHECK(l.block_end[b] == (b / 4 + 1) * block);
  }
  CHECK(l.simulated_cycles == 3 * block);
  CHECK(l.busiest_block_cycles == block);
  CHECK(l.flag_wait_cycles == 0);
  CHECK(out(blocks * 32 - 1) == blocks * 32 - 1);  // the values do not depend on the model

  // The default H100 holds all 12 blocks at once: one wave.
  const SimReport h100 = simulate(uniform_blocks(blocks, iterations), {out}, loops_only());
  CHECK(h100.launches[0].device == "H100-SXM5");
  CHECK(h100.launches[0].sms == 132);
  CHECK(h100.launches[0].simulated_cycles == block);
  SimOptions a100 = loops_only(GpuDeviceSpec::a100());
  CHECK(simulate(uniform_blocks(blocks, iterations), {out}, a100).launches[0].device == "A100-SXM4");
}

TEST_CASE("sim clock: a grid of 3 x SMs x occupancy blocks takes 3 waves; halving occupancy doubles it") {
  // H100 (132 SMs): 32 blocks of 32 threads per SM (the block limit), 3 waves of 4224 blocks would
  // be slow to simulate; a 4-SM sm_90 part has the same per-SM limits.
  const GpuDeviceSpec gpu = GpuDeviceSpec::for_compute_capability(90, 4);
  // 40 KB of shared memory per block: (40 + 1) KB each, 228 KB per SM -> 5 blocks per SM.
  const int quarter = 40 * 1024 / 4;
  const int blocks = 3 * 4 * 5, iterations = 5;
  Buffer<float> out({blocks * 32});
  const SimLaunch five =
      simulate(uniform_blocks(blocks, iterations, quarter), {out}, loops_only(gpu)).launches[0];
  CHECK(five.blocks_per_sm == 5);
  CHECK(five.limiter == "shared memory");
  CHECK(five.shared_bytes_per_block == 40 * 1024);
  const int64_t block = five.busiest_block_cycles;
  CHECK(block == 1000 + 10 * iterations);  // a barrier, then the loop
  CHECK(five.simulated_cycles == 3 * block);
  CHECK(out(32 * 7 + 3) == 28 + 7 * 32);  // ld(sh, 31 - 3) + 7 * 32

  // 100 KB: 2 blocks per SM, so 60 blocks take 8 waves (7.5 rounded up) instead of 3.
  const SimLaunch two =
      simulate(uniform_blocks(blocks, iterations, 100 * 1024 / 4), {out}, loops_only(gpu)).launches[0];
  CHECK(two.blocks_per_sm == 2);
  CHECK(two.simulated_cycles == 8 * block);
  // 76 KB: 2 blocks per SM too; 57 KB: 3 (228 / 58): 20 waves of 3 x 4 -> 5 waves.
  const SimLaunch three =
      simulate(uniform_blocks(blocks, iterations, 57 * 1024 / 4), {out}, loops_only(gpu)).launches[0];
  CHECK(three.blocks_per_sm == 3);
  CHECK(three.simulated_cycles == 5 * block);
  // Halving the occupancy of 6 blocks per SM (37 KB: 228 / 38) to 3 doubles the cycles exactly.
  const int grid = 3 * 4 * 6;
  Buffer<float> out6({grid * 32});
  const SimLaunch six =
      simulate(uniform_blocks(grid, iterations, 37 * 1024 / 4), {out6}, loops_only(gpu)).launches[0];
  const SimLaunch half =
      simulate(uniform_blocks(grid, iterations, 57 * 1024 / 4), {out6}, loops_only(gpu)).launches[0];
  CHECK(six.blocks_per_sm == 6);
  CHECK(half.blocks_per_sm == 3);
  CHECK(six.simulated_cycles == 3 * block);
  CHECK(half.simulated_cycles == 2 * six.simulated_cycles);
}

TEST_CASE("sim clock: a barrier makes the warps leave at the latest arrival plus its cost") {
  // Warp 0 loops before the barrier, warp 1 after it: warp 1 cannot start its loop before warp 0
  // has finished its own, so the block takes both loops plus the barrier.
  const int work = 20;
  BufferParam out = buffer_param("out", f32, {64});
  Var tx("tx"), i("i"), j("j");
  auto block = [&](bool barrier) {
    Stmt before = loop(i, 0, select(tx < 32, work, 0), store(out, cast(f32, i), tx));
    Stmt after = loop(j, 0, select(tx < 32, 0, work), store(out, cast(f32, j), tx));
    Stmt body = barrier ? seq({before, syncthreads(), after}) : seq({before, after});
    return make_func(barrier ? "with_barrier" : "without_barrier", {param(out)},
                     bind(tx, "threadIdx.x", 64, body));
  };
  Buffer<float> o({64});
  const SimLaunch with = simulate(block(true), {o}, loops_only()).launches[0];
  const SimLaunch without = simulate(block(false), {o}, loops_only()).launches[0];
  CHECK(with.simulated_cycles == 10 * work + 1000 + 10 * work);
  CHECK(without.simulated_cycles == 10 * work);  // each warp its own loop, side by side
  CHECK(o(40) == work - 1);
}

TEST_CASE("sim clock: bank conflicts and uncoalesced global accesses cost cycles") {
  // The transpose through a 32x32 tile: rows of 32 floats give 32-way conflicts on the column
  // reads, rows of 33 none; the values are the same.
  const int n = 64;
  Buffer<float> a({n, n}), b({n, n});
  fill_random(a, 3);
  SimOptions o;
  const SimLaunch conflicts = simulate(transpose_func(n, 32), {a, b}, o).launches[0];
  const float corner = b(1, 0);
  const SimLaunch padded = simulate(transpose_func(n, 33), {a, b}, o).launches[0];
  CHECK(b(1, 0) == corner);
  CHECK(corner == a(0, 1));
  // Every warp reads a column: 32 wavefronts instead of 1. The warps run side by side.
  CHECK(conflicts.busiest_block_cycles - padded.busiest_block_cycles == 31 * o.clock.shared_wavefront);

  // out[t] = in[t * stride]: 32 lanes touch 4 sectors with stride 1, 32 with stride 8 floats.
  Var tx("tx");
  auto gather = [&](int stride) {
    BufferParam in = buffer_param("in", f32, {32 * 8}), out = buffer_param("out", f32, {32});
    return make_func("gather", {param(in), param(out)},
                     bind(tx, "threadIdx.x", 32, store(out, load(in, tx * stride), tx)));
  };
  Buffer<float> in({32 * 8}), g({32});
  fill_random(in, 4);
  SimOptions sectors = loops_only();
  sectors.clock.global_sector = 1;
  // The load and the store: 4 + 4 sectors coalesced, 32 + 4 strided.
  CHECK(simulate(gather(1), {in, g}, sectors).launches[0].simulated_cycles == 8);
  CHECK(simulate(gather(8), {in, g}, sectors).launches[0].simulated_cycles == 36);
  CHECK(g(5) == in(40));
}

TEST_CASE("sim clock: a block waiting on a higher-numbered block's flag suspends until it is set") {
  // Block 0 waits for block 1, which signals after 30 iterations (300 cycles): this used to be an
  // error (blocks ran one after another); both are resident now, so block 0 waits.
  Buffer<float> out({64});
  SimOptions o = loops_only();
  o.clock.flag = 5;
  const SimLaunch l = simulate(flag_pair(0, 30), {out}, o).launches[0];
  CHECK(out(0) == 0.0f);
  CHECK(out(63) == 1.0f);
  CHECK(l.block_start[0] == 0);
  CHECK(l.block_start[1] == 0);
  CHECK(l.block_end[1] == 300 + 5);          // the loop, the signal
  CHECK(l.block_end[0] == 300 + 5 + 5);      // resumed at the signal's time, plus the wait
  CHECK(l.flag_wait_cycles == 300 + 5);      // block 0 reached the wait at cycle 0
  CHECK(l.busiest_block_cycles == 300 + 5);  // block 1: it never waited
  CHECK(l.simulated_cycles == 310);

  // The waiter second, as before: the flag is already set when block 1 gets there, but its clock
  // still waits for the signal's cycle.
  const SimLaunch later = simulate(flag_pair(1, 30), {out}, o).launches[0];
  CHECK(later.block_end[1] == 310);
  CHECK(out(0) == 0.0f);
  CHECK(out(40) == 1.0f);

  // One SM holding one block: block 0 waits and holds the only slot, block 1 is never dispatched.
  const std::string deadlock = error_of(flag_pair(0, 30), {out}, loops_only(small_gpu(1, 1)));
  CHECK(deadlock.find("kernel flags_kernel0 deadlocks on grid flags (loom.flag_wait)") != std::string::npos);
  CHECK(deadlock.find("block (0, 0, 0) (thread 0) waits until flags[0] == 1 (it is 0)") != std::string::npos);
  CHECK(deadlock.find(
            "1 blocks are resident on sm_80 with 1 SMs (1 SMs x 1 blocks per SM, limited by blocks)") !=
        std::string::npos);
  CHECK(
      deadlock.find("the grid's other 1 blocks (of 2) can never be dispatched: the grid is larger than what "
                    "is co-resident (1 blocks)") != std::string::npos);
  CHECK(deadlock.find("Launch at most 1 blocks") != std::string::npos);
  CHECK(deadlock.find("make every block wait only on flags that lower-numbered blocks signal") !=
        std::string::npos);
  // Waiting for a lower-numbered block works on the same one-slot GPU.
  CHECK(error_of(flag_pair(1, 30), {out}, loops_only(small_gpu(1, 1))) == "(no error)");
  CHECK(out(63) == 1.0f);

  // A flag nobody signals: every block has finished but the waiter.
  Var flags("flags", handle_type), bx("bx", i32), tx("tx", i32);
  BufferParam o2 = buffer_param("out", f32, {64});
  Stmt body = seq({IfThenElseNode::make(bx == 0, flag_wait(flags, 0, 2), flag_signal(flags, 0, 1)),
                   store(o2, cast(f32, bx), bx * 32 + tx)});
  body = bind(bx, "blockIdx.x", 2, bind(tx, "threadIdx.x", 32, body));
  LoweredFunc never =
      make_func("never", {param(o2)}, AllocateNode::make(flags, i32, {Expr(1)}, "global", body));
  const std::string unsignalled = error_of(never, {out}, SimOptions{});
  CHECK(unsignalled.find("waits until flags[0] == 2 (it is 1)") != std::string::npos);
  CHECK(
      unsignalled.find("every other block of the grid has finished: no block signals the flags waited on") !=
      std::string::npos);
  CHECK(unsignalled.find("check the index and value of its loom.flag_signal") != std::string::npos);
}

TEST_CASE("sim clock: registers per thread, given or estimated, limit the occupancy") {
  Buffer<float> out({4 * 32});
  SimOptions o = loops_only();
  const SimLaunch estimated = simulate(uniform_blocks(4, 1), {out}, o).launches[0];
  CHECK(estimated.registers_per_thread == 32);  // no local allocations
  o.registers_per_thread = 255;                 // 256 x 32 per warp: 64 KB / 8 KB = 8 warps of 32 threads
  const SimLaunch given = simulate(uniform_blocks(4, 1), {out}, o).launches[0];
  CHECK(given.registers_per_thread == 255);
  CHECK(given.blocks_per_sm == 8);
  CHECK(given.limiter == "registers");
  o.registers_per_thread = 300;
  CHECK(error_of(uniform_blocks(4, 1), {out}, o).find("registers_per_thread = 300 does not fit") !=
        std::string::npos);
}

TEST_CASE("sim clock: Stream-K GEMM from lib stays exact and reports its cycles") {
  const int64_t m = 48, n = 40, k = 64;
  Buffer<float> a({m, k}), b({k, n});
  fill_random(a, 5);
  fill_random(b, 6);
  Buffer<float> expected({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t r = 0; r < k; ++r) s += static_cast<double>(a(i, r)) * b(r, j);
      expected(i, j) = static_cast<float>(s);
    }
  for (lib::Decomposition d : {lib::Decomposition::StreamK, lib::Decomposition::DataParallel}) {
    CAPTURE(lib::decomposition_name(d));
    lib::StreamKConfig cfg;
    cfg.tile = lib::GemmTile{16, 16, 8};
    cfg.thread_m = cfg.thread_n = 2;
    cfg.sms = 4;
    cfg.blocks_per_sm = 1;
    cfg.decomposition = d;
    const lib::StreamKGemm g = lib::streamk_gemm(m, n, k, f32, cfg);
    for (const GpuDeviceSpec& gpu : {GpuDeviceSpec::h100(), small_gpu(1, 1)}) {
      CAPTURE(gpu.name);
      Buffer<float> c({m, n});
      SimOptions o;
      o.device = gpu;
      const SimReport r = simulate(g.func, {a, b, c}, o);
      int64_t wrong = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) wrong += std::fabs(c(i, j) - expected(i, j)) > 1e-4f;
      CHECK(wrong == 0);
      const SimLaunch& kernel = r.launches.back();
      CHECK(kernel.grid.count() >= 4);
      CHECK(kernel.simulated_cycles > 0);
      CHECK(kernel.busiest_block_cycles <= kernel.simulated_cycles);
      CHECK(*std::max_element(kernel.block_end.begin(), kernel.block_end.end()) == kernel.simulated_cycles);
      if (gpu.sms == 1) {
        // One block at a time: each starts when the one before it ends, and finds the partials it
        // adds already signalled, so the makespan is the sum of the blocks' own cycles.
        int64_t busy = 0;
        for (size_t blk = 0; blk < kernel.block_start.size(); ++blk) {
          if (blk > 0) CHECK(kernel.block_start[blk] == kernel.block_end[blk - 1]);
          busy += kernel.block_end[blk] - kernel.block_start[blk];
        }
        CHECK(kernel.flag_wait_cycles == 0);
        CHECK(kernel.simulated_cycles == busy);
      } else {
        // All resident from cycle 0. Each Stream-K block computes the partial it signals first and
        // the tile it fixes up last, so here no fixup waits: the makespan is the busiest block.
        CHECK(kernel.block_start[3] == 0);
        CHECK(kernel.flag_wait_cycles == 0);
        CHECK(kernel.simulated_cycles == kernel.busiest_block_cycles);
      }
    }
  }
}

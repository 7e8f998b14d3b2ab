// Bank-conflict analysis, padding and swizzle: the analytic counts equal the simulator's on every
// case before and after each layout; avoid_bank_conflicts picks a conflict-free layout (a swizzle
// for the fp16 mma tile, where padding trades load conflicts for store conflicts); results stay right.
#include <loom/backend/build.hpp>
#include <loom/backend/cuda/nvrtc.hpp>
#include <loom/core.hpp>
#include <loom/lib/bank_conflicts.hpp>
#include <loom/lib/bank_conflicts_cases.hpp>
#include <loom/lib/bank_conflicts_pass.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace loom;
using lib::BankConflictFix;
using lib::SharedTileCase;

namespace {

void check_same(const SimBankStats& sim, const SimBankStats& analytic) {
  CHECK(analytic.instructions == sim.instructions);
  CHECK(analytic.wavefronts == sim.wavefronts);
  CHECK(analytic.ideal_wavefronts == sim.ideal_wavefronts);
}

/// Every shared buffer of the simulation, counted the same by the analysis.
void check_analysis_matches(const SimReport& sim, const lib::BankReport& analytic) {
  REQUIRE(analytic.buffers.size() == sim.shared_buffers.size());
  for (size_t i = 0; i < sim.shared_buffers.size(); ++i) {
    CAPTURE(sim.shared_buffers[i].name);
    CHECK(analytic.buffers[i].name == sim.shared_buffers[i].name);
    CHECK(analytic.buffers[i].kernel == sim.shared_buffers[i].kernel);
    check_same(sim.shared_buffers[i].load, analytic.buffers[i].load);
    check_same(sim.shared_buffers[i].store, analytic.buffers[i].store);
  }
}

/// Runs `f` (a lowering of case `c`) on the simulator with seeded data, checks the output against
/// the reference computed here, checks the analysis against the simulation, returns the analysis.
lib::BankReport run_and_check(const SharedTileCase& c, const LoweredFunc& f) {
  std::vector<int64_t> ishape, oshape;
  for (const Expr& e : c.input.shape()) ishape.push_back(*as_const_int(e));
  for (const Expr& e : c.output.shape()) oshape.push_back(*as_const_int(e));
  SimReport sim;
  if (c.input.dtype() == f16) {
    Buffer<half> a(ishape), out(oshape);
    for (int64_t i = 0; i < a.num_elements(); ++i)
      a.data()[i] = half(static_cast<float>((i * 37) % 1001) / 8.0f);
    sim = simulate(f, {a, out});
    // F[b][mt][kk][lane][p][e] = A(row, col), 0 past the last row.
    const int64_t m = ishape[0];
    int64_t wrong = 0;
    for (int64_t b = 0; b < oshape[0]; ++b)
      for (int64_t mt = 0; mt < 8; ++mt)
        for (int64_t kk = 0; kk < 2; ++kk)
          for (int64_t lane = 0; lane < 32; ++lane)
            for (int64_t p = 0; p < 4; ++p)
              for (int64_t e = 0; e < 2; ++e) {
                const int64_t row = b * 128 + mt * 16 + lane / 4 + (p % 2) * 8;
                const int64_t col = kk * 16 + (lane % 4) * 2 + e + (p / 2) * 8;
                const float want = row < m ? static_cast<float>(a(row, col)) : 0.0f;
                wrong += static_cast<float>(out(b, mt, kk, lane, p, e)) != want;
              }
    CHECK(wrong == 0);
  } else {
    Buffer<float> a(ishape), out(oshape);
    for (int64_t i = 0; i < a.num_elements(); ++i)
      a.data()[i] = static_cast<float>((i * 7919) % 1009) - 500.0f;
    sim = simulate(f, {a, out});
    const bool transpose = c.name.rfind("transpose", 0) == 0;
    int64_t wrong = 0;
    for (int64_t i = 0; i < oshape[0]; ++i)
      for (int64_t j = 0; j < oshape[1]; ++j) wrong += out(i, j) != (transpose ? a(j, i) : 2.0f * a(i, j));
    CHECK(wrong == 0);
  }
  CHECK(sim.races.empty());
  lib::BankReport analytic = lib::analyze_bank_conflicts(f);
  check_analysis_matches(sim, analytic);
  return analytic;
}

LoweredFunc lower_case(const SharedTileCase& c, const Schedule& s, PassContext ctx = PassContext()) {
  return lower(s, c.args(), c.name, std::move(ctx));
}

}  // namespace

TEST_CASE(
    "bank conflicts: a 32x32 transpose is 32-way with 32-float rows, none with padding 33 or a swizzle") {
  for (int n : {64, 70}) {
    CAPTURE(n);
    SharedTileCase c = lib::transpose_case(n);
    lib::BankReport before = run_and_check(c, lower_case(c, c.schedule));
    const lib::BankBufferReport& tile = before.buffer("A.shared");
    CHECK(tile.store.conflicts() == 0);
    CHECK(tile.load.conflicts() > 0);
    if (n == 64)
      CHECK(tile.load.wavefronts == 32 * tile.load.ideal_wavefronts);  // every column read is 32-way
    REQUIRE(tile.accesses.size() == 2);
    CHECK(tile.accesses[0].is_store);
    CHECK(!tile.accesses[1].is_store);
    CHECK(tile.accesses[1].stats.wavefronts == tile.load.wavefronts);

    Schedule padded = c.schedule.copy();
    padded[c.tile].storage_align(c.tile.axis(0), 32, 1);
    lib::BankReport p = run_and_check(c, lower_case(c, padded));
    CHECK(p.buffer("A.shared").conflicts() == 0);

    Schedule swizzled = c.schedule.copy();
    swizzled[c.tile].swizzle(5, 0, 5);
    LoweredFunc sf = lower_case(c, swizzled);
    CHECK(sf.to_string().find("\"swizzle\" = \"Swizzle<5,0,5>\"") != std::string::npos);
    lib::BankReport w = run_and_check(c, sf);
    CHECK(w.buffer("A.shared").conflicts() == 0);

    Schedule fixed = c.schedule.copy();
    BankConflictFix fix = lib::avoid_bank_conflicts(fixed, c.tile, c.args(), c.name);
    CHECK(fix.kind != BankConflictFix::Kind::None);
    CHECK(fix.conflict_free);
    CHECK(fix.before_conflicts() == tile.conflicts());
    CHECK(fix.after_conflicts() == 0);
    CHECK(fix.row_length == 32);
    lib::BankReport after = run_and_check(c, lower_case(c, fixed));
    CHECK(after.buffer("A.shared").conflicts() == 0);
    check_same(fix.after_load, after.buffer("A.shared").load);
  }
}

TEST_CASE("bank conflicts: padding only: the smallest storage_align padding that removes the conflicts") {
  SharedTileCase c = lib::transpose_case(70);
  Schedule fixed = c.schedule.copy();
  lib::BankFixOptions options;
  options.allow_swizzle = false;
  BankConflictFix fix = lib::avoid_bank_conflicts(fixed, c.tile, c.args(), c.name, options);
  CAPTURE(fix.str());
  CHECK(fix.kind == BankConflictFix::Kind::Padding);
  CHECK(fix.conflict_free);
  CHECK(fix.row_stride == 33);  // TVM's storage_align(axis, 32, 1)
  CHECK(fix.align_factor == 32);
  CHECK(fix.align_offset == 1);
  CHECK(fixed[c.tile]->storage_align.size() == 1);
  lib::BankReport after = run_and_check(c, lower_case(c, fixed));
  CHECK(after.buffer("A.shared").conflicts() == 0);
}

TEST_CASE("bank conflicts: when no layout is conflict-free, the fixer applies the best and says so") {
  // 24 x 24 threads: a warp reads 24 lanes of one column and 8 of the next. No row stride makes
  // that conflict-free (x*W + 1 == x'*W mod 32 for some lanes), and a swizzle must permute
  // blocks that divide 24.
  SharedTileCase c = lib::transpose_case(50, 24);
  lib::BankReport before = run_and_check(c, lower_case(c, c.schedule));
  CHECK(before.buffer("A.shared").load.conflicts() > 0);
  Schedule fixed = c.schedule.copy();
  BankConflictFix fix = lib::avoid_bank_conflicts(fixed, c.tile, c.args(), c.name);
  CAPTURE(fix.str());
  CHECK(fix.kind != BankConflictFix::Kind::None);
  CHECK(!fix.conflict_free);
  CHECK(fix.after_conflicts() > 0);
  CHECK(fix.after_conflicts() < fix.before_conflicts());
  lib::BankReport after = run_and_check(c, lower_case(c, fixed));
  CHECK(after.buffer("A.shared").conflicts() == fix.after_conflicts());
}

TEST_CASE(
    "bank conflicts: fp16 mma A tile: padding 8 fixes the fragment loads, not the 128-bit stores; a swizzle "
    "both") {
  SharedTileCase c = lib::mma_a_tile_case(200);  // 2 blocks, the second one partial
  lib::BankReport before = run_and_check(c, lower_case(c, c.schedule));
  const lib::BankBufferReport& tile = before.buffer("A.shared");
  CHECK(tile.store.conflicts() == 0);
  CHECK(tile.load.wavefronts == 4 * tile.load.ideal_wavefronts);  // rows 0, 2, 4, 6 share banks
  CHECK(tile.store.wavefronts == 4 * tile.store.instructions);    // 16-byte stores: 4 quarter-warp phases

  Schedule padded = c.schedule.copy();
  padded[c.tile].storage_align(c.tile.axis(0), 32, 8);
  const lib::BankBufferReport p = run_and_check(c, lower_case(c, padded)).buffer("A.shared");
  CHECK(p.load.conflicts() == 0);
  CHECK(p.store.conflicts() > 0);
  CHECK(p.store.instructions == tile.store.instructions);  // still 128-bit stores, now 2-way

  Schedule swizzled = c.schedule.copy();
  swizzled[c.tile].swizzle(2, 3, 3);
  const lib::BankBufferReport w = run_and_check(c, lower_case(c, swizzled)).buffer("A.shared");
  CHECK(w.load.conflicts() == 0);
  CHECK(w.store.conflicts() == 0);
  CHECK(w.store.instructions == tile.store.instructions);

  Schedule fixed = c.schedule.copy();
  BankConflictFix fix = lib::avoid_bank_conflicts(fixed, c.tile, c.args(), c.name);
  CAPTURE(fix.str());
  CHECK(fix.kind == BankConflictFix::Kind::Swizzle);
  CHECK(fix.swizzle.base == 3);  // 8 halves, one 128-bit store, move together
  CHECK(fix.conflict_free);
  check_same(tile.load, fix.before_load);
  check_same(tile.store, fix.before_store);
  const lib::BankBufferReport after = run_and_check(c, lower_case(c, fixed)).buffer("A.shared");
  CHECK(after.conflicts() == 0);
  CHECK(after.wavefronts() == w.wavefronts());

  // Padding alone cannot make both sides conflict-free: the best padding still conflicts.
  Schedule pad_only = c.schedule.copy();
  lib::BankFixOptions options;
  options.allow_swizzle = false;
  BankConflictFix best_padding = lib::avoid_bank_conflicts(pad_only, c.tile, c.args(), c.name, options);
  CAPTURE(best_padding.str());
  CHECK(!best_padding.conflict_free);
  CHECK(best_padding.after_load.wavefronts + best_padding.after_store.wavefronts > after.wavefronts());
}

TEST_CASE("bank conflicts: float4 reads down a column of lanes are 8-way; the fix keeps them 128-bit") {
  SharedTileCase c = lib::float4_case(40);
  const lib::BankBufferReport tile = run_and_check(c, lower_case(c, c.schedule)).buffer("A.shared");
  CHECK(tile.store.conflicts() == 0);
  CHECK(tile.load.conflicts() > 0);
  Schedule fixed = c.schedule.copy();
  BankConflictFix fix = lib::avoid_bank_conflicts(fixed, c.tile, c.args(), c.name);
  CAPTURE(fix.str());
  CHECK(fix.conflict_free);
  const lib::BankBufferReport after = run_and_check(c, lower_case(c, fixed)).buffer("A.shared");
  CHECK(after.conflicts() == 0);
  CHECK(after.load.instructions == tile.load.instructions);  // no float4 was split
  CHECK(after.store.instructions == tile.store.instructions);

  // Padding by 4 floats (one float4) also works; by 1 float it would split the float4s.
  Schedule padded = c.schedule.copy();
  padded[c.tile].storage_align(c.tile.axis(0), 32, 4);
  CHECK(run_and_check(c, lower_case(c, padded)).buffer("A.shared").conflicts() == 0);
  Schedule odd = c.schedule.copy();
  odd[c.tile].storage_align(c.tile.axis(0), 32, 1);
  CHECK(run_and_check(c, lower_case(c, odd)).buffer("A.shared").load.instructions > tile.load.instructions);
}

TEST_CASE("bank conflicts: the automatic mode fixes every conflicted shared buffer while lowering") {
  for (const SharedTileCase& c : {lib::transpose_case(70), lib::mma_a_tile_case(200), lib::float4_case(40)}) {
    CAPTURE(c.name);
    PassContext ctx;
    auto done = lib::add_bank_conflict_passes(ctx);
    LoweredFunc f = lower_case(c, c.schedule, ctx);
    REQUIRE(done->fixes.size() == 1);
    const BankConflictFix& fix = done->fixes[0];
    CAPTURE(fix.str());
    CHECK(fix.buffer == "A.shared");
    CHECK(fix.before_conflicts() > 0);
    CHECK(fix.conflict_free);
    if (c.name == "mma_a_tile") CHECK(fix.kind == BankConflictFix::Kind::Swizzle);
    CHECK(f.to_string().find("bank_conflict_fix") != std::string::npos);
    lib::BankReport r = run_and_check(c, f);
    CHECK(r.buffer("A.shared").conflicts() == 0);
    check_same(r.buffer("A.shared").load, fix.after_load);
    check_same(r.buffer("A.shared").store, fix.after_store);
  }
  // A tile the schedule already lays out is left alone.
  SharedTileCase c = lib::transpose_case(70);
  Schedule padded = c.schedule.copy();
  padded[c.tile].storage_align(c.tile.axis(0), 32, 1);
  PassContext ctx;
  auto done = lib::add_bank_conflict_passes(ctx);
  lib::BankReport r = run_and_check(c, lower_case(c, padded, ctx));
  CHECK(done->fixes.empty());
  CHECK(r.buffer("A.shared").conflicts() == 0);
}

TEST_CASE("bank conflicts: through build() for the simulator target, manual and automatic") {
  SharedTileCase c = lib::transpose_case(70);
  Buffer<float> a({70, 70}), b({70, 70});
  for (int64_t i = 0; i < a.num_elements(); ++i) a.data()[i] = static_cast<float>(i % 97);
  auto check_transposed = [&] {
    int64_t wrong = 0;
    for (int i = 0; i < 70; ++i)
      for (int j = 0; j < 70; ++j) wrong += b(i, j) != a(j, i);
    CHECK(wrong == 0);
  };
  Schedule s = c.schedule.copy();
  BankConflictFix fix = lib::avoid_bank_conflicts(s, c.tile, c.args(), c.name);
  Kernel k = build(s, c.args(), Target::cuda_sim(), c.name);
  CHECK(!k.source().empty());
  k(a, b);
  check_transposed();
  check_same(k.sim_report().buffer("A.shared").load, fix.after_load);
  check_same(k.sim_report().buffer("A.shared").store, fix.after_store);

  PassContext ctx;
  auto done = lib::add_bank_conflict_passes(ctx);
  Kernel automatic = build(c.schedule, c.args(), Target::cuda_sim(), c.name, ctx);
  b.fill(0.0f);
  automatic(a, b);
  check_transposed();
  REQUIRE(done->fixes.size() == 1);
  CHECK(automatic.sim_report().buffer("A.shared").load.conflicts() == 0);
}

TEST_CASE("bank conflicts: the CUDA C of padded and swizzled tiles compiles with NVRTC") {
  if (!runtime::cuda::nvrtc()) {
    MESSAGE("NVRTC not available (" << runtime::cuda::nvrtc_unavailable_reason() << "); not compiled");
    return;
  }
  for (const SharedTileCase& c : {lib::transpose_case(70), lib::mma_a_tile_case(200), lib::float4_case(40)}) {
    CAPTURE(c.name);
    Schedule s = c.schedule.copy();
    BankConflictFix fix = lib::avoid_bank_conflicts(s, c.tile, c.args(), c.name);
    CHECK(fix.kind == BankConflictFix::Kind::Swizzle);
    Kernel k = build(s, c.args(), Target::cuda_sim("sm_80"), c.name);
    CHECK(!runtime::cuda::nvrtc_compile(k.source(), c.name, "sm_80").ptx.empty());
    PassContext ctx;
    lib::BankFixOptions padding_only;
    padding_only.allow_swizzle = false;
    Schedule p = c.schedule.copy();
    lib::avoid_bank_conflicts(p, c.tile, c.args(), c.name, padding_only);
    Kernel padded = build(p, c.args(), Target::cuda_sim("sm_80"), c.name);
    CHECK(!runtime::cuda::nvrtc_compile(padded.source(), c.name, "sm_80").ptx.empty());
  }
}

TEST_CASE("bank conflicts: swizzle and avoid_bank_conflicts errors name the stage and what to change") {
  SharedTileCase c = lib::transpose_case(40);
  Schedule s = c.schedule.copy();
  CHECK_THROWS_WITH_AS(s[c.output].swizzle(5, 0, 5),
                       doctest::Contains("stage 'B': its buffer is in scope 'global'"), ScheduleError);
  CHECK_THROWS_WITH_AS(s[c.input].swizzle(5, 0, 5),
                       doctest::Contains("stage 'A': the stage is not a compute"), ScheduleError);
  CHECK_THROWS_WITH_AS(s[c.tile].swizzle(3, 0, 2), doctest::Contains("shift (S) must be at least bits (3)"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[c.tile].swizzle(0, 0, 2), doctest::Contains("bits (B, how many offset bits change)"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[c.tile].swizzle(2, -1, 2), doctest::Contains("base (M"), ScheduleError);

  // Blocks of 2^(3+3) = 64 elements do not fit a 32-float row: found when the tile is lowered.
  Schedule wide = c.schedule.copy();
  wide[c.tile].swizzle(3, 3, 3);
  CHECK_THROWS_WITH_AS(
      lower_case(c, wide),
      doctest::Contains("permutes blocks of 2^(base+bits) = 64 elements, but a row of 'A.shared' "
                        "has 32 elements"),
      Error);

  Schedule both = c.schedule.copy();
  both[c.tile].swizzle(5, 0, 5);
  CHECK_THROWS_WITH_AS(
      both[c.tile].storage_align(c.tile.axis(0), 32, 1),
      doctest::Contains("storage_align: stage 'A.shared' is already swizzled (Swizzle<5,0,5>)"),
      ScheduleError);
  CHECK_THROWS_WITH_AS(lib::avoid_bank_conflicts(both, c.tile, c.args(), c.name),
                       doctest::Contains("already has a swizzle"), Error);
  Schedule aligned = c.schedule.copy();
  aligned[c.tile].storage_align(c.tile.axis(0), 32, 1);
  CHECK_THROWS_WITH_AS(aligned[c.tile].swizzle(5, 0, 5),
                       doctest::Contains("already has storage_align padding"), ScheduleError);
  CHECK_THROWS_WITH_AS(lib::avoid_bank_conflicts(aligned, c.tile, c.args(), c.name),
                       doctest::Contains("already has storage_align padding"), Error);

  Schedule plain = c.schedule.copy();
  CHECK_THROWS_WITH_AS(lib::avoid_bank_conflicts(plain, c.output, c.args(), c.name),
                       doctest::Contains("stage 'B' is in scope 'global'; pass a shared-memory stage"),
                       Error);
}

TEST_CASE("bank conflicts: an index that depends on memory cannot be analysed, and says so") {
  // out[tx] = sh[idx[tx]]: the shared index is loaded from global memory.
  Var tx("tx"), sh("sh", handle_type);
  BufferParam idx{"idx", Var("idx", handle_type), i32, {Expr(32)}, {Expr(1)}};
  BufferParam out{"out", Var("out", handle_type), f32, {Expr(32)}, {Expr(1)}};
  Stmt body = SeqNode::make(
      {StoreNode::make(sh, cast(f32, tx), tx),
       StoreNode::make(out.data, LoadNode::make(f32, sh, LoadNode::make(i32, idx.data, tx)), tx)});
  body = AllocateNode::make(sh, f32, {Expr(32)}, "shared", body);
  body = ForNode::make(tx, 0, 32, ForKind::ThreadBinding, body, "threadIdx.x");
  LoweredFunc f;
  f.name = "gather";
  for (const BufferParam& b : {idx, out}) {
    FuncParam p;
    p.kind = FuncParam::Kind::Buffer;
    p.buffer = b;
    f.params.push_back(p);
  }
  f.body = body;
  CHECK_THROWS_WITH_AS(lib::analyze_bank_conflicts(f), doctest::Contains("is read from memory"), Error);
}

TEST_CASE("bank conflicts: swizzled and re-laid-out vector accesses keep ramp indices") {
  for (bool automatic : {false, true}) {
    CAPTURE(automatic);
    SharedTileCase c = lib::mma_a_tile_case(200);
    Schedule s = c.schedule.copy();
    PassContext ctx;
    if (automatic) {
      lib::add_bank_conflict_passes(ctx);
    } else {
      s[c.tile].swizzle(2, 3, 3);
    }
    LoweredFunc f = lower(s, c.args(), c.name, ctx);
    int vector_accesses = 0, ramps = 0;
    auto count = [&](const Var& buffer, const Expr& index) {
      if (buffer.name() != "A.shared" || index.dtype().lanes == 1) return;
      ++vector_accesses;
      ramps += index.as<RampNode>() != nullptr;
    };
    struct Finder : IRVisitor {
      std::function<void(const Var&, const Expr&)> found;
      void visit(const LoadNode* op) override {
        found(op->buffer, op->index);
        IRVisitor::visit(op);
      }
      void visit(const StoreNode* op) override {
        found(op->buffer, op->index);
        IRVisitor::visit(op);
      }
    } finder;
    finder.found = count;
    finder.visit_stmt(f.body);
    CHECK(vector_accesses == 2);  // the 128-bit store and the 32-bit fragment load
    CHECK(ramps == vector_accesses);
  }
}

TEST_CASE("bank conflicts: the tiled GEMM's two double-buffered tiles: analysis, automatic mode, results") {
  const int n = 40;  // 3 x 3 blocks of 16 x 16, the last ones partial; k in 3 steps
  for (bool double_buffered : {false, true}) {
    for (bool automatic : {false, true}) {
      CAPTURE(double_buffered);
      CAPTURE(automatic);
      lib::TiledGemm g = lib::gpu_tiled_gemm(n, 16);
      Schedule s = g.schedule.copy();
      if (double_buffered)
        for (const Ref<StageNode>& st : s->stages)
          if (st->scope == "shared") Stage(st.get()).double_buffer();
      PassContext ctx;
      std::shared_ptr<lib::AutoBankConflicts> done;
      if (automatic) done = lib::add_bank_conflict_passes(ctx);
      LoweredFunc f = lower(s, {g.A, g.B, g.C}, "gemm", ctx);
      Buffer<float> a({n, n}), b({n, n}), c({n, n});
      for (int64_t i = 0; i < a.num_elements(); ++i) {
        a.data()[i] = static_cast<float>(i % 13) - 6.0f;
        b.data()[i] = static_cast<float>(i % 7) - 3.0f;
      }
      SimReport sim = simulate(f, {a, b, c});
      int64_t wrong = 0;
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          float acc = 0.0f;
          for (int k = 0; k < n; ++k) acc += a(i, k) * b(k, j);
          wrong += c(i, j) != acc;
        }
      CHECK(wrong == 0);
      lib::BankReport analytic = lib::analyze_bank_conflicts(f);
      check_analysis_matches(sim, analytic);
      if (automatic)
        for (const BankConflictFix& fix : done->fixes) CHECK(fix.after_conflicts() <= fix.before_conflicts());
    }
  }
}

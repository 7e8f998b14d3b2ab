// The liveness-based shared-memory planner on the code shapes where TVM's merge pass misses reuse
// (apache/tvm#17375): buffers allocated inside a batch loop and a Stream-K style persistent loop;
// the barriers its reuse needs; the cases where sharing would be wrong (a loop-carried buffer, no
// place for a barrier in between); and the planned layout run on the simulator.
#include "../runtime/sim_test_util.hpp"
#include "../support/count_stmts.hpp"
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/lower/plan_shared_memory.hpp>
#include <loom/lower/thread_sync.hpp>

using namespace loom;
using namespace loom::test;

namespace {

/// A GEMM main loop over k.outer with 16x16 tiles of A and B staged in shared memory (allocated
/// inside the loop, barriers before and after, as the lowering places them).
Stmt main_loop(const BufferParam& A, const BufferParam& B, const Var& acc, const Var& tx, const Var& ko,
               const Expr& row0) {
  Var As("A.shared", handle_type), Bs("B.shared", handle_type), ki("ki");
  Stmt step =
      seq({syncthreads(), st(As, load(A, row0 + ko * 16 + tx), tx), st(Bs, load(B, ko * 256 + tx), tx),
           syncthreads(),
           loop(ki, 0, 16, st(acc, ld(acc, f32, 0) + ld(As, f32, ki) * ld(Bs, f32, ki * 16 + tx % 16), 0)),
           syncthreads()});
  return loop(ko, 0, 4, allocate(As, f32, 256, "shared", allocate(Bs, f32, 256, "shared", step)));
}

/// An epilogue staging the results of a block in a 2 KB shared buffer before writing them out.
Stmt epilogue(const BufferParam& C, const Var& acc, const Var& tx, const Expr& out0,
              const std::string& name) {
  Var Cs(name, handle_type);
  Stmt body = seq({st(Cs, ld(acc, f32, 0), tx), st(Cs, ld(acc, f32, 0) * 2.0f, tx + 256), syncthreads(),
                   store(C, ld(Cs, f32, 255 - tx) + ld(Cs, f32, 511 - tx), out0 + tx)});
  return allocate(Cs, f32, 512, "shared", body);
}

/// `batches` GEMMs, one after the other in a loop over b (just one: no loop, b = 0).
LoweredFunc batched_gemm(bool barrier_after_main_loop, int batches = 4) {
  BufferParam A = buffer_param("A", f32, {batches * 1024}), B = buffer_param("B", f32, {1024}),
              C = buffer_param("C", f32, {batches * 256});
  Var tx("tx"), b_var("b"), ko("ko"), acc("acc", handle_type);
  const Expr b = batches > 1 ? Expr(b_var) : Expr(0);
  Stmt mainloop = main_loop(A, B, acc, tx, ko, b * 1024);
  if (!barrier_after_main_loop) {
    // The same loop without its trailing barrier.
    const ForNode* f = mainloop.as<ForNode>();
    const AllocateNode* a = f->body.as<AllocateNode>();
    const AllocateNode* bb = a->body.as<AllocateNode>();
    std::vector<Stmt> steps = bb->body.as<SeqNode>()->seq;
    steps.pop_back();
    mainloop = ForNode::make(
        f->loop_var, f->min, f->extent, f->kind,
        AllocateNode::make(a->buffer, a->dtype, a->extents, a->scope,
                           AllocateNode::make(bb->buffer, bb->dtype, bb->extents, bb->scope, seq(steps))));
  }
  Stmt batch = seq({st(acc, 0.0f, 0), mainloop, epilogue(C, acc, tx, b * 256, "C.shared")});
  if (batches > 1) batch = loop(b_var, 0, batches, batch);
  Stmt body = bind(tx, "threadIdx.x", 256, allocate(acc, f32, 1, "local", batch));
  return make_func("batched_gemm", {param(A), param(B), param(C)}, body);
}

/// The memory passes that run before codegen: plan the shared buffers, then place the barriers.
LoweredFunc with_memory_passes(LoweredFunc f) {
  f.body = insert_thread_sync(merge_shared_memory(f.body));
  return f;
}

/// What the batched GEMM computes: C[b, t] = 3 * acc(b, 255 - t), acc the 4x16-step dot product.
std::vector<float> batched_gemm_reference(const Buffer<float>& a, const Buffer<float>& b, int batches) {
  std::vector<float> c(static_cast<size_t>(batches * 256));
  for (int batch = 0; batch < batches; ++batch)
    for (int t = 0; t < 256; ++t) {
      const int u = 255 - t;
      float acc = 0.0f;
      for (int ko = 0; ko < 4; ++ko)
        for (int ki = 0; ki < 16; ++ki)
          acc += a(batch * 1024 + ko * 16 + ki) * b(ko * 256 + ki * 16 + u % 16);
      c[static_cast<size_t>(batch * 256 + t)] = acc + acc * 2.0f;
    }
  return c;
}

/// Runs the batched GEMM on the simulator (races are errors) and checks its result.
SimReport run_batched_gemm(const LoweredFunc& f, int batches = 4) {
  Buffer<float> a({batches * 1024}), b({1024}), c({batches * 256});
  fill_random(a, 3);
  fill_random(b, 4);
  SimReport report = simulate(f, {a, b, c});
  const std::vector<float> expected = batched_gemm_reference(a, b, batches);
  for (int i = 0; i < batches * 256; ++i)
    REQUIRE(c(i) == doctest::Approx(expected[static_cast<size_t>(i)]).epsilon(1e-5));
  return report;
}

}  // namespace

TEST_CASE("shared-memory plan: a batched GEMM's epilogue buffer reuses the main loop's tiles") {
  LoweredFunc f = with_memory_passes(batched_gemm(true));
  SharedMemoryPlan plan = plan_shared_memory(f.body);
  REQUIRE(plan.buffers.size() == 3);
  MESSAGE("batched GEMM: " << plan.naive_bytes << " bytes without planning, " << plan.total_bytes
                           << " planned, " << plan.saved_bytes() << " bytes saved");
  CHECK(plan.naive_bytes == 1024 + 1024 + 2048);
  CHECK(plan.total_bytes == 2048);
  CHECK(plan.saved_bytes() == 2048);
  // The two tiles are live together; the epilogue's buffer overlaps both of them.
  const auto* as = plan.find("A.shared");
  const auto* bs = plan.find("B.shared");
  const auto* cs = plan.find("C.shared");
  CHECK(as->offset != bs->offset);
  CHECK(cs->offset == 0);
  // The barriers were all there already: the planner's reuse added none.
  CHECK(count_barriers(f.body) == count_barriers(insert_thread_sync(batched_gemm(true).body)));

  // The generated kernel places the buffers in one 2 KB block, and NVRTC compiles it.
  cuda::CudaModule m = cuda::codegen_cuda(f);
  MESSAGE(m.source);
  CHECK(m.source.find("__shared__ __align__(16) unsigned char loom_smem[2048];  // 2048 bytes fewer") !=
        std::string::npos);
  CHECK(m.kernels.at(0).static_shared_bytes == 2048);
  CHECK(m.kernels[0].shared_bytes_saved == 2048);
  if (cuda_test::have_nvrtc()) {
    runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, "batched_gemm", "sm_80");
    if (auto r = runtime::cuda::run_ptxas(out.ptx, "sm_80", "batched_gemm_kernel0")) {
      MESSAGE(r->text);
      CHECK(r->shared_bytes == 2048);
    }
  }

  // The simulator runs the planned layout: one 2 KB block, the right result, no race.
  SimReport report = run_batched_gemm(f);
  CHECK(report.launches.at(0).shared_bytes_per_block == 2048);
  CHECK(report.races.empty());
}

TEST_CASE("shared-memory plan: reuse with no barrier between the last read and the next write adds one") {
  // One GEMM, its main loop without a trailing barrier: a slow warp may still read B.shared while a
  // fast one writes the epilogue's buffer over it. The plan still shares the bytes, and
  // insert_thread_sync, which sees the overlap, puts a barrier before the epilogue's first write.
  LoweredFunc unplanned = batched_gemm(false, 1);
  LoweredFunc planned = unplanned;
  planned.body = merge_shared_memory(unplanned.body);
  CHECK(plan_shared_memory(planned.body).saved_bytes() == 2048);
  CHECK(placed_shared_buffers(planned.body).size() == 3);

  // Without that barrier the simulator sees the race on the shared bytes.
  std::string error = "(no error)";
  try {
    run_batched_gemm(planned, 1);
  } catch (const Error& e) {
    error = e.what();
  }
  MESSAGE(error);
  CHECK(error.find("shared-memory data races") != std::string::npos);
  CHECK(error.find("C.shared") != std::string::npos);

  // With it, the result is right and race-free: the one barrier the reuse needs, and no more.
  LoweredFunc synced = with_memory_passes(unplanned);
  CHECK(count_barriers(synced.body) == count_barriers(insert_thread_sync(unplanned.body)) + 1);
  SimReport report = run_batched_gemm(synced, 1);
  CHECK(report.launches.at(0).shared_bytes_per_block == 2048);

  // In the batched loop, the barrier that C.shared's own reuse across batches needs also covers
  // the planned reuse: none is added.
  LoweredFunc batched = batched_gemm(false);
  CHECK(count_barriers(with_memory_passes(batched).body) == count_barriers(insert_thread_sync(batched.body)));
  run_batched_gemm(with_memory_passes(batched));
}

TEST_CASE("shared-memory plan: no reuse where no barrier can separate the buffers") {
  // X's last read and Y's first write are in one thread-dependent branch: a barrier cannot go
  // between them (every thread of the block must reach it), so they keep bytes of their own.
  BufferParam O = buffer_param("O", f32, {256});
  Var tx("tx"), X("X.shared", handle_type), Y("Y.shared", handle_type);
  Stmt branch = IfThenElseNode::make(tx < 128, seq({st(X, 1.0f, tx), store(O, ld(X, f32, tx), tx),
                                                    st(Y, 2.0f, tx), store(O, ld(Y, f32, tx), tx + 128)}));
  Stmt body =
      bind(tx, "threadIdx.x", 256, allocate(X, f32, 128, "shared", allocate(Y, f32, 128, "shared", branch)));
  SharedMemoryPlan plan = plan_shared_memory(body);
  CHECK(plan.saved_bytes() == 0);
  CHECK(placed_shared_buffers(merge_shared_memory(body)).empty());
}

TEST_CASE("shared-memory plan: Stream-K style persistent loop, fix-up buffer reuses the MAC tiles") {
  // A persistent CTA walks its share of MAC iterations; after the loop over its units of work it
  // stages a partial tile for the fix-up. Buffers allocated inside the work loop are live per
  // iteration only, so the fix-up buffer (allocated in the same loop, after) fits in their space.
  BufferParam A = buffer_param("A", f32, {8 * 1024}), B = buffer_param("B", f32, {1024}),
              C = buffer_param("C", f32, {8 * 256}), W = buffer_param("W", f32, {8 * 512});
  Var tx("tx"), bx("bx"), unit("unit"), ko("ko"), acc("acc", handle_type);
  Expr tile = bx * 2 + unit;
  Stmt fixup = epilogue(W, acc, tx, tile * 256, "partial.shared");
  Stmt work = loop(unit, 0, 2,
                   seq({st(acc, 0.0f, 0), main_loop(A, B, acc, tx, ko, tile * 1024), fixup, syncthreads()}));
  Stmt body = bind(bx, "blockIdx.x", 4, bind(tx, "threadIdx.x", 256, allocate(acc, f32, 1, "local", work)));
  LoweredFunc f = make_func("streamk", {param(A), param(B), param(C), param(W)}, body);
  SharedMemoryPlan plan = plan_shared_memory(f.body);
  MESSAGE("Stream-K shape: " << plan.naive_bytes << " bytes without planning, " << plan.total_bytes
                             << " planned, " << plan.saved_bytes() << " bytes saved");
  CHECK(plan.saved_bytes() == 2048);
  CHECK(plan.find("partial.shared")->offset == 0);
}

TEST_CASE(
    "shared-memory plan: a buffer allocated outside a loop and used across it stays live over the loop") {
  // X is written in one iteration and read in the next (a carried buffer): Y, used in the same
  // loop, must not share its memory even with barriers all around.
  BufferParam O = buffer_param("O", f32, {256});
  Var tx("tx"), i("i"), X("X.shared", handle_type), Y("Y.shared", handle_type);
  Stmt iteration =
      seq({syncthreads(), store(O, ld(X, f32, 255 - tx), tx), syncthreads(), st(X, 1.0f, tx), syncthreads(),
           allocate(Y, f32, 256, "shared",
                    seq({st(Y, 2.0f, tx), syncthreads(), store(O, ld(Y, f32, 255 - tx), tx)})),
           syncthreads()});
  Stmt body = bind(tx, "threadIdx.x", 256,
                   allocate(X, f32, 256, "shared", seq({st(X, 0.0f, tx), loop(i, 0, 4, iteration)})));
  SharedMemoryPlan plan = plan_shared_memory(body);
  CHECK(plan.saved_bytes() == 0);
  CHECK(plan.find("X.shared")->offset != plan.find("Y.shared")->offset);
}

TEST_CASE("shared-memory plan: a lowered chain of shared stages runs in planned memory on the simulator") {
  // A's tile, T1 = 2 * A and T2 = T1 + 1 all live in shared memory of one block; A's tile is dead
  // once T1 is computed, so T2 takes its bytes, behind a barrier that insert_thread_sync adds.
  // 1000 elements in tiles of 64: the last block is partial.
  const int n = 1000, tile = 64;
  Tensor A = placeholder({n}, f32, "A");
  Tensor T1 = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "T1");
  Tensor T2 = compute(
      {n}, [&](Expr i) { return T1(i) + 1.0f; }, "T2");
  Tensor C = compute(
      {n}, [&](Expr i) { return T2(i) * 3.0f; }, "C");
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, "shared", {T1});
  auto [bx, tx] = s[C].split(C.axis(0), tile);
  s[C].bind(bx, thread_axis("blockIdx.x"));
  s[C].bind(tx, thread_axis("threadIdx.x"));
  for (const Tensor& t : {T2, T1, AS}) {  // consumers first: compute_at needs its uses placed
    s[t].set_scope("shared");
    s[t].compute_at(s[C], bx);
    s[t].bind(t.axis(0), thread_axis("threadIdx.x"));
  }
  LoweredFunc f = lower(s, {A, C}, "shared_chain");
  const std::vector<PlacedSharedBuffer> placed = placed_shared_buffers(f.body);
  REQUIRE(placed.size() == 3);
  int64_t planned = 0;
  for (const PlacedSharedBuffer& b : placed) planned = std::max(planned, b.offset + b.bytes);
  CHECK(planned == 2 * tile * 4);

  Kernel k = build(s, {A, C}, Target::cuda_sim(), "shared_chain");
  Buffer<float> a({n}), c({n});
  cuda_test::fill(a, 5);
  k(a, c);
  for (int i = 0; i < n; ++i) REQUIRE(c(i) == (a(i) * 2.0f + 1.0f) * 3.0f);
  SimReport report = k.sim_report();
  CHECK(report.launches.at(0).shared_bytes_per_block == 2 * tile * 4);
  CHECK(report.races.empty());
  CHECK(report.uninitialized_reads.empty());
}

// The liveness-based shared-memory planner on the code shapes where TVM's merge pass misses reuse
// (apache/tvm#17375): buffers allocated inside a batch loop and a Stream-K style persistent loop;
// and the cases where sharing would be wrong (a loop-carried buffer, no barrier in between).
#include "../runtime/sim_test_util.hpp"
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/codegen/cuda/shared_memory_plan.hpp>

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

LoweredFunc batched_gemm(bool barrier_after_main_loop) {
  BufferParam A = buffer_param("A", f32, {4 * 1024}), B = buffer_param("B", f32, {1024}),
              C = buffer_param("C", f32, {4 * 256});
  Var tx("tx"), b("b"), ko("ko"), acc("acc", handle_type);
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
  Stmt batch = loop(b, 0, 4, seq({st(acc, 0.0f, 0), mainloop, epilogue(C, acc, tx, b * 256, "C.shared")}));
  Stmt body = bind(tx, "threadIdx.x", 256, allocate(acc, f32, 1, "local", batch));
  return make_func("batched_gemm", {param(A), param(B), param(C)}, body);
}

}  // namespace

TEST_CASE("shared-memory plan: a batched GEMM's epilogue buffer reuses the main loop's tiles") {
  LoweredFunc f = batched_gemm(true);
  cuda::SharedMemoryPlan plan = cuda::plan_shared_memory(f.body);
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
}

TEST_CASE("shared-memory plan: no reuse without a barrier between the last read and the next write") {
  // Without the barrier after the main loop, a slow warp may still read B.shared while a fast one
  // writes the epilogue's buffer over it.
  cuda::SharedMemoryPlan plan = cuda::plan_shared_memory(batched_gemm(false).body);
  CHECK(plan.saved_bytes() == 0);
  CHECK(plan.total_bytes == plan.naive_bytes);
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
  cuda::SharedMemoryPlan plan = cuda::plan_shared_memory(f.body);
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
  cuda::SharedMemoryPlan plan = cuda::plan_shared_memory(body);
  CHECK(plan.saved_bytes() == 0);
  CHECK(plan.find("X.shared")->offset != plan.find("Y.shared")->offset);
}

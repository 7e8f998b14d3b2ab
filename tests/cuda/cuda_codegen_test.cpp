// CUDA C generation: the text of kernels for the schedules GPU users write (shared tiles, local
// accumulators, vectors, cross-thread reductions, f16/bf16, dynamic shared memory) and the errors
// for programs that cannot run on a GPU.
#include "../runtime/sim_test_util.hpp"
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>

using namespace loom;
using namespace loom::test;
using namespace loom::cuda_test;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

cuda::CudaModule gen(const Case& c) { return cuda::codegen_cuda(lower(c.s, c.args, c.name)); }

}  // namespace

TEST_CASE("cuda codegen: a tiled GEMM has shared tiles, a local accumulator, barriers and launch bounds") {
  cuda::CudaModule m = gen(tiled_gemm(64));
  const std::string& src = m.source;
  MESSAGE(src);
  CHECK(has(src, "extern \"C\" __global__ void __launch_bounds__(256) gemm_kernel0("));
  CHECK(has(src, "const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)"));
  CHECK(has(src, "__shared__ __align__(16) float A_shared[256];"));
  CHECK(has(src, "__shared__ __align__(16) float B_shared[256];"));
  CHECK(has(src, "float C_local[1];"));
  CHECK(has(src, "__syncthreads();"));
  CHECK(has(src, "const int threadIdx_x = (int)threadIdx.x;"));
  REQUIRE(m.kernels.size() == 1);
  const cuda::KernelCode& k = m.kernels[0];
  CHECK(k.threads_per_block == 256);
  CHECK(k.static_shared_bytes == 2 * 256 * 4);
  CHECK(to_string(k.kernel.extents[3]) == "4");   // blockIdx.x
  CHECK(to_string(k.kernel.extents[0]) == "16");  // threadIdx.x
}

TEST_CASE("cuda codegen: symbolic sizes become kernel parameters and launch extents evaluated at launch") {
  cuda::CudaModule m = gen(elementwise(-1));
  MESSAGE(m.source);
  CHECK(has(m.source, "(const float* __restrict__ A, float* __restrict__ B, int n)"));
  CHECK(has(m.source, "__launch_bounds__(128)"));
  const std::string grid = to_string(m.kernels.at(0).kernel.extents[3]);
  CHECK(has(grid, "n"));
  // The host evaluates it: n = 1000 -> 8 blocks.
  runtime::cuda::HostEnv env;
  env.ints[m.kernels[0].kernel.params[2].var.get()] = 1000;
  CHECK(runtime::cuda::launch_dims(m.kernels[0], env, "test").grid[0] == 8);
}

TEST_CASE("cuda codegen: vectorized loops load and store float4") {
  Tensor A = placeholder({4096}, f32, "A");
  Tensor B = compute(
      {4096}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 512);
  auto [to, ti] = s[B].split(xi, 4);
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(to, thread_axis("threadIdx.x"));
  s[B].vectorize(ti);
  std::string src = cuda::codegen_cuda(lower(s, {A, B}, "scale")).source;
  MESSAGE(src);
  CHECK(has(src, "const float4 A_v = *reinterpret_cast<const float4*>(A + "));
  CHECK(has(src, "*reinterpret_cast<float4*>(B + "));
  CHECK(has(src, "make_float4((A_v.x * 2.0f), (A_v.y * 2.0f), (A_v.z * 2.0f), (A_v.w * 2.0f))"));

  // float2 for two lanes; a misaligned base falls back to lanes.
  BufferParam X = buffer_param("X", f32, {64}), Y = buffer_param("Y", f32, {64});
  Var tx("tx");
  Stmt body =
      bind(tx, "threadIdx.x", 16,
           seq({store(Y, load(X, RampNode::make(tx * 2, 1, 2)), RampNode::make(tx * 2, 1, 2)),
                store(Y, load(X, RampNode::make(tx * 2 + 1, 1, 2)), RampNode::make(tx * 2 + 32, 1, 2)),
                store(Y, load(X, RampNode::make(tx * 2, 1, 2)), RampNode::make(tx * 2 + 33, 1, 2))}));
  std::string src2 = cuda::codegen_cuda(make_func("v2", {param(X), param(Y)}, body)).source;
  MESSAGE(src2);
  CHECK(has(src2, "const float2 X_v = *reinterpret_cast<const float2*>(X + (tx * 2));"));
  CHECK(has(src2, "*reinterpret_cast<float2*>(Y + (tx * 2)) = make_float2(X_v.x, X_v.y);"));
  // A misaligned load is two scalar loads, a misaligned store two scalar stores of the lanes.
  CHECK(has(src2,
            "*reinterpret_cast<float2*>(Y + ((tx * 2) + 32)) = make_float2(X[((tx * 2) + 1)], X[((tx * 2) + "
            "2)]);"));
  CHECK(has(src2, "const float Y_lanes[2] = {X_v_1.x, X_v_1.y};"));
  CHECK(has(src2, "Y[((tx * 2) + 34)] = Y_lanes[1];"));
}

TEST_CASE("cuda codegen: a cross-thread reduction becomes warp shuffles (and shared memory across warps)") {
  SUBCASE("16 lanes: shuffles only") {
    std::string src = gen(row_sum(100, 50)).source;
    MESSAGE(src);
    CHECK(has(src, "loom_shfl_down(red_mask, red_val, off, 16)"));
    CHECK(has(src, "red_val = loom_shfl(red_mask, red_val, 0, 16);"));
    CHECK(has(src, "__shfl_down_sync"));
    CHECK_FALSE(has(src, "__shared__"));
  }
  SUBCASE("128 lanes: shuffles within warps, partials in shared memory") {
    std::string src = gen(row_sum(8, 1000, 128, 4)).source;
    MESSAGE(src);
    CHECK(has(src, "__shared__ float red_buf[16];"));  // 4 rows x 4 warps
    CHECK(has(src, "loom_shfl_down(red_mask, red_val, off, 32)"));
  }
  SUBCASE("a non-power-of-two group: a shared-memory tree") {
    std::string src = gen(row_sum(8, 100, 24, 4)).source;
    MESSAGE(src);
    CHECK(has(src, "shared-memory tree"));
    CHECK(has(src, "__shared__ float red_buf[96];"));
  }
}

TEST_CASE("cuda codegen: the allreduce plan follows the reduced thread dimensions") {
  using K = AllreducePlan::Kind;
  CHECK(plan_allreduce({16, 32, 1}, {true, false, false}).kind == K::WarpShuffle);
  CHECK(plan_allreduce({256, 1, 1}, {true, false, false}).kind == K::WarpsAndShared);
  CHECK(plan_allreduce({8, 8, 1}, {false, true, false}).kind == K::SharedTree);  // strided lanes
  CHECK(plan_allreduce({8, 4, 1}, {true, true, false}).kind == K::WarpShuffle);  // 32 consecutive
  CHECK(plan_allreduce({24, 4, 1}, {true, false, false}).kind == K::SharedTree);
  CHECK(plan_allreduce({256, 1, 1}, {true, false, false}).shared_bytes(4) == 8 * 4);
}

TEST_CASE("cuda codegen: f16 and bf16 go through cuda_fp16.h / cuda_bf16.h, arithmetic through float") {
  std::string src = gen(elementwise(256, f16)).source;
  MESSAGE(src);
  CHECK(has(src, "#include <cuda_fp16.h>"));
  CHECK(has(src, "const __half* __restrict__ A"));
  CHECK(has(src, "__float2half_rn((__half2float("));
  std::string bsrc = gen(elementwise(256, bf16)).source;
  CHECK(has(bsrc, "#include <cuda_bf16.h>"));
  CHECK(has(bsrc, "__nv_bfloat16* __restrict__ B"));
}

TEST_CASE("cuda codegen: math functions, floordiv and min/max") {
  Tensor A = placeholder({256}, f32, "A");
  Tensor B = compute(
      {256}, [&](Expr i) { return exp(A(i)) + sqrt(A(floordiv(i, 3))) + max(A(i), 0.0f) + tanh(A(i)); }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 64);
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.x"));
  std::string src = cuda::codegen_cuda(lower(s, {A, B}, "math")).source;
  MESSAGE(src);
  for (const char* part : {"expf(", "sqrtf(", "tanhf(", "loom_max(", "template <typename T>"})
    CHECK(has(src, part));
}

TEST_CASE("cuda codegen: more than 48 KB of shared memory becomes dynamic shared memory") {
  // 80 KB: within sm_80's 163 KB (with the opt-in), over sm_75's 64 KB.
  BufferParam X = buffer_param("X", f32, {20480}), Y = buffer_param("Y", f32, {20480});
  Var tx("tx"), i("i"), S("S", handle_type);
  Stmt body = seq({loop(i, 0, 80, st(S, load(X, i * 256 + tx), i * 256 + tx)), syncthreads(),
                   loop(i, 0, 80, store(Y, ld(S, f32, 20479 - (i * 256 + tx)), i * 256 + tx))});
  body = bind(tx, "threadIdx.x", 256, allocate(S, f32, 20480, "shared", body));
  cuda::CudaModule m = cuda::codegen_cuda(make_func("big", {param(X), param(Y)}, body));
  MESSAGE(m.source);
  CHECK(has(m.source, "extern __shared__ __align__(16) unsigned char loom_smem[];"));
  CHECK(has(m.source, "float* S = reinterpret_cast<float*>(loom_smem + 0LL);"));
  CHECK(to_string(m.kernels.at(0).dynamic_shared_bytes) == "81920i64");
  CHECK(m.kernels[0].static_shared_bytes == 0);
  CHECK_NOTHROW(cuda::validate_module(m, cuda::arch_limits("sm_80"), "build 'big'"));
  CHECK_THROWS_WITH_AS(
      cuda::validate_module(m, cuda::arch_limits("sm_75"), "build 'big' for cuda -arch=sm_75"),
      doctest::Contains("needs 81920 bytes of shared memory per block for S (81920 bytes), more "
                        "than the 65536 bytes sm_75 allows (with the dynamic-shared opt-in)"),
      Error);
}

TEST_CASE("cuda codegen: computation outside every kernel is an error naming the stage") {
  Tensor A = placeholder({64}, f32, "A");
  Tensor B = compute(
      {64}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  CHECK_THROWS_WITH_AS(cuda::codegen_cuda(lower(s, {A, B}, "unbound")),
                       doctest::Contains("stage 'B' is computed outside any kernel"), Error);
  CHECK_THROWS_WITH_AS(cuda::codegen_cuda(lower(s, {A, B}, "unbound")),
                       doctest::Contains("s[T].bind(axis, thread_axis(\"blockIdx.x\"))"), Error);
}

TEST_CASE("cuda codegen: one thread tag bound with two different extents is an error") {
  BufferParam X = buffer_param("X", f32, {64});
  Var t1("t1"), t2("t2");
  Stmt body =
      seq({bind(t1, "threadIdx.x", 32, store(X, 1.0f, t1)), bind(t2, "threadIdx.x", 16, store(X, 2.0f, t2))});
  Var b("b");
  body = bind(b, "blockIdx.x", 1, body);
  CHECK_THROWS_WITH_AS(
      cuda::codegen_cuda(make_func("two", {param(X)}, body)),
      doctest::Contains("binds threadIdx.x with two different extents: 32 (loop 't1') and 16 (loop 't2')"),
      Error);
}

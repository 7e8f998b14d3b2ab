// lib::gpu_gemm (tensor cores: cp.async stages, ldmatrix, mma.sync) in the simulator on shapes that
// no tile divides, its shared-memory banks, its refusals, its CUDA through NVRTC and ptxas; and
// cp.async's asynchrony in the simulator (data lands at wait_group; using it earlier is reported).
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/lib/gpu_gemm.hpp>
#include <loom/te/ptx_intrinsics.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// Simulates g on random inputs and returns the largest |C - ref| / (1 + |ref|), ref in double.
template <typename T>
double simulated_error(const lib::GpuGemm& g, SimReport* report = nullptr) {
  Buffer<T> a({g.m, g.k}), b({g.k, g.n});
  Buffer<float> c({g.m, g.n});
  fill(a, 11);
  fill(b, 12);
  for (int64_t i = 0; i < c.num_elements(); ++i) c.at_flat(i) = std::numeric_limits<float>::quiet_NaN();
  SimReport r = simulate(g.func, {a, b, c});
  if (report) *report = r;
  double worst = 0;
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < g.k; ++p) s += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
      const double got = c(i, j);
      worst = std::max(worst, std::isfinite(got) ? std::abs(got - s) / (1 + std::abs(s)) : 1e30);
    }
  return worst;
}

/// One warp: each lane copies 16 bytes of `src` into the shared tile with cp.async, then (maybe
/// after commit and wait) reads its own bytes back into `out`.
LoweredFunc async_copy_kernel(bool wait, bool read_neighbour) {
  Var tx("tx", i32), bx("bx", i32), src("src", handle_type), out("out", handle_type),
      tile("tile", handle_type);
  std::vector<Stmt> s;
  s.push_back(warp_intrinsic_call(ptx::cp_async_cg16,
                                  {{tile, f16, tx * 8}, {src, f16, tx * 8}, {Var(), i32, Expr(16)}}));
  s.push_back(warp_intrinsic_call(ptx::cp_async_commit, {}));
  if (wait) s.push_back(warp_intrinsic_call(ptx::cp_async_wait(0), {}));
  const Expr from = read_neighbour ? (tx + 1) % 32 * 8 : tx * 8;
  s.push_back(StoreNode::make(out, LoadNode::make(f16, tile, from), tx));
  const Stmt body = AllocateNode::make(tile, f16, {Expr(256)}, scope::shared, SeqNode::make(s));
  return flat_kernel("async_copy", bx, tx, 1, 32, body, {{src, f16, 256}, {out, f16, 32}});
}

}  // namespace

TEST_CASE("gpu_gemm: simulated C matches a double reference on shapes no tile divides") {
  // Element copies (K or N not a multiple of 8) and cp.async (both multiples of 8), f16 and bf16.
  const lib::GpuGemm odd = lib::gpu_gemm(129, 257, 65);
  CHECK_FALSE(odd.async_copies);
  CHECK(simulated_error<half>(odd) < 1e-5);
  const lib::GpuGemm skinny = lib::gpu_gemm(1000, 999, 37);
  CHECK(simulated_error<half>(skinny) < 1e-5);
  const lib::GpuGemm aligned = lib::gpu_gemm(136, 264, 96);
  CHECK(aligned.async_copies);
  SimReport report;
  CHECK(simulated_error<half>(aligned, &report) < 1e-5);
  CHECK(report.races.empty());
  CHECK(simulated_error<bfloat16>(lib::gpu_gemm(136, 264, 96, bf16)) < 1e-5);
  CHECK(simulated_error<half>(lib::gpu_gemm(1, 512, 1024)) < 1e-5);
  // ldmatrix from the padded tiles (rows 80 and 272 bytes apart) is free of bank conflicts.
  for (const char* buffer : {"A_shared", "B_shared"}) {
    CAPTURE(buffer);
    const SimSharedBuffer& b = report.buffer(buffer);
    CHECK(b.load.instructions > 0);
    CHECK(b.load.conflicts() == 0);
  }
}

TEST_CASE("gpu_gemm: 2 and 4 stages and smaller tiles compute the same product") {
  lib::GpuGemmConfig two;
  two.stages = 2;
  CHECK(simulated_error<half>(lib::gpu_gemm(100, 136, 200, f16, two)) < 1e-5);
  lib::GpuGemmConfig four;
  four.stages = 4;
  four.block_m = 64;
  four.block_n = 64;
  four.warp_m = 32;
  four.warp_n = 32;
  CHECK(simulated_error<half>(lib::gpu_gemm(100, 136, 200, f16, four)) < 1e-5);
}

TEST_CASE("gpu_gemm: refusals name the field and the fix") {
  CHECK_THROWS_WITH_AS(
      lib::gpu_gemm(64, 64, 64, f32),
      doctest::Contains("gpu_gemm: input type float32 is not supported; the tensor-core GEMM "
                        "takes float16 or bfloat16"),
      Error);
  lib::GpuGemmConfig c;
  c.warp_n = 24;
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(64, 64, 64, f16, c),
                       doctest::Contains("config.warp_n = 24 must be a multiple of 16"), Error);
  c = {};
  c.stages = 1;
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(64, 64, 64, f16, c), "gpu_gemm: config.stages = 1 must be 2 to 8",
                       Error);
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(0, 64, 64), "gpu_gemm: the shape 0x64x64 must be positive", Error);
}

TEST_CASE("gpu_gemm: NVRTC and ptxas compile it for sm_80 and sm_90 without spills") {
  const lib::GpuGemm g = lib::gpu_gemm(4096, 4096, 4096);
  const cuda::CudaModule m = cuda::codegen_cuda(g.func);
  CHECK(m.source.find("cp.async.cg.shared.global [%0], [%1], 16, %2;") != std::string::npos);
  CHECK(m.source.find("cp.async.wait_group 1;") != std::string::npos);
  if (!have_nvrtc()) return;
  for (const std::string arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, m.name, arch, true);
    CHECK(out.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
    CHECK(out.ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);
    const auto report = runtime::cuda::run_ptxas(out.ptx, arch, m.kernels.at(0).kernel.name);
    if (!report) continue;
    MESSAGE(g.describe() << " on " << arch << ": " << report->text);
    CHECK(report->spill_stores == 0);
    CHECK(report->spill_loads == 0);
    CHECK(report->registers <= 255);
  }
}

TEST_CASE("cp.async in the simulator: the data lands at wait_group, and a read before it is reported") {
  Buffer<half> src({256}), out({32});
  for (int64_t i = 0; i < 256; ++i) src.at_flat(i) = static_cast<half>(static_cast<float>(i % 50));
  simulate(async_copy_kernel(true, false), {src, out});
  for (int64_t i = 0; i < 32; ++i)
    CHECK(static_cast<float>(out.at_flat(i)) == static_cast<float>(i * 8 % 50));
  CHECK_THROWS_WITH_AS(
      simulate(async_copy_kernel(false, false), {src, out}),
      doctest::Contains("reads bytes 0 to 1 of shared buffer 'tile' while a cp.async of thread "
                        "(0, 0, 0) of block (0, 0, 0) to bytes 0 to 15 is in flight"),
      Error);
  // Another lane's copy, waited for by that lane but with no barrier between: a race.
  SimOptions options;
  options.races_are_errors = false;
  const SimReport r = simulate(async_copy_kernel(true, true), {src, out}, options);
  CHECK_FALSE(r.races.empty());
}

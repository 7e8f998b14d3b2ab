// NVRTC compiles the kernels of many schedules to PTX and cubin (sm_80, sm_90) and ptxas -v
// reports their registers, shared memory and spills. Skips (saying so) without the toolkit.
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/lib/streamk_gemm.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// Compiles the schedule with NVRTC for `arch`, prints ptxas's report and returns it.
std::optional<runtime::cuda::PtxasReport> compile(const Case& c, const std::string& arch = "sm_80") {
  cuda::CudaModule m = cuda::codegen_cuda(lower(c.s, c.args, c.name));
  runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, c.name, arch, /*want_cubin=*/true);
  CHECK(out.ptx.find(".entry " + m.kernels.at(0).kernel.name) != std::string::npos);
  CHECK(out.cubin.size() > 4);
  CHECK(out.cubin.compare(0, 4,
                          "\x7f"
                          "ELF") == 0);
  std::optional<runtime::cuda::PtxasReport> report =
      runtime::cuda::run_ptxas(out.ptx, arch, m.kernels[0].kernel.name);
  if (report) {
    MESSAGE(c.name << " (" << arch << ", NVRTC " << out.milliseconds << " ms):\n" << report->text);
    CHECK(report->spill_stores == 0);
    CHECK(report->spill_loads == 0);
  } else {
    MESSAGE("ptxas not found; " << c.name << " compiled by NVRTC in " << out.milliseconds << " ms");
  }
  return report;
}

}  // namespace

TEST_CASE("nvrtc: elementwise kernels of every dtype compile") {
  if (!have_nvrtc()) return;
  for (DType t : {f32, f64, f16, bf16, i8, i16, i32, i64, u8, u32}) {
    CAPTURE(t.str());
    CHECK_NOTHROW(compile(elementwise(1000, t)));
  }
  CHECK_NOTHROW(compile(elementwise(-1)));  // a symbolic size
}

TEST_CASE("nvrtc: the tiled GEMM with shared tiles uses 2 KB of shared memory and does not spill") {
  if (!have_nvrtc()) return;
  for (const char* arch : {"sm_80", "sm_90"}) {
    auto r = compile(tiled_gemm(256), arch);
    if (r) CHECK(r->shared_bytes == 2 * 16 * 16 * 4);
  }
}

TEST_CASE(
    "nvrtc: the vthread GEMM (2x2 virtual threads of 4x4 elements in registers) compiles without spills") {
  if (!have_nvrtc()) return;
  auto r = compile(vthread_gemm(64));
  if (r) CHECK(r->shared_bytes == 2 * 32 * 8 * 4);
}

TEST_CASE("nvrtc: cross-thread reductions (shuffles, shuffles plus shared, shared tree) compile") {
  if (!have_nvrtc()) return;
  CHECK_NOTHROW(compile(row_sum(100, 50)));
  auto r = compile(row_sum(8, 1000, 128, 4));
  if (r) CHECK(r->shared_bytes == 16 * 4);
  CHECK_NOTHROW(compile(row_sum(8, 100, 24, 4)));
}

TEST_CASE("nvrtc: a compile error carries NVRTC's log and the offending source line") {
  if (!have_nvrtc()) return;
  const std::string source = "extern \"C\" __global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n";
  CHECK_THROWS_WITH_AS(runtime::cuda::nvrtc_compile(source, "broken", "sm_80"),
                       doctest::Contains("broken.cu(2): error: identifier \"undefined_name\" is undefined"),
                       Error);
  CHECK_THROWS_WITH_AS(runtime::cuda::nvrtc_compile(source, "broken", "sm_80"),
                       doctest::Contains("source line 2:   x[0] = undefined_name;"), Error);
  CHECK_THROWS_WITH_AS(runtime::cuda::nvrtc_compile(source, "broken", "gfx90a"),
                       doctest::Contains("unknown CUDA architecture 'gfx90a'"), Error);
}

TEST_CASE("nvrtc: compile time of the tiled GEMM kernel (target: at most 300 ms)") {
  if (!have_nvrtc()) return;
  Case g = tiled_gemm(1024);
  cuda::CudaModule m = cuda::codegen_cuda(lower(g.s, g.args, "gemm"));
  runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, "gemm", "sm_80");
  MESSAGE("loom-bench nvrtc_compile kernel=gemm_kernel0 ms=" << out.milliseconds);
  CHECK(out.milliseconds < 3000);  // generous: machines are shared; the report line is the measure
}

TEST_CASE("nvrtc: the MAC loops of the GPU GEMMs run fused multiply-adds, other code does not contract") {
  // The tiled GEMM marks its k.inner loop fp_contract: a * b + c there becomes __fmaf_rn, and the
  // PTX has fma.rn.f32 where it had mul.rn + add.rn (NVRTC gets --fmad=false: no contraction
  // anywhere else, so results elsewhere stay the simulator's).
  Case g = tiled_gemm(256);
  cuda::CudaModule m = cuda::codegen_cuda(lower(g.s, g.args, "gemm"));
  CHECK(m.source.find("__fmaf_rn(") != std::string::npos);
  Case e = elementwise(1024);  // B = A * 2 + 1, no fp_contract
  cuda::CudaModule plain = cuda::codegen_cuda(lower(e.s, e.args, "elementwise"));
  CHECK(plain.source.find("__fmaf_rn(") == std::string::npos);
  lib::StreamKConfig cfg;
  cfg.sms = 8;
  lib::StreamKGemm sk = lib::streamk_gemm(300, 200, 100, f32, cfg);
  CHECK(cuda::codegen_cuda(sk.func).source.find("__fmaf_rn(") != std::string::npos);
  if (!have_nvrtc()) return;
  runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, "gemm", "sm_80");
  CHECK(out.ptx.find("fma.rn.f32") != std::string::npos);
  runtime::cuda::NvrtcOutput plain_out = runtime::cuda::nvrtc_compile(plain.source, "elementwise", "sm_80");
  CHECK(plain_out.ptx.find("fma.rn.f32") == std::string::npos);
}

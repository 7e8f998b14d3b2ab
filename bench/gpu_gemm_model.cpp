// The performance model of the tensor-core GEMM (lib/gpu_gemm_model.hpp) for an A100 (sm_80) and an
// H100 (sm_90): what fraction of the dense tensor peak lib::gpu_gemm should reach, and why. Runs
// without a GPU. Prints, per architecture, input type (f16, and f32 read as tf32) and shape,
//   loom-bench gpu_gemm_model arch= device= m= n= k= dtype= config=<block_m>x<block_n>x<block_k>/
//     <warp_m>x<warp_n>/s<stages> predicted_tflops= predicted_frac= limiter= blocks_per_sm=
//     warps_per_sm= waves= hmma_per_kstep= ldsm_per_kstep= lds_per_kstep= ldgsts_per_kstep=
//     bar_per_kstep= regs= regs_from=<ptxas|estimate> smem_bytes=
//     sass_hmma_per_kstep= sass_ldsm_per_kstep= sass_lds_per_kstep= sass_ldgsts_per_kstep=
//     sass_bar_per_kstep= sass_insts_per_kstep=   (or sass=unavailable)
// The per-k-step counts are one warp's instructions in one iteration of the main loop: from the
// lowered IR, and from the SASS (cuobjdump, when scripts/sass-tools.sh installed it into the build
// tree, or LOOM_SASS_TOOLS names a folder or venv holding it) where present. regs come from NVRTC's
// PTX through the toolkit's ptxas when both are installed, else the model's estimate. Then the
// same for an H200 (the GPU docs/gpu-measurements.md measured) at its measured shapes, and the
// configurations of its tile sweep on both architectures, and (gpu_gemm_model_l2 lines) sm_80's
// prediction over a range of its unmeasured L2 bandwidth. LOOM_BENCH_QUICK=1 (ctest's smoke run):
// 4096^3 only, without the rest.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_model.hpp>
#include <loom/loom.hpp>

using namespace loom;

#ifndef LOOM_SASS_TOOLS_VENV
#define LOOM_SASS_TOOLS_VENV ""
#endif

namespace {

struct Shape {
  int64_t m, n, k;
};

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

void report(const lib::GpuPerfSpec& spec, const Shape& s, DType input, const lib::GpuGemmConfig& config,
            bool sass) {
  const lib::GpuGemm g = lib::gpu_gemm(s.m, s.n, s.k, input, config);
  const lib::GpuGemmResources r = lib::gpu_gemm_resources(g, spec.arch);
  const lib::GpuGemmPrediction p = lib::predict_gpu_gemm(g, spec, r);
  std::string line = cat(
      "loom-bench gpu_gemm_model arch=", spec.arch, " device=", spec.name, " m=", s.m, " n=", s.n, " k=", s.k,
      " dtype=",
      input == f32               ? "tf32"
      : input.str() == "float16" ? "f16"
                                 : input.str(),
      " config=", g.config.str(),
      g.a_copy_bytes == 16 && g.b_copy_bytes == 16 ? std::string()
                                                   : cat("/copies-A", g.a_copy_bytes, "-B", g.b_copy_bytes),
      " predicted_tflops=", fixed(p.tflops, 1), " predicted_frac=", fixed(p.fraction_of_peak, 3),
      " limiter=", p.limiter, " blocks_per_sm=", p.occupancy.blocks_per_sm, " warps_per_sm=", p.warps_per_sm,
      " waves=", p.waves, " hmma_per_kstep=", p.per_warp.mma, " ldsm_per_kstep=", p.per_warp.ldmatrix,
      " lds_per_kstep=", p.per_warp.shared_loads, " ldgsts_per_kstep=", p.per_warp.cp_async,
      " bar_per_kstep=", p.per_warp.barriers, " regs=", r.registers, " regs_from=", r.registers_from,
      " smem_bytes=", r.shared_bytes);
  if (sass) {
    const char* env = std::getenv("LOOM_SASS_TOOLS");
    const lib::GpuGemmSass x = lib::gpu_gemm_sass(g, spec.arch, env && *env ? env : LOOM_SASS_TOOLS_VENV);
    if (x.available)
      line +=
          cat(" sass_hmma_per_kstep=", fixed(x.hmma, 0), " sass_ldsm_per_kstep=", fixed(x.ldsm, 0),
              " sass_lds_per_kstep=", fixed(x.lds, 0), " sass_ldgsts_per_kstep=", fixed(x.ldgsts, 0),
              " sass_bar_per_kstep=", fixed(x.bar, 0), " sass_insts_per_kstep=", fixed(x.instructions, 0));
    else
      line += " sass=unavailable";
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main() {
  const bool quick = std::getenv("LOOM_BENCH_QUICK") && std::string(std::getenv("LOOM_BENCH_QUICK")) != "0";
  const char* env = std::getenv("LOOM_SASS_TOOLS");
  const lib::GpuGemmSass probe = lib::gpu_gemm_sass(lib::gpu_gemm(128, 128, 4096, f16, lib::GpuGemmConfig{}),
                                                    "sm_80", env && *env ? env : LOOM_SASS_TOOLS_VENV);
  std::printf("gpu_gemm_model: SASS counts %s\n", probe.available
                                                      ? cat("from ", probe.tool).c_str()
                                                      : cat("unavailable: ", probe.unavailable).c_str());
  for (const lib::GpuPerfSpec& spec : {lib::GpuPerfSpec::a100(), lib::GpuPerfSpec::h100()})
    for (const std::string& line : spec.sources)
      std::printf("gpu_gemm_model: %s: %s\n", spec.name.c_str(), line.c_str());

  const std::vector<Shape> shapes =
      quick ? std::vector<Shape>{{4096, 4096, 4096}}
            : std::vector<Shape>{{4096, 4096, 4096}, {2048, 2048, 2048}, {8192, 8192, 8192}, {1000, 999, 37}};
  for (const lib::GpuPerfSpec& spec : {lib::GpuPerfSpec::a100(), lib::GpuPerfSpec::h100()})
    for (DType input : {f16, f32})
      for (const Shape& s : shapes) report(spec, s, input, {}, true);
  if (quick) return 0;

  // The H200 at the shapes docs/gpu-measurements.md measured (f16, the default configuration).
  const lib::GpuPerfSpec h200 = lib::GpuPerfSpec::h200();
  for (const Shape& s : std::vector<Shape>{
           {2048, 2048, 2048}, {4096, 4096, 4096}, {4096, 11008, 4096}, {8192, 8192, 8192}, {1000, 999, 37}})
    report(h200, s, f16, {}, false);

  // The tile sweep's configurations (docs/gpu-measurements.md), and the one the model proposes for
  // sm_80 (128x128x32: two blocks fit an A100's shared memory).
  auto config = [](int bm, int bn, int bk, int wm, int wn, int stages) -> lib::GpuGemmConfig {
    return {bm, bn, bk, wm, wn, stages};  // GpuGemmConfig is an aggregate in this order
  };
  const std::vector<lib::GpuGemmConfig> sweep = {
      config(128, 128, 64, 64, 64, 3), config(128, 128, 32, 64, 64, 3), config(128, 128, 32, 64, 64, 4),
      config(128, 256, 32, 64, 64, 3), config(256, 128, 32, 64, 64, 3), config(128, 256, 64, 64, 64, 3),
      config(128, 128, 32, 32, 64, 4), config(64, 128, 32, 32, 64, 3),  config(128, 128, 64, 64, 32, 3),
      config(128, 128, 64, 64, 64, 2), config(128, 128, 64, 64, 64, 4)};
  for (const lib::GpuPerfSpec& spec : {lib::GpuPerfSpec::a100(), h200})
    for (const Shape& s : std::vector<Shape>{{4096, 4096, 4096}, {8192, 8192, 8192}})
      for (const lib::GpuGemmConfig& c : sweep) report(spec, s, f16, c, false);

  // sm_80's sustained L2 bandwidth is not measured (GpuPerfSpec::a100's sources): the default
  // kernel's and the 128x128x32 one's prediction at 4096^3 f16 over a range of it, up to the
  // nominal 5120 bytes per clock at 1.41 GHz.
  for (const lib::GpuGemmConfig& c : {lib::GpuGemmConfig{}, config(128, 128, 32, 64, 64, 3)}) {
    const lib::GpuGemm g = lib::gpu_gemm(4096, 4096, 4096, f16, c);
    const lib::GpuGemmResources r = lib::gpu_gemm_resources(g, "sm_80");
    for (const double tbps : {3.0, 3.5, 3.87, 4.5, 5.5, 5120 * 1.41e9 / 1e12}) {
      lib::GpuPerfSpec a100 = lib::GpuPerfSpec::a100();
      a100.l2_tbps = tbps;
      const lib::GpuGemmPrediction p = lib::predict_gpu_gemm(g, a100, r);
      std::printf(
          "loom-bench gpu_gemm_model_l2 arch=sm_80 m=4096 n=4096 k=4096 dtype=f16 config=%s l2_tbps=%s "
          "predicted_tflops=%s predicted_frac=%s limiter=%s\n",
          g.config.str().c_str(), fixed(tbps, 2).c_str(), fixed(p.tflops, 1).c_str(),
          fixed(p.fraction_of_peak, 3).c_str(), p.limiter.c_str());
    }
  }
  return 0;
}

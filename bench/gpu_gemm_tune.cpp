// lib::tune_gpu_gemm (lib/gpu_gemm_tuning.hpp): the tensor-core GEMM's tile configuration chosen by
// its performance model on an A100 (sm_80) and an H100 (sm_90), against the default configuration.
// Runs without a GPU: every number is the model's prediction, none a measurement (source=model).
// Prints, per architecture and f16 shape,
//   loom-bench gpu_gemm_tune arch= device= m= n= k= dtype=f16 default_config= default_tflops=
//     tuned_config=<block_m>x<block_n>x<block_k>/<warp_m>x<warp_n>/s<stages> tuned_tflops= speedup=
//     tuned_limiter= tuned_blocks_per_sm= one_block_config= one_block_tflops= regs_from=<ptxas|estimate>
//     candidates= ranked= invalid= refused= does_not_fit= spills= few_blocks= tuning_s= source=model
// candidates counts the distinct configurations tried; ranked those the tuner chose among (two or
// more blocks per SM); invalid those refused by gpu_gemm, not fitting on an SM, or spilling where
// ptxas says so; few_blocks those that run one block per SM, predicted but not ranked (the model's
// least trusted regime), the fastest of which is one_block_config. Registers come from ptxas when NVRTC and
// the CUDA toolkit are installed (about 0.15 s a candidate), else from the model's estimate. Nothing
// is written to the tuning database. LOOM_BENCH_QUICK=1 (ctest's smoke run): one shape on sm_80,
// over block_k 0 and 3 stages only.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_model.hpp>
#include <loom/lib/gpu_gemm_tuning.hpp>
#include <loom/loom.hpp>

using namespace loom;

namespace {

struct Shape {
  int64_t m, n, k;
};

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

void report(const std::string& arch, const Shape& s, const lib::GpuGemmTuneOptions& options) {
  const lib::GpuGemmTuneResult r =
      lib::tune_gpu_gemm(s.m, s.n, s.k, f16, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, options);
  const lib::GpuGemmPrediction& d = r.default_prediction;
  const lib::GpuGemmPrediction& t = r.best_prediction;
  // The fastest prediction the tuner did not rank for having one block per SM.
  const lib::GpuGemmTuneCandidate* one_block = nullptr;
  for (const lib::GpuGemmTuneCandidate& c : r.candidates)
    if (c.skipped == "few blocks" && (!one_block || c.prediction.seconds < one_block->prediction.seconds))
      one_block = &c;
  std::string line =
      cat("loom-bench gpu_gemm_tune arch=", arch, " device=", t.device, " m=", s.m, " n=", s.n, " k=", s.k,
          " dtype=f16 default_config=", lib::gpu_gemm(s.m, s.n, s.k, f16, lib::GpuGemmConfig{}).config.str(),
          " default_tflops=", fixed(d.tflops, 1), " tuned_config=", r.best.str(),
          " tuned_tflops=", fixed(t.tflops, 1));
  line += cat(" speedup=", d.seconds > 0 ? fixed(d.seconds / t.seconds, 3) : "n/a",
              " tuned_limiter=", t.limiter, " tuned_blocks_per_sm=", t.occupancy.blocks_per_sm,
              " one_block_config=", one_block ? one_block->config.str() : "none",
              " one_block_tflops=", one_block ? fixed(one_block->prediction.tflops, 1) : "n/a");
  line += cat(" regs_from=", t.resources.registers_from, " candidates=", r.candidates.size(),
              " ranked=", r.ranked, " invalid=", r.invalid, " refused=", r.refused,
              " does_not_fit=", r.does_not_fit, " spills=", r.spills, " few_blocks=", r.few_blocks,
              " tuning_s=", fixed(r.seconds, 1), " source=model");
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main() {
  const bool quick = std::getenv("LOOM_BENCH_QUICK") && std::string(std::getenv("LOOM_BENCH_QUICK")) != "0";
  lib::GpuGemmTuneOptions options;
  options.database = "off";
  options.measure_top =
      0;  // the model's predictions only, on any machine (bench_gpu_gemm's "tuned" mode measures)
  if (quick) {
    options.block_k = {0};
    options.stages = {3};
    report("sm_80", {1024, 1024, 1024}, options);
    return 0;
  }
  for (const std::string arch : {"sm_80", "sm_90"})
    for (const Shape& s :
         std::vector<Shape>{{4096, 4096, 4096}, {1024, 1024, 1024}, {4096, 4096, 512}, {8192, 8192, 1024}})
      report(arch, s, options);
  return 0;
}

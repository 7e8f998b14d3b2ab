// lib::tune_streamk_gemm (lib/streamk_tuning.hpp): the Stream-K GEMM's decomposition, grid and tile
// chosen by its performance model (lib/streamk_model.hpp) on an A100 (sm_80) and an H100 (sm_90),
// against streamk_gemm's default (the hybrid, as many blocks per SM as the kernel's residency allows)
// and the best data-parallel candidate: the tensor-core main loop on f16, the SIMT one on f32. Runs
// without a GPU: every number is the model's prediction, none a measurement (source=model). Prints,
// per architecture, main loop and shape,
//   loom-bench streamk_tune arch= device= m= n= k= dtype= main_loop=tensor_cores|simt tiles=
//     default=<decomposition>/<blocks per SM> default_tflops= tuned=<decomposition>[/split<s>]/<blocks
//     per SM>/<tile> tuned_tflops= speedup= data_parallel_tflops= tuned_split_tiles=
//     tuned_longest_wait_us= candidates= ranked= refused= does_not_fit= tuning_s= source=model
// and, for the shapes measured on an H200 (docs/gpu-measurements.md), the model's predictions on an
// H200 beside those measurements: f16, the tensor-core hybrid on 132 x 2 blocks and the data-parallel
// gpu_gemm; f32, the SIMT kernel's hybrid and data-parallel plans on 132 x 4 blocks (64 registers,
// the occupancy the GPU gave it):
//   loom-bench streamk_model device=H200-SXM m= n= k= dtype=f16 streamk_hybrid_ms= gpu_gemm_ms=
//     streamk_over_gpu_gemm= source=model
//   loom-bench streamk_simt_model device=H200-SXM m= n= k= dtype=f32 hybrid_ms= measured_hybrid_ms=
//     data_parallel_ms= measured_data_parallel_ms= hybrid_speedup= measured_hybrid_speedup=
//     source=model
// Nothing is written to the tuning database. LOOM_BENCH_QUICK=1 (ctest's smoke run): one shape on
// sm_90 and one model line.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_model.hpp>
#include <loom/lib/streamk_model.hpp>
#include <loom/lib/streamk_simt_model.hpp>
#include <loom/lib/streamk_tuning.hpp>
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

std::string config_text(const lib::StreamKConfig& c) {
  std::string s = lib::decomposition_name(c.decomposition);
  for (char& ch : s)
    if (ch == ' ') ch = '_';
  if (c.decomposition == lib::Decomposition::SplitK) s += cat("/split", c.split_k);
  return cat(s, "/", c.blocks_per_sm);
}

std::string tile_text(const lib::StreamKConfig& c) {
  return c.tensor_cores ? c.tensor_cores->str()
                        : cat(c.tile.bm, "x", c.tile.bn, "x", c.tile.bk, "/", c.thread_m, "x", c.thread_n);
}

void report(const std::string& arch, const Shape& s, DType dtype, const lib::StreamKTuneOptions& options) {
  const lib::StreamKTuneResult r = lib::tune_streamk_gemm(s.m, s.n, s.k, dtype, arch, lib::Layout::RowMajor,
                                                          lib::Layout::RowMajor, options);
  const lib::StreamKPrediction& d = r.default_prediction;
  const lib::StreamKPrediction& t = r.best_prediction;
  double data_parallel = 0;
  for (const lib::StreamKTuneCandidate& c : r.candidates)
    if (c.skipped.empty() && c.config.decomposition == lib::Decomposition::DataParallel &&
        c.prediction.tflops > data_parallel)
      data_parallel = c.prediction.tflops;
  const bool simt = options.main_loop == lib::StreamKMainLoop::Simt;
  std::string tiles;
  if (simt)
    for (const lib::StreamKSimtTile& tile : options.simt_tiles)
      tiles += cat(tiles.empty() ? "" : ",", tile.tile.bm, "x", tile.tile.bn, "x", tile.tile.bk, "/",
                   tile.thread_m, "x", tile.thread_n);
  else
    for (const lib::GpuGemmConfig& tile : options.tiles) tiles += cat(tiles.empty() ? "" : ",", tile.str());
  std::string line =
      cat("loom-bench streamk_tune arch=", arch, " device=", t.device, " m=", s.m, " n=", s.n, " k=", s.k,
          " dtype=", dtype.str(), " main_loop=", simt ? "simt" : "tensor_cores", " tiles=", tiles,
          " default=hybrid/", d.blocks_per_sm, " default_tflops=", fixed(d.tflops, 1),
          " tuned=", config_text(r.best), "/", tile_text(r.best), " tuned_tflops=", fixed(t.tflops, 1));
  line += cat(" speedup=", d.seconds > 0 ? fixed(d.seconds / t.seconds, 3) : "n/a",
              " data_parallel_tflops=", fixed(data_parallel, 1), " tuned_split_tiles=", t.split_tiles,
              " tuned_longest_wait_us=",
              fixed(t.longest_wait_cycles / (lib::GpuPerfSpec::for_arch(arch).clock_ghz * 1e3), 2),
              " candidates=", r.candidates.size(), " ranked=", r.ranked, " refused=", r.refused,
              " does_not_fit=", r.does_not_fit, " tuning_s=", fixed(r.seconds, 1), " source=model");
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

/// The hybrid on 132 x 2 blocks (as bench_gpu_gemm ran it) and gpu_gemm, predicted on an H200.
void model_line(const Shape& s) {
  const lib::GpuPerfSpec spec = lib::GpuPerfSpec::h200();
  lib::StreamKConfig config;
  config.tensor_cores = lib::GpuGemmConfig{};
  config.sms = spec.device.sms;
  config.blocks_per_sm = 2;
  const lib::StreamKGemm g = lib::streamk_gemm(s.m, s.n, s.k, f16, config);
  const lib::GpuGemm dp = lib::gpu_gemm(s.m, s.n, s.k, f16, lib::GpuGemmConfig{});
  const lib::GpuGemmResources resources = lib::gpu_gemm_resources(dp, spec.arch);
  const lib::StreamKPrediction p = lib::predict_streamk_gemm(g, spec, resources);
  const lib::GpuGemmPrediction q = lib::predict_gpu_gemm(dp, spec, resources);
  std::printf(
      "loom-bench streamk_model device=%s m=%lld n=%lld k=%lld dtype=f16 streamk_hybrid_ms=%.3f "
      "gpu_gemm_ms=%.3f "
      "streamk_over_gpu_gemm=%.3f source=model\n",
      spec.name.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.n),
      static_cast<long long>(s.k), p.seconds * 1e3, q.seconds * 1e3, p.seconds / q.seconds);
  std::fflush(stdout);
}

/// The SIMT kernel's hybrid and data-parallel plans on 132 x 4 blocks, predicted on an H200 beside
/// what the H200 measured (docs/gpu-measurements.md, sixth session).
void simt_model_line(const Shape& s, double measured_hybrid_ms, double measured_data_parallel_ms) {
  const lib::GpuPerfSpec spec = lib::GpuPerfSpec::h200();
  auto predict = [&](lib::Decomposition d) {
    lib::StreamKConfig config;
    config.sms = spec.device.sms;
    config.blocks_per_sm = 4;
    config.decomposition = d;
    const lib::StreamKGemm g = lib::streamk_gemm(s.m, s.n, s.k, f32, config);
    lib::GpuGemmResources resources = lib::streamk_simt_resources(g);
    resources.registers = 64;  // the GPU's occupancy: four blocks per SM
    return lib::predict_streamk_gemm(g, spec, resources).seconds * 1e3;
  };
  const double hybrid = predict(lib::Decomposition::StreamKHybrid),
               data_parallel = predict(lib::Decomposition::DataParallel);
  std::printf(
      "loom-bench streamk_simt_model device=%s m=%lld n=%lld k=%lld dtype=f32 hybrid_ms=%.3f "
      "measured_hybrid_ms=%.3f data_parallel_ms=%.3f measured_data_parallel_ms=%.3f hybrid_speedup=%.2f "
      "measured_hybrid_speedup=%.2f source=model\n",
      spec.name.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.n),
      static_cast<long long>(s.k), hybrid, measured_hybrid_ms, data_parallel, measured_data_parallel_ms,
      data_parallel / hybrid, measured_data_parallel_ms / measured_hybrid_ms);
  std::fflush(stdout);
}

}  // namespace

int main() {
  const bool quick = std::getenv("LOOM_BENCH_QUICK") && std::string(std::getenv("LOOM_BENCH_QUICK")) != "0";
  lib::StreamKTuneOptions options;
  options.database = "off";
  options.measure_top = 0;  // the model's predictions only (bench_gpu_gemm's "streamk_tuned" mode measures)
  lib::StreamKTuneOptions simt = options;
  simt.main_loop = lib::StreamKMainLoop::Simt;
  if (quick) {
    report("sm_90", {1024, 1024, 1024}, f16, options);
    report("sm_90", {1024, 1024, 1024}, f32, simt);
    model_line({2048, 2048, 2048});
    simt_model_line({1024, 1024, 1024}, 0.100, 0.143);
    return 0;
  }
  for (const Shape& s : std::vector<Shape>{
           {2048, 2048, 2048}, {4096, 4096, 4096}, {4096, 11008, 4096}, {8192, 8192, 8192}, {1000, 999, 37}})
    model_line(s);
  simt_model_line({1024, 1024, 1024}, 0.100, 0.143);
  simt_model_line({1000, 1000, 1000}, 0.112, 0.145);
  simt_model_line({2048, 2048, 2048}, 0.690, 0.728);
  simt_model_line({4096, 4096, 4096}, 5.439, 5.622);
  simt_model_line({1024, 1024, 8192}, 0.727, 1.072);
  simt_model_line({4096, 11008, 4096}, 13.797, 14.065);
  const std::vector<Shape> shapes = {{1024, 1024, 1024}, {1024, 1024, 8192}, {2048, 2048, 2048},
                                     {3072, 3072, 4096}, {4096, 4096, 4096}, {1000, 999, 37}};
  for (const std::string arch : {"sm_80", "sm_90"})
    for (const Shape& s : shapes) report(arch, s, f16, options);
  for (const std::string arch : {"sm_80", "sm_90"})
    for (const Shape& s : shapes) report(arch, s, f32, simt);
  return 0;
}

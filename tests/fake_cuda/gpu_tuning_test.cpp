// lib's GPU tuners with a GPU present, through the stand-in libcuda (an sm_80 "Fake A100" whose
// kernels are logged, not run): the tuner builds and launches the default configuration to measure
// it, finds its C left as it was (NaN, where the host computes the product), measures nothing else,
// says why, and records only the model's predictions; a GPU of another architecture measures nothing; the
// lookups read times measured on the GPU present before the model's predictions, and ignore another GPU's.
// Whether the measuring ran in worker processes (this process had not loaded the driver) or here.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/gpu_gemm_tuning.hpp>
#include <loom/lib/streamk_tuning.hpp>
#include <loom/tune/database.hpp>

#include "fake_cuda_log.hpp"

using namespace loom;
using namespace loom::lib;

namespace {

/// A fresh directory for one test's database, removed afterwards.
struct TuningDir {
  std::string path;
  TuningDir() {
    char tmpl[] = "/tmp/loom-fake-gpu-tune-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    REQUIRE(made != nullptr);
    path = made;
  }
  ~TuningDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TuningDir(const TuningDir&) = delete;
  TuningDir& operator=(const TuningDir&) = delete;
};

/// Two 64x128x64 candidates of a 128x128x64 f16 GEMM (2 and 3 stages), both ranked on an A100.
GpuGemmTuneOptions two_candidates(const std::string& database) {
  GpuGemmTuneOptions o;
  o.block_m = {64};
  o.block_n = {128};
  o.block_k = {0};
  o.warp_m = {64};
  o.warp_n = {64};
  o.stages = {2, 3};
  o.database = database;
  return o;
}

tune::Record measured_record(const std::string& workload, const std::string& target, tune::Assignment knobs,
                             double ms) {
  tune::Record r;
  r.workload = workload;
  r.name = "written by the test";
  r.target = target;
  r.knobs = std::move(knobs);
  r.ms = ms;
  return r;
}

}  // namespace

TEST_CASE(
    "gpu tuning with a GPU whose kernels compute nothing: the default's C is checked, nothing is timed") {
  TuningDir dir;
  GpuGemmTuneOptions o = two_candidates(dir.path + "/tuning.jsonl");
  o.measure_top = 2;
  fake_cuda::take_log();
  // Run alone (ctest's fake_cuda.tuning_in_workers), this process has not loaded the driver, and
  // forked workers measure; after the other tests here, it has, and the measuring runs here.
  const bool in_workers = !runtime::cuda::driver_loaded();
  CAPTURE(in_workers);
  const GpuGemmTuneResult r =
      tune_gpu_gemm(128, 128, 64, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o);
  CHECK(r.device == "Fake A100");
  if (in_workers) {
    CHECK(r.measured_in == "worker processes");
    CHECK(!runtime::cuda::driver_loaded());  // the tuner did not load it here
  } else {
    CHECK(r.measured_in.find("this process (it had loaded the CUDA driver before tuning") == 0);
  }
  CHECK(r.measured == 0);
  CHECK(r.default_measured_ms == 0);
  CHECK(fake_cuda::has(r.measure_failure, "the default configuration could not be measured"));
  CHECK(
      fake_cuda::has(r.measure_failure, "the reference (the default configuration) computes C[0][0] = nan"));
  for (const GpuGemmTuneCandidate& c : r.candidates) CHECK(c.measured_ms == 0);
  // The default's kernel was launched once, on C filled with NaN, and copied back; nothing else ran.
  // A worker's calls are logged in the worker: none here.
  const std::string log = fake_cuda::take_log();
  if (in_workers) {
    CHECK(!fake_cuda::has(log, "launch"));
  } else {
    CHECK(fake_cuda::has(log, "launch gpu_gemm"));
    CHECK(log.find("launch") == log.rfind("launch"));
    CHECK(fake_cuda::has(log, "copy_to_host"));
  }
  // Only the model's predictions were recorded.
  const std::vector<tune::Record> records = tune::Database(o.database).read();
  CHECK(records.size() == static_cast<size_t>(r.ranked));
  for (const tune::Record& rec : records) CHECK(rec.target == gpu_gemm_model_target("sm_80"));
  CHECK(r.best.stages == r.candidates.front().config.stages);

  // A GPU of another architecture measures nothing and launches nothing.
  const GpuGemmTuneResult other =
      tune_gpu_gemm(128, 128, 64, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o);
  CHECK(other.device.empty());
  CHECK(other.measure_failure.empty());
  CHECK(!fake_cuda::has(fake_cuda::take_log(), "launch"));

  // Stream-K's tuner the same way.
  StreamKTuneOptions so;
  so.database = "off";
  so.decompositions = {Decomposition::DataParallel};
  so.tiles = {GpuGemmConfig{128, 128, 32, 64, 64, 3}};  // two blocks per SM of an A100
  so.blocks_per_sm = {2};
  so.measure_top = 2;
  const StreamKTuneResult sk =
      tune_streamk_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, so);
  CHECK(sk.device == "Fake A100");
  CHECK(sk.measured == 0);
  CHECK(
      fake_cuda::has(sk.measure_failure, "the reference (the default configuration) computes C[0][0] = nan"));
  CHECK(sk.measured_in == r.measured_in);
  CHECK(fake_cuda::has(fake_cuda::take_log(), "launch streamk") == !in_workers);
  CHECK(runtime::cuda::driver_loaded() == !in_workers);
  // And its SIMT loop's tiles (f32): the same measuring, the SIMT default as the reference.
  StreamKTuneOptions simt = so;
  simt.main_loop = StreamKMainLoop::Simt;
  simt.simt_tiles = {StreamKSimtTile{}};
  const StreamKTuneResult st =
      tune_streamk_gemm(256, 256, 256, f32, "sm_80", Layout::RowMajor, Layout::RowMajor, simt);
  CHECK(st.device == "Fake A100");
  CHECK(st.ranked == 1);
  CHECK(st.measured == 0);
  CHECK(
      fake_cuda::has(st.measure_failure, "the reference (the default configuration) computes C[0][0] = nan"));
  CHECK(fake_cuda::has(fake_cuda::take_log(), "launch streamk") == !in_workers);

  o.measure_top = -1;
  CHECK_THROWS_WITH(tune_gpu_gemm(128, 128, 64, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("GpuGemmTuneOptions::measure_top = -1 must be 0 or more"));
}

TEST_CASE("gpu tuning lookups: times measured on the GPU present come before the model's predictions") {
  TuningDir dir;
  GpuGemmTuneOptions o = two_candidates(dir.path + "/tuning.jsonl");
  o.measure_top = 0;  // predictions only: the records the lookup must not prefer
  const GpuGemmTuneResult predicted =
      tune_gpu_gemm(128, 128, 64, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o);
  REQUIRE(predicted.candidates.size() >= 2);
  CHECK(predicted.device.empty());
  const GpuGemmConfig model_best = predicted.best;
  GpuGemmConfig measured_best = model_best;
  measured_best.stages = model_best.stages == 2 ? 3 : 2;
  GpuGemmConfig elsewhere = model_best;
  elsewhere.warp_m = 32;
  const tune::Database db(o.database);
  // Slower than every prediction, but measured here; faster, but measured on another GPU.
  db.append(measured_record(predicted.workload, measured_gpu_target("sm_80", "Fake A100"),
                            gpu_gemm_config_knobs(measured_best), 1e3));
  db.append(measured_record(predicted.workload, measured_gpu_target("sm_80", "Other GPU"),
                            gpu_gemm_config_knobs(elsewhere), 1e-6));
  o.measure_top = 8;
  CHECK(tuned_gpu_gemm_config(128, 128, 64, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o).stages ==
        measured_best.stages);
  // measure_top 0 asks for the model alone.
  o.measure_top = 0;
  CHECK(tuned_gpu_gemm_config(128, 128, 64, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o).stages ==
        model_best.stages);

  // The same for Stream-K: a record measured here wins over the predictions.
  StreamKTuneOptions so;
  so.database = o.database;
  so.decompositions = {Decomposition::DataParallel, Decomposition::StreamK};
  so.tiles = {GpuGemmConfig{128, 128, 32, 64, 64, 3}};  // two blocks per SM of an A100
  so.blocks_per_sm = {2};
  so.measure_top = 0;
  const StreamKTuneResult sk =
      tune_streamk_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, so);
  REQUIRE(sk.candidates.size() >= 2);
  StreamKConfig chosen = sk.best;
  chosen.decomposition =
      sk.best.decomposition == Decomposition::StreamK ? Decomposition::DataParallel : Decomposition::StreamK;
  db.append(measured_record(sk.workload, measured_gpu_target("sm_80", "Fake A100"),
                            streamk_config_knobs(chosen), 1e3));
  so.measure_top = 8;
  CHECK(tuned_streamk_config(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, so)
            .decomposition == chosen.decomposition);
  so.measure_top = 0;
  CHECK(tuned_streamk_config(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, so)
            .decomposition == sk.best.decomposition);
}

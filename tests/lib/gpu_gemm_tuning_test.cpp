// lib::gpu_gemm's configuration tuned by its performance model (lib/gpu_gemm_tuning.hpp): candidates
// are predicted or skipped and counted by reason, ranked by predicted time and recorded in a
// temporary tuning database, and the lookup reads the best record back without tuning, ignores
// records of other architectures and problems, gives the default without a record, and tunes first
// under LOOM_TUNE=1. The candidate spaces are a few configurations, so that the file runs in
// seconds with ptxas (which gives the registers where it is installed) as well as without it.
#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_model.hpp>
#include <loom/lib/gpu_gemm_tuning.hpp>
#include <loom/tune/database.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::lib;

namespace {

/// A fresh directory for one test's database, removed afterwards.
struct GpuTuneScratchDir {
  std::string path;
  GpuTuneScratchDir() {
    char tmpl[] = "/tmp/loom-gpu-tune-test-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    REQUIRE(made != nullptr);
    path = made;
  }
  ~GpuTuneScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  GpuTuneScratchDir(const GpuTuneScratchDir&) = delete;
  GpuTuneScratchDir& operator=(const GpuTuneScratchDir&) = delete;
};

/// Sets an environment variable for one scope, then restores what it was.
struct GpuTuneScopedEnv {
  std::string name;
  std::optional<std::string> previous;
  GpuTuneScopedEnv(std::string variable, const char* value) : name(std::move(variable)) {
    if (const char* p = std::getenv(name.c_str())) previous = p;
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~GpuTuneScopedEnv() {
    if (previous)
      ::setenv(name.c_str(), previous->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  GpuTuneScopedEnv(const GpuTuneScopedEnv&) = delete;
  GpuTuneScopedEnv& operator=(const GpuTuneScopedEnv&) = delete;
};

int gpu_tune_lines_of(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

bool same_config(const GpuGemmConfig& a, const GpuGemmConfig& b) {
  return a.block_m == b.block_m && a.block_n == b.block_n && a.block_k == b.block_k && a.warp_m == b.warp_m &&
         a.warp_n == b.warp_n && a.stages == b.stages;
}

/// Eight candidates of a 256^3 f16 GEMM on an A100 (164 KB of shared memory per SM), chosen with
/// margins that hold whether or not the kernel pads its tiles: block_k 24 is no multiple of
/// mma.sync's 16 (4 refused); 128x128x64 in 6 stages needs 192 KB or more (does not fit); 64x128x64
/// in 6 stages, 144-156 KB, fits once per SM (few blocks); 64x128x64 and 128x128x64 in 2 stages fit
/// two or more times (ranked, unless ptxas finds one spills). block_k 0 is 64 for f16: one value.
GpuGemmTuneOptions small_space(const std::string& database) {
  GpuGemmTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.block_m = {64, 128};
  o.block_n = {128};
  o.block_k = {0, 64, 24};
  o.warp_m = {64};
  o.warp_n = {64};
  o.stages = {2, 6};
  o.database = database;
  return o;
}

}  // namespace

TEST_CASE(
    "gpu_gemm tuning: candidates are predicted or counted as skipped, ranked, and recorded as predictions") {
  GpuTuneScratchDir dir;
  const std::string db = dir.path + "/tuning.jsonl";
  const GpuGemmTuneResult r =
      tune_gpu_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, small_space(db));
  CHECK(r.candidates.size() == 8);
  CHECK(r.refused == 4);
  CHECK(r.does_not_fit == 1);
  CHECK(r.few_blocks == 1);
  CHECK(r.ranked + r.spills == 2);
  CHECK(r.invalid == r.refused + r.does_not_fit + r.spills);
  CHECK(r.workload == gpu_gemm_workload_key(256, 256, 256, f16));
  CHECK(r.target == "cuda -arch=sm_80 model:A100-SXM4-80GB");
  REQUIRE(r.ranked >= 1);

  // The ranked ones first, fastest first; each is the model's own prediction for its kernel, with
  // two or more blocks per SM.
  const GpuPerfSpec a100 = GpuPerfSpec::a100();
  for (int i = 0; i < static_cast<int>(r.candidates.size()); ++i) {
    const GpuGemmTuneCandidate& c = r.candidates[i];
    CAPTURE(c.config.str());
    CHECK(c.config.block_k != 0);
    CHECK(c.skipped.empty() == (i < r.ranked));
    if (!c.skipped.empty()) {
      CHECK(!c.detail.empty());
      // Candidates that run one block per SM are predicted, not ranked.
      if (c.skipped == "few blocks") CHECK(c.prediction.occupancy.blocks_per_sm == 1);
      continue;
    }
    CHECK(c.prediction.occupancy.blocks_per_sm >= 2);
    if (i > 0) CHECK(r.candidates[i - 1].prediction.seconds <= c.prediction.seconds);
    const GpuGemmPrediction direct =
        predict_gpu_gemm(gpu_gemm(256, 256, 256, f16, c.config), a100, c.prediction.resources);
    CHECK(direct.seconds == doctest::Approx(c.prediction.seconds).epsilon(1e-12));
  }
  CHECK(same_config(r.best, r.candidates.front().config));
  CHECK(r.best_prediction.seconds == r.candidates.front().prediction.seconds);
  CHECK(r.default_prediction.seconds > 0);

  // One record per ranked candidate, under the problem's key and the model's target; the best
  // has the smallest predicted time among them.
  const std::vector<tune::Record> records = tune::Database(db).read();
  REQUIRE(static_cast<int>(records.size()) == r.ranked);
  double smallest_ms = records.front().ms;
  tune::Assignment smallest_knobs = records.front().knobs;
  for (const tune::Record& rec : records) {
    CHECK(rec.workload == r.workload);
    CHECK(rec.target == r.target);
    CHECK(rec.name.find("predicted by the performance model, not measured") != std::string::npos);
    CHECK(!rec.confirmed);
    CHECK(rec.knobs.size() == 6);
    CHECK(rec.ms > 0);
    if (rec.ms < smallest_ms) {
      smallest_ms = rec.ms;
      smallest_knobs = rec.knobs;
    }
  }
  CHECK(smallest_knobs == gpu_gemm_config_knobs(r.best));
  CHECK(smallest_ms == doctest::Approx(r.best_prediction.seconds * 1e3).epsilon(1e-5));

  // A later lookup reads the best back and tunes nothing, with or without LOOM_TUNE=1.
  {
    GpuTuneScopedEnv no_tuning("LOOM_TUNE", nullptr);
    CHECK(same_config(
        tuned_gpu_gemm_config(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, db), r.best));
  }
  {
    GpuTuneScopedEnv tuning("LOOM_TUNE", "1");
    CHECK(same_config(
        tuned_gpu_gemm_config(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, db), r.best));
  }
  CHECK(gpu_tune_lines_of(db) == r.ranked);
  // Another problem (B column-major) and another architecture have no record: the default.
  GpuTuneScopedEnv no_tuning("LOOM_TUNE", nullptr);
  CHECK(
      same_config(tuned_gpu_gemm_config(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::ColMajor, db),
                  GpuGemmConfig{}));
  CHECK(
      same_config(tuned_gpu_gemm_config(256, 256, 256, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, db),
                  GpuGemmConfig{}));
}

TEST_CASE(
    "gpu_gemm tuning: without a record the lookup gives the default, and records of other GPUs are not "
    "used") {
  GpuTuneScopedEnv no_tuning("LOOM_TUNE", nullptr);
  GpuTuneScratchDir dir;
  const std::string db = dir.path + "/tuning.jsonl";
  // No file: the default, and no file made.
  CHECK(
      same_config(tuned_gpu_gemm_config(512, 256, 128, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, db),
                  GpuGemmConfig{}));
  CHECK(!std::filesystem::exists(db));
  CHECK(same_config(tuned_gpu_gemm_config(512, 256, 128, f16, "sm_80", Layout::RowMajor, Layout::RowMajor,
                                          std::string("off")),
                    GpuGemmConfig{}));

  // Planted records: the problem on sm_90 and on a measured sm_80 target, another problem on the
  // model's sm_80. None of them is this problem's prediction for sm_80.
  const std::string key = gpu_gemm_workload_key(512, 256, 128, f16);
  const GpuGemmConfig planted{64, 64, 32, 32, 32, 2};
  auto plant = [&](const std::string& workload, const std::string& target) {
    tune::Record rec;
    rec.workload = workload;
    rec.name = "planted";
    rec.target = target;
    rec.cpu = tune::cpu_model();
    rec.knobs = gpu_gemm_config_knobs(planted);
    rec.ms = 1e-6;
    tune::Database(db).append(rec);
  };
  plant(key, gpu_gemm_model_target("sm_90"));
  plant(key, "cuda -arch=sm_80");
  plant(gpu_gemm_workload_key(512, 256, 256, f16), gpu_gemm_model_target("sm_80"));
  CHECK(
      same_config(tuned_gpu_gemm_config(512, 256, 128, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, db),
                  GpuGemmConfig{}));
  // Each record is used where it belongs.
  CHECK(same_config(
      tuned_gpu_gemm_config(512, 256, 128, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, db), planted));
  CHECK(same_config(
      tuned_gpu_gemm_config(512, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, db), planted));
  // A record of another search space (a knob missing) is not used either.
  tune::Record stale;
  stale.workload = key;
  stale.target = gpu_gemm_model_target("sm_80");
  stale.knobs = {{"block_m", 64}, {"block_n", 64}};
  stale.ms = 1e-9;
  tune::Database(db).append(stale);
  CHECK(
      same_config(tuned_gpu_gemm_config(512, 256, 128, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, db),
                  GpuGemmConfig{}));
}

TEST_CASE("gpu_gemm tuning: under LOOM_TUNE=1 a problem without a record is tuned first, and recorded") {
  GpuTuneScratchDir dir;
  GpuGemmTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.block_m = {64, 128};
  o.block_n = {128};
  o.block_k = {32};
  o.warp_m = {64};
  o.warp_n = {64};
  o.stages = {3};
  o.database = dir.path + "/tuning.jsonl";
  GpuGemmConfig chosen;
  {
    GpuTuneScopedEnv tuning("LOOM_TUNE", "1");
    chosen = tuned_gpu_gemm_config(256, 512, 256, bf16, "sm_90", Layout::ColMajor, Layout::RowMajor, o);
  }
  const std::vector<tune::Record> records = tune::Database(o.database).read();
  REQUIRE(!records.empty());
  CHECK(records.size() <= 2);
  const tune::Record* fastest = &records.front();
  for (const tune::Record& rec : records) {
    CHECK(rec.workload == gpu_gemm_workload_key(256, 512, 256, bf16, Layout::ColMajor, Layout::RowMajor));
    CHECK(rec.target == "cuda -arch=sm_90 model:H100-SXM5");
    if (rec.ms < fastest->ms) fastest = &rec;
  }
  CHECK(fastest->knobs == gpu_gemm_config_knobs(chosen));
  // Read back without tuning.
  GpuTuneScopedEnv no_tuning("LOOM_TUNE", nullptr);
  CHECK(same_config(
      tuned_gpu_gemm_config(256, 512, 256, bf16, "sm_90", Layout::ColMajor, Layout::RowMajor, o), chosen));
  CHECK(gpu_tune_lines_of(o.database) == static_cast<int>(records.size()));
}

TEST_CASE("gpu_gemm tuning: a configuration of one block per SM is ranked only when min_blocks_per_sm is 1") {
  // 64x128x64 in 5 stages: 120-130 KB of stages (unpadded or padded) fit an A100's SM once.
  GpuGemmTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.block_m = {64};
  o.block_n = {128};
  o.block_k = {64};
  o.warp_m = {64};
  o.warp_n = {64};
  o.stages = {5};
  o.database = "off";
  CHECK_THROWS_WITH_AS(tune_gpu_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o),
                       doctest::Contains("1 have fewer than min_blocks_per_sm = 2 blocks per SM"), Error);
  o.min_blocks_per_sm = 1;
  const GpuGemmTuneResult r =
      tune_gpu_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o);
  REQUIRE(r.ranked == 1);
  CHECK(r.few_blocks == 0);
  CHECK(r.best_prediction.occupancy.blocks_per_sm == 1);
  CHECK(same_config(r.best, GpuGemmConfig{64, 128, 64, 64, 64, 5}));
}

TEST_CASE("gpu_gemm tuning: keys, and refusals") {
  // The key names the problem: shape, input type and layouts.
  const std::string key = gpu_gemm_workload_key(256, 256, 256, f16);
  CHECK(key.size() == 16);
  CHECK(key == gpu_gemm_workload_key(256, 256, 256, f16, Layout::RowMajor, Layout::RowMajor));
  CHECK(key != gpu_gemm_workload_key(256, 256, 512, f16));
  CHECK(key != gpu_gemm_workload_key(256, 256, 256, bf16));
  CHECK(key != gpu_gemm_workload_key(256, 256, 256, f16, Layout::ColMajor, Layout::RowMajor));
  CHECK(gpu_gemm_model_target("sm_90") == "cuda -arch=sm_90 model:H100-SXM5");

  // An architecture the model has no GPU for.
  GpuTuneScratchDir dir;
  GpuGemmTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.database = dir.path + "/tuning.jsonl";
  CHECK_THROWS_WITH_AS(tune_gpu_gemm(256, 256, 256, f16, "sm_75", Layout::RowMajor, Layout::RowMajor, o),
                       doctest::Contains("sm_75"), Error);
  CHECK_THROWS_WITH_AS(tuned_gpu_gemm_config(256, 256, 256, f16, "sm_75"), doctest::Contains("sm_75"), Error);
  // Options without a value, or with a value that is no size.
  o.warp_n = {};
  CHECK_THROWS_WITH_AS(tune_gpu_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o),
                       doctest::Contains("GpuGemmTuneOptions::warp_n is empty"), Error);
  o.warp_n = {32, 64};
  o.block_m = {0, 64};
  CHECK_THROWS_WITH_AS(tune_gpu_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o),
                       doctest::Contains("GpuGemmTuneOptions::block_m holds 0"), Error);
  o.block_m = GpuGemmTuneOptions().block_m;
  // No candidate that runs: said, with the count, and nothing recorded.
  o.block_k = {24, 40};
  o.stages = {2};
  CHECK_THROWS_WITH_AS(tune_gpu_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o),
                       doctest::Contains("none of the 72 candidate configurations"), Error);
  o.block_k = {0};
  o.min_blocks_per_sm = 0;
  CHECK_THROWS_WITH_AS(tune_gpu_gemm(256, 256, 256, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o),
                       doctest::Contains("min_blocks_per_sm = 0 must be at least 1"), Error);
  CHECK(!std::filesystem::exists(o.database));
}

TEST_CASE("gpu_gemm tuning: gpu_gemm given no configuration takes the record of the default database") {
  GpuTuneScopedEnv no_tuning("LOOM_TUNE", nullptr);
  GpuTuneScratchDir dir;
  GpuTuneScopedEnv cache("LOOM_CACHE_DIR", dir.path.c_str());
  // No database: the default configuration (block_k resolved), and no file made.
  const GpuGemmConfig resolved_default = gpu_gemm(300, 200, 100, f16, GpuGemmConfig{}).config;
  CHECK(same_config(gpu_gemm(300, 200, 100, f16).config, resolved_default));
  CHECK(!std::filesystem::exists(dir.path + "/tuning.jsonl"));

  // A prediction for the problem on sm_90, whose model the lookup reads where no GPU is present, and
  // one on sm_80, which it reads only on an A100.
  const GpuGemmConfig planted{64, 128, 32, 32, 64, 4};
  tune::Record rec;
  rec.workload = gpu_gemm_workload_key(300, 200, 100, f16);
  rec.name = "planted";
  rec.target = gpu_gemm_model_target("sm_90");
  rec.knobs = gpu_gemm_config_knobs(planted);
  rec.ms = 1e-3;
  const tune::Database db("");
  REQUIRE(db.path() == dir.path + "/tuning.jsonl");
  db.append(rec);
  const GpuGemmConfig elsewhere{128, 64, 32, 64, 32, 2};
  rec.target = gpu_gemm_model_target("sm_80");
  rec.knobs = gpu_gemm_config_knobs(elsewhere);
  rec.ms = 1e-6;
  db.append(rec);
  const bool sm80_gpu = runtime::cuda::driver_available() && runtime::cuda::driver().arch() == "sm_80";
  const GpuGemmConfig expected = sm80_gpu ? elsewhere : planted;

  CHECK(same_config(recorded_gpu_gemm_config(300, 200, 100, f16), expected));
  CHECK(same_config(gpu_gemm(300, 200, 100, f16).config, expected));
  // A configuration given is used as given, `{}` and braces included.
  CHECK(same_config(gpu_gemm(300, 200, 100, f16, {}).config, resolved_default));
  CHECK(same_config(gpu_gemm(300, 200, 100, f16, GpuGemmConfig{}).config, resolved_default));
  CHECK(same_config(gpu_gemm(300, 200, 100, f16, {64, 64, 32, 32, 32, 2}).config, {64, 64, 32, 32, 32, 2}));
  // Other problems have no record: another type, and B column-major.
  CHECK(same_config(gpu_gemm(300, 200, 100, bf16).config, resolved_default));
  CHECK(same_config(recorded_gpu_gemm_config(300, 200, 100, f16, Layout::RowMajor, Layout::ColMajor),
                    GpuGemmConfig{}));
  // A refused problem names gpu_gemm, as it does without a database.
  CHECK_THROWS_WITH_AS(gpu_gemm(300, 200, 100, i32), doctest::Contains("gpu_gemm"), Error);
  // Records of the general tuner for CUDA targets are not the GPU GEMM tuners': with only those, no
  // lookup is made (and no workload key lowered).
  GpuTuneScratchDir other;
  GpuTuneScopedEnv other_cache("LOOM_CACHE_DIR", other.path.c_str());
  rec.target = "cuda -arch=sm_90";
  rec.workload = gpu_gemm_workload_key(300, 200, 100, f16);
  tune::Database("").append(rec);
  CHECK(same_config(gpu_gemm(300, 200, 100, f16).config, resolved_default));
}

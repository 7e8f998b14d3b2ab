// The Stream-K GEMM's decomposition, grid and tile tuned by its model (lib/streamk_tuning.hpp), on
// tensor cores and on the SIMT loop:
// candidates predicted or skipped and counted, ranked by predicted time and recorded in a temporary
// tuning database; the lookup reads the best record back without tuning, ignores records of other
// architectures and problems, gives the default without a record, and tunes first under LOOM_TUNE=1.
// Small candidate spaces, so that the file runs in seconds with ptxas as well as without it.
#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/streamk_gemm.hpp>
#include <loom/lib/streamk_model.hpp>
#include <loom/lib/streamk_tuning.hpp>
#include <loom/tune/database.hpp>

#include <doctest/doctest.h>

#include <algorithm>
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
struct StreamKTuneDir {
  std::string path;
  StreamKTuneDir() {
    char tmpl[] = "/tmp/loom-streamk-tune-test-XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    REQUIRE(made != nullptr);
    path = made;
  }
  ~StreamKTuneDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  StreamKTuneDir(const StreamKTuneDir&) = delete;
  StreamKTuneDir& operator=(const StreamKTuneDir&) = delete;
};

/// Sets LOOM_TUNE for one scope, then restores what it was.
struct StreamKTuneEnv {
  std::optional<std::string> previous;
  explicit StreamKTuneEnv(const char* value) {
    if (const char* p = std::getenv("LOOM_TUNE")) previous = p;
    if (value)
      ::setenv("LOOM_TUNE", value, 1);
    else
      ::unsetenv("LOOM_TUNE");
  }
  ~StreamKTuneEnv() {
    if (previous)
      ::setenv("LOOM_TUNE", previous->c_str(), 1);
    else
      ::unsetenv("LOOM_TUNE");
  }
  StreamKTuneEnv(const StreamKTuneEnv&) = delete;
  StreamKTuneEnv& operator=(const StreamKTuneEnv&) = delete;
};

int streamk_tune_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

/// Data-parallel and Stream-K on one and two blocks per SM of the default tile: four candidates,
/// all ranked.
StreamKTuneOptions four_candidates(const std::string& database) {
  StreamKTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.decompositions = {Decomposition::DataParallel, Decomposition::StreamK};
  o.blocks_per_sm = {1, 2};
  o.tiles = {GpuGemmConfig{}};
  o.min_blocks_per_sm = 1;
  o.database = database;
  return o;
}

}  // namespace

TEST_CASE("streamk tuning: candidates ranked by predicted time, recorded, and read back without tuning") {
  StreamKTuneDir dir;
  const std::string db = dir.path + "/tuning.jsonl";
  StreamKTuneEnv no_tune(nullptr);
  const StreamKTuneResult r = tune_streamk_gemm(1024, 1024, 8192, f16, "sm_90", Layout::RowMajor,
                                                Layout::RowMajor, four_candidates(db));
  CHECK(r.ranked == 4);
  CHECK(r.refused == 0);
  CHECK(r.does_not_fit == 0);
  REQUIRE(r.candidates.size() == 4);
  for (size_t i = 1; i < r.candidates.size(); ++i)
    CHECK(r.candidates[i - 1].prediction.seconds <= r.candidates[i].prediction.seconds);
  CHECK(r.target == "cuda -arch=sm_90 model:H100-SXM5");
  CHECK(r.workload == streamk_gemm_workload_key(1024, 1024, 8192, f16, "sm_90"));
  CHECK(r.best.decomposition == r.candidates.front().config.decomposition);
  CHECK(r.best_prediction.seconds == r.candidates.front().prediction.seconds);
  CHECK(r.default_prediction.seconds > 0);
  CHECK(r.default_prediction.blocks_per_sm >= 1);
  // Every candidate is predicted on the grid it names: 132 or 264 blocks.
  for (const StreamKTuneCandidate& c : r.candidates) {
    CHECK(c.config.sms == 132);
    CHECK(c.prediction.workers == 132 * c.config.blocks_per_sm);
    REQUIRE(c.config.tensor_cores);
    CHECK(c.config.tensor_cores->block_k == 64);  // resolved
  }
  CHECK(streamk_tune_lines(db) == 4);

  // A later process: the best record, with no search (the database keeps its four lines).
  StreamKTuneOptions lookup;
  lookup.measure_top = 0;  // the model's path, on any machine
  lookup.database = db;
  const StreamKConfig best =
      tuned_streamk_config(1024, 1024, 8192, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, lookup);
  CHECK(best.decomposition == r.best.decomposition);
  CHECK(best.blocks_per_sm == r.best.blocks_per_sm);
  CHECK(best.split_k == r.best.split_k);
  REQUIRE(best.tensor_cores);
  CHECK(best.tensor_cores->str() == r.best.tensor_cores->str());
  CHECK(best.arch == "sm_90");
  CHECK(best.sms == (runtime::cuda::driver_available() ? 0 : 132));
  CHECK(streamk_tune_lines(db) == 4);
  // It builds: the kernel the record describes.
  const StreamKGemm g = streamk_gemm(1024, 1024, 8192, f16, best);
  CHECK(g.config.blocks_per_sm == r.best.blocks_per_sm);

  // Records of another architecture or problem are not used: the default comes back.
  const StreamKConfig other_arch =
      tuned_streamk_config(1024, 1024, 8192, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, lookup);
  CHECK(other_arch.decomposition == Decomposition::StreamKHybrid);
  CHECK(other_arch.blocks_per_sm == 0);
  REQUIRE(other_arch.tensor_cores);
  const StreamKConfig other_shape =
      tuned_streamk_config(1024, 1024, 4096, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, lookup);
  CHECK(other_shape.decomposition == Decomposition::StreamKHybrid);
  CHECK(other_shape.blocks_per_sm == 0);
  CHECK(streamk_tune_lines(db) == 4);
}

TEST_CASE("streamk tuning: LOOM_TUNE=1 tunes a problem without records, and 'off' records nothing") {
  StreamKTuneDir dir;
  const std::string db = dir.path + "/tuning.jsonl";
  {
    StreamKTuneEnv tune("1");
    const StreamKConfig c = tuned_streamk_config(1024, 1024, 8192, f16, "sm_90", Layout::RowMajor,
                                                 Layout::RowMajor, four_candidates(db));
    CHECK(streamk_tune_lines(db) == 4);
    CHECK(c.blocks_per_sm >= 1);
  }
  StreamKTuneEnv no_tune(nullptr);
  StreamKTuneOptions off = four_candidates("off");
  const StreamKTuneResult r =
      tune_streamk_gemm(1024, 1024, 8192, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, off);
  CHECK(r.ranked == 4);
  CHECK(streamk_tune_lines(db) == 4);
  const StreamKConfig none =
      tuned_streamk_config(1024, 1024, 8192, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, off);
  CHECK(none.decomposition == Decomposition::StreamKHybrid);
  CHECK(none.blocks_per_sm == 0);
}

TEST_CASE("streamk tuning: refused, crowded and one-block candidates are counted and skipped") {
  StreamKTuneEnv no_tune(nullptr);
  StreamKTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.database = "off";
  // K of 64 is one k-step: split-K in 2 is refused; three blocks per SM do not fit (two do); one
  // block per SM is predicted but not ranked (min_blocks_per_sm 2, the default).
  o.decompositions = {Decomposition::DataParallel, Decomposition::SplitK};
  o.split_k = {2};
  o.blocks_per_sm = {1, 2, 3};
  o.tiles = {GpuGemmConfig{}};
  const StreamKTuneResult r =
      tune_streamk_gemm(2048, 2048, 64, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o);
  CHECK(r.ranked == 1);
  CHECK(r.refused == 3);
  CHECK(r.does_not_fit == 1);
  CHECK(r.few_blocks == 1);
  REQUIRE(r.candidates.size() == 6);
  CHECK(r.candidates.front().skipped.empty());
  CHECK(r.candidates.front().config.blocks_per_sm == 2);
  CHECK(r.best.blocks_per_sm == 2);
  int refused_split = 0, crowded = 0, one_block = 0;
  for (const StreamKTuneCandidate& c : r.candidates) {
    if (c.skipped == "refused" &&
        c.detail.find("split_k 2 exceeds the 1 iterations of a tile") != std::string::npos)
      ++refused_split;
    if (c.skipped == "does not fit" && c.detail.find("which holds 2") != std::string::npos) ++crowded;
    if (c.skipped == "few blocks") {
      ++one_block;
      CHECK(c.config.blocks_per_sm == 1);
      CHECK(c.prediction.seconds > 0);
      CHECK(c.detail == "1 blocks per SM; the model is trusted from 2");
    }
  }
  CHECK(refused_split == 3);
  CHECK(crowded == 1);
  CHECK(one_block == 1);
}

TEST_CASE("streamk tuning: options it refuses, and an architecture the model has no GPU for") {
  StreamKTuneEnv no_tune(nullptr);
  StreamKTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.database = "off";
  o.decompositions = {};
  CHECK_THROWS_WITH(tune_streamk_gemm(512, 512, 512, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("StreamKTuneOptions::decompositions is empty"));
  o = StreamKTuneOptions();
  o.measure_top = 0;
  o.database = "off";
  o.split_k = {1};
  CHECK_THROWS_WITH(tune_streamk_gemm(512, 512, 512, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("StreamKTuneOptions::split_k holds 1; give values of 2 or more"));
  o = StreamKTuneOptions();
  o.measure_top = 0;
  o.database = "off";
  o.blocks_per_sm = {0};
  CHECK_THROWS_WITH(tune_streamk_gemm(512, 512, 512, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("StreamKTuneOptions::blocks_per_sm holds 0; give values of 1 or more"));
  o = StreamKTuneOptions();
  o.measure_top = 0;
  o.database = "off";
  o.tiles = {};
  CHECK_THROWS_WITH(tune_streamk_gemm(512, 512, 512, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("StreamKTuneOptions::tiles is empty"));
  o = StreamKTuneOptions();
  o.measure_top = 0;
  o.database = "off";
  o.min_blocks_per_sm = 0;
  CHECK_THROWS_WITH(tune_streamk_gemm(512, 512, 512, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("StreamKTuneOptions::min_blocks_per_sm = 0 must be at least 1"));
  o = StreamKTuneOptions();
  o.measure_top = 0;
  o.database = "off";
  o.tiles = {GpuGemmConfig{}};
  o.blocks_per_sm = {5};
  CHECK_THROWS_WITH(tune_streamk_gemm(512, 512, 512, f16, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("none of the 6 candidate configurations"));
  CHECK_THROWS_WITH(tune_streamk_gemm(512, 512, 512, f16, "sm_75"), doctest::Contains("'sm_75'"));
  CHECK_THROWS_WITH(tuned_streamk_config(512, 512, 512, f16, "sm_75"), doctest::Contains("'sm_75'"));
}

TEST_CASE("streamk tuning: the configuration read back builds the kernel that was predicted") {
  // On an A100 (108 SMs) without a GPU present: the grid of the record, not of an H100's 132 SMs.
  StreamKTuneDir dir;
  StreamKTuneEnv no_tune(nullptr);
  StreamKTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.database = dir.path + "/tuning.jsonl";
  o.decompositions = {Decomposition::StreamK, Decomposition::SplitK};
  o.split_k = {2};
  const StreamKTuneResult r =
      tune_streamk_gemm(1024, 1024, 8192, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o);
  REQUIRE(r.ranked > 0);
  const StreamKConfig c =
      tuned_streamk_config(1024, 1024, 8192, f16, "sm_80", Layout::RowMajor, Layout::RowMajor, o);
  CHECK(c.decomposition == r.best.decomposition);
  CHECK(c.split_k == r.best.split_k);
  REQUIRE(c.tensor_cores);
  CHECK(c.tensor_cores->str() == r.best.tensor_cores->str());
  if (!runtime::cuda::driver_available()) {
    CHECK(c.sms == 108);
    const StreamKGemm g = streamk_gemm(1024, 1024, 8192, f16, c);
    CHECK(static_cast<int64_t>(g.plan.workers.size()) == r.best_prediction.workers);
    CHECK(predict_streamk_gemm(g, "sm_80").seconds == doctest::Approx(r.best_prediction.seconds));
  }
}

TEST_CASE("streamk tuning: tiles that resolve alike are tried once, and tf32 truncation is kept") {
  StreamKTuneDir dir;
  StreamKTuneEnv no_tune(nullptr);
  StreamKTuneOptions o;
  o.measure_top = 0;  // the model's path, on any machine
  o.database = dir.path + "/tuning.jsonl";
  o.decompositions = {Decomposition::DataParallel, Decomposition::StreamK};
  o.min_blocks_per_sm = 1;
  // For tf32 gpu_gemm's default block_k is 32: the two default tiles are one.
  const StreamKTuneResult both =
      tune_streamk_gemm(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor, Layout::RowMajor, [&] {
        StreamKTuneOptions off = o;
        off.database = "off";
        return off;
      }());
  std::vector<std::string> seen;
  for (const StreamKTuneCandidate& c : both.candidates) {
    const std::string key = cat(c.config.tensor_cores->str(), " ", static_cast<int>(c.config.decomposition),
                                " ", c.config.blocks_per_sm);
    CHECK(std::find(seen.begin(), seen.end(), key) == seen.end());
    seen.push_back(key);
  }
  GpuGemmConfig truncated;
  truncated.tf32_round = false;
  o.tiles = {truncated};
  tune_streamk_gemm(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor, Layout::RowMajor, o);
  const StreamKConfig c =
      tuned_streamk_config(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor, Layout::RowMajor, o);
  REQUIRE(c.tensor_cores);
  CHECK_FALSE(c.tensor_cores->tf32_round);
}

TEST_CASE("streamk tuning: streamk_gemm given no configuration takes the record of the default database") {
  StreamKTuneEnv no_tune(nullptr);
  StreamKTuneDir dir;
  std::optional<std::string> previous_cache;
  if (const char* p = std::getenv("LOOM_CACHE_DIR")) previous_cache = p;
  ::setenv("LOOM_CACHE_DIR", dir.path.c_str(), 1);
  struct RestoreCache {
    std::optional<std::string>& previous;
    ~RestoreCache() {
      if (previous)
        ::setenv("LOOM_CACHE_DIR", previous->c_str(), 1);
      else
        ::unsetenv("LOOM_CACHE_DIR");
    }
  } restore{previous_cache};

  // No database: the SIMT main loop of the default configuration.
  CHECK_FALSE(streamk_gemm(512, 384, 2048, f16).config.tensor_cores);
  CHECK_FALSE(std::filesystem::exists(dir.path + "/tuning.jsonl"));

  // A prediction for the problem on sm_90, whose model the lookup reads where no GPU is present.
  StreamKConfig planted;
  planted.tensor_cores = GpuGemmConfig{128, 128, 32, 64, 64, 3};
  planted.decomposition = Decomposition::SplitK;
  planted.split_k = 4;
  planted.blocks_per_sm = 1;
  tune::Record rec;
  rec.workload = streamk_gemm_workload_key(512, 384, 2048, f16, "sm_90");
  rec.name = "planted";
  rec.target = gpu_gemm_model_target("sm_90");
  rec.knobs = streamk_config_knobs(planted);
  rec.ms = 1e-3;
  tune::Database("").append(rec);
  REQUIRE(std::filesystem::exists(dir.path + "/tuning.jsonl"));
  if (runtime::cuda::driver_available() && runtime::cuda::driver().arch() != "sm_90") return;  // not its GPU

  const StreamKGemm g = streamk_gemm(512, 384, 2048, f16);
  REQUIRE(g.config.tensor_cores);
  CHECK(g.config.tensor_cores->str() == "128x128x32/64x64/s3");
  CHECK(g.config.decomposition == Decomposition::SplitK);
  CHECK(g.config.split_k == 4);
  CHECK(g.config.blocks_per_sm == 1);
  CHECK(g.config.arch == "sm_90");
  const StreamKConfig looked_up = recorded_streamk_config(512, 384, 2048, f16);
  CHECK(looked_up.decomposition == Decomposition::SplitK);
  // A configuration given is used as given; another problem has no record.
  CHECK_FALSE(streamk_gemm(512, 384, 2048, f16, StreamKConfig{}).config.tensor_cores);
  CHECK_FALSE(streamk_gemm(512, 384, 2048, f16, {}).config.tensor_cores);
  CHECK_FALSE(streamk_gemm(512, 384, 1024, f16).config.tensor_cores);
  // f32 keeps the SIMT loop, which multiplies exactly, even with a tensor-core record of its
  // problem: the tensor cores would round it to tf32.
  rec.workload = streamk_gemm_workload_key(512, 384, 2048, f32, "sm_90");
  tune::Database("").append(rec);
  CHECK_FALSE(streamk_gemm(512, 384, 2048, f32).config.tensor_cores);
  CHECK_FALSE(recorded_streamk_config(512, 384, 2048, f32).tensor_cores);
  CHECK(recorded_streamk_config(512, 384, 2048, f32).tile.bm == 64);
  // A SIMT record of it is taken: its tile, threads and decomposition.
  StreamKConfig simt;
  simt.tile = {128, 128, 8};
  simt.thread_m = simt.thread_n = 8;
  simt.decomposition = Decomposition::DataParallel;
  simt.blocks_per_sm = 2;
  rec.workload = streamk_gemm_workload_key(512, 384, 2048, f32, "sm_90", Layout::RowMajor, Layout::RowMajor,
                                           StreamKMainLoop::Simt);
  CHECK(rec.workload != streamk_gemm_workload_key(512, 384, 2048, f32, "sm_90"));
  rec.knobs = streamk_config_knobs(simt);
  tune::Database("").append(rec);
  const StreamKGemm f = streamk_gemm(512, 384, 2048, f32);
  CHECK_FALSE(f.config.tensor_cores);
  CHECK(f.config.tile.bm == 128);
  CHECK(f.config.tile.bk == 8);
  CHECK(f.config.thread_n == 8);
  CHECK(f.config.decomposition == Decomposition::DataParallel);
  CHECK(f.config.blocks_per_sm == 2);
  // The tensor-core lookup of f16 does not take it (another key, and its knobs name no tensor cores).
  CHECK(streamk_gemm(512, 384, 2048, f16).config.tensor_cores);
  // A faster record that streamk_gemm would refuse (3 does not divide 128) is passed over.
  StreamKConfig refused = simt;
  refused.thread_m = 3;
  rec.knobs = streamk_config_knobs(refused);
  rec.ms = 1e-4;
  tune::Database("").append(rec);
  // So is one whose split-K has more parts (1024) than a tile has k-steps (2048 / 8 = 256).
  StreamKConfig too_split = simt;
  too_split.decomposition = Decomposition::SplitK;
  too_split.split_k = 1024;
  rec.knobs = streamk_config_knobs(too_split);
  tune::Database("").append(rec);
  const StreamKGemm kept = streamk_gemm(512, 384, 2048, f32);
  CHECK(kept.config.thread_m == 8);
  CHECK(kept.config.decomposition == Decomposition::DataParallel);
  // And on tensor cores, a record gpu_gemm's checks refuse (a 48-row warp tile does not divide 128).
  StreamKConfig bad_warp = planted;
  bad_warp.tensor_cores->warp_m = 48;
  rec.workload = streamk_gemm_workload_key(512, 384, 2048, f16, "sm_90");
  rec.knobs = streamk_config_knobs(bad_warp);
  tune::Database("").append(rec);
  const StreamKGemm tc = streamk_gemm(512, 384, 2048, f16);
  REQUIRE(tc.config.tensor_cores);
  CHECK(tc.config.tensor_cores->str() == "128x128x32/64x64/s3");
}

TEST_CASE("streamk tuning: the SIMT loop's tiles, tuned apart from the tensor cores") {
  StreamKTuneDir dir;
  const std::string db = dir.path + "/tuning.jsonl";
  StreamKTuneEnv no_tune(nullptr);
  StreamKTuneOptions o;
  o.measure_top = 0;
  o.database = db;
  o.main_loop = StreamKMainLoop::Simt;
  o.decompositions = {Decomposition::DataParallel, Decomposition::StreamKHybrid};
  o.blocks_per_sm = {2};
  o.simt_tiles = {StreamKSimtTile{}, StreamKSimtTile{{128, 128, 8}, 8, 8},
                  StreamKSimtTile{{64, 64, 16}, 4, 4}, StreamKSimtTile{{64, 64, 16}, 3, 4}};
  const StreamKTuneResult r =
      tune_streamk_gemm(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor, Layout::RowMajor, o);
  // The repeated default tile is tried once; 3 x 4 does not divide 64 x 64.
  CHECK(r.ranked == 4);
  CHECK(r.refused == 1);
  CHECK(r.workload == streamk_gemm_workload_key(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor,
                                                Layout::RowMajor, StreamKMainLoop::Simt));
  for (const StreamKTuneCandidate& c : r.candidates) {
    if (!c.skipped.empty()) {
      CHECK(c.detail.find("thread_m=3 does not divide the tile's bm=64") != std::string::npos);
      continue;
    }
    CHECK_FALSE(c.config.tensor_cores);
    CHECK(c.prediction.simt_loop.round_cycles > 0);
    CHECK(c.prediction.peak_tflops == doctest::Approx(GpuPerfSpec::h100().fp32_tflops()));
  }
  // 8 x 8 accumulators read 16 shared words per 64 multiply-adds, where 4 x 4 read 8 per 16: the
  // model ranks the larger tile first.
  CHECK(r.best.tile.bm == 128);
  CHECK(r.best.thread_m == 8);
  CHECK(r.default_prediction.seconds > r.best_prediction.seconds);
  CHECK(streamk_tune_lines(db) == 4);
  const StreamKConfig best =
      tuned_streamk_config(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor, Layout::RowMajor, o);
  CHECK_FALSE(best.tensor_cores);
  CHECK(best.tile.bm == 128);
  CHECK(best.decomposition == r.best.decomposition);
  // The tensor-core lookup of the same problem finds nothing: its default.
  StreamKTuneOptions tc = o;
  tc.main_loop = StreamKMainLoop::TensorCores;
  CHECK(tuned_streamk_config(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor, Layout::RowMajor, tc)
            .tensor_cores);
  // Inputs the SIMT loop does not read are refused up front, naming the main loop that reads them.
  CHECK_THROWS_WITH(
      tune_streamk_gemm(1024, 1024, 1024, f32, "sm_90", Layout::ColMajor, Layout::RowMajor, o),
      doctest::Contains("the SIMT main loop reads row-major A and B only; for a column-major A tune "
                        "StreamKTuneOptions::main_loop = StreamKMainLoop::TensorCores, which reads "
                        "f32 as tf32"));
  CHECK_THROWS_WITH(
      tuned_streamk_config(1024, 1024, 1024, f16, "sm_90", Layout::RowMajor, Layout::ColMajor, o),
      doctest::Contains("for a column-major B tune StreamKTuneOptions::main_loop = "
                        "StreamKMainLoop::TensorCores"));
  CHECK_THROWS_WITH(tune_streamk_gemm(1024, 1024, 1024, bf16, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("the SIMT main loop reads f32 or f16, not bfloat16; tune "
                                      "StreamKTuneOptions::main_loop = StreamKMainLoop::TensorCores"));
  CHECK_THROWS_WITH(
      tune_streamk_gemm(1024, 1024, 1024, f64, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
      doctest::Contains("the Stream-K GEMM reads f32 or f16 (and bfloat16 on tensor cores), not "
                        "float64"));
  CHECK(streamk_tune_lines(db) == 4);  // refused before anything was recorded
  o.simt_tiles.clear();
  CHECK_THROWS_WITH(tune_streamk_gemm(1024, 1024, 1024, f32, "sm_90", Layout::RowMajor, Layout::RowMajor, o),
                    doctest::Contains("StreamKTuneOptions::simt_tiles is empty"));
}

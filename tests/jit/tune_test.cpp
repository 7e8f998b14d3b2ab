// loom::tune on a small matmul: the knobs are discovered, every configuration is built and timed
// (or refused: counted as invalid; or computing something else: counted as wrong and never chosen),
// measurements go to the tuning database, and apply_best schedules the workload from it with no
// search. The database survives garbage lines and processes appending at once. No test here looks
// at a time: only at which configurations were measured, refused, or rejected.
#include <loom/lib/gemm_tuning.hpp>
#include <loom/runtime/thread_pool.hpp>
#include <loom/tune/tune.hpp>

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;
using doctest::Contains;

namespace {

/// C = A B on 37 x 29 x 23 (no tile divides it), with a schedule function of three knobs.
struct TunedMatmul {
  Tensor A = placeholder({37, 23}, f32, "A"), B = placeholder({23, 29}, f32, "B");
  IterVar k = reduce_axis(0, 23, "k");
  Tensor C = compute(
      {37, 29}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  tune::Assignment last;  // the knobs of the last schedule built

  tune::ScheduleFunction schedule() {
    return [this](tune::Config& cfg) {
      Schedule s = create_schedule(C);
      const int64_t tile_i = cfg.choice("tile_i", {4, 0});  // 0: refused by split
      const int64_t tile_j = cfg.choice("tile_j", {8, 16, 4});
      auto [io, ii] = s[C].split(C.axis(0), tile_i);
      auto [jo, ji] = s[C].split(C.axis(1), tile_j);
      s[C].reorder({io, jo, C.reduce_axis(0), ii, ji});
      if (cfg.flag("vectorize")) s[C].vectorize(ji);
      // A "schedule" that drops rows: faster, and wrong.
      if (cfg.flag("drop_rows")) s[C].set_store_predicate(C.axis(0).var() < 20);
      last = cfg.assignment();
      return s;
    };
  }
  std::vector<LowerArg> args() const { return {A, B, C}; }
};

tune::Options quick(const std::string& database) {
  tune::Options o;
  o.name = "matmul_37x29x23";
  o.repeats = 2;
  o.min_sample_ms = 0.02;
  o.database = database;
  return o;
}

int lines_of(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE("tune: every configuration is measured, refused or rejected, and the best is a measured one") {
  ScopedCacheDir dir;
  TunedMatmul w;
  const std::string db = dir.path + "/tuning.jsonl";
  tune::Options o = quick(db);
  // Every valid configuration timed fully: on a loaded machine a first call of this microsecond
  // kernel can pass the 2 ms give-up limit, and a configuration cut short is no finalist.
  o.give_up_factor = 0;
  tune::Result r = tune::tune(w.args(), w.schedule(), o);
  REQUIRE(r.space.size() == 4);
  CHECK(r.space[0].name == "tile_i");
  CHECK(r.space[1].options == std::vector<int64_t>{8, 16, 4});
  CHECK(r.space_size == 24);
  CHECK(r.trials.size() == 24);
  // tile_i = 0: refused by split (12 configurations); drop_rows: wrong (6 of the other 12).
  CHECK(r.invalid == 12);
  CHECK(r.wrong == 6);
  CHECK(r.measured == 6);
  for (const tune::Trial& t : r.trials) {
    if (t.knobs.at("tile_i") == 0) {
      CHECK(t.outcome == tune::Trial::Outcome::Invalid);
      CHECK_MESSAGE(t.detail.find("split") != std::string::npos, t.detail);
    } else if (t.knobs.at("drop_rows") == 1) {
      CHECK(t.outcome == tune::Trial::Outcome::Wrong);
      CHECK_MESSAGE(t.detail.find("where the default configuration gives") != std::string::npos, t.detail);
    } else {
      CHECK(t.outcome == tune::Trial::Outcome::Measured);
      CHECK(t.ms > 0);
    }
  }
  CHECK(r.best.at("tile_i") == 4);
  CHECK(r.best.at("drop_rows") == 0);
  CHECK(r.best_ms > 0);
  CHECK(r.default_ms > 0);
  // The default and the three fastest others, timed again against each other: the best is the
  // fastest of those, or the default when that is within min_gain of it.
  REQUIRE(r.finals.size() == 4);
  CHECK(r.finals[0].first == r.trials[0].knobs);
  CHECK(r.default_ms == r.finals[0].second);
  double fastest = r.finals[0].second;
  for (const auto& [knobs, ms] : r.finals) {
    CHECK(knobs.at("tile_i") == 4);
    CHECK(knobs.at("drop_rows") == 0);
    fastest = std::min(fastest, ms);
  }
  if (r.best == r.trials[0].knobs)
    CHECK(fastest >= r.default_ms * (1 - tune::Options().min_gain));
  else
    CHECK(r.best_ms == fastest);
  // One database line per measured configuration, and one per finalist (the chosen one confirmed).
  CHECK(lines_of(db) == 6 + 4);

  // A later "process": the best configuration, from the file alone.
  tune::Database later(db);
  std::optional<tune::Record> best = later.best(r.workload, Target::cpu().str());
  REQUIRE(best);
  CHECK(best->knobs == r.best);
  CHECK(best->name == "matmul_37x29x23");
  std::optional<Schedule> s = tune::apply_best(w.args(), w.schedule(), Target::cpu(), db);
  REQUIRE(s);
  CHECK(w.last == r.best);
  check_jit_matches_interpreter(lower(*s, w.args(), "applied"),
                                RandomArgs(random_args(lower(*s, w.args()), 3)).args);
  // Another shape is another workload: nothing recorded for it.
  TunedMatmul other;
  other.A = placeholder({38, 23}, f32, "A");
  other.C = compute(
      {38, 29}, [&](Expr i, Expr j) { return sum(other.A(i, other.k) * other.B(other.k, j), {other.k}); },
      "C");
  CHECK(tune::workload_key(other.args()) != r.workload);
  CHECK(tune::workload_key(TunedMatmul().args()) == r.workload);
  CHECK_FALSE(tune::apply_best(other.args(), other.schedule(), Target::cpu(), db));
}

namespace {

// Kernels that call these crash or hang: only ever in the tuner's worker process.
float tune_test_crash(float x) {
  std::signal(SIGSEGV, SIG_DFL);  // not the test framework's handler: die as a plain process would
  std::raise(SIGSEGV);
  return x;
}
float tune_test_hang(float x) {
  for (;;) ::pause();
  return x;
}

}  // namespace

TEST_CASE("tune: a configuration that crashes or hangs costs one trial, not the tuning run") {
  ScopedCacheDir dir;
  register_extern_c("tune_test_crash", &tune_test_crash);
  register_extern_c("tune_test_hang", &tune_test_hang);
  Tensor A = placeholder({64}, f32, "A");
  tune::Assignment last;
  auto schedule = [&](tune::Config& cfg) {
    const int64_t fault = cfg.choice("fault", {0, 1, 2});
    const int64_t split = cfg.choice("split", {8, 16});
    Tensor C = compute(
        {64},
        [&](Expr i) {
          if (fault == 1) return call_extern(f32, "tune_test_crash", {A(i)});
          if (fault == 2) return call_extern(f32, "tune_test_hang", {A(i)});
          return A(i) * 2.0f;
        },
        "C");
    Schedule s = create_schedule(C);
    s[C].split(C.axis(0), split);
    last = cfg.assignment();
    return tune::Candidate{s, {A, C}};
  };
  tune::Options o = quick("off");
  o.time_limit_s = 1;
  tune::Result r = tune::tune(schedule, o);
  REQUIRE(r.trials.size() == 6);
  CHECK(r.measured == 2);
  CHECK(r.crashed == 2);
  CHECK(r.timed_out == 2);
  for (const tune::Trial& t : r.trials) {
    const int64_t fault = t.knobs.at("fault");
    if (fault == 1) {
      CHECK(t.outcome == tune::Trial::Outcome::Crashed);
      CHECK_MESSAGE(t.detail.find("signal 11") != std::string::npos, t.detail);
    } else if (fault == 2) {
      CHECK(t.outcome == tune::Trial::Outcome::TimedOut);
      CHECK_MESSAGE(t.detail.find("time limit of 1 s") != std::string::npos, t.detail);
    } else {
      CHECK(t.outcome == tune::Trial::Outcome::Measured);
      CHECK(t.timing.samples >= 1);
    }
  }
  CHECK(r.best.at("fault") == 0);
}

TEST_CASE("tune: a configuration whose first call is far slower than the default is not timed further") {
  ScopedCacheDir dir;
  Tensor A = placeholder({64}, f32, "A");
  auto schedule = [&](tune::Config& cfg) {
    // extra = 4000000: the same values (the maximum is at r = 0, exactly A(i)) through 256 million
    // subtractions and maxima that no simplifier removes: far over the 2 ms floor of give-up,
    // even vectorized.
    const int64_t extra = cfg.choice("extra", {1, 4000000});
    const int64_t split = cfg.choice("split", {8, 16});
    IterVar r = reduce_axis(0, extra, "r");
    Tensor C = compute(
        {64}, [&](Expr i) { return max(A(i) - cast(f32, r.var()), {r}); }, "C");
    Schedule s = create_schedule(C);
    s[C].split(C.axis(0), split);
    return tune::Candidate{s, {A, C}};
  };
  tune::Result r = tune::tune(schedule, quick("off"));
  REQUIRE(r.trials.size() == 4);
  CHECK(r.measured == 4);
  // (Whether a fast one is cut short depends on its first call on a busy machine: not checked.)
  for (const tune::Trial& t : r.trials) {
    CHECK(t.outcome == tune::Trial::Outcome::Measured);
    if (t.knobs.at("extra") != 1) {
      CHECK(t.timing.cut_short);
      CHECK(t.timing.samples == 1);
    }
  }
  CHECK(r.best.at("extra") == 1);
  for (const auto& [knobs, ms] : r.finals) CHECK(knobs.at("extra") == 1);  // none cut short
}

TEST_CASE("tune: a configuration that skips writes is wrong even where the right value is zero") {
  ScopedCacheDir dir;
  Tensor A = placeholder({64}, f32, "A");
  auto schedule = [&](tune::Config& cfg) {
    // C is zero at odd i; skip_odd stores only the even ones (a zeroed C would hide it).
    Tensor C = compute(
        {64}, [&](Expr i) { return if_then_else(i % 2 == 0, A(i), 0.0f); }, "C");
    Schedule s = create_schedule(C);
    if (cfg.flag("skip_odd")) s[C].set_store_predicate(C.axis(0).var() % 2 == 0);
    return tune::Candidate{s, {A, C}};
  };
  tune::Result r = tune::tune(schedule, quick("off"));
  REQUIRE(r.trials.size() == 2);
  CHECK(r.trials[1].outcome == tune::Trial::Outcome::Wrong);
  CHECK_MESSAGE(r.trials[1].detail.find("output element 1 is nan") != std::string::npos, r.trials[1].detail);
}

TEST_CASE("tune: NaN outputs of the default are matched, not counted as wrong") {
  ScopedCacheDir dir;
  Tensor A = placeholder({64}, f32, "A");
  Tensor C = compute(
      {64}, [&](Expr i) { return log(A(i)); }, "C");  // NaN for the negative half of the inputs
  tune::Result r = tune::tune(
      {A, C},
      [&](tune::Config& cfg) {
        Schedule s = create_schedule(C);
        s[C].split(C.axis(0), cfg.choice("split", {8, 16}));
        return s;
      },
      quick("off"));
  CHECK(r.measured == 2);
  CHECK(r.wrong == 0);
}

TEST_CASE("tune: in the tuning process and with one build at a time, the outcomes are the same") {
  ScopedCacheDir dir;
  TunedMatmul w;
  tune::Options o = quick("off");
  o.isolate = false;
  o.compile_threads = 1;
  tune::Result r = tune::tune(w.args(), w.schedule(), o);
  CHECK(r.strategy == tune::Strategy::Exhaustive);
  CHECK(r.trials.size() == 24);
  CHECK(r.invalid == 12);
  CHECK(r.wrong == 6);
  CHECK(r.measured == 6);
  CHECK(r.seconds > 0);
}

TEST_CASE("tune: a space larger than max_trials is sampled, the default first") {
  ScopedCacheDir dir;
  TunedMatmul w;
  tune::Options o = quick("off");
  o.max_trials = 5;
  tune::Result r = tune::tune(w.args(), w.schedule(), o);
  REQUIRE(r.trials.size() == 5);
  CHECK(r.strategy == tune::Strategy::Evolutionary);
  CHECK(r.trials[0].knobs ==
        tune::Assignment{{"drop_rows", 0}, {"tile_i", 4}, {"tile_j", 8}, {"vectorize", 0}});
  std::set<tune::Assignment> distinct;
  for (const tune::Trial& t : r.trials) distinct.insert(t.knobs);
  CHECK(distinct.size() == 5);
}

TEST_CASE("tune: the database skips lines it does not understand and takes appends from several processes") {
  ScopedCacheDir dir;
  const std::string path = dir.path + "/db.jsonl";
  {
    std::ofstream out(path);
    out << "not json\n{\"schema\":99,\"workload\":\"x\"}\n";
  }
  tune::Database db(path);
  tune::Record r;
  r.workload = "00000000000000aa";
  r.name = "quote\" and\\slash";
  r.target = "cpu -mcpu=host";
  r.cpu = tune::cpu_model();
  r.threads = 2;
  r.knobs = {{"a", -3}, {"b", 64}};
  r.ms = 0.125;
  r.cores = 2;
  r.l1d_bytes = 48 * 1024;
  r.l2_bytes = 2 << 20;
  r.l3_bytes = int64_t{480} << 20;
  db.append(r);
  std::vector<tune::Record> read = db.read();
  REQUIRE(read.size() == 1);
  CHECK_FALSE(read[0].confirmed);
  CHECK(read[0].cores == 2);
  CHECK(read[0].l1d_bytes == 48 * 1024);
  CHECK(read[0].l3_bytes == int64_t{480} << 20);
  CHECK(read[0].name == r.name);
  CHECK(read[0].knobs == r.knobs);
  CHECK(read[0].ms == 0.125);
  // That record's caches are not this machine's: best() does not take it (a CPU model name such as
  // "AMD EPYC" can stand for several generations).
  CHECK_FALSE(db.best(r.workload, r.target));
  r.l1d_bytes = loom::CpuCacheInfo::host().l1d_bytes;
  r.l2_bytes = loom::CpuCacheInfo::host().l2_bytes;
  r.l3_bytes = loom::CpuCacheInfo::host().l3_bytes;
  // Four processes append 50 records each at once: every line stays whole.
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      tune::Record mine = r;
      for (int i = 0; i < 50; ++i) {
        mine.knobs = {{"process", p}, {"i", i}};
        db.append(mine);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
  }
  CHECK(db.read().size() == 201);
  CHECK(lines_of(path) == 203);
  // A confirmed record (from a tuning run's final rounds) is the best even where the search's own
  // records of the workload are faster.
  REQUIRE(db.best(r.workload, r.target));
  CHECK(db.best(r.workload, r.target)->ms == 0.125);
  tune::Record elsewhere = r;  // faster, on a machine with another L2
  elsewhere.l2_bytes = 2 * r.l2_bytes;
  elsewhere.knobs = {{"elsewhere", 1}};
  elsewhere.ms = 0.001;
  db.append(elsewhere);
  CHECK(db.best(r.workload, r.target)->ms == 0.125);
  tune::Record confirmed = r;
  confirmed.knobs = {{"final", 1}};
  confirmed.ms = 0.5;
  confirmed.confirmed = true;
  db.append(confirmed);
  CHECK(db.read().back().confirmed);
  CHECK(db.best(r.workload, r.target)->knobs == confirmed.knobs);
}

TEST_CASE("tune: knobs and workloads it cannot take are refused with a reason") {
  tune::Config cfg;
  CHECK_THROWS_WITH_AS(cfg.choice("tile", {}), Contains("tune: knob 'tile' has no options"), Error);
  CHECK_THROWS_WITH_AS(cfg.choice("tile", {8, 8}), Contains("tune: knob 'tile' lists the value 8 twice"),
                       Error);
  CHECK(cfg.choice("tile", {8, 16}) == 8);
  CHECK_THROWS_WITH_AS(cfg.choice("tile", {8, 32}), Contains("was asked twice with different options"),
                       Error);
  tune::Config fixed({{"tile", 12}});
  CHECK_THROWS_WITH_AS(fixed.choice("tile", {8, 16}),
                       Contains("tune: knob 'tile' was given the value 12, which is not one of its options"),
                       Error);
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  CHECK_THROWS_WITH_AS(tune::tune(
                           {A, C}, [&](tune::Config&) { return create_schedule(C); }, quick("off")),
                       Contains("tune: argument 'A' has the symbolic extent n; tuning needs constant shapes"),
                       Error);
  Tensor F = placeholder({8}, f32, "F");
  Tensor G = compute(
      {8}, [&](Expr i) { return F(i) + 1.0f; }, "G");
  tune::Options shared = quick("off");
  shared.distribution.size = 2;
  shared.distribution.rank = 2;
  CHECK_THROWS_WITH_AS(
      tune::tune(
          {F, G}, [&](tune::Config&) { return create_schedule(G); }, shared),
      Contains("tune: the distribution says process 2 of 2 but has no all_gather; give rank in "
               "[0, size) and an all_gather"),
      Error);
}

TEST_CASE("tune: lib::gemm's blocking, tuned once, is what later gemm() calls use") {
  ScopedCacheDir dir;  // LOOM_CACHE_DIR: the default database is dir/tuning.jsonl
  lib::GemmProblem p;
  p.m = 40, p.n = 36, p.k = 52;
  lib::GemmProblem q = p;
  q.k = 53;
  // No database yet: the model's choices.
  const lib::GemmConfig heuristic = lib::gemm(p).config, heuristic_q = lib::gemm(q).config;
  tune::Options o = quick("");
  o.max_trials = 6;
  o.min_sample_ms = 0.01;
  tune::Result r = lib::tune_gemm(p, o);
  CHECK(r.space.size() == 5);  // kc, mc, nc, pack_a, stream_k
  CHECK(r.trials.size() == 6);
  CHECK(r.wrong == 0);  // every blocking computes the same product
  CHECK(r.measured + r.invalid == 6);
  REQUIRE(r.measured >= 1);
  tune::Config best(r.best);
  const lib::GemmConfig tuned = lib::gemm_config_knobs(best, heuristic, p);
  // (Compared as gemm() makes them final: it fits some sizes to the problem.)
  const lib::GemmConfig used = lib::gemm(p).config;
  CHECK(used.str() == lib::gemm(p, tuned).config.str());
  // Another problem has no record: the model's choice.
  CHECK(lib::gemm(q).config.str() == heuristic_q.str());
  CHECK(lib::model_gemm_config(p).str() == heuristic.str());  // the model, whatever is recorded
  // A record for a problem that was never tuned here is found and applied (only lowered, not run).
  lib::GemmProblem r2;
  r2.m = r2.n = r2.k = 1024;
  const lib::GemmConfig model_r2 = lib::model_gemm_config(r2);
  const std::string model_final = lib::gemm(r2, model_r2).config.str();
  // A kc that gemm() keeps different from the model's (it adjusts some to the problem).
  tune::Assignment knobs = {
      {"kc", 0}, {"mc", model_r2.mc}, {"nc", model_r2.nc}, {"pack_a", model_r2.pack_a ? 1 : 0}};
  std::string planted_final;
  for (int64_t kc : {128, 256, 512}) {
    knobs["kc"] = kc;
    tune::Config c(knobs);
    planted_final = lib::gemm(r2, lib::gemm_config_knobs(c, model_r2, r2)).config.str();
    if (planted_final != model_final) break;
  }
  REQUIRE(planted_final != model_final);
  tune::Record planted;
  planted.workload = tune::workload_key(lib::gemm(r2, model_r2).args());
  planted.target = Target::cpu().str();
  planted.cpu = tune::cpu_model();
  planted.knobs = knobs;
  planted.ms = 0.001;
  tune::Database().append(planted);
  CHECK(lib::gemm(r2).config.str() == planted_final);
  // A faster record with the Stream-K decomposition: gemm() shares the work that way.
  CHECK(lib::gemm(r2).config.decomposition == lib::Decomposition::DataParallel);
  planted.knobs["stream_k"] = 1;
  planted.ms = 0.0005;
  tune::Database().append(planted);
  CHECK(lib::gemm(r2).config.decomposition == lib::Decomposition::StreamK);
  // With LOOM_TUNE=1, a problem without a record is tuned first, and recorded.
  ::setenv("LOOM_TUNE", "1", 1);
  ::setenv("LOOM_TUNE_TRIALS", "3", 1);
  lib::Gemm g = lib::gemm(q);
  ::unsetenv("LOOM_TUNE");
  ::unsetenv("LOOM_TUNE_TRIALS");
  // Records are filed under the model configuration's workload (a tuned configuration may add or
  // drop packing stages, which changes its own unscheduled graph).
  const std::string key_q = tune::workload_key(lib::gemm(q, lib::model_gemm_config(q)).args());
  std::optional<tune::Assignment> recorded = tune::best_knobs(key_q, Target::cpu());
  REQUIRE(recorded.has_value());
  tune::Config recorded_cfg(*recorded);
  CHECK(g.config.str() == lib::gemm(q, lib::gemm_config_knobs(recorded_cfg, heuristic_q, q)).config.str());
  check_jit_matches_interpreter(lower(g.schedule, g.args(), "tuned_gemm"),
                                RandomArgs(random_args(lower(g.schedule, g.args()), 5)).args);
}

TEST_CASE("tune: lib::gemm's search refuses Stream-K where the blocks leave a thread nothing to do") {
  // C in one tile and K in one block is one MAC-loop iteration: Stream-K would run one worker of two,
  // a slower copy of a data-parallel candidate. Before, the tuner measured such candidates.
  ScopedCacheDir dir;  // LOOM_CACHE_DIR: the default database is dir/tuning.jsonl
  lib::GemmProblem p;
  p.m = 40, p.n = 36, p.k = 52;
  tune::Options o = quick("");
  o.min_sample_ms = 0.01;
  o.strategy = tune::Strategy::Exhaustive;
  const tune::Result r = lib::tune_gemm(p, o);
  const lib::GemmConfig base = lib::model_gemm_config(p);
  const int64_t threads = runtime::ThreadPool::global().num_threads();
  int refused = 0, stream_k = 0;
  for (const tune::Trial& t : r.trials) {
    tune::Config c(t.knobs);
    const lib::GemmConfig config = lib::gemm_config_knobs(c, base, p);
    if (config.decomposition != lib::Decomposition::StreamK) continue;
    ++stream_k;
    const bool idle = lib::streamk_layout(p, config).workers < threads;
    CAPTURE(config.str());
    CHECK((t.outcome == tune::Trial::Outcome::Invalid) == idle);
    if (idle) {
      CHECK(t.detail.find(cat("lib::gemm tuning: Stream-K with mc = ", config.mc)) != std::string::npos);
      CHECK(t.detail.find(cat("MAC-loop iterations (", lib::streamk_layout(p, config).tiles(),
                              " tiles x ")) != std::string::npos);
      ++refused;
    }
  }
  CHECK(stream_k > 0);
  if (threads >= 2) CHECK(refused > 0);
  // A record is applied whatever the threads now: one made with Stream-K over the model's blocks
  // (one tile here) is what a later gemm() uses. (In a database of its own: the search's confirmed
  // records come before others.)
  ScopedCacheDir fresh;
  tune::Record planted;
  planted.workload = tune::workload_key(lib::gemm(p, base).args());
  planted.target = Target::cpu().str();
  planted.cpu = tune::cpu_model();
  planted.knobs = {
      {"kc", base.kc}, {"mc", base.mc}, {"nc", base.nc}, {"pack_a", base.pack_a ? 1 : 0}, {"stream_k", 1}};
  planted.ms = 1e-6;
  tune::Database().append(planted);
  CHECK(lib::gemm(p).config.decomposition == lib::Decomposition::StreamK);
}

TEST_CASE("tune: lib::gemm's knobs for narrow types: the dot instruction, long K blocks, no Stream-K") {
  auto knob_names = [](const tune::Config& c) {
    std::vector<std::string> names;
    for (const tune::Knob& k : c.knobs()) names.push_back(k.name);
    return names;
  };
  auto options_of = [](const tune::Config& c, const std::string& name) {
    for (const tune::Knob& k : c.knobs())
      if (k.name == name) return k.options;
    return std::vector<int64_t>{};
  };
  // float32 keeps its knobs: the decomposition among them.
  lib::GemmProblem f;
  f.m = f.n = f.k = 512;
  tune::Config fc;
  lib::gemm_config_knobs(fc, lib::model_gemm_config(f), f);
  CHECK(knob_names(fc) == std::vector<std::string>{"kc", "mc", "nc", "pack_a", "stream_k"});
  // bfloat16: Stream-K computes only float32/float64, so it is no knob (half the space was invalid);
  // the dot instruction is one where this CPU has it, and K blocks run up to K.
  lib::GemmProblem h;
  h.m = h.n = 256;
  h.k = 1000;
  h.dtype = bf16;
  const lib::GemmConfig model = lib::model_gemm_config(h);
  // Where the CPU has AMX the model multiplies on its tiles, and the knobs are AMX's
  // (lib_gemm_amx_test.cpp).
  if (model.dot == lib::DotInstruction::Amx) {
    MESSAGE("the model multiplies bfloat16 on AMX tiles here");
  } else {
    tune::Config hc;
    lib::gemm_config_knobs(hc, model, h);
    const std::vector<std::string> names = knob_names(hc);
    CHECK(std::find(names.begin(), names.end(), "stream_k") == names.end());
    const std::vector<int64_t> kc = options_of(hc, "kc");
    REQUIRE(!kc.empty());
    CHECK(kc.front() == model.kc);
    for (size_t i = 1; i < kc.size(); ++i) CHECK(kc[i] < h.k);  // longer blocks are all K: one option
    CHECK(std::find(kc.begin(), kc.end(), 512) != kc.end());
    const bool has_dot = CpuCacheInfo::host().bf16_dot;
    CHECK((std::find(names.begin(), names.end(), "dot") != names.end()) == has_dot);
    if (has_dot) {
      // The model's choice first; the other instruction second, and both compute the product.
      CHECK(model.dot == lib::DotInstruction::Vdpbf16ps);
      tune::Config other({{"dot", 0}});  // the knob's values: 1 for the dot instruction, 0 not
      const lib::GemmConfig widened = lib::gemm_config_knobs(other, model, h);
      CHECK(widened.dot == lib::DotInstruction::MultiplyAdd);
      lib::Gemm g = lib::gemm(h, widened);
      const LoweredFunc f = lower(g.schedule, g.args(), "gemm_bf16_widened");
      check_jit_matches_interpreter(f, RandomArgs(random_args(f, 7)).args);
    }
  }
  // 8-bit inputs of opposite signedness: vpdpbusd where the CPU has VNNI.
  lib::GemmProblem q;
  q.m = q.n = 64;
  q.k = 64;
  q.dtype = u8;
  q.b_dtype = i8;
  tune::Config qc;
  lib::gemm_config_knobs(qc, lib::model_gemm_config(q), q);
  const std::vector<std::string> qnames = knob_names(qc);
  if (!CpuCacheInfo::host().amx_int8) {
    CHECK((std::find(qnames.begin(), qnames.end(), "dot") != qnames.end()) == CpuCacheInfo::host().int8_dot);
    CHECK(options_of(qc, "kc").size() == 1);  // K = 64: every block is all of K
  }
}

TEST_CASE("tune: a record from an older search space leaves gemm() the model's configuration") {
  ScopedCacheDir dir;
  lib::GemmProblem p;
  p.m = p.n = 48;
  p.k = 300;
  p.dtype = bf16;
  const lib::GemmConfig model = lib::model_gemm_config(p);
  tune::Record stale;
  stale.workload = tune::workload_key(lib::gemm(p, model).args());
  stale.target = Target::cpu().str();
  stale.cpu = tune::cpu_model();
  stale.knobs = {{"kc", 192}, {"mc", model.mc}, {"nc", model.nc}, {"pack_a", 1}, {"stream_k", 0}};  // kc 192:
  stale.ms = 0.001;  // no longer offered for bfloat16
  tune::Database().append(stale);
  CHECK(lib::gemm(p).config.str() == lib::gemm(p, model).config.str());
}

// loom::tune on five workloads: two lib::gemm shapes (knobs: the cache blocking and packing), a
// 3x3 NCHW convolution, a row softmax and a separable 3x3 blur (knobs: register tiles, vector
// lanes, where intermediate stages are computed or whether they are inlined, what runs in parallel). Each
// workload's default configuration is its hand-written schedule (the examples' own, or lib::gemm's cache
// model); the tuner searches the knobs (LOOM_TUNE_TRIALS per workload, default 256) into a throw-away
// database, then both configurations are timed again in alternating samples (the fastest of 16 each), and a
// second process (this program again, with --apply) schedules the workload from the database with no search
// and times it. Prints, per workload:
//   loom-bench tune workload= threads= strategy= space= candidates= measured= invalid= wrong=
//     crashed= timed_out= tuning_s= build_s= measure_s= default_ms= tuned_ms= second_process_ms=
//     kept_default= cost_model=<ridge|boosted_trees: the learner, which ranks from 8 measurements on>
//     model_rank_corr= best={knobs} peer=loom-default-schedule
//     speedup= ratio=<default/tuned>
// model_rank_corr: Spearman's correlation of the cost model's predictions with the measured times
// of the configurations it ranked.
// LOOM_BENCH_QUICK=1 (the ctest smoke run): small sizes, 4 trials. LOOM_BENCH_ONLY=<prefix>: only
// the workloads whose name begins with it. LOOM_TUNE_NO_IR_FEATURES=1: the cost model sees the knobs
// only. LOOM_TUNE_COST_MODEL=ridge or trees: its learner (tune/cost_model.hpp).
#include <loom/lib/gemm_tuning.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>
#include <loom/tune/cost_model.hpp>
#include <loom/tune/tune.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

using namespace loom;

namespace {

const bool quick = std::getenv("LOOM_BENCH_QUICK") != nullptr;

/// A workload: its tunable schedule, as a candidate function (tensors and schedule).
struct Workload {
  std::string name;
  tune::CandidateFunction candidate;
  bool library_gemm = false;  // tuned through lib::tune_gemm, applied by lib::gemm(problem)
  lib::GemmProblem problem;
};

/// C = A B through lib::gemm: the knobs are lib::gemm_config_knobs's (kc, mc, nc, pack_a).
Workload gemm_workload(int64_t m, int64_t n, int64_t k) {
  Workload w;
  w.name = "gemm_" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  w.library_gemm = true;
  w.problem.m = m, w.problem.n = n, w.problem.k = k;
  const lib::GemmProblem p = w.problem;
  w.candidate = [p](tune::Config& cfg) {
    lib::Gemm g = lib::gemm(p, lib::gemm_config_knobs(cfg, lib::model_gemm_config(p), p));
    return tune::Candidate{g.schedule, g.args()};
  };
  return w;
}

/// examples/conv2d_nchw.cpp's 3x3 convolution with zero padding; its schedule is the default.
Workload conv2d_workload() {
  const int C = quick ? 8 : 64, H = quick ? 14 : 56, W = H, K = C;
  Workload w;
  w.name = "conv2d_nchw_" + std::to_string(C) + "x" + std::to_string(H) + "x" + std::to_string(W);
  w.candidate = [=](tune::Config& cfg) {
    Tensor In = placeholder({1, C, H, W}, f32, "In");
    Tensor Wt = placeholder({K, C, 3, 3}, f32, "Wt");
    Tensor Padded = compute({1, C, H + 2, W + 2},
                            [&](Expr n, Expr c, Expr y, Expr x) {
                              return if_then_else(all(y >= 1, y < H + 1, x >= 1, x < W + 1),
                                                  In(n, c, y - 1, x - 1), 0.0f);
                            },
                            "Padded", "", {"n", "c", "y", "x"});
    IterVar rc = reduce_axis(0, C, "rc"), ry = reduce_axis(0, 3, "ry"), rx = reduce_axis(0, 3, "rx");
    Tensor Out = compute({1, K, H, W},
                         [&](Expr n, Expr k, Expr y, Expr x) {
                           return sum(Padded(n, rc, y + ry, x + rx) * Wt(k, rc, ry, rx), {rc, ry, rx});
                         },
                         "Out", "", {"n", "k", "y", "x"});
    const int64_t k_tile = cfg.choice("k_tile", {8, 4, 16});
    const int64_t lanes = cfg.choice("x_lanes", {8, 16, 4});
    const int64_t y_tile = cfg.choice("y_tile", {1, 2, 4});
    const bool parallel_rows = cfg.flag("parallel_k_and_y");
    const bool rows_outside = cfg.flag("rows_outside_channels");
    // The tile accumulated in a local buffer (cache_write), stored to Out once: with a partial last
    // vector (56 columns in vectors of 16), Out's masked loads and stores kept the sums in memory,
    // where the local tile stays in registers.
    const bool local_tile = cfg.flag("local_tile");
    Schedule s = create_schedule(Out);
    const Tensor Tile = local_tile ? s.cache_write(Out, "local") : Out;
    auto [ko, ki] = s[Out].split(Out.axis(1), k_tile);
    auto [yo, yi] = s[Out].split(Out.axis(2), y_tile);
    auto [xo, xi] = s[Out].split(Out.axis(3), lanes);
    // Rows outside output channels: a thread's few rows of Padded stay in its L2 while it runs
    // through every channel, instead of all of Padded passing through once per channel block.
    const IterVar outer = rows_outside ? yo : ko, middle = rows_outside ? ko : yo;
    if (local_tile) {
      s[Out].reorder({Out.axis(0), outer, middle, xo, yi, ki, xi});
      s[Tile].compute_at(s[Out], xo);
      const IterVar tk = Tile.axis(1), ty = Tile.axis(2), tx = Tile.axis(3);
      s[Tile].reorder(
          {Tile.axis(0), Tile.reduce_axis(0), Tile.reduce_axis(1), Tile.reduce_axis(2), ty, tk, tx});
      s[Tile].unroll(tk);
      s[Tile].unroll(ty);
      s[Tile].vectorize(tx);
      s[Tile].pragma(Tile.reduce_axis(0), "fp_contract");
    } else {
      s[Out].reorder({Out.axis(0), outer, middle, xo, rc, ry, rx, yi, ki, xi});
      s[Out].pragma(xo, "fp_contract");
    }
    s[Out].unroll(ki);
    s[Out].unroll(yi);
    s[Out].vectorize(xi);
    s[Out].parallel(parallel_rows ? s[Out].fuse(outer, middle) : outer);
    s[Padded].parallel(Padded.axis(1));
    return tune::Candidate{s, {In, Wt, Out}};
  };
  return w;
}

/// examples/softmax.cpp's row softmax; its schedule is the default.
Workload softmax_workload() {
  const int rows = quick ? 64 : 4096, cols = quick ? 256 : 1024;
  Workload w;
  w.name = "softmax_" + std::to_string(rows) + "x" + std::to_string(cols);
  w.candidate = [=](tune::Config& cfg) {
    Tensor X = placeholder({rows, cols}, f32, "X");
    IterVar k1 = reduce_axis(0, cols, "k1"), k2 = reduce_axis(0, cols, "k2");
    Tensor M = compute(
        {rows}, [&](Expr i) { return max(X(i, k1), {k1}); }, "M");
    Tensor E = compute(
        {rows, cols}, [&](Expr i, Expr j) { return exp(X(i, j) - M(i)); }, "E");
    Tensor S = compute(
        {rows}, [&](Expr i) { return sum(E(i, k2), {k2}); }, "S");
    Tensor Y = compute(
        {rows, cols}, [&](Expr i, Expr j) { return E(i, j) * (1.0f / S(i)); }, "Y");
    const int64_t lanes = cfg.choice("lanes", {16, 8, 32});
    const int64_t reduce_lanes = cfg.choice("reduce_lanes", {16, 8, 32, 0});  // 0: no rfactor
    const int64_t rows_per_task = cfg.choice("rows_per_task", {1, 4, 16});
    Schedule s = create_schedule(Y);
    auto [ro, ri] = s[Y].split(Y.axis(0), rows_per_task);
    s[Y].parallel(ro);
    auto [jo, ji] = s[Y].split(Y.axis(1), lanes);
    s[Y].vectorize(ji);
    auto reduction = [&](const Tensor& r) {
      if (reduce_lanes == 0) {
        s[r].compute_at(s[Y], ri);
        return;
      }
      auto [ko, kl] = s[r].split(r.reduce_axis(0), reduce_lanes);
      Tensor partial = s.rfactor(r, kl, 1);
      s[r].compute_at(s[Y], ri);
      s[partial].compute_at(s[r], r.axis(0));
      s[partial].reorder({partial.axis(0), partial.reduce_axis(0), partial.axis(1)});
      s[partial].vectorize(partial.axis(1));
    };
    reduction(S);
    s[E].compute_at(s[Y], ri);
    auto [eo, ei] = s[E].split(E.axis(1), lanes);
    s[E].vectorize(ei);
    reduction(M);
    return tune::Candidate{s, {X, Y}};
  };
  return w;
}

/// Halide's separable 3x3 box blur: Bx = horizontal sums, Out = vertical sums of Bx, divided by 9.
/// Default: Out in strips of 32 rows in parallel, 16 lanes, Bx computed per strip, one row at a time.
Workload blur_workload() {
  const int h = quick ? 62 : 2046, wd = quick ? 126 : 3070;
  Workload w;
  w.name = "blur3x3_" + std::to_string(h) + "x" + std::to_string(wd);
  w.candidate = [=](tune::Config& cfg) {
    Tensor In = placeholder({h + 2, wd + 2}, f32, "In");
    Tensor Bx = compute(
        {h + 2, wd}, [&](Expr y, Expr x) { return In(y, x) + In(y, x + 1) + In(y, x + 2); }, "Bx");
    Tensor Out = compute(
        {h, wd}, [&](Expr y, Expr x) { return (Bx(y, x) + Bx(y + 1, x) + Bx(y + 2, x)) * (1.0f / 9.0f); },
        "Out");
    const int64_t strip = cfg.choice("strip_rows", {32, 8, 16, 64, 128});
    const int64_t lanes = cfg.choice("lanes", {16, 8, 32});
    // 1: per strip, 0: root, 2: per group of rows, 3: inlined (Out reads In nine times, no buffer)
    const int64_t bx_at = cfg.choice("bx_at", {1, 0, 2, 3});
    // Output rows computed together, unrolled inside the vector loop's iteration: neighbouring rows
    // read the same rows of In (or Bx), and the unrolled code loads them once.
    const int64_t rows = cfg.choice("rows_unrolled", {1, 2, 4, 8});
    Schedule s = create_schedule(Out);
    auto [yo, yi] = s[Out].split(Out.axis(0), strip);
    auto [xo, xi] = s[Out].split(Out.axis(1), lanes);
    IterVar group = yi;
    if (rows > 1) {
      auto [g, r] = s[Out].split(yi, rows);
      s[Out].reorder({yo, g, xo, r, xi});
      s[Out].unroll(r);
      group = g;
    }
    s[Out].parallel(yo);
    s[Out].vectorize(xi);
    if (bx_at == 3) {
      s[Bx].compute_inline();
      return tune::Candidate{s, {In, Out}};
    }
    if (bx_at == 0) {
      s[Bx].parallel(Bx.axis(0));
    } else {
      s[Bx].compute_at(s[Out], bx_at == 1 ? yo : group);
    }
    auto [bo, bi] = s[Bx].split(Bx.axis(1), lanes);
    s[Bx].vectorize(bi);
    return tune::Candidate{s, {In, Out}};
  };
  return w;
}

std::vector<Workload> workloads() {
  std::vector<Workload> all;
  if (quick) {
    all.push_back(gemm_workload(64, 48, 40));
  } else {
    all.push_back(gemm_workload(1024, 1024, 1024));
    all.push_back(gemm_workload(2048, 2048, 128));
  }
  all.push_back(conv2d_workload());
  all.push_back(softmax_workload());
  all.push_back(blur_workload());
  return all;
}

/// Buffers for a candidate's arguments: inputs random in [-1, 1], outputs zero.
std::vector<Buffer<float>> buffers_for(const tune::Candidate& c) {
  std::vector<Buffer<float>> out;
  unsigned seed = 1;
  for (const LowerArg& a : c.args) {
    std::vector<int64_t> shape;
    for (const Expr& e : a.tensor.shape()) shape.push_back(*as_const_int(e));
    Buffer<float> b(shape);
    uint32_t x = seed++ * 2654435761u;
    for (int64_t i = 0; i < b.num_elements(); ++i) {
      x = x * 1664525u + 1013904223u;
      b.at_flat(i) = static_cast<float>(x >> 8) / 8388608.0f - 1.0f;
    }
    out.push_back(std::move(b));
  }
  return out;
}

/// Kernels timed on one set of buffers: two sets could differ in page placement (huge pages or
/// not), which alone moves a memory-bound kernel's time by 10% on this kind of machine.
struct Timed {
  std::vector<Buffer<float>> buffers;
  std::vector<KernelArg> args;
  explicit Timed(const tune::Candidate& c) : buffers(buffers_for(c)) {
    for (const Buffer<float>& b : buffers) args.emplace_back(b);
  }
  /// One sample of `k`: the mean time of calls lasting at least 20 ms.
  double ms(const Kernel& k) {
    return tune::sample_ms([&] { k(args); }, quick ? 0.01 : 20);
  }
};

tune::Candidate default_candidate(const Workload& w) {
  tune::Config cfg;
  return w.candidate(cfg);
}

/// Spearman's rank correlation between the cost model's predictions and the measured times of
/// the configurations it ranked (0 when fewer than three): how well it orders what it proposes.
double model_rank_correlation(const tune::Result& r) {
  std::vector<std::pair<double, double>> pairs;
  for (const tune::Trial& t : r.trials)
    if (t.predicted_ms > 0 && t.outcome == tune::Trial::Outcome::Measured && !t.timing.cut_short)
      pairs.emplace_back(t.predicted_ms, t.ms);
  const size_t n = pairs.size();
  if (n < 3) return 0;
  auto ranks = [&](bool second) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return second ? pairs[a].second < pairs[b].second : pairs[a].first < pairs[b].first;
    });
    std::vector<double> rank(n);
    for (size_t i = 0; i < n; ++i) rank[order[i]] = static_cast<double>(i);
    return rank;
  };
  const std::vector<double> x = ranks(false), y = ranks(true);
  double d2 = 0;
  for (size_t i = 0; i < n; ++i) d2 += (x[i] - y[i]) * (x[i] - y[i]);
  return 1 - 6 * d2 / (static_cast<double>(n) * (static_cast<double>(n * n) - 1));
}

/// The second process: the workload scheduled from the database alone, timed; prints its time.
int apply_only(const std::string& name) {
  for (const Workload& w : workloads()) {
    if (w.name != name) continue;
    tune::Candidate c = default_candidate(w);
    if (w.library_gemm) {
      lib::Gemm g = lib::gemm(w.problem);  // reads the database: no search
      c = tune::Candidate{g.schedule, g.args()};
    } else {
      std::optional<tune::Assignment> best = tune::best_knobs(tune::workload_key(c.args));
      if (!best) {
        std::printf("no record\n");
        return 1;
      }
      tune::Config cfg(*best);
      c = w.candidate(cfg);
    }
    Timed t(c);
    const Kernel k = build(c.schedule, c.args, Target::cpu(), w.name + "_applied");
    double best = t.ms(k);  // warm-up
    for (int round = 0; round < (quick ? 1 : 16); ++round) best = std::min(best, t.ms(k));
    std::printf("%.6f\n", best);
    return 0;
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--apply") == 0) return apply_only(argv[2]);
  // A throw-away cache directory: its database is the one the second process reads.
  char tmpl[] = "/tmp/loom-bench-tune-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ::setenv("LOOM_CACHE_DIR", dir.c_str(), 1);
  const char* trials_env = std::getenv("LOOM_TUNE_TRIALS");
  const int trials = trials_env && std::atoi(trials_env) > 0 ? std::atoi(trials_env) : quick ? 4 : 256;
  char self[4096] = {};
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;

  const char* only = std::getenv("LOOM_BENCH_ONLY");
  for (const Workload& w : workloads()) {
    if (only && w.name.rfind(only, 0) != 0) continue;
    tune::Options o;
    o.name = w.name;
    o.max_trials = trials;
    o.repeats = quick ? 1 : 5;
    o.min_sample_ms = quick ? 0.01 : 2;
    o.ir_features = std::getenv("LOOM_TUNE_NO_IR_FEATURES") == nullptr;
    tune::Result r = w.library_gemm ? lib::tune_gemm(w.problem, o) : tune::tune(w.candidate, o);

    tune::Config best(r.best);
    tune::Config discover;
    const tune::Candidate default_c = w.candidate(discover), tuned_c = w.candidate(best);
    const Kernel default_k = build(default_c.schedule, default_c.args, Target::cpu(), w.name + "_default");
    const Kernel tuned_k = build(tuned_c.schedule, tuned_c.args, Target::cpu(), w.name + "_tuned");
    Timed timed(default_c);
    // Alternating samples, the fastest of each: both see the same moments of the machine. When the
    // tuner kept the default, both are one kernel, timed once: timing it twice would only show the
    // machine's noise as a speedup or a slowdown.
    const bool kept_default = r.best == discover.assignment();
    double default_ms = 1e30, tuned_ms = 1e30;
    timed.ms(default_k), timed.ms(tuned_k);  // warm-up
    for (int round = 0; round < (quick ? 1 : 16); ++round) {
      default_ms = std::min(default_ms, timed.ms(default_k));
      if (!kept_default) tuned_ms = std::min(tuned_ms, timed.ms(tuned_k));
    }
    if (kept_default) tuned_ms = default_ms;
    double second_ms = 0;
    // The path in single quotes for the shell (a quote inside as '\'').
    std::string quoted = "'";
    for (const char* c = self; *c; ++c) quoted += *c == '\'' ? std::string("'\\''") : std::string(1, *c);
    const std::string command = quoted + "' --apply " + w.name;
    if (FILE* p = ::popen(command.c_str(), "r")) {
      if (std::fscanf(p, "%lf", &second_ms) != 1) second_ms = 0;
      ::pclose(p);
    }
    const std::string knobs = tune::knobs_text(r.best);
    const std::string learner =
        tune::CostModel({}).learner() == tune::CostLearner::Ridge ? "ridge" : "boosted_trees";
    std::printf(
        "loom-bench tune workload=%s threads=%d strategy=%s space=%lld candidates=%zu measured=%d invalid=%d "
        "wrong=%d crashed=%d timed_out=%d tuning_s=%.1f build_s=%.1f measure_s=%.1f default_ms=%.3f "
        "tuned_ms=%.3f second_process_ms=%.3f "
        "kept_default=%d cost_model=%s model_rank_corr=%.2f best={%s} peer=loom-default-schedule "
        "speedup=%.3f "
        "ratio=%.3f\n",
        w.name.c_str(), runtime::ThreadPool::global().num_threads(), tune::strategy_name(r.strategy).c_str(),
        static_cast<long long>(r.space_size), r.trials.size(), r.measured, r.invalid, r.wrong, r.crashed,
        r.timed_out, r.seconds, r.build_seconds, r.measure_seconds, default_ms, tuned_ms, second_ms,
        kept_default ? 1 : 0, learner.c_str(), model_rank_correlation(r), knobs.c_str(),
        default_ms / tuned_ms, default_ms / tuned_ms);
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);
}

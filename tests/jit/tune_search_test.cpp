// The tuner's parts that need no kernel: the Searcher (every strategy proposes each configuration
// once, the default first, within the budget; the evolutionary search finds better configurations
// than a random sample of the same size on a synthetic landscape), the CostModel (recovers an
// additive landscape), Tukey's fence over timing samples, and the worker process (a result, an
// exception, a crash and a hang each come back as what they are, and the caller survives), and the
// counts the cost model takes from a lowered function (IrFeatures).
#include <loom/core.hpp>
#include <loom/tune/boosted_trees.hpp>
#include <loom/tune/ir_features.hpp>
#include <loom/tune/tune.hpp>

#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using namespace loom;
using namespace loom::tune;

namespace {

/// Four knobs of eight options: 4096 configurations.
std::vector<Knob> landscape_space() {
  std::vector<Knob> space;
  for (const char* name : {"a", "b", "c", "d"}) space.push_back(Knob{name, {1, 2, 4, 8, 16, 32, 64, 128}});
  return space;
}

/// A landscape with one best configuration (a=32, b=8, c=64, d=4: 1 ms), an interaction between a
/// and b (their product matters) and a ridge elsewhere.
double landscape_ms(const Assignment& x) {
  auto dist = [](double v, double best) { return std::abs(std::log2(v) - std::log2(best)); };
  const double ab = dist(static_cast<double>(x.at("a") * x.at("b")), 256);
  return 1.0 + 0.3 * ab * ab + 0.5 * dist(static_cast<double>(x.at("a")), 32) +
         0.2 * dist(static_cast<double>(x.at("c")), 64) + 0.4 * dist(static_cast<double>(x.at("d")), 4);
}

/// The best time a search with `strategy` finds in `trials` measurements of the landscape.
double search_best(Strategy strategy, int trials, uint32_t seed, std::set<Assignment>* seen = nullptr) {
  const std::vector<Knob> space = landscape_space();
  Searcher s(space, 4096, strategy, trials, seed);
  double best = 1e30;
  int proposed = 0;
  for (std::vector<Proposal> batch; !(batch = s.next_batch(4)).empty();)
    for (const Proposal& p : batch) {
      if (proposed == 0) CHECK(p.knobs == Assignment{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}});
      ++proposed;
      if (seen) CHECK_MESSAGE(seen->insert(p.knobs).second, "a configuration was proposed twice");
      const double ms = landscape_ms(p.knobs);
      best = std::min(best, ms);
      s.observe(p.knobs, ms);
    }
  CHECK(proposed == trials);
  return best;
}

}  // namespace

TEST_CASE("tune search: each strategy proposes every configuration once at most, the default first") {
  for (Strategy st : {Strategy::Random, Strategy::Evolutionary}) {
    std::set<Assignment> seen;
    search_best(st, 100, 7, &seen);
    CHECK(seen.size() == 100);
  }
  // A space smaller than the budget: Auto measures all of it, in order.
  std::vector<Knob> small{{"x", {1, 2, 3}}, {"y", {0, 1}}};
  Searcher s(small, 6, Strategy::Auto, 64, 1);
  CHECK(s.strategy() == Strategy::Exhaustive);
  std::vector<Assignment> order;
  for (std::vector<Proposal> b; !(b = s.next_batch(4)).empty();)
    for (const Proposal& p : b) order.push_back(p.knobs);
  REQUIRE(order.size() == 6);
  CHECK(order[0] == Assignment{{"x", 1}, {"y", 0}});
  CHECK(order[1] == Assignment{{"x", 2}, {"y", 0}});
  CHECK(order[5] == Assignment{{"x", 3}, {"y", 1}});
  CHECK(Searcher(small, 6, Strategy::Auto, 5, 1).strategy() == Strategy::Evolutionary);
  // Evolutionary with a budget as large as the space ends having proposed all of it.
  Searcher e(small, 6, Strategy::Evolutionary, 6, 3);
  std::set<Assignment> all;
  for (std::vector<Proposal> b; !(b = e.next_batch(4)).empty();)
    for (const Proposal& p : b) {
      all.insert(p.knobs);
      e.observe(p.knobs, 1.0 + static_cast<double>(p.knobs.at("x")));
    }
  CHECK(all.size() == 6);
}

TEST_CASE("tune search: the evolutionary search beats a random sample of the same size") {
  // Ten seeds, 64 trials of 4096 configurations. The landscape's best is 1 ms.
  double evolutionary = 0, random = 0;
  int evolutionary_wins = 0;
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    const double e = search_best(Strategy::Evolutionary, 64, seed),
                 r = search_best(Strategy::Random, 64, seed);
    evolutionary += e / 10;
    random += r / 10;
    evolutionary_wins += e < r;
  }
  MESSAGE("mean best of 64 trials: evolutionary ", evolutionary, " ms, random ", random, " ms");
  CHECK(evolutionary < random);
  CHECK(evolutionary_wins >= 7);
  CHECK(evolutionary < 1.6);
}

TEST_CASE("tune search: boosted trees find better configurations than ridge where knobs interact") {
  // The landscape's a x b product is an interaction a sum of per-knob effects cannot rank by.
  // Forty searches of 64 trials with each learner.
  std::string why;
  if (!boosted_trees_available(&why)) {
    MESSAGE("XGBoost is not available, so the learners are not compared: ", why);
    return;
  }
  auto mean_best = [](const char* learner) {
    const char* before = std::getenv("LOOM_TUNE_COST_MODEL");
    const std::string saved = before ? before : "";
    ::setenv("LOOM_TUNE_COST_MODEL", learner, 1);
    double mean = 0;
    for (uint32_t seed = 1; seed <= 40; ++seed) mean += search_best(Strategy::Evolutionary, 64, seed) / 40;
    if (before)
      ::setenv("LOOM_TUNE_COST_MODEL", saved.c_str(), 1);
    else
      ::unsetenv("LOOM_TUNE_COST_MODEL");
    return mean;
  };
  const double ridge = mean_best("ridge"), trees = mean_best("trees");
  MESSAGE("mean best of 64 trials (the optimum is 1 ms): ridge ", ridge, " ms, boosted trees ", trees, " ms");
  // Over 40 seeds (over fewer, either can win: the searches are short and random).
  CHECK(trees < ridge);
}

TEST_CASE("tune cost model: an additive landscape is learned from a few measurements") {
  std::vector<Knob> space{{"tile", {8, 16, 32, 64}}, {"vec", {0, 1}}, {"order", {0, 1, 2}}};
  // log(ms) = log 2 + 0.5 log2(tile / 8) - 0.7 vec + (order == 2 ? 0.3 : 0).
  auto truth = [](const Assignment& x) {
    return 2.0 * std::exp(0.5 * std::log2(static_cast<double>(x.at("tile")) / 8) -
                          0.7 * static_cast<double>(x.at("vec")) + (x.at("order") == 2 ? 0.3 : 0.0));
  };
  CostModel model(space, 1e-6, CostLearner::Ridge);
  CHECK(model.predict_ms({{"tile", 8}, {"vec", 0}, {"order", 0}}) ==
        doctest::Approx(1.0));  // nothing learned
  // 12 of the 24 configurations: vec alternates with the tile, so no knob stands in for another.
  int added = 0;
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t order : {0, 1, 2}) {
      Assignment x{{"tile", int64_t{8} << t}, {"vec", (t + order) % 2}, {"order", order}};
      model.add(x, truth(x));
      ++added;
    }
  CHECK(model.observations() == static_cast<size_t>(added));
  for (int64_t tile : {8, 16, 32, 64})
    for (int64_t vec : {0, 1})
      for (int64_t order : {0, 1, 2}) {
        Assignment x{{"tile", tile}, {"vec", vec}, {"order", order}};
        CHECK(model.predict_ms(x) == doctest::Approx(truth(x)).epsilon(1e-3));
      }
}

TEST_CASE("tune measure: slow outliers are rejected, the median of the rest is the time") {
  Timing t = summarize_samples({1.0, 1.1, 10.0, 1.0, 1.05});
  CHECK(t.rejected == 1);
  CHECK(t.samples == 4);
  CHECK(t.ms == doctest::Approx(1.025));
  CHECK(t.spread == doctest::Approx(0.0625 / 1.025));
  // A fast sample is kept: nothing makes a kernel faster than it is.
  t = summarize_samples({0.2, 1.0, 1.0, 1.0, 1.0});
  CHECK(t.rejected == 0);
  CHECK(t.ms == doctest::Approx(1.0));
  CHECK(summarize_samples({}).samples == 0);
  int runs = 0;
  CHECK(best_ms([&] { ++runs; }, 4) >= 0);
  CHECK(runs == 4);
  CHECK(knobs_text({{"mc", 32}, {"kc", -3}}) == "kc=-3,mc=32");
  int calls = 0;
  t = time_calls([&] { ++calls; }, 3, 0.0);
  CHECK(t.samples + t.rejected >= 3);
  CHECK(calls >= 4);  // the warm-up and one call per sample at least
}

TEST_CASE("tune measure: the worker process reports a result, an exception, a crash and a hang") {
  WorkerResult r = run_in_worker([] { return std::string("42"); }, 10);
  CHECK(r.status == WorkerResult::Status::Finished);
  CHECK(r.output == "42");
  // What the work writes stays in the worker.
  int touched = 0;
  r = run_in_worker(
      [&] {
        touched = 1;
        return std::to_string(touched);
      },
      10);
  CHECK(r.output == "1");
  CHECK(touched == 0);
  r = run_in_worker([]() -> std::string { throw Error("refused in the worker"); }, 10);
  CHECK(r.status == WorkerResult::Status::Threw);
  CHECK(r.detail == "refused in the worker");
  // Another exception is not a refusal by Loom: a failure, reported as a crash.
  r = run_in_worker([]() -> std::string { throw std::runtime_error("out of luck"); }, 10);
  CHECK(r.status == WorkerResult::Status::Crashed);
  CHECK(r.detail == "the worker threw: out of luck");
  r = run_in_worker(
      []() -> std::string {
        std::signal(SIGABRT, SIG_DFL);  // not the test framework's handler: die as a plain process would
        std::abort();
      },
      10);
  CHECK(r.status == WorkerResult::Status::Crashed);
  CHECK_MESSAGE(r.detail.find("signal 6") != std::string::npos, r.detail);
  r = run_in_worker([]() -> std::string { ::_exit(0); }, 10);
  CHECK(r.status == WorkerResult::Status::Crashed);
  CHECK_MESSAGE(r.detail.find("exited with status 0 before it reported") != std::string::npos, r.detail);
  r = run_in_worker(
      []() -> std::string {
        for (;;) ::pause();
      },
      0.3);
  CHECK(r.status == WorkerResult::Status::TimedOut);
  CHECK_MESSAGE(r.detail.find("time limit of 0.3 s") != std::string::npos, r.detail);
  // No limit, or an infinite one: a year (the deadline's nanoseconds would overflow).
  r = run_in_worker([] { return std::string("no hurry"); }, INFINITY);
  CHECK(r.output == "no hurry");
  // With SIGCHLD ignored the worker cannot be reaped (waitpid fails): its whole report stands.
  auto* previous = std::signal(SIGCHLD, SIG_IGN);
  r = run_in_worker([] { return std::string("7"); }, 10);
  std::signal(SIGCHLD, previous);
  CHECK(r.status == WorkerResult::Status::Finished);
  CHECK(r.output == "7");
}

TEST_CASE("tune cost model: extra features per configuration are learned like knobs") {
  std::vector<Knob> space{{"unused", {0, 1}}};
  CostModel model(space, 1e-6, CostLearner::Ridge);
  // log(ms) = 0.5 + 0.25 * extra: the knob says nothing, the feature everything.
  for (double f : {0.0, 1.0, 2.0, 4.0, 8.0}) model.add({{"unused", 0}}, std::exp(0.5 + 0.25 * f), {f});
  CHECK(model.predict_ms({{"unused", 0}}, {6.0}) == doctest::Approx(std::exp(0.5 + 1.5)).epsilon(1e-3));
  CHECK(model.predict_ms({{"unused", 0}}, {}) == doctest::Approx(std::exp(0.5)).epsilon(1e-3));  // missing: 0
}

TEST_CASE("tune IR features: loop iterations, stores, their vector share and the parallel balance") {
  Tensor A = placeholder({64}, f32, "A");
  Tensor C = compute(
      {64}, [&](Expr i) { return A(i) * 2.0f; }, "C");
  // Scalar and serial: 64 iterations, 64 stores, none of them vector.
  IrFeatures plain = ir_features(lower(create_schedule(C), {A, C}, "plain"), 2);
  CHECK(plain.loop_iterations == 64);
  CHECK(plain.element_stores == 64);
  CHECK(plain.vector_store_fraction == 0);
  CHECK_FALSE(plain.parallel);
  CHECK(plain.parallel_imbalance == 1);
  CHECK(plain.vector().size() == 9);
  CHECK(plain.flops == 64);  // one multiply per element
  // 4 parallel tasks of 16 lanes: one loop of 4 iterations, every element stored by a vector.
  Schedule s = create_schedule(C);
  auto [o, i] = s[C].split(C.axis(0), 16);
  s[C].vectorize(i);
  s[C].parallel(o);
  LoweredFunc f = lower(s, {A, C}, "vector");
  IrFeatures two = ir_features(f, 2);
  CHECK(two.loop_iterations == 4);
  CHECK(two.element_stores == 64);
  CHECK(two.flops == 64);  // 4 vector multiplies of 16 lanes
  CHECK(two.vector_store_fraction == 1);
  CHECK(two.parallel);
  CHECK(two.parallel_imbalance == 1);
  CHECK(ir_features(f, 3).parallel_imbalance == doctest::Approx(1.5));  // 4 tasks on 3 threads: 2 rounds
}

TEST_CASE("tune IR features: bytes into each cache level, from the loops' footprints") {
  // A fixed machine: 32 KiB L1, 1 MiB L2, 8 MiB L3 (the defaults), two threads.
  const CpuCacheInfo caches;
  // A copy of 64 floats touches A's and C's 4 lines once: 512 bytes into every level.
  {
    Tensor A = placeholder({64}, f32, "A");
    Tensor C = compute(
        {64}, [&](Expr i) { return A(i) * 2.0f; }, "C");
    const CacheTraffic t = ir_features(lower(create_schedule(C), {A, C}, "copy"), 2, caches).traffic;
    CHECK(t.footprint_bytes == 512);
    CHECK(t.l1_fill_bytes == 512);
    CHECK(t.l3_fill_bytes == 512);
  }
  // C = A B at 256^3 (three 256 KiB matrices): the naive i, j, k order walks a column of B for
  // every element of C, so B does not stay in L1 across j; split into 32-wide blocks of j and k
  // with the block loops outside, a 32 x 32 block of B (4 KiB) is reused across every i.
  Tensor A = placeholder({256, 256}, f32, "A");
  Tensor B = placeholder({256, 256}, f32, "B");
  IterVar k = reduce_axis(0, 256, "k");
  Tensor C = compute(
      {256, 256}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  const IrFeatures naive_features = ir_features(lower(create_schedule(C), {A, B, C}, "naive"), 1, caches);
  CHECK(naive_features.flops == 2.0 * 256 * 256 * 256);  // a multiply and an add per (i, j, k)
  const CacheTraffic naive = naive_features.traffic;
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 32);
  auto [ko, ki] = s[C].split(C.reduce_axis(0), 32);
  s[C].reorder({jo, ko, C.axis(0), ki, ji});
  const CacheTraffic blocked = ir_features(lower(s, {A, B, C}, "blocked"), 1, caches).traffic;
  // Both touch the same three matrices once in all (768 KiB, C's initialization included) ...
  CHECK(naive.footprint_bytes == doctest::Approx(3 * 256 * 1024).epsilon(0.01));
  CHECK(blocked.footprint_bytes == doctest::Approx(3 * 256 * 1024).epsilon(0.01));
  // ... which fits L2 and L3: each level below L1 loads it once.
  CHECK(naive.l2_fill_bytes == doctest::Approx(naive.footprint_bytes));
  CHECK(blocked.l3_fill_bytes == doctest::Approx(blocked.footprint_bytes));
  // L1: the naive order sweeps all of B (256 KiB) for every row of C, 64 MiB at least (a j step
  // adds one new line per 16 columns: consecutive columns share B's lines); the blocks keep a
  // 4 KiB block of B while A and C stream, about a tenth of that.
  MESSAGE("L1 fill: naive " << naive.l1_fill_bytes << " bytes, blocked " << blocked.l1_fill_bytes);
  CHECK(naive.l1_fill_bytes >= 256.0 * 256 * 1024);
  CHECK(naive.l1_fill_bytes < 2 * 256.0 * 256 * 1024);
  CHECK(blocked.l1_fill_bytes * 5 < naive.l1_fill_bytes);
}

// What lib's GPU tuners do with measurements (lib/gemm_device_timer.hpp), with a scripted timer in
// place of the GPU: the default is measured first and is the reference; the best predictions are
// timed in order and then ranked by their times ahead of the unmeasured ones; a candidate that
// fails or computes another C is never chosen; a failure that loses the CUDA context stops the
// measuring and says so; the default stands where no candidate ran faster; the times recorded are
// the default's and the measured candidates'. In worker processes: a candidate that crashes, hangs
// or loses the context costs only its own measurement, and the next worker goes on.
#include <doctest/doctest.h>

#include <unistd.h>

#include <csignal>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <loom/lib/gemm_device_timer.hpp>
#include <loom/loom.hpp>

using namespace loom;
using namespace loom::lib::detail;

namespace {

/// A tuner's candidate as measure_ranked_with sees it.
struct ScriptedCandidate {
  int id = 0;
  double measured_ms = 0;
  std::string measure_failure;
};

/// Hands out the scripted timings in call order; a failure containing "fault" loses the context.
struct ScriptedTimer {
  std::deque<GemmDeviceTiming> script;
  std::vector<std::string> measured;  // the kernels' names, in the order they were measured
  bool lost = false;

  GemmDeviceTiming measure(const LoweredFunc& f) {
    measured.push_back(f.name);
    REQUIRE(!script.empty());
    GemmDeviceTiming t = script.front();
    script.pop_front();
    lost = lost || t.failure.find("fault") != std::string::npos;
    return t;
  }
  bool context_lost() const { return lost; }
};

/// A lowered function named `name` (the scripted timer only reads the name).
LoweredFunc named_func(const std::string& name) {
  Tensor A = placeholder({4}, f32, "A");
  Tensor B = compute(
      {4}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  return lower(create_schedule(B), {A, B}, name);
}

std::vector<ScriptedCandidate> four_candidates() {
  std::vector<ScriptedCandidate> out(4);
  for (int i = 0; i < 4; ++i) out[i].id = i;
  return out;
}

std::vector<int> ids(const std::vector<ScriptedCandidate>& cs) {
  std::vector<int> out;
  for (const ScriptedCandidate& c : cs) out.push_back(c.id);
  return out;
}

GemmDeviceTiming timed(double ms) { return GemmDeviceTiming{ms, ""}; }
GemmDeviceTiming failed(const std::string& why) { return GemmDeviceTiming{0, why}; }

tune::Assignment knobs_of(const ScriptedCandidate& c) { return {{"id", c.id}}; }

}  // namespace

TEST_CASE("gpu measurement: the best predictions are timed after the default and ranked by their times") {
  ScriptedTimer timer;
  timer.script = {timed(1.0), timed(1.2), timed(0.8), failed("wrong result after its first call: C[0][0]")};
  std::vector<ScriptedCandidate> ranked = four_candidates();
  MeasuredRanking out;
  measure_ranked_with(
      timer, 3, named_func("default"), ranked,
      [](const ScriptedCandidate& c) { return named_func("c" + std::to_string(c.id)); }, out);
  CHECK(timer.measured == std::vector<std::string>{"default", "c0", "c1", "c2"});
  CHECK(out.default_ms == 1.0);
  CHECK(out.measured == 2);
  CHECK(out.failure.empty());
  // Measured ones by time, then the failed one and the unmeasured one in their predicted order.
  CHECK(ids(ranked) == std::vector<int>{1, 0, 2, 3});
  CHECK(ranked[2].measure_failure.find("wrong result") == 0);
  const MeasuredChoice choice = choose_measured(out, {{"id", -1}}, ranked, knobs_of);
  CHECK(choice.use_first);  // 0.8 ms against the default's 1.0
  REQUIRE(choice.times.size() == 3);
  CHECK(choice.times[0].first.at("id") == -1);
  CHECK(choice.times[0].second == doctest::Approx(1e-3));
  CHECK(choice.times[1].first.at("id") == 1);
  CHECK(choice.times[2].first.at("id") == 0);
}

TEST_CASE("gpu measurement: the default stands where no candidate ran faster or every one failed") {
  for (const bool all_fail : {false, true}) {
    CAPTURE(all_fail);
    ScriptedTimer timer;
    timer.script = {timed(1.0)};
    if (all_fail) {
      timer.script.push_back(failed("NVRTC refused it"));
      timer.script.push_back(failed("wrong result"));
    } else {
      timer.script.push_back(timed(1.5));
      timer.script.push_back(timed(1.1));
    }
    std::vector<ScriptedCandidate> ranked = four_candidates();
    MeasuredRanking out;
    measure_ranked_with(
        timer, 2, named_func("default"), ranked,
        [](const ScriptedCandidate& c) { return named_func("c" + std::to_string(c.id)); }, out);
    const MeasuredChoice choice = choose_measured(out, {{"id", -1}}, ranked, knobs_of);
    CHECK(!choice.use_first);
    CHECK(choice.times.size() == (all_fail ? 1u : 3u));
    CHECK(out.measured == (all_fail ? 0 : 2));
    if (!all_fail) CHECK(ids(ranked) == std::vector<int>{1, 0, 2, 3});
  }
}

TEST_CASE("gpu measurement: a reference that fails, a kernel that cannot be made, a lost context") {
  {
    ScriptedTimer timer;
    timer.script = {
        failed("the reference (the default configuration) computes C[3][4] = 7 where 8 is right")};
    std::vector<ScriptedCandidate> ranked = four_candidates();
    MeasuredRanking out;
    measure_ranked_with(
        timer, 4, named_func("default"), ranked,
        [](const ScriptedCandidate& c) { return named_func("c" + std::to_string(c.id)); }, out);
    CHECK(out.failure.find("the default configuration could not be measured: the reference") == 0);
    CHECK(timer.measured.size() == 1);
    CHECK(ids(ranked) == std::vector<int>{0, 1, 2, 3});
    CHECK(choose_measured(out, {{"id", -1}}, ranked, knobs_of).times.empty());
  }
  {
    // Candidate 0's kernel cannot be made: it is skipped, not measured; candidate 1 faults and
    // loses the context: measuring stops before candidate 2.
    ScriptedTimer timer;
    timer.script = {timed(1.0), failed("cuLaunchKernel failed: an illegal memory access (fault)")};
    std::vector<ScriptedCandidate> ranked = four_candidates();
    MeasuredRanking out;
    measure_ranked_with(
        timer, 4, named_func("default"), ranked,
        [](const ScriptedCandidate& c) {
          if (c.id == 0) throw Error("streamk_gemm refused it");
          return named_func("c" + std::to_string(c.id));
        },
        out);
    CHECK(timer.measured == std::vector<std::string>{"default", "c1"});
    CHECK(ranked[0].measure_failure == "streamk_gemm refused it");
    CHECK(ranked[1].measure_failure.find("illegal memory access") != std::string::npos);
    CHECK(ranked[2].measure_failure.empty());
    CHECK(out.measured == 0);
    CHECK(out.failure.find("measuring stopped: candidate 2 left the CUDA context unusable") == 0);
    const MeasuredChoice choice = choose_measured(out, {{"id", -1}}, ranked, knobs_of);
    CHECK(!choice.use_first);
    CHECK(choice.times.size() == 1);
  }
}

namespace {

/// Times kernels by name in a worker: "crash" kills it, "hang" never returns, "fault" fails and
/// loses the context (every later kernel then fails too, as on a GPU), "wrong" fails; the others
/// take the time the script gives them.
struct NamedTimer {
  std::map<std::string, std::string> script;
  bool lost = false;

  GemmDeviceTiming measure(const LoweredFunc& f) {
    if (lost) return failed("the CUDA context was lost before this kernel");
    const std::string& what = script.at(f.name);
    if (what == "crash") {
      std::signal(SIGSEGV, SIG_DFL);  // not the test framework's handler: die as a plain process would
      std::raise(SIGSEGV);
    }
    if (what == "hang")
      for (;;) ::pause();
    if (what == "fault") {
      lost = true;
      return failed("an illegal memory access was encountered (fault)");
    }
    if (what == "wrong") return failed("wrong result after its first call: C[1][2]");
    return timed(std::stod(what));
  }
  bool context_lost() const { return lost; }
};

std::vector<ScriptedCandidate> candidates(int count) {
  std::vector<ScriptedCandidate> out(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) out[static_cast<size_t>(i)].id = i;
  return out;
}

}  // namespace

TEST_CASE("gpu measurement in workers: a candidate that crashes, hangs or faults costs only itself") {
  // c4 follows the fault: measured only if the faulted worker retired and a fresh one took over.
  const std::map<std::string, std::string> script = {
      {"default", "1.0"}, {"c0", "1.2"}, {"c1", "crash"}, {"c2", "0.8"},   {"c3", "fault"},
      {"c4", "0.95"},     {"c5", "0.9"}, {"c6", "hang"},  {"c7", "wrong"}, {"c8", "0.5"}};
  auto make_timer = [&] {
    return std::pair{std::string("Scripted GPU"), std::make_unique<NamedTimer>(NamedTimer{script})};
  };
  auto default_of = [] { return std::pair{named_func("default"), tune::Assignment{{"id", -1}}}; };
  auto func_of = [](const ScriptedCandidate& c) {
    if (c.id == 5) throw Error("gpu_gemm refused it");
    return named_func("c" + std::to_string(c.id));
  };
  std::vector<ScriptedCandidate> ranked = candidates(9);
  MeasuredRanking out;
  measure_ranked_in_workers(make_timer, 8, default_of, ranked, func_of, out, 2);
  CHECK(out.measured_in == std::string(kInWorkers));
  CHECK(out.device == "Scripted GPU");
  CHECK(out.default_ms == 1.0);
  CHECK(out.default_knobs == tune::Assignment{{"id", -1}});
  CHECK(out.failure.empty());
  CHECK(out.measured == 3);
  // Timed ones by time; the failed ones, then c8 (beyond the top 8), in their predicted order.
  CHECK(ids(ranked) == std::vector<int>{2, 4, 0, 1, 3, 5, 6, 7, 8});
  std::map<int, std::string> failure;
  for (const ScriptedCandidate& c : ranked) failure[c.id] = c.measure_failure;
  CHECK(failure[1] ==
        "the worker process measuring it failed: the worker died of signal 11 (Segmentation fault)");
  CHECK(failure[3] == "an illegal memory access was encountered (fault)");
  CHECK(failure[4].empty());
  CHECK(failure[5] == "gpu_gemm refused it");
  CHECK(failure[6] == "the worker process measuring it failed: killed after the time limit of 2 s");
  CHECK(failure[7].find("wrong result") == 0);
  CHECK(failure[8].empty());
  CHECK(ranked[0].measured_ms == 0.8);
  CHECK(ranked[1].measured_ms == 0.95);
  CHECK(ranked[2].measured_ms == 1.2);
  const MeasuredChoice choice = choose_measured(out, out.default_knobs, ranked, knobs_of);
  CHECK(choice.use_first);
  CHECK(choice.times.size() == 4);
}

TEST_CASE("gpu measurement in workers: no GPU measures nothing; a default that fails says so") {
  auto default_of = [] { return std::pair{named_func("default"), tune::Assignment{{"id", -1}}}; };
  auto func_of = [](const ScriptedCandidate& c) { return named_func("c" + std::to_string(c.id)); };
  {
    std::vector<ScriptedCandidate> ranked = candidates(3);
    MeasuredRanking out;
    measure_ranked_in_workers(
        [] {
          return std::pair{std::string(), std::unique_ptr<NamedTimer>()};
        },
        3, default_of, ranked, func_of, out, 5);
    CHECK(out.device.empty());
    CHECK(out.failure.empty());
    CHECK(out.measured_in.empty());
    CHECK(ids(ranked) == std::vector<int>{0, 1, 2});
  }
  {
    std::vector<ScriptedCandidate> ranked = candidates(3);
    MeasuredRanking out;
    auto make_timer = [] {
      return std::pair{std::string("Scripted GPU"),
                       std::make_unique<NamedTimer>(NamedTimer{{{"default", "wrong"}}})};
    };
    measure_ranked_in_workers(make_timer, 3, default_of, ranked, func_of, out, 5);
    CHECK(out.failure ==
          "the default configuration could not be measured: wrong result after its first call: C[1][2]");
    CHECK(out.default_ms == 0);
    CHECK(out.measured == 0);
    CHECK(choose_measured(out, out.default_knobs, ranked, knobs_of).times.empty());
  }
}

TEST_CASE("gpu identity probe: kept once a probe answers; a failed probe is asked again, three at most") {
  using tune::WorkerResult;
  auto result = [](WorkerResult::Status status, std::string output) {
    WorkerResult r;
    r.status = status;
    r.output = std::move(output);
    return r;
  };
  std::deque<WorkerResult> script{result(WorkerResult::Status::Crashed, ""),
                                  result(WorkerResult::Status::TimedOut, ""),
                                  result(WorkerResult::Status::Finished, "sm_90\nScripted GPU")};
  int probes = 0;
  auto probe = [&] {
    ++probes;
    WorkerResult r = script.front();
    script.pop_front();
    return r;
  };
  ProbeCache cache;
  CHECK(cache.get(probe).empty());  // crashed: no answer yet
  CHECK(cache.get(probe).empty());  // hung
  CHECK(cache.get(probe) == "sm_90\nScripted GPU");
  CHECK(cache.get(probe) == "sm_90\nScripted GPU");  // kept: no fourth probe
  CHECK(probes == 3);
  CHECK(cache.failures() == 2);

  // `calls` calls of a fresh cache whose probe always gives `status`: the probes run and the answers.
  auto always = [&](WorkerResult::Status status, int calls) {
    ProbeCache c;
    int ran = 0;
    std::vector<std::string> answers;
    for (int i = 0; i < calls; ++i)
      answers.push_back(c.get([&] {
        ++ran;
        return result(status, "");
      }));
    return std::pair{ran, answers};
  };
  const std::vector<std::string> nothing(5, "");
  // A machine where no probe ever answers: "none" after three, and no more workers.
  CHECK(always(WorkerResult::Status::Crashed, 5) == std::pair{3, nothing});
  // "No GPU" from a probe that ran is an answer too.
  CHECK(always(WorkerResult::Status::Finished, 5) == std::pair{1, nothing});
  // A loom::Error in the worker (the driver refused, perhaps for a moment) and a probe that cannot
  // start a worker are failures: asked again.
  CHECK(always(WorkerResult::Status::Threw, 5) == std::pair{3, nothing});
  ProbeCache no_fork;
  int forks = 0;
  auto cannot_fork = [&]() -> WorkerResult {
    ++forks;
    throw Error("fork: Resource temporarily unavailable");
  };
  CHECK(no_fork.get(cannot_fork).empty());
  CHECK(no_fork.failures() == 1);
  CHECK(no_fork.get(cannot_fork).empty());
  CHECK(forks == 2);
}

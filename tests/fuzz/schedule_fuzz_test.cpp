// Differential schedule fuzzing: random legal schedules must not change the result (interpreter
// and LLVM JIT against the unscheduled reference); random illegal primitives must end in loom::Error.
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "fuzz_harness.hpp"
#include "schedule_fuzz.hpp"

using namespace loom;
using loom::fuzz::Program;
using loom::fuzz::Rng;
using loom::fuzz::ScheduleBuilder;
using namespace loom::fuzz;

TEST_CASE("fuzz: random legal schedules keep the result (interpreter and JIT)") {
  const int iterations = env_int("LOOM_FUZZ_ITERS", 1000);
  const int jit_every = std::max(1, env_int("LOOM_FUZZ_JIT_EVERY", 8));
  const uint64_t first_seed = static_cast<uint64_t>(env_int("LOOM_FUZZ_SEED", 1));
  const bool keep_going = env_int("LOOM_FUZZ_KEEP_GOING", 0) != 0;  // report every failure, not the first
  int jitted = 0;
  for (int it = 0; it < iterations; ++it) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(it);
    Rng rng(seed);
    Program p = fuzz::random_program(rng);
    ScheduleBuilder builder(p, rng);
    // Lazy: printed only on a failure, and also when a kernel crashes the process.
    INFO(reproducer(seed, p, builder.code()));
    std::string failure;
    try {
      builder.randomize();
      std::vector<LowerArg> args = lower_args(p);
      LoweredFunc reference = lower(create_schedule(p.output), args, "reference");
      LoweredFunc scheduled = lower(builder.schedule(), args, "scheduled");
      std::vector<Buffer<float>> inputs = random_inputs(p, seed);
      Buffer<float> want = run([&](const auto& a) { interpret(reference, a); }, inputs, p.output, -7.0f);
      Buffer<float> got = run([&](const auto& a) { interpret(scheduled, a); }, inputs, p.output, 7.0f);
      if (int64_t bad = first_mismatch(got, want); bad >= 0)
        failure = cat("interpreter: element ", bad, " is ", got.at_flat(bad), ", want ", want.at_flat(bad),
                      "\n", scheduled.to_string());
      if (failure.empty() && it % jit_every == 0) {
        ++jitted;
        Kernel k = build(scheduled, Target::cpu());
        Buffer<float> native = run([&](const auto& a) { k.call(a); }, inputs, p.output, 7.0f);
        if (int64_t bad = first_mismatch(native, want); bad >= 0)
          failure = cat("JIT: element ", bad, " is ", native.at_flat(bad), ", want ", want.at_flat(bad), "\n",
                        scheduled.to_string());
      }
    } catch (const std::exception& e) {
      failure = cat("a legal schedule threw: ", e.what());
    }
    if (!failure.empty()) {
      if (keep_going) {
        FAIL_CHECK(failure);
      } else {
        FAIL(failure);
      }
    }
  }
  MESSAGE("fuzzed ", iterations, " schedules (", jitted, " also through the JIT)");
}

TEST_CASE("fuzz: illegal primitives end in loom::Error") {
  const int iterations = env_int("LOOM_FUZZ_ITERS", 1000) / 4;
  // Each mistake is applied to a fresh schedule of a random program; false means "not applicable".
  using Mistake = std::function<bool(Schedule&, const Program&, Rng&)>;
  const std::vector<std::pair<std::string, Mistake>> mistakes = {
      {"an axis used after it was split",
       [](Schedule& s, const Program& p, Rng&) {
         IterVar x = p.output.axis(0);
         s[p.output].split(x, 2);
         s[p.output].split(x, 3);
         return true;
       }},
      {"an axis of another stage",
       [](Schedule& s, const Program& p, Rng&) {
         if (!p.producer.defined()) return false;
         s[p.output].split(p.producer.axis(0), 2);
         return true;
       }},
      {"a stage of another schedule",
       [](Schedule& s, const Program& p, Rng&) {
         if (!p.producer.defined()) return false;
         Schedule other = create_schedule(p.output);
         s[p.producer].compute_at(other[p.output], p.output.axis(0));
         return true;
       }},
      {"a split factor below 1",
       [](Schedule& s, const Program& p, Rng& rng) {
         s[p.output].split(p.output.axis(0), Factor{rng.uniform(-3, 0)});
         return true;
       }},
      {"vectorizing a reduce axis",
       [](Schedule& s, const Program& p, Rng&) {
         const auto* c = static_cast<const ComputeOpNode*>(p.output.op().get());
         if (c->reduce_axis.empty()) return false;
         s[p.output].vectorize(p.output.reduce_axis(0));
         return true;
       }},
      {"parallel on a reduce axis",
       [](Schedule& s, const Program& p, Rng&) {
         const auto* c = static_cast<const ComputeOpNode*>(p.output.op().get());
         if (c->reduce_axis.empty()) return false;
         s[p.output].parallel(p.output.reduce_axis(0));
         return true;
       }},
      {"fusing axes that are not adjacent",
       [](Schedule& s, const Program& p, Rng&) {
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;
         if (leaf.size() < 3) return false;
         s[p.output].fuse(leaf[0], leaf[2]);
         return true;
       }},
      {"reorder naming one axis twice",
       [](Schedule& s, const Program& p, Rng&) {
         IterVar x = p.output.axis(0);
         s[p.output].reorder({x, x});
         return true;
       }},
      {"compute_at a stage that does not consume it",
       [](Schedule& s, const Program& p, Rng&) {
         if (!p.producer.defined()) return false;
         s[p.output].compute_at(s[p.producer], p.producer.axis(0));
         return true;
       }},
      {"compute_inline of the output",
       [](Schedule& s, const Program& p, Rng&) {
         s[p.output].compute_inline();
         lower(s, lower_args(p), "inlined_output");
         return true;
       }},
      {"rfactor over a data-parallel axis",
       [](Schedule& s, const Program& p, Rng&) {
         s.rfactor(p.output, p.output.axis(0));
         return true;
       }},
      {"cache_read for a reader that does not read the tensor",
       [](Schedule& s, const Program& p, Rng&) {
         if (!p.producer.defined()) return false;
         // P reads A, but C must be named as a reader of P's output only through P itself.
         s.cache_read(p.output, "local", {p.producer});
         return true;
       }},
      {"one thread tag bound with two extents",
       [](Schedule& s, const Program& p, Rng&) {
         if (!p.producer.defined()) return false;
         IterVar tx = thread_axis("threadIdx.x");
         auto [co, ci] = s[p.output].split(p.output.axis(0), 4);
         auto [po, pi] = s[p.producer].split(p.producer.axis(0), 8);
         s[p.output].bind(ci, tx);
         s[p.producer].bind(pi, tx);
         lower(s, lower_args(p), "two_extents");
         return true;
       }},
  };
  std::vector<int> errors(mistakes.size(), 0);
  for (int it = 0; it < iterations; ++it) {
    const uint64_t seed = 100000 + static_cast<uint64_t>(it);
    Rng rng(seed);
    Program p = fuzz::random_program(rng);
    const size_t which = static_cast<size_t>(it) % mistakes.size();
    Schedule s = create_schedule(p.output);
    INFO("fuzz seed ", seed, " (", p.kind, "): ", mistakes[which].first, "\n", p.code);
    try {
      if (!mistakes[which].second(s, p, rng)) continue;
      FAIL("no loom::Error for: ", mistakes[which].first);
    } catch (const Error& e) {
      CHECK(std::string(e.what()).size() > 20);  // a sentence, not a code
      ++errors[which];
    } catch (const std::exception& e) {
      FAIL("not a loom::Error (", mistakes[which].first, "): ", e.what());
    }
  }
  for (size_t i = 0; i < mistakes.size(); ++i) {
    INFO(mistakes[i].first);
    CHECK(errors[i] > 0);  // every kind of mistake was tried and caught at least once
  }
}

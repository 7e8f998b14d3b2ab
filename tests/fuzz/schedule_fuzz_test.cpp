// Differential schedule fuzzing: random legal schedules must not change the result (interpreter
// and LLVM JIT against the unscheduled reference); illegal calls of every primitive must end in
// loom::Error and leave the schedule exactly as it was, still usable.
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../support/schedule_state.hpp"
#include "fuzz_harness.hpp"
#include "schedule_fuzz.hpp"

using namespace loom;
using loom::fuzz::Program;
using loom::fuzz::Rng;
using loom::fuzz::ScheduleBuilder;
using namespace loom::fuzz;
using loom::test::schedule_state;

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

namespace {

/// One illegal call, made on a schedule that legal calls brought to where the call is refused,
/// preferably late (after the checks that pass); then a legal call the same schedule must still
/// accept.
struct IllegalCall {
  std::function<void()> refused;
  std::function<void()> fix;
  bool lowers_on_cpu = true;  // false where the setup binds threads or uses shared memory
};

/// Brings a fresh schedule of a program to an illegal call, or returns nothing where the mistake
/// does not apply to the program (it has no producer stage, or no reduction).
using Mistake = std::function<std::optional<IllegalCall>(Schedule&, const Program&, Rng&)>;

IterVar first_reduce_leaf(const Stage& st) {
  for (const IterVar& iv : st->leaf_iter_vars)
    if (iv.is_reduce()) return iv;
  return IterVar();
}

/// Every primitive of Stage and Schedule has at least one mistake here.
std::vector<std::pair<std::string, Mistake>> illegal_primitives() {
  return {
      {"split: an axis used after it was split",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         IterVar x = p.output.axis(0);
         auto [o, i] = s[p.output].split(x, 2);
         return IllegalCall{[=, &s] { s[p.output].split(x, 3); }, [=, &s] { s[p.output].split(o, 3); }};
       }},
      {"split: an axis of another stage",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         if (!p.producer.defined()) return std::nullopt;
         return IllegalCall{[=, &s] { s[p.output].split(p.producer.axis(0), 2); },
                            [=, &s] { s[p.output].split(p.output.axis(0), 2); }};
       }},
      {"split: a factor below 1",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         const int bad = rng.uniform(-3, 0), good = rng.uniform(1, 5);
         return IllegalCall{[=, &s] { s[p.output].split(p.output.axis(0), Factor{bad}); },
                            [=, &s] { s[p.output].split(p.output.axis(0), Factor{good}); }};
       }},
      {"split: nparts below 1, after a legal split",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         auto [o, i] = s[p.output].split(p.output.axis(0), 3);
         const int bad = rng.uniform(-3, 0);
         return IllegalCall{[=, &s] { s[p.output].split(i, NParts{bad}); },
                            [=, &s] { s[p.output].split(i, NParts{2}); }};
       }},
      {"split: a loop already marked parallel",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;
         s[p.output].parallel(leaf[0]);
         return IllegalCall{[=, &s] { s[p.output].split(leaf[0], 2); },
                            [=, &s] { s[p.output].split(leaf[1], 2); }};
       }},
      {"tile: the second factor below 1 (refused after the first axis passed its checks)",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;
         const int bad = rng.uniform(-3, 0);
         return IllegalCall{[=, &s] { s[p.output].tile(leaf[0], leaf[1], 4, bad); },
                            [=, &s] { s[p.output].tile(leaf[0], leaf[1], 4, 3); }};
       }},
      {"fuse: axes that are not adjacent",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;
         if (leaf.size() < 3) return std::nullopt;
         return IllegalCall{[=, &s] { s[p.output].fuse(leaf[0], leaf[2]); },
                            [=, &s] { s[p.output].fuse(leaf[0], leaf[1]); }};
       }},
      {"fuse: a list whose last axis cannot join (not adjacent, another kind, or listed twice)",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         auto [o, i] = s[p.output].split(p.output.axis(0), 2);
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;    // o, i, and at least one more
         std::vector<IterVar> last_choices = {o};                    // listed twice
         if (leaf.size() >= 4) last_choices.push_back(leaf.back());  // not adjacent to i
         if (leaf[2].is_reduce()) last_choices.push_back(leaf[2]);   // another kind than i
         const IterVar last = rng.pick(last_choices);
         return IllegalCall{[=, &s] {
                              s[p.output].fuse({o, i, last});
                            },
                            [=, &s] {
                              s[p.output].fuse({o, i});
                            }};
       }},
      {"reorder: one axis named twice",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;
         std::vector<IterVar> reversed(leaf.rbegin(), leaf.rend());
         return IllegalCall{[=, &s] {
                              s[p.output].reorder({leaf[1], leaf[0], leaf[1]});
                            },
                            [=, &s] { s[p.output].reorder(reversed); }};
       }},
      {"vectorize: a reduce axis",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         IterVar r = first_reduce_leaf(s[p.output]);
         if (!r.defined()) return std::nullopt;
         return IllegalCall{[=, &s] { s[p.output].vectorize(r); }, [=, &s] { s[p.output].unroll(r); }};
       }},
      {"parallel: a reduce axis",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         IterVar r = first_reduce_leaf(s[p.output]);
         if (!r.defined()) return std::nullopt;
         return IllegalCall{[=, &s] { s[p.output].parallel(r); },
                            [=, &s] { s[p.output].parallel(p.output.axis(0)); }};
       }},
      {"unroll: a loop bound to a thread",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;
         s[p.output].bind(leaf[0], thread_axis("blockIdx.x"));
         return IllegalCall{[=, &s] { s[p.output].unroll(leaf[0]); },
                            [=, &s] { s[p.output].unroll(leaf[1]); }, false};
       }},
      {"bind: a second loop to a thread tag that one loop is bound to",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         std::vector<IterVar> leaf = s[p.output]->leaf_iter_vars;
         s[p.output].bind(leaf[0], thread_axis("threadIdx.x"));
         return IllegalCall{[=, &s] { s[p.output].bind(leaf[1], thread_axis("threadIdx.x")); },
                            [=, &s] { s[p.output].bind(leaf[1], thread_axis("threadIdx.y")); }, false};
       }},
      {"pragma: an empty key",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         IterVar x = p.output.axis(0);
         return IllegalCall{[=, &s] { s[p.output].pragma(x, ""); },
                            [=, &s] { s[p.output].pragma(x, "unroll"); }};
       }},
      {"tensorize: an undefined intrinsic",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         IterVar x = p.output.axis(0);
         return IllegalCall{[=, &s] { s[p.output].tensorize(x, TensorIntrin()); },
                            [=, &s] { s[p.output].unroll(x); }};
       }},
      {"compute_at: a stage of another schedule",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         if (!p.producer.defined()) return std::nullopt;
         Schedule other = create_schedule(p.output);
         return IllegalCall{[=, &s] { s[p.producer].compute_at(other[p.output], p.output.axis(0)); },
                            [=, &s] { s[p.producer].compute_at(s[p.output], p.output.axis(0)); }};
       }},
      {"compute_at: at a stage that does not consume it",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         if (!p.producer.defined()) return std::nullopt;
         return IllegalCall{[=, &s] { s[p.output].compute_at(s[p.producer], p.producer.axis(0)); },
                            [=, &s] { s[p.producer].compute_at(s[p.output], p.output.axis(0)); }};
       }},
      {"compute_inline: the output",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         return IllegalCall{[=, &s] { s[p.output].compute_inline(); },
                            [=, &s] {
                              if (p.producer.defined())
                                s[p.producer].compute_inline();
                              else
                                s[p.output].compute_root();
                            }};
       }},
      {"compute_inline: a reduction (the stage rfactor made)",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         IterVar r = first_reduce_leaf(s[p.output]);
         if (!r.defined()) return std::nullopt;
         Tensor rf = s.rfactor(p.output, r);
         return IllegalCall{[=, &s] { s[rf].compute_inline(); }, [=, &s] { s[rf].compute_root(); }};
       }},
      {"compute_root: an input",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         return IllegalCall{[=, &s] { s[p.inputs[0]].compute_root(); },
                            [=, &s] { s[p.output].compute_root(); }};
       }},
      {"reverse_compute_at: into a stage it does not read",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         if (!p.producer.defined()) return std::nullopt;
         return IllegalCall{[=, &s] { s[p.producer].reverse_compute_at(s[p.output], p.output.axis(0)); },
                            [=, &s] { s[p.producer].compute_root(); }};
       }},
      {"rfactor: a data-parallel axis",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         IterVar r = first_reduce_leaf(s[p.output]);
         return IllegalCall{[=, &s] { s.rfactor(p.output, p.output.axis(0)); },
                            [=, &s] {
                              if (r.defined())
                                s.rfactor(p.output, r);
                              else
                                s[p.output].split(p.output.axis(0), 2);
                            }};
       }},
      {"rfactor_all: factor_axis out of range (refused after the axis passed its checks)",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         IterVar r = first_reduce_leaf(s[p.output]);
         if (!r.defined()) return std::nullopt;
         const int bad = rng.chance(0.5) ? -1 : p.output.ndim() + 1;
         return IllegalCall{[=, &s] { s.rfactor_all(p.output, r, bad); },
                            [=, &s] { s.rfactor_all(p.output, r, p.output.ndim()); }};
       }},
      {"cache_read: the last reader does not read the tensor, or an unknown scope",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         if (p.producer.defined())
           return IllegalCall{[=, &s] {
                                s.cache_read(p.producer, "local", {p.output, p.producer});
                              },
                              [=, &s] { s.cache_read(p.producer, "local", {p.output}); }};
         const Tensor in = p.output.op()->input_tensors()[0];
         return IllegalCall{[=, &s] { s.cache_read(in, "texture", {p.output}); },
                            [=, &s] { s.cache_read(in, "local", {p.output}); }};
       }},
      {"cache_write: after a split, with an unknown scope, or with a tensor twice",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         switch (rng.uniform(0, 2)) {
           case 0: {
             auto [o, i] = s[p.output].split(p.output.axis(0), 2);
             return IllegalCall{[=, &s] { s.cache_write(p.output, "local"); },
                                [=, &s] { s[p.output].split(o, 2); }};
           }
           case 1:
             return IllegalCall{[=, &s] { s.cache_write(p.output, "texture"); },
                                [=, &s] { s.cache_write(p.output, "local"); }};
           default:
             return IllegalCall{[=, &s] {
                                  s.cache_write(std::vector<Tensor>{p.output, p.output}, "local");
                                },
                                [=, &s] { s.cache_write(std::vector<Tensor>{p.output}, "local"); }};
         }
       }},
      {"create_group: a stage already in a group, or an input outside the schedule",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         if (p.producer.defined()) {
           Stage group = s.create_group({p.producer}, {});
           return IllegalCall{[=, &s] { s.create_group({p.output}, {}); },
                              [=, &s] { Stage(group).compute_at(s[p.output], p.output.axis(0)); }};
         }
         Tensor foreign = placeholder({4}, f32, "X");
         return IllegalCall{[=, &s] { s.create_group({p.output}, {foreign}); },
                            [=, &s] { s.create_group({p.output}, {}); }};
       }},
      {"a loop or storage primitive on a group",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         if (!p.producer.defined()) return std::nullopt;
         const Stage group = s.create_group({p.producer}, {});
         const IterVar x = p.producer.axis(0);
         const std::vector<std::function<void()>> calls = {
             [=] { Stage(group).split(x, 2); },
             [=] { Stage(group).fuse(std::vector<IterVar>{}); },
             [=] { Stage(group).parallel(x); },
             [=] { Stage(group).set_scope("local"); },
             [=] { Stage(group).storage_align(x, 4, 1); },
             [=] { Stage(group).swizzle(3, 0, 3); },
             [=] { Stage(group).double_buffer(); },
             [=] { Stage(group).set_store_predicate(Expr(true)); },
             [=, &s] { s[p.producer].compute_at(group, x); },
         };
         return IllegalCall{rng.pick(calls),
                            [=, &s] { Stage(group).compute_at(s[p.output], p.output.axis(0)); }};
       }},
      {"set_scope: an input, or an unknown scope",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         if (rng.chance(0.5))
           return IllegalCall{[=, &s] { s[p.inputs[0]].set_scope("shared"); },
                              [=, &s] { s[p.output].set_scope("global"); }};
         return IllegalCall{[=, &s] { s[p.output].set_scope("texture"); },
                            [=, &s] { s[p.output].set_scope("global"); }};
       }},
      {"storage_align: an offset outside [0, factor) (refused after the axis and factor passed)",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         const Tensor t = p.producer.defined() ? p.producer : p.output;
         const int factor = rng.uniform(1, 8), offset = factor + rng.uniform(0, 2);
         return IllegalCall{[=, &s] { s[t].storage_align(t.axis(0), factor, offset); },
                            [=, &s] {
                              if (p.producer.defined())
                                s[t].storage_align(t.axis(0), factor, factor - 1);
                              else
                                s[t].split(t.axis(0), factor);
                            }};
       }},
      {"swizzle and storage_align: both on one shared buffer, or a swizzle outside shared memory",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         if (!p.producer.defined())
           return IllegalCall{[=, &s] { s[p.output].swizzle(3, 0, 3); },
                              [=, &s] { s[p.output].unroll(p.output.axis(0)); }};
         const Tensor t = p.producer;
         s[t].set_scope("shared");
         if (rng.chance(0.5)) {
           s[t].storage_align(t.axis(0), 4, 1);
           return IllegalCall{[=, &s] { s[t].swizzle(3, 0, 3); },
                              [=, &s] { s[t].storage_align(t.axis(0), 8, 0); }, false};
         }
         s[t].swizzle(3, 0, 3);
         return IllegalCall{[=, &s] { s[t].storage_align(t.axis(0), 4, 1); },
                            [=, &s] { s[t].swizzle(2, 0, 3); }, false};
       }},
      {"double_buffer: an input",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         return IllegalCall{[=, &s] { s[p.inputs[0]].double_buffer(); },
                            [=, &s] { s[p.output].unroll(p.output.axis(0)); }};
       }},
      {"set_store_predicate: a predicate that is not boolean",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         return IllegalCall{[=, &s] { s[p.output].set_store_predicate(Expr(1)); },
                            [=, &s] { s[p.output].set_store_predicate(Expr(true)); }};
       }},
      {"prefetch: a tensor the stage does not read, or an offset that is not an integer",
       [](Schedule& s, const Program& p, Rng& rng) -> std::optional<IllegalCall> {
         const Tensor in = p.output.op()->input_tensors()[0];
         IterVar x = p.output.axis(0);
         if (rng.chance(0.5))
           return IllegalCall{[=, &s] { s[p.output].prefetch(p.output, x, 1); },
                              [=, &s] { s[p.output].prefetch(in, x, 1); }};
         return IllegalCall{[=, &s] { s[p.output].prefetch(in, x, Expr(1.5f)); },
                            [=, &s] { s[p.output].prefetch(in, x, 1); }};
       }},
      {"operator[]: a tensor outside the schedule",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         Tensor foreign = compute(
             {4}, [](Expr i) { return cast(f32, i); }, "X");
         return IllegalCall{[=, &s] { s[foreign].split(foreign.axis(0), 2); },
                            [=, &s] { s[p.output].split(p.output.axis(0), 2); }};
       }},
      {"lower: one thread tag bound with two extents",
       [](Schedule& s, const Program& p, Rng&) -> std::optional<IllegalCall> {
         if (!p.producer.defined()) return std::nullopt;
         IterVar tx = thread_axis("threadIdx.x");
         auto [co, ci] = s[p.output].split(p.output.axis(0), 4);
         auto [po, pi] = s[p.producer].split(p.producer.axis(0), 8);
         s[p.output].bind(ci, tx);
         s[p.producer].bind(pi, tx);
         return IllegalCall{[=, &s] { lower(s, lower_args(p), "two_extents"); },
                            [=, &s] { s[p.output].unroll(co); }, false};
       }},
  };
}

}  // namespace

TEST_CASE("fuzz: illegal primitives end in loom::Error and leave the schedule as it was") {
  // Every mistake is made on every program, each on a fresh schedule.
  const int programs = std::max(1, env_int("LOOM_FUZZ_ITERS", 1000) / 20);
  const std::vector<std::pair<std::string, Mistake>> mistakes = illegal_primitives();
  std::vector<int> errors(mistakes.size(), 0);
  int lowered = 0;
  for (int it = 0; it < programs; ++it) {
    const uint64_t seed = 100000 + static_cast<uint64_t>(it);
    Rng rng(seed);
    Program p = fuzz::random_program(rng);
    const std::vector<LowerArg> args = lower_args(p);
    const std::vector<Buffer<float>> inputs = random_inputs(p, seed);
    const Buffer<float> want =
        run([&](const auto& a) { interpret(lower(create_schedule(p.output), args, "reference"), a); }, inputs,
            p.output, -7.0f);
    for (size_t which = 0; which < mistakes.size(); ++which) {
      const std::string& mistake = mistakes[which].first;
      INFO("fuzz seed ", seed, " (", p.kind, "): ", mistake, "\n", p.code);
      Schedule s = create_schedule(p.output);
      std::optional<IllegalCall> call;
      try {
        call = mistakes[which].second(s, p, rng);
      } catch (const std::exception& e) {
        FAIL_CHECK("the legal calls before the mistake threw: ", e.what());
        continue;
      }
      if (!call) continue;
      const std::string before = schedule_state(s);
      try {
        call->refused();
        FAIL_CHECK("no loom::Error for: ", mistake);
        continue;
      } catch (const Error& e) {
        CHECK(std::string(e.what()).size() > 20);  // a sentence, not a code
        ++errors[which];
      } catch (const std::exception& e) {
        FAIL_CHECK("not a loom::Error (", mistake, "): ", e.what());
        continue;
      }
      // The refused call changed nothing: not a loop, an annotation, a stage or a placement.
      CHECK(schedule_state(s) == before);
      // And the schedule is still usable: it takes the corrected call, and computes what the
      // unscheduled program computes.
      try {
        call->fix();
        if (call->lowers_on_cpu) {
          ++lowered;
          LoweredFunc f = lower(s, args, "after_refusal");
          Buffer<float> got = run([&](const auto& a) { interpret(f, a); }, inputs, p.output, 7.0f);
          if (int64_t bad = first_mismatch(got, want); bad >= 0)
            FAIL_CHECK(mismatch_text("after a refused call", got, want, bad, f.to_string()));
        }
      } catch (const std::exception& e) {
        FAIL_CHECK("the corrected call, or lowering after it, threw: ", e.what());
      }
    }
  }
  for (size_t i = 0; i < mistakes.size(); ++i) {
    INFO(mistakes[i].first);
    CHECK(errors[i] > 0);  // every kind of mistake was tried and caught at least once
  }
  MESSAGE("made ", mistakes.size(), " kinds of mistake on ", programs, " programs; ", lowered,
          " schedules lowered and run after the refusal");
}

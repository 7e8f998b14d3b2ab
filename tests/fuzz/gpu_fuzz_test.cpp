// Differential fuzzing of GPU schedules: random bindings, shared/local caches and cross-thread
// reductions, built for Target::cuda_sim() and run on the GPU simulator, must give the reference
// result without shared-memory races; 1 in LOOM_FUZZ_NVRTC_EVERY also compiles through NVRTC.
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "fuzz_harness.hpp"
#include "gpu_schedule_fuzz.hpp"

TEST_CASE("fuzz: random GPU schedules keep the result on the simulator, race-free") {
  using namespace loom;
  using namespace loom::fuzz;
  // The simulator runs these small kernels fast: three GPU schedules per CPU one.
  const int iterations = env_int("LOOM_FUZZ_GPU_ITERS", 3 * env_int("LOOM_FUZZ_ITERS", 1000));
  const int nvrtc_every = std::max(1, env_int("LOOM_FUZZ_NVRTC_EVERY", 25));
  const uint64_t first_seed = static_cast<uint64_t>(env_int("LOOM_FUZZ_SEED", 1)) + 500000;
  const bool keep_going = env_int("LOOM_FUZZ_KEEP_GOING", 0) != 0;
  const bool use_nvrtc = runtime::cuda::nvrtc() != nullptr;
  if (!use_nvrtc) MESSAGE("not compiling through NVRTC: " << runtime::cuda::nvrtc_unavailable_reason());
  const bool print = env_int("LOOM_FUZZ_PRINT", 0) != 0;  // every reproducer, e.g. to review the generator
  int compiled = 0;
  for (int it = 0; it < iterations; ++it) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(it);
    Rng rng(seed);
    Program p = random_program(rng);
    GpuScheduleBuilder builder(p, rng);
    INFO(reproducer(seed, p, builder.code(), "Target::cuda_sim()"));
    std::string failure;
    try {
      builder.randomize_gpu();
      if (print) MESSAGE(reproducer(seed, p, builder.code(), "Target::cuda_sim()"));
      std::vector<LowerArg> args = lower_args(p);
      LoweredFunc reference = lower(create_schedule(p.output), args, "reference");
      Kernel k = build(builder.schedule(), args, Target::cuda_sim(), "scheduled");
      std::vector<Buffer<float>> inputs = random_inputs(p, seed);
      Buffer<float> want = run([&](const auto& a) { interpret(reference, a); }, inputs, p.output, -7.0f);
      Buffer<float> got = run([&](const auto& a) { k.call(a); }, inputs, p.output, 7.0f);
      if (int64_t bad = first_mismatch(got, want); bad >= 0)
        failure = mismatch_text("simulator", got, want, bad, k.source());
      SimReport report = k.sim_report();
      if (failure.empty() && report.launches.empty()) failure = cat("no kernel was launched\n", k.source());
      if (failure.empty() && !report.uninitialized_reads.empty())
        failure =
            cat("the simulator saw reads of never-written shared memory\n", report.to_string(), k.source());
      if (failure.empty() && use_nvrtc && it % nvrtc_every == 0) {
        ++compiled;
        runtime::cuda::nvrtc_compile(k.source(), "scheduled", "sm_80");
      }
    } catch (const std::exception& e) {
      failure = cat("a legal GPU schedule threw: ", e.what());
    }
    if (!failure.empty()) {
      if (keep_going) {
        FAIL_CHECK(failure);
      } else {
        FAIL(failure);
      }
    }
  }
  MESSAGE("fuzzed ", iterations, " GPU schedules on the simulator (", compiled, " also through NVRTC)");
}

TEST_CASE("fuzz: illegal GPU bindings end in loom::Error naming the problem") {
  using namespace loom;
  using namespace loom::fuzz;
  const int iterations = env_int("LOOM_FUZZ_GPU_ITERS", env_int("LOOM_FUZZ_ITERS", 1000) / 4);
  auto sim = [](Schedule& s, const Program& p) { build(s, lower_args(p), Target::cuda_sim(), "illegal"); };
  // Each mistake is applied to a fresh schedule of a random program and must throw a loom::Error
  // whose message holds `expect` (docs/errors.md); apply returns false when it does not apply.
  struct Mistake {
    std::string what, expect;
    std::function<bool(Schedule&, const Program&, Rng&)> apply;
  };
  const std::vector<Mistake> mistakes = {
      {"more than 1024 threads per block (E-LAUNCH-BLOCK-DIM, E-LAUNCH-BLOCK-SIZE)", "more than the 1024",
       [&](Schedule& s, const Program& p, Rng& rng) {
         if (p.producer.defined()) s[p.producer].compute_inline();
         Stage c = s[p.output];
         if (p.output.ndim() == 2) {  // 33..64 x 33..64 threads
           auto [yo, yi] = c.split(p.output.axis(0), Factor{rng.uniform(33, 64)});
           auto [xo, xi] = c.split(p.output.axis(1), Factor{rng.uniform(33, 64)});
           c.reorder({yo, xo, yi, xi});
           c.bind(yo, thread_axis("blockIdx.y"));
           c.bind(xo, thread_axis("blockIdx.x"));
           c.bind(yi, thread_axis("threadIdx.y"));
           c.bind(xi, thread_axis("threadIdx.x"));
         } else {  // 1025..4096 threads along x
           auto [o, i] = c.split(p.output.axis(0), Factor{rng.uniform(1025, 4096)});
           c.bind(o, thread_axis("blockIdx.x"));
           c.bind(i, thread_axis("threadIdx.x"));
         }
         sim(s, p);
         return true;
       }},
      {"one thread tag bound with two extents in one kernel (E-BIND-EXTENT)", "two different extents",
       [&](Schedule& s, const Program& p, Rng& rng) {
         if (!p.producer.defined()) return false;
         auto [co, ci] = s[p.output].split(p.output.axis(0), Factor{4});
         s[p.output].bind(co, thread_axis("blockIdx.x"));
         s[p.output].bind(ci, thread_axis("threadIdx.x"));
         s[p.producer].set_scope("shared");
         s[p.producer].compute_at(s[p.output], co);
         auto [po, pi] = s[p.producer].split(p.producer.axis(1), Factor{rng.uniform(5, 9)});
         s[p.producer].bind(pi, thread_axis("threadIdx.x"));
         sim(s, p);
         return true;
       }},
      {"a reduce axis bound to blockIdx", "cannot be bound to 'blockIdx.x'",
       [&](Schedule& s, const Program& p, Rng&) {
         if (static_cast<const ComputeOpNode*>(p.output.op().get())->reduce_axis.empty()) return false;
         s[p.output].bind(p.output.reduce_axis(0), thread_axis("blockIdx.x"));
         return true;
       }},
      {"a reduce axis bound to a virtual thread", "only the threads of one block can combine",
       [&](Schedule& s, const Program& p, Rng&) {
         if (static_cast<const ComputeOpNode*>(p.output.op().get())->reduce_axis.empty()) return false;
         auto [ko, ki] = s[p.output].split(p.output.reduce_axis(0), Factor{2});
         s[p.output].bind(ko, thread_axis("vthread"));
         return true;
       }},
      {"binding an axis of another stage (E-AXIS-OTHER-STAGE)", "not to stage 'C'",
       [&](Schedule& s, const Program& p, Rng&) {
         if (!p.producer.defined()) return false;
         s[p.output].bind(p.producer.axis(0), thread_axis("threadIdx.x"));
         return true;
       }},
      {"binding an axis after it was split (E-AXIS-STALE-SPLIT)", "was already split into",
       [&](Schedule& s, const Program& p, Rng& rng) {
         auto [o, i] = s[p.output].split(p.output.axis(0), Factor{rng.uniform(1, 8)});
         s[p.output].bind(o, thread_axis("blockIdx.x"));
         s[p.output].bind(p.output.axis(0), thread_axis("threadIdx.x"));
         return true;
       }},
      {"binding to an IterVar that is not a thread axis (E-BIND-NOT-THREAD)",
       "must be bound to a thread axis",
       [&](Schedule& s, const Program& p, Rng&) {
         s[p.output].bind(p.output.axis(0), IterVar(Range(0, 4), Var("t"), IterVarKind::DataPar));
         return true;
       }},
      {"one thread tag bound twice in a stage (E-BIND-TWICE)", "already binds another loop to 'threadIdx.x'",
       [&](Schedule& s, const Program& p, Rng& rng) {
         auto [o, i] = s[p.output].split(p.output.axis(0), Factor{rng.uniform(1, 8)});
         s[p.output].bind(o, thread_axis("threadIdx.x"));
         s[p.output].bind(i, thread_axis("threadIdx.x"));
         return true;
       }},
      {"binding a vectorized loop (E-BIND-ANNOTATED)", "a loop is either bound to a thread or annotated",
       [&](Schedule& s, const Program& p, Rng& rng) {
         auto [o, i] = s[p.output].split(p.output.axis(0), Factor{rng.uniform(1, 8)});
         s[p.output].vectorize(i);
         s[p.output].bind(i, thread_axis("threadIdx.x"));
         return true;
       }},
      {"a thread axis declared with another extent (E-BIND-EXTENT)", "was declared with extent",
       [&](Schedule& s, const Program& p, Rng& rng) {
         const int f = rng.uniform(1, 16);
         auto [o, i] = s[p.output].split(p.output.axis(0), Factor{f});
         s[p.output].bind(o, thread_axis("blockIdx.x"));
         s[p.output].bind(i, thread_axis(Range(0, f + rng.uniform(1, 8)), "threadIdx.x"));
         sim(s, p);
         return true;
       }},
      {"a GPU build of a stage whose loops are not bound", "On a GPU all computation runs in kernels",
       [&](Schedule& s, const Program& p, Rng&) {
         sim(s, p);
         return true;
       }},
      {"a GPU build with a stage left outside the kernels", "On a GPU all computation runs in kernels",
       [&](Schedule& s, const Program& p, Rng& rng) {
         if (!p.producer.defined()) return false;
         auto [o, i] = s[p.output].split(p.output.axis(0), Factor{rng.uniform(1, 8)});
         s[p.output].bind(o, thread_axis("blockIdx.x"));
         s[p.output].bind(i, thread_axis("threadIdx.x"));
         sim(s, p);  // P is still a root stage with plain loops
         return true;
       }},
      {"more than 65535 blocks along blockIdx.y (E-LAUNCH-GRID)", "more than the 65535 blocks",
       [&](Schedule&, const Program&, Rng& rng) {
         const int n = rng.uniform(65536, 200000);
         Tensor A = placeholder({n}, f32, "A");
         Tensor B = compute(
             {n}, [&](Expr i) { return A(i) + 1.0f; }, "B");
         Schedule s = create_schedule(B);
         auto [o, i] = s[B].split(B.axis(0), Factor{1});
         s[B].bind(o, thread_axis("blockIdx.y"));
         s[B].bind(i, thread_axis("threadIdx.x"));
         build(s, {A, B}, Target::cuda_sim(), "tall");
         return true;
       }},
  };
  std::vector<int> errors(mistakes.size(), 0);
  for (int it = 0; it < iterations; ++it) {
    const uint64_t seed = 700000 + static_cast<uint64_t>(it);
    Rng rng(seed);
    Program p = random_program(rng);
    const Mistake& m = mistakes[static_cast<size_t>(it) % mistakes.size()];
    Schedule s = create_schedule(p.output);
    INFO("fuzz seed ", seed, " (", p.kind, "): ", m.what, "\n", p.code);
    try {
      if (!m.apply(s, p, rng)) continue;
      FAIL("no loom::Error for: ", m.what);
    } catch (const Error& e) {
      INFO("the message: ", e.what());
      CHECK(std::string(e.what()).find(m.expect) != std::string::npos);
      ++errors[static_cast<size_t>(it) % mistakes.size()];
    } catch (const std::exception& e) {
      FAIL("not a loom::Error (", m.what, "): ", e.what());
    }
  }
  for (size_t i = 0; i < mistakes.size(); ++i) {
    INFO(mistakes[i].what);
    CHECK(errors[i] > 0);  // every kind of mistake was tried and caught at least once
  }
}

// Differential fuzzing of tensorize: random elementwise and matmul programs whose inner tile
// matches an intrinsic (inline IR or an extern C function, whole or split reduction), with random
// legal loops around it, must keep the reference result on the interpreter and the CPU JIT.
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fuzz_harness.hpp"
#include "tensorize_fuzz.hpp"

TEST_CASE("fuzz: random tensorized schedules keep the result (interpreter and JIT)") {
  using namespace loom;
  using namespace loom::fuzz;
  register_fuzz_intrinsics();
  const int iterations = env_int("LOOM_FUZZ_TENSORIZE_ITERS", env_int("LOOM_FUZZ_ITERS", 1000) / 2);
  const int jit_every = std::max(1, env_int("LOOM_FUZZ_JIT_EVERY", 8) / 2);
  const uint64_t first_seed = static_cast<uint64_t>(env_int("LOOM_FUZZ_SEED", 1)) + 900000;
  const bool keep_going = env_int("LOOM_FUZZ_KEEP_GOING", 0) != 0;
  int jitted = 0;
  for (int it = 0; it < iterations; ++it) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(it);
    Rng rng(seed);
    Program p = TensorizeBuilder::random_program(rng);
    TensorizeBuilder builder(p, rng);
    INFO(reproducer(seed, p, builder.code()));
    std::string failure;
    try {
      builder.randomize_tensorize();
      std::vector<LowerArg> args = lower_args(p);
      LoweredFunc reference = lower(create_schedule(p.output), args, "reference");
      LoweredFunc scheduled = lower(builder.schedule(), args, "scheduled");
      // The intrinsic's code is there: its extern call, or its loops (unless the tile is one element).
      const std::string text = scheduled.to_string();
      bool one_element = true;
      for (int t : p.tile) one_element = one_element && t <= 1;
      bool found = text.find("fuzz_tile_") != std::string::npos;
      for (const char* loop : {"(ti:", "(tj:", "(tk:"}) found = found || text.find(loop) != std::string::npos;
      if (!found && !one_element) failure = cat("the tensorized loops are not the intrinsic's:\n", text);
      std::vector<Buffer<float>> inputs = random_inputs(p, seed);
      Buffer<float> want = run([&](const auto& a) { interpret(reference, a); }, inputs, p.output, -7.0f);
      Buffer<float> got = run([&](const auto& a) { interpret(scheduled, a); }, inputs, p.output, 7.0f);
      if (int64_t bad = first_mismatch(got, want); failure.empty() && bad >= 0)
        failure = mismatch_text("interpreter", got, want, bad, scheduled.to_string());
      if (failure.empty() && it % jit_every == 0) {
        ++jitted;
        Kernel k = build(scheduled, Target::cpu());
        Buffer<float> native = run([&](const auto& a) { k.call(a); }, inputs, p.output, 7.0f);
        if (int64_t bad = first_mismatch(native, want); bad >= 0)
          failure = mismatch_text("JIT", native, want, bad, scheduled.to_string());
      }
    } catch (const std::exception& e) {
      failure = cat("a legal tensorized schedule threw: ", e.what());
    }
    if (!failure.empty()) {
      if (keep_going) {
        FAIL_CHECK(failure);
      } else {
        FAIL(failure);
      }
    }
  }
  MESSAGE("fuzzed ", iterations, " tensorized schedules (", jitted, " also through the JIT)");
}

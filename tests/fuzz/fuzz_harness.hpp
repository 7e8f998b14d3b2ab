// What the fuzz tests share when they run a generated program: environment knobs, random inputs,
// running a lowered function or a kernel on them, comparing with the reference, the reproducer text.
#pragma once

#include <loom/loom.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "schedule_fuzz.hpp"

namespace loom::fuzz {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

inline std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> shape;
  for (const Expr& e : t.shape()) shape.push_back(*as_const_int(e));
  return shape;
}

/// Runs `f` on copies of `inputs` and an output filled with `sentinel`; returns the output.
inline Buffer<float> run(const std::function<void(const std::vector<KernelArg>&)>& f,
                         const std::vector<Buffer<float>>& inputs, const Tensor& output, float sentinel) {
  std::vector<KernelArg> args(inputs.begin(), inputs.end());
  Buffer<float> out(shape_of(output));
  out.fill(sentinel);
  args.push_back(out);
  f(args);
  return out;
}

/// Inputs of the program's shapes, uniform in [-1, 1), a function of the seed.
inline std::vector<Buffer<float>> random_inputs(const Program& p, uint64_t seed) {
  std::vector<Buffer<float>> inputs;
  for (const Tensor& t : p.inputs) {
    inputs.emplace_back(shape_of(t));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::mt19937 fill(static_cast<unsigned>(seed));
    for (int64_t i = 0; i < inputs.back().num_elements(); ++i) inputs.back().at_flat(i) = dist(fill);
  }
  return inputs;
}

/// The first element where got and want differ (float tolerance), or -1.
inline int64_t first_mismatch(const Buffer<float>& got, const Buffer<float>& want) {
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    float g = got.at_flat(i), w = want.at_flat(i);
    if (!(std::abs(g - w) <= 1e-4f * (1.0f + std::abs(w)))) return i;
  }
  return -1;
}

inline std::string mismatch_text(const char* where, const Buffer<float>& got, const Buffer<float>& want,
                                 int64_t bad, const std::string& code) {
  return cat(where, ": element ", bad, " is ", got.at_flat(bad), ", want ", want.at_flat(bad), "\n", code);
}

/// The arguments as the reproducer names them: "A, B, C" or "A, C".
inline std::string arg_list(const Program& p) {
  std::string out;
  for (const Tensor& t : p.inputs) out += cat(t.name(), ", ");
  return out + "C";
}

/// The reproducer: the program, the schedule, and the last line (lower or build) that runs it.
inline std::string reproducer(uint64_t seed, const Program& p, const std::string& schedule_code,
                              const std::string& target = "") {
  const std::string last =
      target.empty() ? cat("LoweredFunc f = lower(s, {", arg_list(p), "}, \"scheduled\");\n")
                     : cat("Kernel k = build(s, {", arg_list(p), "}, ", target, ", \"scheduled\");\n");
  return cat("fuzz seed ", seed, " (", p.kind, "); reproduce with:\n", p.code, schedule_code, last);
}

inline std::vector<LowerArg> lower_args(const Program& p) {
  std::vector<LowerArg> args(p.inputs.begin(), p.inputs.end());
  args.push_back(p.output);
  return args;
}

}  // namespace loom::fuzz

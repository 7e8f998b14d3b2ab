// Checks a schedule against the unscheduled computation: both are lowered and interpreted on
// the same random inputs, and every output must agree (float tensors with constant shapes).
#pragma once

#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>
#include "../support/interpret_checked.hpp"

namespace loom::test {

inline std::vector<int64_t> constant_shape(const Tensor& t) {
  std::vector<int64_t> shape;
  for (const Expr& e : t.shape()) {
    const int64_t* v = as_const_int(e);
    REQUIRE(v != nullptr);
    shape.push_back(*v);
  }
  return shape;
}

/// Lowers `scheduled` and a fresh default schedule of `outputs`, runs both on the same random
/// inputs, and checks the outputs agree. Returns the scheduled function for further checks.
inline LoweredFunc check_against_default(const Schedule& scheduled, const std::vector<Tensor>& inputs,
                                         const std::vector<Tensor>& outputs, unsigned seed = 7) {
  std::vector<LowerArg> args(inputs.begin(), inputs.end());
  args.insert(args.end(), outputs.begin(), outputs.end());
  LoweredFunc reference = lower(create_schedule(outputs), args, "reference");
  LoweredFunc f = lower(scheduled, args, "scheduled");
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<KernelArg> ref_args, got_args;
  std::vector<Buffer<float>> in, ref_out, got_out;  // the buffers outlive the views in the args
  for (const Tensor& t : inputs) {
    in.emplace_back(constant_shape(t));
    for (int64_t i = 0; i < in.back().num_elements(); ++i) in.back().at_flat(i) = dist(rng);
    ref_args.push_back(in.back());
    got_args.push_back(in.back());
  }
  for (const Tensor& t : outputs) {
    ref_out.emplace_back(constant_shape(t));
    got_out.emplace_back(constant_shape(t));
    ref_out.back().fill(-7.0f);
    got_out.back().fill(7.0f);  // a sentinel that differs, so an unwritten element fails
    ref_args.push_back(ref_out.back());
    got_args.push_back(got_out.back());
  }
  test::interpret_checked(reference, ref_args);
  test::interpret_checked(f, got_args);
  for (size_t o = 0; o < outputs.size(); ++o) {
    int64_t bad = 0;
    for (int64_t i = 0; i < ref_out[o].num_elements(); ++i) {
      float r = ref_out[o].at_flat(i), g = got_out[o].at_flat(i);
      if (std::abs(r - g) > 1e-4f * (1.0f + std::abs(r))) ++bad;
    }
    INFO("output ", outputs[o].name(), "\n", f.to_string());
    CHECK(bad == 0);
  }
  return f;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace loom::test

// The definitions of tune/cost_model.hpp: the feature vector of a configuration, and the ridge
// fit solved from its normal equations (a few dozen features: Gaussian elimination suffices).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/cost_model.hpp");

#include <algorithm>
#include <cmath>

#include "loom/tune/cost_model.hpp"

namespace loom::tune {

LOOM_DECL CostModel::CostModel(std::vector<Knob> space, double ridge)
    : space_(std::move(space)), ridge_(ridge) {}

LOOM_DECL std::vector<double> CostModel::features(const Assignment& knobs,
                                                  const std::vector<double>& extra) const {
  std::vector<double> x{1.0};  // the intercept
  for (size_t i = 0; i < extra_count_; ++i) x.push_back(i < extra.size() ? extra[i] : 0.0);
  for (const Knob& k : space_) {
    auto it = knobs.find(k.name);
    const int64_t value = it == knobs.end() ? k.options.front() : it->second;
    for (size_t o = 1; o < k.options.size(); ++o) x.push_back(k.options[o] == value ? 1.0 : 0.0);
    const bool positive = std::all_of(k.options.begin(), k.options.end(), [](int64_t v) { return v > 0; });
    if (positive && k.options.size() > 2) x.push_back(std::log2(static_cast<double>(value)));
  }
  return x;
}

LOOM_DECL void CostModel::add(const Assignment& knobs, double ms, const std::vector<double>& extra) {
  if (!(ms > 0)) return;
  if (xs_.empty()) extra_count_ = extra.size();
  xs_.push_back(features(knobs, extra));
  ys_.push_back(std::log(ms));
  stale_ = true;
}

LOOM_DECL void CostModel::fit() const {
  const size_t n = xs_.empty() ? features({}, {}).size() : xs_.front().size();
  // (X^T X + ridge I) w = X^T y, the intercept not penalized.
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (size_t s = 0; s < xs_.size(); ++s)
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) a[i][j] += xs_[s][i] * xs_[s][j];
      a[i][n] += xs_[s][i] * ys_[s];
    }
  for (size_t i = 1; i < n; ++i) a[i][i] += ridge_;
  if (xs_.empty()) a[0][0] = 1.0, a[0][n] = 0.0;  // log(1 ms)
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    std::swap(a[c], a[pivot]);
    if (std::abs(a[c][c]) < 1e-12) continue;  // a direction no measurement constrains: weight 0
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      if (f != 0)
        for (size_t j = c; j <= n; ++j) a[r][j] -= f * a[c][j];
    }
  }
  weights_.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    if (std::abs(a[i][i]) >= 1e-12) weights_[i] = a[i][n] / a[i][i];
  stale_ = false;
}

LOOM_DECL double CostModel::predict_ms(const Assignment& knobs, const std::vector<double>& extra) const {
  if (stale_) fit();
  const std::vector<double> x = features(knobs, extra);
  double log_ms = 0;
  for (size_t i = 0; i < x.size(); ++i) log_ms += weights_[i] * x[i];
  return std::exp(log_ms);
}

}  // namespace loom::tune

// The definitions of tune/cost_model.hpp: the learner's choice, the feature vector of a
// configuration, the ridge fit solved from its normal equations (a few dozen features: Gaussian
// elimination suffices), and the boosted trees' fit on the same features.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/cost_model.hpp");

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "loom/support/error.hpp"
#include "loom/tune/boosted_trees.hpp"
#include "loom/tune/cost_model.hpp"

namespace loom::tune {

namespace detail {

/// The learner `asked` resolves to, with LOOM_TUNE_COST_MODEL and XGBoost's presence.
inline CostLearner resolve_learner(CostLearner asked) {
  if (asked == CostLearner::Auto) {
    const char* env = std::getenv("LOOM_TUNE_COST_MODEL");
    const std::string choice = env ? env : "";
    if (choice == "ridge") return CostLearner::Ridge;
    if (choice == "trees")
      asked = CostLearner::BoostedTrees;
    else if (choice.empty() || choice == "auto")
      return boosted_trees_available() ? CostLearner::BoostedTrees : CostLearner::Ridge;
    else
      throw Error(cat("LOOM_TUNE_COST_MODEL='", choice, "' is not a cost model; use ridge, trees or auto"));
  }
  std::string why;
  if (asked == CostLearner::BoostedTrees && !boosted_trees_available(&why))
    throw Error(cat("the tuner's cost model: boosted trees were asked for, but ", why));
  return asked;
}

}  // namespace detail

LOOM_DECL std::string cost_learner_setting() {
  try {
    return detail::resolve_learner(CostLearner::Auto) == CostLearner::Ridge
               ? "ridge"
               : cat("boosted trees (XGBoost ", boosted_trees_version(), ")");
  } catch (const Error&) {
    const char* env = std::getenv("LOOM_TUNE_COST_MODEL");
    const std::string choice = env ? env : "";
    return choice == "trees" ? "boosted trees (XGBoost unavailable)"
                             : cat("LOOM_TUNE_COST_MODEL='", choice, "' (not a cost model)");
  }
}

LOOM_DECL CostModel::CostModel(std::vector<Knob> space, double ridge, CostLearner learner)
    : space_(std::move(space)), ridge_(ridge), asked_(learner) {}

LOOM_DECL CostLearner CostModel::learner() const {
  if (!learner_) learner_ = detail::resolve_learner(asked_);
  return *learner_;
}

LOOM_DECL std::string CostModel::learner_name() const {
  return learner() == CostLearner::Ridge ? "ridge"
                                         : cat("boosted trees (XGBoost ", boosted_trees_version(), ")");
}

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
  trees_.reset();
  if (learner() == CostLearner::BoostedTrees && ys_.size() >= kTreesFrom) {
    try {
      auto trees = std::make_shared<BoostedTrees>();
      trees->fit(xs_, ys_);
      trees_ = std::move(trees);
    } catch (const Error& e) {
      // The model only ranks proposals: ridge (fitted above) goes on ranking them.
      std::fprintf(stderr, "loom::tune: the cost model's boosted trees failed (%s); ranking with ridge\n",
                   e.what());
      learner_ = CostLearner::Ridge;
    }
  }
  stale_ = false;
}

LOOM_DECL double CostModel::predict_ms(const Assignment& knobs, const std::vector<double>& extra) const {
  if (stale_) fit();
  const std::vector<double> x = features(knobs, extra);
  if (trees_) return std::exp(trees_->predict({x}).front());
  double log_ms = 0;
  for (size_t i = 0; i < x.size(); ++i) log_ms += weights_[i] * x[i];
  return std::exp(log_ms);
}

}  // namespace loom::tune

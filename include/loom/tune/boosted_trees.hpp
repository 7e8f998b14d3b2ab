// Gradient-boosted regression trees from XGBoost (the learner TVM's AutoTVM ranks schedules with),
// through its C API, loaded at run time: libxgboost.so.0 from Debian's libxgboost0 (else
// libxgboost.so, as upstream builds name it), or the file LOOM_XGBOOST_LIBRARY names. Loom builds, links and
// tunes without it; the cost model (tune/cost_model.hpp) then fits its ridge regression only. Trees learn
// what a linear model of the knobs cannot: interactions (a tile size that pays only with vectorization on),
// thresholds (a block that stops fitting a cache).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "loom/support/config.hpp"

namespace loom::tune {

/// Whether XGBoost could be loaded; when not, `why` (if given) says what was tried and how to install
/// it. Loaded once per process.
LOOM_DECL bool boosted_trees_available(std::string* why = nullptr);

/// The loaded XGBoost's version, "major.minor.patch" ("" when it is not available).
LOOM_DECL std::string boosted_trees_version();

/// A regression of y on x: `rounds` trees of depth at most `max_depth`, squared error, shrinkage 0.3,
/// one thread, a fixed seed (the same data give the same model).
class BoostedTrees {
 public:
  /// The trees' shape. Throws loom::Error when XGBoost is not available (boosted_trees_available).
  LOOM_DECL explicit BoostedTrees(int rounds = 60, int max_depth = 4);
  /// Frees the fitted trees.
  LOOM_DECL ~BoostedTrees();
  BoostedTrees(const BoostedTrees&) = delete;
  BoostedTrees& operator=(const BoostedTrees&) = delete;

  /// Fits the trees to rows `xs` (each of the same length) and their targets `ys`, replacing any
  /// earlier fit. Throws loom::Error for rows of unequal length, or XGBoost's own error.
  LOOM_DECL void fit(const std::vector<std::vector<double>>& xs, const std::vector<double>& ys);
  /// The fitted trees' predictions for `xs` (the mean of the targets before any fit is impossible:
  /// throws loom::Error when not fitted).
  LOOM_DECL std::vector<double> predict(const std::vector<std::vector<double>>& xs) const;
  /// Whether fit() has run.
  bool fitted() const { return booster_ != nullptr; }

 private:
  int rounds_, max_depth_;
  size_t columns_ = 0;
  void* booster_ = nullptr;  // BoosterHandle
};

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/boosted_trees.hpp"
#endif

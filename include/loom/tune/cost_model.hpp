// A model of a configuration's time, learned from the configurations measured so far, that the
// evolutionary search uses to rank its proposals before measuring any (measuring is what costs:
// a build and many calls; scoring a proposal is cheap). Its features: each knob's main effects (one
// indicator per option other than the first) and, for knobs whose options are all positive, log2 of
// the value (a trend that reaches options not yet measured); a caller may add numbers of its own
// per configuration (tune/ir_features.hpp: counts from the lowered function). The learner: ridge
// regression of log(time) on them, which has no interactions between knobs; or, once eight
// configurations are measured and XGBoost can be loaded (tune/boosted_trees.hpp), gradient-boosted
// trees on the same features, which have. Either only ranks; it never replaces a measurement.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/support/config.hpp"
#include "loom/tune/config.hpp"

namespace loom::tune {

class BoostedTrees;

/// How a CostModel learns. Auto: LOOM_TUNE_COST_MODEL's choice ("ridge", "trees" or "auto"), and
/// with "auto" or none, boosted trees where XGBoost can be loaded, else ridge.
enum class CostLearner { Auto, Ridge, BoostedTrees };

/// What CostLearner::Auto resolves to on this machine, as a line that never throws: "ridge",
/// "boosted trees (XGBoost 1.7.4)", or what is wrong ("LOOM_TUNE_COST_MODEL='x' (not a cost
/// model)", "boosted trees (XGBoost unavailable)"). Distributed tuning compares it between
/// processes: they must rank alike to follow the same search.
LOOM_DECL std::string cost_learner_setting();

/// Predicts a configuration's time from the measured ones.
class CostModel {
 public:
  /// A model over the knobs of `space`, with no measurement yet (it then predicts 1 ms for all).
  /// The learner is resolved when first needed (learner(), the first prediction), so that a search
  /// that never ranks does not load XGBoost.
  LOOM_DECL explicit CostModel(std::vector<Knob> space, double ridge = 0.1,
                               CostLearner learner = CostLearner::Auto);

  /// Adds a measured configuration (ms > 0), with its extra features (the same count for every
  /// configuration; missing ones count as 0).
  LOOM_DECL void add(const Assignment& knobs, double ms, const std::vector<double>& extra = {});
  /// The predicted time of `knobs` (with its extra features), in milliseconds. Throws where
  /// learner() does. Should XGBoost fail to fit, the model warns once on stderr and goes on with
  /// ridge (it only ranks proposals: a tuning run does not end for it).
  LOOM_DECL double predict_ms(const Assignment& knobs, const std::vector<double>& extra = {}) const;
  /// Measurements added so far.
  size_t observations() const { return ys_.size(); }
  /// The learner in use (never Auto). Boosted trees predict from kTreesFrom measurements on; with
  /// fewer, the ridge fit does. Throws loom::Error for BoostedTrees (asked, or by
  /// LOOM_TUNE_COST_MODEL=trees) without XGBoost, and for a LOOM_TUNE_COST_MODEL that is none of
  /// ridge, trees and auto.
  LOOM_DECL CostLearner learner() const;
  /// "ridge", or "boosted trees (XGBoost 1.7.4)".
  LOOM_DECL std::string learner_name() const;
  /// Measurements from which boosted trees predict (trees of a handful of points would be noise).
  static constexpr size_t kTreesFrom = 8;

 private:
  std::vector<double> features(const Assignment& knobs, const std::vector<double>& extra) const;
  void fit() const;

  std::vector<Knob> space_;
  double ridge_;
  size_t extra_count_ = 0;               // extra features per configuration, from the first add()
  std::vector<std::vector<double>> xs_;  // features of each measurement
  std::vector<double> ys_;               // log(ms) of each
  CostLearner asked_;
  mutable std::optional<CostLearner> learner_;   // resolved by learner()
  mutable std::vector<double> weights_;          // refit when stale
  mutable std::shared_ptr<BoostedTrees> trees_;  // the trees' fit, when they predict (copies share
                                                 // a fit until one refits: fit() makes a new one)
  mutable bool stale_ = true;
};

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/cost_model.hpp"
#endif

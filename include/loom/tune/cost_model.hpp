// A model of a configuration's time, learned from the configurations measured so far, that the
// evolutionary search uses to rank its proposals before measuring any (measuring is what costs:
// a build and many calls; scoring a proposal is a dot product). Ridge regression of log(time) on
// each knob's main effects (one indicator per option other than the first) and, for knobs whose
// options are all positive, log2 of the value: a trend that reaches options not yet measured. It
// has no interactions between knobs, so it ranks; it never replaces a measurement. A caller may add
// numbers of its own per configuration (tune/ir_features.hpp: counts from the lowered function),
// which enter the regression as further features.
#pragma once

#include <cstddef>
#include <vector>

#include "loom/support/config.hpp"
#include "loom/tune/config.hpp"

namespace loom::tune {

/// Predicts a configuration's time from the measured ones.
class CostModel {
 public:
  /// A model over the knobs of `space`, with no measurement yet (it then predicts 1 ms for all).
  LOOM_DECL explicit CostModel(std::vector<Knob> space, double ridge = 0.1);

  /// Adds a measured configuration (ms > 0), with its extra features (the same count for every
  /// configuration; missing ones count as 0).
  LOOM_DECL void add(const Assignment& knobs, double ms, const std::vector<double>& extra = {});
  /// The predicted time of `knobs` (with its extra features), in milliseconds.
  LOOM_DECL double predict_ms(const Assignment& knobs, const std::vector<double>& extra = {}) const;
  /// Measurements added so far.
  size_t observations() const { return ys_.size(); }

 private:
  std::vector<double> features(const Assignment& knobs, const std::vector<double>& extra) const;
  void fit() const;

  std::vector<Knob> space_;
  double ridge_;
  size_t extra_count_ = 0;               // extra features per configuration, from the first add()
  std::vector<std::vector<double>> xs_;  // features of each measurement
  std::vector<double> ys_;               // log(ms) of each
  mutable std::vector<double> weights_;  // refit when stale
  mutable bool stale_ = true;
};

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/cost_model.hpp"
#endif

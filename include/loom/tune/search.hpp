// How tune() picks the configurations it measures, batch by batch: every one when the space is
// small, a seeded random sample, or an evolutionary search for spaces much larger than the trial
// budget. The evolutionary search starts from a random population around the default, then each
// round breeds proposals from the fastest configurations measured so far (mutating a knob or two,
// mostly to a neighbouring option, and crossing two parents), ranks them with a CostModel fitted
// to every measurement, and measures the best-ranked few plus a quarter chosen at random (so a
// wrong model cannot trap the search). Batches let tune() build a batch's kernels in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "loom/support/config.hpp"
#include "loom/tune/config.hpp"
#include "loom/tune/cost_model.hpp"

namespace loom::tune {

/// How the configurations to measure are chosen.
enum class Strategy {
  Auto,          ///< Exhaustive when the space fits the trial budget, else Evolutionary
  Exhaustive,    ///< every configuration, in order (the default first), up to the budget
  Random,        ///< the default, then a seeded random sample without repeats
  Evolutionary,  ///< the default and a random population, then rounds bred from the fastest
};

/// The strategy's name, as bench lines print it.
LOOM_DECL std::string strategy_name(Strategy s);

/// A configuration proposed for measurement.
struct Proposal {
  Assignment knobs;         ///< the configuration
  double predicted_ms = 0;  ///< the cost model's prediction when it ranked this one (else 0)
};

/// Numbers that describe a configuration for the cost model (tune/ir_features.hpp), or nothing
/// when it cannot be described (Loom refuses it).
using Featurizer = std::function<std::optional<std::vector<double>>(const Assignment&)>;

/// Proposes configurations batch by batch and learns from their outcomes.
class Searcher {
 public:
  /// A search over `space` (`space_size` configurations) that proposes at most `max_trials`.
  LOOM_DECL Searcher(std::vector<Knob> space, int64_t space_size, Strategy strategy, int max_trials,
                     uint32_t seed);

  /// The next configurations to measure, none proposed before; empty when the search is over.
  /// `batch` is the size that Exhaustive and Random use (Evolutionary sizes its own rounds).
  LOOM_DECL std::vector<Proposal> next_batch(int batch);
  /// Reports a proposed configuration's time (nothing: refused, wrong, crashed or timed out).
  LOOM_DECL void observe(const Assignment& knobs, std::optional<double> ms);
  /// Gives the cost model features of each configuration besides its knobs (the evolutionary
  /// search ranks its proposals with them; a proposal without any ranks last).
  void set_featurizer(Featurizer f) { featurizer_ = std::move(f); }

  /// The strategy in use (never Auto).
  Strategy strategy() const { return strategy_; }

 private:
  Assignment assignment_of(int64_t index) const;
  int64_t index_of(const Assignment& knobs) const;
  Assignment random_assignment();
  Assignment mutate(const Assignment& parent);
  Assignment cross(const Assignment& a, const Assignment& b);
  std::vector<Proposal> evolutionary_round();
  const std::optional<std::vector<double>>& features_of(int64_t index, const Assignment& knobs);

  std::vector<Knob> space_;
  int64_t space_size_;
  Strategy strategy_;
  int max_trials_;
  std::mt19937_64 rng_;
  std::set<int64_t> proposed_;                           // indices of every configuration proposed
  std::vector<std::pair<double, Assignment>> measured_;  // (ms, knobs) of the measured ones
  CostModel model_;
  int64_t next_index_ = 0;  // Exhaustive: the next index in order
  int rounds_ = 0;
  Featurizer featurizer_;
  std::map<int64_t, std::optional<std::vector<double>>> features_;  // by index, once computed
};

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/search.hpp"
#endif

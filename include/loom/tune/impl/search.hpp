// The definitions of tune/search.hpp: configurations as mixed-radix indices (so "proposed before"
// is a set of integers), the three ways of proposing, and the evolutionary round.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/search.hpp");

#include <algorithm>
#include <cmath>
#include <map>

#include "loom/tune/search.hpp"

namespace loom::tune {

LOOM_DECL std::string strategy_name(Strategy s) {
  switch (s) {
    case Strategy::Auto: return "auto";
    case Strategy::Exhaustive: return "exhaustive";
    case Strategy::Random: return "random";
    case Strategy::Evolutionary: return "evolutionary";
  }
  return "?";
}

LOOM_DECL Searcher::Searcher(std::vector<Knob> space, int64_t space_size, Strategy strategy, int max_trials,
                             uint32_t seed)
    : space_(std::move(space)),
      space_size_(space_size),
      strategy_(strategy),
      max_trials_(std::max(max_trials, 1)),
      rng_(seed),
      model_(space_) {
  if (strategy_ == Strategy::Auto)
    strategy_ = space_size_ <= max_trials_ ? Strategy::Exhaustive : Strategy::Evolutionary;
}

// Index = sum of option positions, the first knob the least significant digit: index 0 is the
// default configuration.
LOOM_DECL Assignment Searcher::assignment_of(int64_t index) const {
  Assignment a;
  for (const Knob& k : space_) {
    const int64_t n = static_cast<int64_t>(k.options.size());
    a[k.name] = k.options[static_cast<size_t>(index % n)];
    index /= n;
  }
  return a;
}

LOOM_DECL int64_t Searcher::index_of(const Assignment& knobs) const {
  int64_t index = 0, radix = 1;
  for (const Knob& k : space_) {
    const auto pos = std::find(k.options.begin(), k.options.end(), knobs.at(k.name)) - k.options.begin();
    index += pos * radix;
    radix *= static_cast<int64_t>(k.options.size());
  }
  return index;
}

LOOM_DECL Assignment Searcher::random_assignment() {
  Assignment a;
  for (const Knob& k : space_) a[k.name] = k.options[rng_() % k.options.size()];
  return a;
}

// Changes each knob with probability 1/knobs (at least one), to a neighbouring option seven
// times in ten (the options of a tile knob are usually ordered, and the best is rarely far from a
// good one) and to any other option otherwise.
LOOM_DECL Assignment Searcher::mutate(const Assignment& parent) {
  std::vector<const Knob*> changeable;
  for (const Knob& k : space_)
    if (k.options.size() > 1) changeable.push_back(&k);
  Assignment a = parent;
  if (changeable.empty()) return a;
  std::vector<const Knob*> chosen;
  for (const Knob* k : changeable)
    if (rng_() % changeable.size() == 0) chosen.push_back(k);
  if (chosen.empty()) chosen.push_back(changeable[rng_() % changeable.size()]);
  for (const Knob* k : chosen) {
    const int64_t n = static_cast<int64_t>(k->options.size());
    const int64_t pos = std::find(k->options.begin(), k->options.end(), a.at(k->name)) - k->options.begin();
    int64_t next = pos;
    if (rng_() % 10 < 7) {
      next = pos + (rng_() % 2 ? 1 : -1);
      if (next < 0 || next >= n) next = 2 * pos - next;  // off the end: the other neighbour
    } else {
      next = (pos + 1 + static_cast<int64_t>(rng_() % static_cast<uint64_t>(n - 1))) % n;
    }
    a[k->name] = k->options[static_cast<size_t>(next)];
  }
  return a;
}

LOOM_DECL Assignment Searcher::cross(const Assignment& a, const Assignment& b) {
  Assignment child;
  for (const Knob& k : space_) child[k.name] = (rng_() % 2 ? a : b).at(k.name);
  return child;
}

LOOM_DECL std::vector<Proposal> Searcher::evolutionary_round() {
  const int remaining = max_trials_ - static_cast<int>(proposed_.size());
  const bool first = rounds_++ == 0;
  const int want =
      std::min(remaining, first ? std::clamp(max_trials_ / 4, 4, 32) : std::clamp(max_trials_ / 8, 4, 16));
  std::vector<Proposal> out;
  auto take = [&](int64_t index, double predicted) {
    proposed_.insert(index);
    out.push_back(Proposal{assignment_of(index), predicted});
  };
  if (first) take(0, 0);  // the default

  // Proposals not measured before: bred from the fastest configurations when there are any.
  std::sort(measured_.begin(), measured_.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  const size_t parents = std::min<size_t>(measured_.size(), 5);
  std::map<int64_t, Assignment> pool;
  // Each proposal a featurizer describes is lowered: fewer of them.
  const size_t pool_size = static_cast<size_t>((featurizer_ ? 4 : 8) * want);
  for (int attempt = 0; attempt < 40 * want && pool.size() < pool_size; ++attempt) {
    Assignment a;
    const uint64_t r = rng_() % 10;
    if (parents == 0 || r == 9) {
      a = random_assignment();
    } else if (r < 6 || parents == 1) {
      // Better parents more often: the smaller of two uniform picks.
      a = mutate(measured_[std::min(rng_() % parents, rng_() % parents)].second);
    } else {
      a = cross(measured_[rng_() % parents].second, measured_[rng_() % parents].second);
    }
    const int64_t index = index_of(a);
    if (!proposed_.count(index)) pool.emplace(index, std::move(a));
  }
  // A nearly exhausted space: breeding finds little that is new; take the rest in order.
  for (int64_t index = 0;
       pool.size() < static_cast<size_t>(want) && index < space_size_ && index < (int64_t{1} << 22); ++index)
    if (!proposed_.count(index)) pool.emplace(index, assignment_of(index));

  std::vector<std::pair<double, int64_t>> ranked;
  const bool use_model = model_.observations() >= 2;
  for (const auto& [index, knobs] : pool) {
    if (!use_model) {
      ranked.emplace_back(static_cast<double>(rng_() % 1000000), index);
    } else if (!featurizer_) {
      ranked.emplace_back(model_.predict_ms(knobs), index);
    } else {
      const std::optional<std::vector<double>>& f = features_of(index, knobs);
      ranked.emplace_back(f ? model_.predict_ms(knobs, *f) : HUGE_VAL, index);
    }
  }
  std::sort(ranked.begin(), ranked.end());
  const int slots = want - static_cast<int>(out.size());
  const int explore = use_model ? std::max(1, slots / 4) : 0;
  int i = 0;
  for (; i < static_cast<int>(ranked.size()) && static_cast<int>(out.size()) < want - explore; ++i)
    take(ranked[static_cast<size_t>(i)].second, use_model ? ranked[static_cast<size_t>(i)].first : 0);
  // Exploration: a random few of the rest, whatever the model says of them.
  std::vector<std::pair<double, int64_t>> rest(ranked.begin() + i, ranked.end());
  std::shuffle(rest.begin(), rest.end(), rng_);
  for (size_t j = 0; j < rest.size() && static_cast<int>(out.size()) < want; ++j) take(rest[j].second, 0);
  return out;
}

LOOM_DECL std::vector<Proposal> Searcher::next_batch(int batch) {
  const int remaining = max_trials_ - static_cast<int>(proposed_.size());
  if (remaining <= 0 || static_cast<int64_t>(proposed_.size()) >= space_size_) return {};
  if (strategy_ == Strategy::Evolutionary) return evolutionary_round();
  const int want = std::min(std::max(batch, 1), remaining);
  std::vector<Proposal> out;
  auto take = [&](int64_t index) {
    proposed_.insert(index);
    out.push_back(Proposal{assignment_of(index), 0});
  };
  if (strategy_ == Strategy::Exhaustive) {
    for (; static_cast<int>(out.size()) < want && next_index_ < space_size_; ++next_index_)
      if (!proposed_.count(next_index_)) take(next_index_);
    return out;
  }
  if (proposed_.empty()) take(0);  // Random: the default first
  for (int attempt = 0; static_cast<int>(out.size()) < want && attempt < 64 * want; ++attempt) {
    const int64_t index = static_cast<int64_t>(rng_() % static_cast<uint64_t>(space_size_));
    if (!proposed_.count(index)) take(index);
  }
  // Draws that keep hitting proposed configurations: the space is nearly exhausted.
  for (int64_t index = 0; static_cast<int>(out.size()) < want && index < space_size_; ++index)
    if (!proposed_.count(index)) take(index);
  return out;
}

LOOM_DECL const std::optional<std::vector<double>>& Searcher::features_of(int64_t index,
                                                                          const Assignment& knobs) {
  auto it = features_.find(index);
  if (it == features_.end()) it = features_.emplace(index, featurizer_(knobs)).first;
  return it->second;
}

LOOM_DECL void Searcher::observe(const Assignment& knobs, std::optional<double> ms) {
  if (!ms || !(*ms > 0)) return;
  measured_.emplace_back(*ms, knobs);
  if (!featurizer_) return model_.add(knobs, *ms);
  const std::optional<std::vector<double>>& f = features_of(index_of(knobs), knobs);
  model_.add(knobs, *ms, f ? *f : std::vector<double>());
}

}  // namespace loom::tune

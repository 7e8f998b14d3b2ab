// The knobs of a tunable schedule: a schedule function asks its Config for each choice
// (cfg.choice("tile_i", {8, 16, 32})) and builds the schedule from the answers. loom::tune runs
// the function once to discover the knobs (each answers its first option), then once per
// configuration it measures; apply_best runs it with the best recorded configuration.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/support/error.hpp"

namespace loom::tune {

/// One knob: its name and the values it may take, the first being the default.
struct Knob {
  std::string name;              ///< as the schedule function asked for it
  std::vector<int64_t> options;  ///< the values it may take, the default first
};

/// The values of a configuration, by knob name.
using Assignment = std::map<std::string, int64_t>;

/// A configuration as one word, "kc=384,mc=32" (knobs in name order), for bench lines and messages.
inline std::string knobs_text(const Assignment& a) {
  std::string out;
  for (const auto& [name, value] : a) out += (out.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return out;
}

/// What a schedule function reads its knobs from.
class Config {
 public:
  /// A configuration that answers every knob with its first option and records the knobs asked.
  Config() = default;
  /// A configuration that answers each knob with its value in `values` (a knob not in it: its
  /// first option).
  explicit Config(Assignment values) : values_(std::move(values)) {}

  /// The value of knob `name`, one of `options` (non-empty, without repeats). Asking again for a
  /// knob gives the same value; its options must then be the same.
  int64_t choice(const std::string& name, const std::vector<int64_t>& options) {
    if (options.empty())
      throw Error(cat("tune: knob '", name, "' has no options; give it at least one value"));
    for (const Knob& k : knobs_)
      if (k.name == name) {
        if (k.options != options)
          throw Error(
              cat("tune: knob '", name, "' was asked twice with different options; give a knob one list"));
        return value_of(k);
      }
    for (size_t i = 0; i < options.size(); ++i)
      for (size_t j = i + 1; j < options.size(); ++j)
        if (options[i] == options[j])
          throw Error(cat("tune: knob '", name, "' lists the value ", options[i], " twice"));
    knobs_.push_back(Knob{name, options});
    return value_of(knobs_.back());
  }
  /// An on/off knob (options 0 and 1, off by default).
  bool flag(const std::string& name) { return choice(name, {0, 1}) != 0; }

  /// The knobs asked so far, in the order they were asked.
  const std::vector<Knob>& knobs() const { return knobs_; }
  /// The value each knob asked so far took.
  Assignment assignment() const {
    Assignment out;
    for (const Knob& k : knobs_) out[k.name] = value_of(k);
    return out;
  }

 private:
  int64_t value_of(const Knob& k) const {
    auto it = values_.find(k.name);
    if (it == values_.end()) return k.options.front();
    for (int64_t o : k.options)
      if (o == it->second) return o;
    throw Error(cat("tune: knob '", k.name, "' was given the value ", it->second,
                    ", which is not one of its options; the search space changed since it was recorded"));
  }

  Assignment values_;
  std::vector<Knob> knobs_;
};

}  // namespace loom::tune

// loom::tune: a measured search over the knobs of a schedule function. The function reads its
// knobs from a Config and returns a schedule of fixed tensors; tune() discovers the knobs, builds
// and times every configuration (or a seeded random sample of max_trials of them when there are
// more), checks each one's outputs against the default configuration's on the same random inputs
// (a fast wrong kernel is never chosen), skips configurations that Loom refuses (a loom::Error at
// schedule, lower or build time), and appends every measurement to the tuning database, from
// which apply_best() schedules the workload in a later process with no search.
//
// This first version runs candidates in the tuning process, one after another: a candidate that
// crashes takes the process down, and there is no time limit per candidate (both are the next
// steps, with a cost model for large spaces). Shapes must be constant and arguments tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/lower/lower.hpp"
#include "loom/support/config.hpp"
#include "loom/support/target.hpp"
#include "loom/tune/config.hpp"
#include "loom/tune/database.hpp"

namespace loom::tune {

/// Builds the schedule for one configuration (reading its knobs from the Config).
using ScheduleFunction = std::function<Schedule(Config&)>;

/// A configuration's schedule with the arguments it is lowered with, for schedule builders that
/// create their own tensors each time (lib::gemm): every candidate's arguments must have the
/// shapes and dtypes of the default configuration's.
struct Candidate {
  Schedule schedule;           ///< the configuration's schedule
  std::vector<LowerArg> args;  ///< what to lower it with (as for build())
};
/// Builds one configuration's candidate (reading its knobs from the Config).
using CandidateFunction = std::function<Candidate(Config&)>;

/// How tune() searches and measures.
struct Options {
  Target target = Target::cpu();
  std::string name = "workload";  ///< recorded with each measurement, for people reading the database
  int max_trials = 64;            ///< configurations measured at most (more: a seeded random sample)
  uint32_t seed = 1;              ///< of the sample and of the random inputs
  int repeats = 5;                ///< timed samples per configuration; the median counts
  double min_sample_ms = 1.0;     ///< a sample repeats the call until it took at least this long
  double tolerance = 1e-4;        ///< allowed |x - ref| / (1 + |ref|) against the default's outputs
  std::string database;           ///< the database file ("": the default; "off": record nothing)
};

/// One configuration's outcome.
struct Trial {
  /// Timed; refused by Loom (a loom::Error while scheduling, lowering or building); or built but
  /// computing other outputs than the default configuration.
  enum class Outcome { Measured, Invalid, Wrong };
  Assignment knobs;                     ///< the configuration
  Outcome outcome = Outcome::Measured;  ///< what became of it
  double ms = 0;                        ///< median time of one call (Measured)
  std::string detail;                   ///< the refusal (Invalid) or the first mismatching element (Wrong)
};

/// What tune() found.
struct Result {
  std::string workload;                      ///< the key the database files it under
  std::vector<Knob> space;                   ///< the knobs the schedule function asked for
  int64_t space_size = 1;                    ///< configurations in the space
  std::vector<Trial> trials;                 ///< every configuration tried, the default first
  int measured = 0, invalid = 0, wrong = 0;  ///< trials by outcome
  Assignment best;        ///< the fastest measured configuration (the default's knobs if none was)
  double best_ms = 0;     ///< its time (0 when none was measured)
  double default_ms = 0;  ///< the default configuration's time
};

/// The database key of a computation: a structural hash of its unscheduled lowering (which
/// includes the shapes and dtypes of the arguments), as 16 hex digits.
LOOM_DECL std::string workload_key(const std::vector<LowerArg>& args);

/// Searches the knobs of `schedule` for the workload `args` (the tensors the kernel takes, as for
/// build()); the default configuration (every knob at its first option) must build and run.
LOOM_DECL Result tune(const std::vector<LowerArg>& args, const ScheduleFunction& schedule,
                      const Options& options = Options());

/// tune() for candidates that bring their own tensors.
LOOM_DECL Result tune(const CandidateFunction& candidate, const Options& options = Options());

/// The knobs of the fastest configuration the database holds for `workload` on `target` and this
/// CPU, if any.
LOOM_DECL std::optional<Assignment> best_knobs(const std::string& workload,
                                               const Target& target = Target::cpu(),
                                               const std::string& database = "");

/// The schedule of the fastest configuration the database holds for `args` on `target` and this
/// CPU; nothing when it holds none (then use the default, or tune).
LOOM_DECL std::optional<Schedule> apply_best(const std::vector<LowerArg>& args,
                                             const ScheduleFunction& schedule,
                                             const Target& target = Target::cpu(),
                                             const std::string& database = "");

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/tune.hpp"
#endif

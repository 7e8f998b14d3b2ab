// loom::tune: a measured search over the knobs of a schedule function. The function reads its
// knobs from a Config and returns a schedule of fixed tensors; tune() discovers the knobs, then
// measures configurations batch by batch as its Searcher proposes them (all of them, a random
// sample, or an evolutionary search ranked by a cost model), building each batch's kernels in
// parallel and timing them one at a time, each in a worker process with a time limit (a
// configuration that crashes or hangs costs one trial). Every candidate's outputs are checked
// against the default configuration's on the same random inputs (a fast wrong kernel is never
// chosen); configurations that Loom refuses (a loom::Error at schedule, lower or build time) are
// skipped and counted; every measurement is appended to the tuning database, from which
// apply_best() schedules the workload in a later process with no search. Shapes must be constant
// and arguments tensors.
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
#include "loom/tune/measure.hpp"
#include "loom/tune/search.hpp"

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

/// Several processes sharing one search (an MPI job's ranks, say: tune/mpi.hpp's
/// mpi_distribution() makes one). Every process calls tune() with the same workload and options;
/// process `rank` builds, checks and times every size-th configuration of each batch, all_gather
/// gives every process every process's outcomes, so all follow the same search to the same result;
/// process 0 alone times the final rounds and writes the database.
struct Distribution {
  int rank = 0;  ///< this process, in [0, size)
  int size = 1;  ///< processes sharing the search
  /// Collective: called by every process with its string at the same point of the search, returns
  /// every process's string in rank order.
  std::function<std::vector<std::string>(const std::string&)> all_gather;
};

/// How tune() searches and measures.
struct Options {
  Target target = Target::cpu();       ///< what the configurations are built for
  std::string name = "workload";       ///< recorded with each measurement, for people reading the database
  int max_trials = 64;                 ///< configurations tried at most
  Strategy strategy = Strategy::Auto;  ///< how they are chosen (see search.hpp)
  uint32_t seed = 1;                   ///< of the search and of the random inputs
  int repeats = 5;                     ///< timed samples per configuration (more when they disagree)
  double min_sample_ms = 1.0;          ///< a sample repeats the call until it took at least this long
  /// Allowed |x - ref| / (1 + |ref|) against the default's outputs (16-bit float outputs: at least
  /// 1e-2 for f16, 5e-2 for bf16, whose rounding changes with the order of a reduction).
  double tolerance = 1e-4;
  std::string database;  ///< the database file ("": the default; "off": record nothing)
  /// Check and time each configuration in a worker process (fork()), so that a crash or a hang
  /// costs one trial; false: in the tuning process (then a crash ends it and there is no limit).
  /// Kernels for Target::cuda() always run in the tuning process: a forked child cannot use the
  /// parent's CUDA context.
  bool isolate = true;
  /// Seconds for one configuration's check and timing in the worker (<= 0: none); at least what
  /// a configuration give_up_factor times slower than the default needs to be timed fully.
  double time_limit_s = 30;
  /// A configuration whose first call takes longer than this many times the fastest so far (the
  /// default's time to begin with; and longer than 2 ms) is not timed further: its time is that
  /// call (0: time all fully).
  double give_up_factor = 10;
  /// The evolutionary search's cost model also learns from counts in each configuration's
  /// lowered function (tune/ir_features.hpp; one lowering per proposal it ranks).
  bool ir_features = true;
  int compile_threads = 0;  ///< builds at once (0: the hardware's threads)
  /// The fastest few configurations of the search, with the default, are timed again against
  /// each other in alternating rounds, and the fastest of them is the result (unless the default
  /// is within min_gain of it): a search's best time is partly its luck (the one sample the
  /// machine was quiet), and this takes the luck out.
  int finalists = 3;
  int final_rounds = 3;  ///< alternating rounds of the final timing, each of `repeats` samples per finalist
  /// In the final rounds a finalist replaces the default only when it is faster by more than this
  /// fraction: a smaller difference is within what a busy machine's timings wander, and keeping
  /// the default then costs at most that.
  double min_gain = 0.03;
  Distribution distribution;  ///< the processes sharing the search (by default this one alone)
};

/// One configuration's outcome.
struct Trial {
  /// Timed; refused by Loom (a loom::Error while scheduling, lowering, building or calling);
  /// built but computing other outputs than the default configuration; killed by a signal in the
  /// worker; or still running at the time limit.
  enum class Outcome { Measured, Invalid, Wrong, Crashed, TimedOut };
  Assignment knobs;                     ///< the configuration
  Outcome outcome = Outcome::Measured;  ///< what became of it
  double ms = 0;                        ///< median time of one call (Measured)
  Timing timing;                        ///< the samples behind `ms` (Measured)
  double predicted_ms = 0;              ///< the cost model's prediction, when it chose this one
  std::string detail;                   ///< why it was not measured
};

/// What tune() found.
struct Result {
  std::string workload;       ///< the key the database files it under
  std::vector<Knob> space;    ///< the knobs the schedule function asked for
  int64_t space_size = 1;     ///< configurations in the space
  std::vector<Trial> trials;  ///< every configuration tried, the default first
  int measured = 0, invalid = 0, wrong = 0, crashed = 0, timed_out = 0;  ///< trials by outcome
  Strategy strategy = Strategy::Auto;                                    ///< the strategy used (never Auto)
  double seconds = 0;                                                    ///< the whole search, wall time
  double build_seconds = 0;    ///< of which building kernels (the batches' parallel builds)
  double measure_seconds = 0;  ///< of which checking and timing them (final rounds included)
  Assignment best;             ///< the fastest configuration (the default's knobs if none was measured)
  double best_ms = 0;          ///< its time (0 when none was measured)
  double default_ms = 0;       ///< the default configuration's time
  /// The finalists' times from the final alternating rounds (empty when fewer than two were
  /// measured or the final timing failed; then best and best_ms are the search's).
  std::vector<std::pair<Assignment, double>> finals;
};

/// The database key of a computation: a structural hash of its unscheduled lowering (which
/// includes the shapes and dtypes of the arguments), as 16 hex digits.
LOOM_DECL std::string workload_key(const std::vector<LowerArg>& args);

/// The database key of a lowered function (workload_key's hash, for kernels built as loop IR):
/// the structural hash of its body folded with each parameter's type and shape, as 16 hex digits.
LOOM_DECL std::string lowered_func_key(const LoweredFunc& f);

/// Whether the environment asks libraries to tune what they have no record for: LOOM_TUNE set to
/// anything but "" or "0".
LOOM_DECL bool tuning_requested();

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

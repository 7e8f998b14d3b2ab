// Measuring one configuration so that its number can be trusted: timing samples with slow outliers
// rejected (a sample that an interrupt or another process stretched says nothing about the
// kernel), more samples when they disagree, and a worker process with a time limit, so that a
// configuration that crashes or hangs costs one trial instead of the tuning run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/support/config.hpp"

namespace loom::tune {

/// The samples of one configuration's timing, summarized.
struct Timing {
  double ms = 0;      ///< median of the kept samples: the time of one call, in milliseconds
  int samples = 0;    ///< samples kept
  int rejected = 0;   ///< slow outliers dropped (beyond Tukey's upper fence: Q3 + 1.5 IQR)
  double spread = 0;  ///< interquartile range of the kept samples over their median
  /// The first call alone took longer than the tuner's limit (Options::give_up_factor times the
  /// fastest so far): `ms` is that one call, and no more were made.
  bool cut_short = false;
};

/// Summarizes samples (each the time of one call, in ms): drops the slow outliers, then takes the
/// median of the rest. Fast outliers are kept: nothing makes a kernel faster than it is.
LOOM_DECL Timing summarize_samples(std::vector<double> samples);

/// One sample: the mean time of as many calls of `call` as take at least `min_sample_ms` (one at
/// least), in milliseconds. No warm-up.
LOOM_DECL double sample_ms(const std::function<void()>& call, double min_sample_ms);

/// The fastest of `calls` calls of `call` (at least one), in milliseconds: for comparing kernels
/// in alternating rounds, as benchmarks and examples do.
LOOM_DECL double best_ms(const std::function<void()>& call, int calls);

/// Times `call`: one warm-up call, then `repeats` samples, each the mean of as many calls as take
/// at least `min_sample_ms`. When the kept samples spread by more than `max_spread` (interquartile
/// range over median), takes `repeats` more, twice at most.
LOOM_DECL Timing time_calls(const std::function<void()>& call, int repeats, double min_sample_ms,
                            double max_spread = 0.05);

/// What became of work run in a worker process.
struct WorkerResult {
  /// Returned a string; threw a loom::Error (a refusal); died (a signal, exit(), or an exception
  /// other than loom::Error); or ran past its limit and was killed.
  enum class Status { Finished, Threw, Crashed, TimedOut };
  Status status = Status::Finished;  ///< what became of it
  std::string output;                ///< what the work returned (Finished)
  std::string detail;                ///< the exception's message, the signal, or the limit
};

/// Runs `work` in a child process made by fork() and returns what it returned, or how it failed,
/// killing it after `time_limit_s` seconds (<= 0: no limit). The child sees the parent's memory as
/// it was at the fork (JIT-compiled kernels and buffers included) and gets a thread pool of its own;
/// what it writes to memory stays in the child. Call it while no other thread of this process is
/// inside Loom or holds a lock that `work` needs: only the calling thread exists in the child.
LOOM_DECL WorkerResult run_in_worker(const std::function<std::string()>& work, double time_limit_s);

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/measure.hpp"
#endif

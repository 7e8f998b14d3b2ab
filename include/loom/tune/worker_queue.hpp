// A queue of items (candidate kernels, say) measured in order by worker processes that can die:
// each worker sets up once (allocates operands, measures a reference), then runs item after item
// and reports each result as it finishes. When an item crashes its worker, runs past the time
// limit, or asks to retire its worker (a GPU kernel that faulted leaves its CUDA context unusable),
// that item alone is charged and a fresh worker continues with the next. lib's GPU tuners measure
// their candidates this way (lib/gemm_device_timer.hpp), so that a kernel that faults or hangs
// neither stops the tuning nor poisons the calling process's CUDA context.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/support/config.hpp"
#include "loom/tune/measure.hpp"

namespace loom::tune {

/// What one worker of run_queue_in_workers does, made by its `start` function in the worker.
struct WorkerSession {
  /// What the worker's setup says to the parent (WorkerQueueResult::started holds each worker's).
  std::string started;
  /// Runs item `item` and returns its report (WorkerResult::output); a loom::Error it throws is the
  /// item's refusal (WorkerResult::Status::Threw), another exception a crash. Setting `retire`
  /// ends this worker after the item: the next item goes to a fresh one. Empty: the worker runs no
  /// items, and the queue stops (run_queue_in_workers returns no item results).
  std::function<std::string(int item, bool& retire)> run;
};

/// What run_queue_in_workers found.
struct WorkerQueueResult {
  /// The items' results in order: Finished (with the item's report), Threw, Crashed (the worker
  /// died while running it) or TimedOut. Shorter than the queue when a worker's setup failed
  /// (`setup_failure` says why) or a session had no `run`: the items after these did not run.
  std::vector<WorkerResult> items;
  /// Each worker's WorkerSession::started, in the order the workers started.
  std::vector<std::string> started;
  /// Why a worker's setup failed (its loom::Error's message, the signal it died of, or the time
  /// limit); empty when every setup succeeded.
  std::string setup_failure;
  /// Workers started.
  int workers = 0;
};

/// Runs items 0 to `count` - 1 in order in worker processes made by fork(): a worker calls
/// `start` (once), reports WorkerSession::started, then runs items until the queue is done, it dies,
/// an item runs past `time_limit_s`, or an item retires it; then the next worker (which calls
/// `start` again) continues with the next item. A worker starts even when `count` is 0, for its
/// setup alone. `time_limit_s` bounds the setup and each item separately (<= 0: no limit). The workers see
/// this process's memory as it was at the fork, as run_in_worker's do, under the same conditions:
/// no other thread of this process inside Loom or holding a lock that they need.
LOOM_DECL WorkerQueueResult run_queue_in_workers(int count, const std::function<WorkerSession()>& start,
                                                 double time_limit_s);

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/worker_queue.hpp"
#endif

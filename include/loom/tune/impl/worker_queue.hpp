// The definitions of tune/worker_queue.hpp. A worker reports through a pipe in framed messages (a
// type byte, the payload's length as 8 raw bytes, the payload): 'R' its setup's report, 'E' / 'C'
// its setup's loom::Error / other failure, 'N' when its session has no items to run, 'S' the index
// of the item it starts, then 'F', 'T' or 'X' that item's result (as run_in_worker's). The parent reads with
// a deadline that restarts at every message, so the time limit applies to the setup and to each item on its
// own.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/worker_queue.hpp");

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

#include "loom/support/error.hpp"
#include "loom/tune/impl/fork_worker.hpp"
#include "loom/tune/worker_queue.hpp"

namespace loom::tune {

namespace detail {

/// The worker's side: setup, then items from `first` on. Never returns.
[[noreturn]] inline void serve_queue(int fd, int first, int count,
                                     const std::function<WorkerSession()>& start) {
  WorkerSession session;
  try {
    session = start();
  } catch (const Error& e) {
    send_message(fd, 'E', e.what());
    ::_exit(0);
  } catch (const std::exception& e) {
    send_message(fd, 'C', e.what());
    ::_exit(0);
  } catch (...) {
    send_message(fd, 'C', "an exception that is not a std::exception");
    ::_exit(0);
  }
  if (!send_message(fd, 'R', session.started)) ::_exit(3);
  if (!session.run) {
    send_message(fd, 'N', "");
    ::_exit(0);
  }
  for (int item = first; item < count; ++item) {
    if (!send_message(fd, 'S', std::to_string(item))) ::_exit(3);
    bool retire = false;
    const auto [type, report] = report_of([&] { return session.run(item, retire); });
    if (!send_message(fd, type, report)) ::_exit(3);
    if (retire) break;
  }
  ::_exit(0);
}

}  // namespace detail

LOOM_DECL WorkerQueueResult run_queue_in_workers(int count, const std::function<WorkerSession()>& start,
                                                 double time_limit_s) {
  using Clock = std::chrono::steady_clock;
  const Clock::duration limit = detail::worker_time_limit(time_limit_s);
  WorkerQueueResult out;
  int next = 0;  // the first item not yet reported
  do {
    const detail::ForkedWorker worker =
        detail::fork_worker([&](int fd) { detail::serve_queue(fd, next, count, start); });
    const pid_t pid = worker.pid;
    detail::WorkerGuard guard{pid, worker.fd};
    ++out.workers;

    detail::MessageReader reader(worker.fd);
    bool ready = false, runs_items = false, offers_none = false;
    std::string setup_error;
    int running = -1;  // the item the worker said it started and has not reported
    while (auto message = reader.next(Clock::now() + limit)) {
      const auto& [type, payload] = *message;
      if (type == 'R') {
        ready = true;
        out.started.push_back(payload);
      } else if (type == 'N') {
        offers_none = true;
      } else if (type == 'E' || type == 'C') {
        setup_error = type == 'E' ? payload : "the worker's setup threw: " + payload;
      } else if (type == 'S') {
        running = std::stoi(payload);
        runs_items = true;
      } else if (running >= 0) {
        WorkerResult r;
        r.status = type == 'F'   ? WorkerResult::Status::Finished
                   : type == 'T' ? WorkerResult::Status::Threw
                                 : WorkerResult::Status::Crashed;
        if (type == 'F')
          r.output = payload;
        else
          r.detail = type == 'X' ? "the worker threw: " + payload : payload;
        out.items.push_back(std::move(r));
        next = running + 1;
        running = -1;
      }
    }
    guard.armed = false;
    ::close(worker.fd);
    if (reader.timed_out) ::kill(pid, SIGKILL);
    const std::string end = detail::worker_end(detail::reap(pid));

    if (!ready) {
      out.setup_failure = !setup_error.empty() ? setup_error
                          : reader.timed_out   ? cat("the worker's setup ran past the time limit of ",
                                                     time_limit_s, " s and was killed")
                                               : cat("the worker's setup failed: ", end);
      break;
    }
    if (running >= 0) {  // the worker died, or was killed, inside an item: charge that item alone
      WorkerResult r;
      r.status = reader.timed_out ? WorkerResult::Status::TimedOut : WorkerResult::Status::Crashed;
      r.detail = reader.timed_out ? cat("killed after the time limit of ", time_limit_s, " s") : end;
      out.items.push_back(std::move(r));
      next = running + 1;
    } else if (!runs_items) {
      // A first worker without items has nothing to run. A later one (items were run before it), or
      // one that stopped before its first item, leaves the rest unrun: say so.
      if (next < count && (!offers_none || !out.items.empty()))
        out.setup_failure = offers_none
                                ? cat("worker ", out.workers, " set up with no items to run (", next, " of ",
                                      count, " were run)")
                                : cat("worker ", out.workers, " stopped before its first item: ", end);
      break;
    }
  } while (next < count);
  return out;
}

}  // namespace loom::tune

// The definitions of tune/measure.hpp: Tukey's fence over the timing samples, and the fork()-based
// worker whose result comes back through a pipe, read with a deadline.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/measure.hpp");

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "loom/support/error.hpp"
#include "loom/tune/impl/fork_worker.hpp"
#include "loom/tune/measure.hpp"

namespace loom::tune {

namespace detail {

/// The value at fraction q of sorted `v` (linear interpolation between neighbours).
inline double quantile(const std::vector<double>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace detail

LOOM_DECL Timing summarize_samples(std::vector<double> samples) {
  Timing t;
  if (samples.empty()) return t;
  std::sort(samples.begin(), samples.end());
  const double q1 = detail::quantile(samples, 0.25), q3 = detail::quantile(samples, 0.75);
  const double fence = q3 + 1.5 * (q3 - q1);
  std::vector<double> kept;
  for (double s : samples)
    if (s <= fence) kept.push_back(s);
  t.samples = static_cast<int>(kept.size());
  t.rejected = static_cast<int>(samples.size() - kept.size());
  t.ms = detail::quantile(kept, 0.5);
  t.spread = t.ms > 0 ? (detail::quantile(kept, 0.75) - detail::quantile(kept, 0.25)) / t.ms : 0;
  return t;
}

LOOM_DECL double sample_ms(const std::function<void()>& call, double min_sample_ms) {
  using Clock = std::chrono::steady_clock;
  int calls = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    call();
    ++calls;
    elapsed = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  } while (elapsed < min_sample_ms);
  return elapsed / calls;
}

LOOM_DECL double best_ms(const std::function<void()>& call, int calls) {
  double best = 1e300;
  for (int i = 0; i < std::max(calls, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    best = std::min(
        best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

LOOM_DECL Timing time_calls(const std::function<void()>& call, int repeats, double min_sample_ms,
                            double max_spread) {
  call();  // warm-up: caches, page mappings, the thread pool
  std::vector<double> samples;
  auto take = [&](int n) {
    for (int r = 0; r < n; ++r) samples.push_back(sample_ms(call, min_sample_ms));
  };
  const int n = std::max(repeats, 1);
  take(n);
  Timing t = summarize_samples(samples);
  for (int extra = 0; extra < 2 && t.spread > max_spread; ++extra) {
    take(n);
    t = summarize_samples(samples);
  }
  return t;
}

LOOM_DECL WorkerResult run_in_worker(const std::function<std::string()>& work, double time_limit_s) {
  const detail::ForkedWorker worker = detail::fork_worker([&](int fd) {
    const auto [type, report] = detail::report_of(work);
    ::_exit(detail::send_message(fd, type, report) ? 0 : 3);
  });
  const pid_t pid = worker.pid;
  detail::WorkerGuard guard{pid, worker.fd};

  // One message, or the pipe closed (the worker died), or the deadline passed.
  const auto deadline = std::chrono::steady_clock::now() + detail::worker_time_limit(time_limit_s);
  detail::MessageReader reader(worker.fd);
  const std::optional<std::pair<char, std::string>> message = reader.next(deadline);
  guard.armed = false;
  ::close(worker.fd);
  if (reader.timed_out) ::kill(pid, SIGKILL);
  const detail::Reaped end = detail::reap(pid);

  WorkerResult r;
  if (reader.timed_out) {
    r.status = WorkerResult::Status::TimedOut;
    r.detail = cat("killed after the time limit of ", time_limit_s, " s");
  } else if (!message || (end.ok && (!WIFEXITED(end.status) || WEXITSTATUS(end.status) != 0))) {
    // A worker that reported but could not be reaped (SIGCHLD ignored) is taken at its word.
    r.status = WorkerResult::Status::Crashed;
    r.detail =
        detail::worker_end(end) + (!message && end.ok && WIFEXITED(end.status) ? " before it reported" : "");
  } else if (message->first == 'T') {
    r.status = WorkerResult::Status::Threw;
    r.detail = message->second;
  } else if (message->first == 'X') {
    r.status = WorkerResult::Status::Crashed;
    r.detail = "the worker threw: " + message->second;
  } else {
    r.output = message->second;
  }
  return r;
}

}  // namespace loom::tune

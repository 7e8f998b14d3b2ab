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
    std::string message;
    try {
      message = "F" + work();
    } catch (const Error& e) {
      message = std::string("T") + e.what();
    } catch (const std::exception& e) {  // not a refusal: a failure, reported as a crash
      message = std::string("X") + e.what();
    } catch (...) {
      message = "Xan exception that is not a std::exception";
    }
    const bool written = detail::write_all(fd, message);
    ::_exit(written ? 0 : 3);
  });
  const pid_t pid = worker.pid;
  const int fd = worker.fd;
  detail::WorkerGuard guard{pid, fd};

  // Read until the child closes the pipe (it wrote everything, or died) or the deadline passes.
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(time_limit_s);
  std::string message;
  bool timed_out = false;
  char chunk[4096];
  for (;;) {
    int wait_ms = -1;
    if (time_limit_s > 0) {
      const double left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(std::min(left, 60000.0)) + 1;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked above
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(chunk, static_cast<size_t>(n));
  }
  guard.armed = false;
  ::close(fd);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  WorkerResult r;
  if (timed_out) {
    r.status = WorkerResult::Status::TimedOut;
    r.detail = cat("killed after the time limit of ", time_limit_s, " s");
  } else if (WIFSIGNALED(status)) {
    r.status = WorkerResult::Status::Crashed;
    r.detail = cat("the worker died of signal ", WTERMSIG(status), " (", ::strsignal(WTERMSIG(status)), ")");
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || message.empty()) {
    r.status = WorkerResult::Status::Crashed;
    r.detail = cat("the worker exited with status ", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                   " before it reported");
  } else if (message[0] == 'T') {
    r.status = WorkerResult::Status::Threw;
    r.detail = message.substr(1);
  } else if (message[0] == 'X') {
    r.status = WorkerResult::Status::Crashed;
    r.detail = "the worker threw: " + message.substr(1);
  } else {
    r.output = message.substr(1);
  }
  return r;
}

}  // namespace loom::tune

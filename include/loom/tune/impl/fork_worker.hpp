// Internal to tune/impl/measure.hpp and tune/impl/worker_queue.hpp: forking a worker process with a
// pipe back to its parent, framed messages on that pipe (a type byte, the payload's length as 8 raw
// bytes, the payload) and the parent's reading of them with a deadline, how a worker ended, and
// reaping a worker the parent abandons.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "loom/runtime/thread_pool.hpp"
#include "loom/support/error.hpp"

namespace loom::tune::detail {

/// A forked worker, as its parent sees it: its pid and the pipe's read end.
struct ForkedWorker {
  pid_t pid = -1;
  int fd = -1;
};

/// Forks a worker that runs `child(write end of the pipe)` and must end with _exit; returns in the
/// parent only. Throws a loom::Error when there is no pipe or process. Whatever `child` lets escape
/// (an exception, say std::bad_alloc) ends the worker with status 4: it must never unwind into the
/// caller's code, which would then run twice. The worker dies with its parent (a tuner killed by a
/// test's timeout must not leave a worker holding the GPU): Linux sends that signal when the forking
/// thread ends, and the callers' threads wait for their worker, so it comes only with the process's end.
inline ForkedWorker fork_worker(const std::function<void(int fd)>& child) {
  int fds[2];
  // Close-on-exec: a process that another thread starts meanwhile must not hold the write end
  // open, or the end of the worker's report would wait for that process to exit.
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(cat("tune: cannot create a pipe for a worker: ", std::strerror(errno)));
  std::fflush(nullptr);  // else the child's exit could print what the parent had buffered
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(cat("tune: cannot fork a worker process: ", std::strerror(errno)));
  }
  if (pid == 0) {
    try {
      ::close(fds[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(5);  // the parent died before the line above
      runtime::ThreadPool::restart_after_fork();
      child(fds[1]);
    } catch (...) {
    }
    ::_exit(4);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

/// How waiting for a worker ended: reaped with its wait status, or not (`error`: waitpid's errno; with
/// SIGCHLD ignored the system reaps the worker itself and waitpid fails).
struct Reaped {
  bool ok = false;
  int status = 0;
  int error = 0;
};

/// Waits for worker `pid` to end, through interruptions.
inline Reaped reap(pid_t pid) {
  Reaped r;
  pid_t got;
  while ((got = ::waitpid(pid, &r.status, 0)) < 0 && errno == EINTR) {
  }
  r.ok = got == pid;
  if (!r.ok) r.error = errno;
  return r;
}

/// Kills and reaps a worker whose parent leaves its reading by an exception (a std::bad_alloc, a
/// malformed frame), so that no process or pipe is left behind; disarmed on the normal path.
struct WorkerGuard {
  pid_t pid;
  int fd;
  bool armed = true;
  ~WorkerGuard() {
    if (!armed) return;
    ::close(fd);
    ::kill(pid, SIGKILL);
    reap(pid);
  }
};

/// A worker's time limit as a clock duration. No limit (time_limit_s <= 0) is a year; so are longer
/// limits (infinity too), which a clock's 64-bit nanoseconds still hold.
inline std::chrono::steady_clock::duration worker_time_limit(double time_limit_s) {
  const double year_s = 365 * 86400.0;
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(time_limit_s > 0 ? std::min(time_limit_s, year_s) : year_s));
}

/// Writes all of `data` to `fd` (a pipe), retrying short writes and interruptions.
inline bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Writes one framed message; false when the pipe is gone (the parent stopped listening).
inline bool send_message(int fd, char type, const std::string& payload) {
  std::string frame(1 + sizeof(uint64_t), type);
  const uint64_t length = payload.size();
  std::memcpy(&frame[1], &length, sizeof length);
  return write_all(fd, frame + payload);
}

/// Runs one piece of a worker's work and frames what came of it for the parent: 'F' and the work's
/// result, 'T' and a loom::Error's message (a refusal), 'X' and any other exception's (a failure,
/// reported as a crash).
inline std::pair<char, std::string> report_of(const std::function<std::string()>& work) {
  try {
    return {'F', work()};
  } catch (const Error& e) {
    return {'T', e.what()};
  } catch (const std::exception& e) {
    return {'X', e.what()};
  } catch (...) {
    return {'X', "an exception that is not a std::exception"};
  }
}

/// The parent's reading of a worker's framed messages (send_message).
class MessageReader {
 public:
  explicit MessageReader(int fd) : fd_(fd) {}

  /// The next whole message, or nothing when the worker closed the pipe (`closed`) or
  /// `deadline` passed (`timed_out`).
  std::optional<std::pair<char, std::string>> next(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      if (auto message = take()) return message;
      if (closed) return std::nullopt;
      const double left =
          std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        return std::nullopt;
      }
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, 60000.0)) + 1);
      if (ready <= 0) continue;  // interrupted, or the deadline is checked above
      char chunk[4096];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        closed = true;
        continue;
      }
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  bool closed = false, timed_out = false;

 private:
  std::optional<std::pair<char, std::string>> take() {
    constexpr size_t header = 1 + sizeof(uint64_t);
    if (buffer_.size() < header) return std::nullopt;
    uint64_t length = 0;
    std::memcpy(&length, &buffer_[1], sizeof length);
    if (buffer_.size() < header + length) return std::nullopt;
    std::pair<char, std::string> message{buffer_[0], buffer_.substr(header, length)};
    buffer_.erase(0, header + length);
    return message;
  }

  int fd_;
  std::string buffer_;
};

/// How a worker that stopped talking ended: its signal or exit status, or why that is unknown.
inline std::string worker_end(const Reaped& end) {
  if (!end.ok) return cat("the worker's end is unknown (waitpid: ", std::strerror(end.error), ")");
  if (WIFSIGNALED(end.status))
    return cat("the worker died of signal ", WTERMSIG(end.status), " (", ::strsignal(WTERMSIG(end.status)),
               ")");
  return cat("the worker exited with status ", WIFEXITED(end.status) ? WEXITSTATUS(end.status) : -1);
}

}  // namespace loom::tune::detail

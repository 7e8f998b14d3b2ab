// Internal to tune/impl/measure.hpp and tune/impl/worker_queue.hpp: forking a worker process with a
// pipe back to its parent, and writing to that pipe whole.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "loom/runtime/thread_pool.hpp"
#include "loom/support/error.hpp"

namespace loom::tune::detail {

/// One side of a forked worker: in the parent its pid and the pipe's read end, in the worker pid 0
/// and the write end (its thread pool restarted).
struct ForkedWorker {
  pid_t pid = 0;
  int fd = -1;
};

/// Forks a worker connected by a pipe; throws a loom::Error when there is no pipe or process.
inline ForkedWorker fork_worker() {
  int fds[2];
  // Close-on-exec: a process that another thread starts meanwhile must not hold the write end
  // open, or the end of the worker's report would wait for that process to exit.
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(cat("tune: cannot create a pipe for a worker: ", std::strerror(errno)));
  std::fflush(nullptr);  // else the child's exit could print what the parent had buffered
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(cat("tune: cannot fork a worker process: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    runtime::ThreadPool::restart_after_fork();
    return {0, fds[1]};
  }
  ::close(fds[1]);
  return {pid, fds[0]};
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

}  // namespace loom::tune::detail

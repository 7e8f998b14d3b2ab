// runtime::ThreadPool where the system refuses threads: the pool keeps the workers it could start,
// says so, and its parallel loops still run every iteration (before, the process ended in
// std::terminate). Loops called back to back, while the workers spin, run every iteration once;
// LOOM_SPIN_US sets the spin (0: sleep at once). thread_pool_stress_test.cpp has several callers.
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <doctest/doctest.h>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

using loom::runtime::ThreadPool;

namespace {

std::atomic<int64_t> iterations_run{0};

int32_t count_iterations(void*, int64_t begin, int64_t end, void*) {
  iterations_run += end - begin;
  return 0;
}

/// The process's mapped address space in bytes (/proc/self/statm's first field), 0 if unknown.
uint64_t mapped_bytes() {
  unsigned long pages = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  const int read = std::fscanf(f, "%lu", &pages);
  std::fclose(f);
  return read == 1 ? pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

TEST_CASE("thread pool: where no thread can start, the pool runs its loops on the caller") {
  const int threads = ThreadPool::global().pool_threads();
  if (threads < 2) {
    MESSAGE("a one-thread pool starts no worker: nothing to refuse on this machine");
    return;
  }
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Room for this process as it is and 1 MiB more: no thread stack (8 MiB by default) fits.
    const uint64_t now = mapped_bytes();
    const rlimit limit{now + (1u << 20), now + (1u << 20)};
    if (now == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
    // glibc gives a new thread the stack of one of the parent's threads (which the child does not
    // have) without mapping memory: idle threads take those first, until none can start.
    for (int i = 0; i < 4096; ++i) {
      pthread_t idle;
      if (::pthread_create(
              &idle, nullptr,
              [](void*) -> void* {
                for (;;) ::pause();
              },
              nullptr) != 0)
        break;
      if (i == 4095) ::_exit(4);
    }
    ThreadPool::restart_after_fork();  // a pool of the parent's size: every worker refused
    ThreadPool& pool = ThreadPool::global();
    const int32_t status = pool.parallel_for(1000, count_iterations, nullptr, nullptr);
    ::_exit(pool.pool_threads() == 1 && pool.num_threads() == 1 && status == 0 && iterations_run == 1000 ? 0
                                                                                                         : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));  // not killed by std::terminate's abort
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("thread pool: loops called back to back run every iteration once, whatever the spin") {
  ThreadPool& parent = ThreadPool::global();
  // Here with the process's pool (spinning workers find each loop), then in children whose pools
  // read LOOM_SPIN_US: 0 sleeps at once, 7 spins 7 microseconds, a bad value keeps the default.
  auto run_loops = [](ThreadPool& pool) {
    iterations_run = 0;
    for (int call = 0; call < 2000; ++call)
      if (pool.parallel_for(1 + call % 37, count_iterations, nullptr, nullptr) != 0) return false;
    int64_t want = 0;
    for (int call = 0; call < 2000; ++call) want += 1 + call % 37;
    return iterations_run == want;
  };
  CHECK(run_loops(parent));
  for (const auto& [value, micros] : {std::pair{"0", 0}, std::pair{"7", 7}, std::pair{"soon", 50}}) {
    CAPTURE(value);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::setenv("LOOM_SPIN_US", value, 1);
      ThreadPool::restart_after_fork();
      ThreadPool& pool = ThreadPool::global();
      ::_exit(pool.spin().count() == micros && run_loops(pool) ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

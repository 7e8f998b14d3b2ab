// runtime::ThreadPool under several callers at once: user threads call parallel_for back to back
// while the workers spin between loops; every iteration of every call runs exactly once, the
// workers take part, and no call returns while a worker still holds its job (the job lives on the
// caller's stack: scripts/sanitize.sh runs this file under ASan, which sees a use after return, and
// TSan).
#include <loom/runtime/thread_pool.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

using loom::runtime::ThreadPool;

namespace {

/// One call's loop: counts each iteration in its own slot, and the chunks a pool worker ran.
struct StressLoop {
  std::vector<std::atomic<int>> seen;
  std::thread::id caller;
  std::atomic<int64_t>* worker_chunks;
};

int32_t stress_body(void* closure, int64_t begin, int64_t end, void*) {
  auto* loop = static_cast<StressLoop*>(closure);
  for (int64_t i = begin; i < end; ++i) loop->seen[static_cast<size_t>(i)].fetch_add(1);
  if (std::this_thread::get_id() != loop->caller) loop->worker_chunks->fetch_add(1);
  // A few microseconds of work per chunk, so that a worker has time to take some.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
  while (std::chrono::steady_clock::now() < until) {
  }
  return 0;
}

}  // namespace

TEST_CASE("thread pool: callers on several threads, back to back, each iteration runs once") {
  ThreadPool& pool = ThreadPool::global();
  std::atomic<int64_t> worker_chunks{0}, wrong_counts{0};
  constexpr int kCallers = 3, kCalls = 400;
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int call = 0; call < kCalls; ++call) {
        StressLoop loop{std::vector<std::atomic<int>>(static_cast<size_t>(1 + (call * 7 + c) % 61)),
                        std::this_thread::get_id(), &worker_chunks};
        const int64_t n = static_cast<int64_t>(loop.seen.size());
        if (pool.parallel_for(n, stress_body, &loop, nullptr) != 0) ++wrong_counts;
        for (const std::atomic<int>& count : loop.seen) wrong_counts += count.load() != 1;
      }
    });
  for (std::thread& t : callers) t.join();
  CHECK(wrong_counts.load() == 0);
  // The callers run their own chunks too; with a worker in the pool, it must have run some.
  if (pool.num_threads() > 1) CHECK(worker_chunks.load() > 0);
}

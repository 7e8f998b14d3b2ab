// The CPU runtime's thread pool: parallel loops of JIT-compiled kernels split their iterations
// into chunks that the calling thread and LOOM_NUM_THREADS - 1 workers take dynamically. Idle
// workers, and a caller waiting for a job's last chunks, spin briefly (LOOM_SPIN_US) before they
// sleep: a wake-up through the kernel takes tens of microseconds, a large share of a small kernel's
// time, and kernels called back to back then find the workers awake.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

namespace loom::runtime {

/// The body of a parallel loop: runs iterations [begin, end) and returns 0, or non-zero after
/// recording an error (the JIT's outlined loop bodies have exactly this signature).
using ParallelBody = int32_t (*)(void* closure, int64_t begin, int64_t end, void* ctx);

class ThreadPool {
 public:
  /// The process-wide pool, created on first use with LOOM_NUM_THREADS threads (default: the
  /// hardware concurrency). Never destroyed: kernels may run during static destruction, and the
  /// idle workers cost nothing at exit.
  static ThreadPool& global() {
    ThreadPool* pool = pool_.load(std::memory_order_acquire);
    return pool ? *pool : create();
  }

  /// For a child process made by fork() (loom::tune's measurement worker): the parent's workers do
  /// not exist in the child, so the child gets a pool of its own with the same size and thread
  /// limit. The parent's pool is left as it was (its mutex may have been held at the fork). Where
  /// another thread of the parent was still making the first pool, the child makes its own on
  /// first use.
  static void restart_after_fork() {
    ThreadPool* old = pool_.load(std::memory_order_acquire);
    if (!old) {
      creating_.store(false, std::memory_order_release);  // the thread making it is not in the child
      return;
    }
    auto* fresh = new ThreadPool(old->pool_threads());
    fresh->set_num_threads(old->num_threads());
    pool_.store(fresh, std::memory_order_release);
  }

  /// Threads that run a parallel loop, counting the caller.
  int num_threads() const { return std::min(max_threads_.load(std::memory_order_relaxed), pool_threads()); }
  /// Threads the pool was created with (LOOM_NUM_THREADS), whatever set_num_threads says now.
  int pool_threads() const { return pool_size_.load(std::memory_order_relaxed); }

  /// How long an idle worker, or a caller waiting for its loop's last chunks, spins before it sleeps
  /// (LOOM_SPIN_US when the pool was made; default 50 microseconds).
  std::chrono::microseconds spin() const { return spin_; }

  /// Limits later parallel loops to n threads (at most the pool's, at least 1): for comparing
  /// thread counts in one process, as a benchmark does; LOOM_NUM_THREADS sets the pool's size.
  void set_num_threads(int n) {
    max_threads_.store(std::clamp(n, 1, pool_threads()), std::memory_order_relaxed);
  }

  /// Runs body over [0, n). Returns 0, or the first non-zero status of a chunk (later chunks are
  /// then skipped). A parallel loop nested inside a pool task runs serially in that task: the
  /// outer loop already keeps every thread busy, and nesting would oversubscribe the cores.
  int32_t parallel_for(int64_t n, ParallelBody body, void* closure, void* ctx) {
    if (n <= 0) return 0;
    const int threads = num_threads();
    if (in_task() || threads == 1 || n == 1) return body(closure, 0, n, ctx);

    // A few chunks per thread balance uneven iterations and OS noise; more would add overhead.
    Job job;
    job.body = body;
    job.closure = closure;
    job.ctx = ctx;
    job.n = n;
    job.num_chunks = std::min<int64_t>(n, int64_t{4} * threads);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(&job);
      queued_.store(queue_.size(), std::memory_order_release);
    }
    work_ready_.notify_all();
    run_chunks(job);
    // The job lives on this stack frame: wait until every chunk is done and no worker holds it
    // (spinning first: the workers' last chunks usually end within the spin).
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    if (spin_until([&] { return job.finished(); }))
      lock_soon(lock);
    else
      lock.lock();
    retire(job);
    job_done_.wait(lock, [&] { return job.finished(); });
    return job.status.load(std::memory_order_relaxed);
  }

 private:
  struct Job {
    ParallelBody body = nullptr;
    void* closure = nullptr;
    void* ctx = nullptr;
    int64_t n = 0;
    int64_t num_chunks = 0;
    std::atomic<int64_t> next_chunk{0};
    std::atomic<int32_t> status{0};
    // Written with mutex_ held; atomic so that a spinning caller may read them without it.
    std::atomic<int64_t> finished_chunks{0};
    std::atomic<int> holders{0};  // workers running chunks of this job

    /// Every chunk done and no worker holding the job. The caller still takes mutex_ before it
    /// returns, to remove the job from the queue, where a worker could otherwise find it.
    bool finished() const {
      return finished_chunks.load(std::memory_order_acquire) == num_chunks &&
             holders.load(std::memory_order_acquire) == 0;
    }
  };

  // Workers are detached as they start (see global(): the pool lives until exit). Where the system
  // refuses a thread (a process or memory limit), the pool keeps the ones it has and says so: a
  // kernel's parallel loops then run on fewer threads rather than the process ending in
  // std::terminate. Workers read pool_size_, so it only ever shrinks, before they could see a job.
  explicit ThreadPool(int threads)
      : pool_size_(threads), max_threads_(threads), spin_(spin_from_environment()) {
    for (int i = 1; i < threads; ++i) {
      try {
        std::thread([this, i] { worker_loop(i); }).detach();
      } catch (const std::exception& e) {  // std::system_error, or std::bad_alloc for its state
        pool_size_.store(i, std::memory_order_relaxed);
        std::fprintf(stderr, "loom: the thread pool started %d of %d threads (%s); parallel loops use %d\n",
                     i, threads, e.what(), i);
        break;
      }
    }
  }

  /// Makes the process's pool, or waits for the thread that makes it. Not a function-local static:
  /// its guard, held by a thread that fork() does not copy, would hang a child forever; these two
  /// atomics a child can reset (restart_after_fork).
  static ThreadPool& create() {
    for (;;) {
      if (ThreadPool* pool = pool_.load(std::memory_order_acquire)) return *pool;
      bool expected = false;
      if (creating_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        try {
          auto* pool = new ThreadPool(threads_from_environment());
          pool_.store(pool, std::memory_order_release);
          return *pool;
        } catch (...) {  // std::bad_alloc: a later call (or a waiting thread) tries again
          creating_.store(false, std::memory_order_release);
          throw;
        }
      }
      std::this_thread::yield();
    }
  }
  static inline std::atomic<ThreadPool*> pool_{nullptr};
  static inline std::atomic<bool> creating_{false};

  /// The integer in environment variable `name`, limited to at most `most`, or `fallback` where it
  /// is unset, not a number, or below `least`.
  static int int_from_environment(const char* name, int least, int most, int fallback) {
    if (const char* env = std::getenv(name); env && *env) {
      try {
        const int value = std::stoi(env);
        if (value >= least) return std::min(value, most);
      } catch (...) {
      }
    }
    return fallback;
  }

  static int threads_from_environment() {
    const unsigned hw = std::thread::hardware_concurrency();
    return int_from_environment("LOOM_NUM_THREADS", 1, 1024, hw == 0 ? 1 : static_cast<int>(hw));
  }

  /// LOOM_SPIN_US: microseconds to spin before sleeping (default 50; 0 sleeps at once, for a machine
  /// whose cores are shared with other busy processes).
  static std::chrono::microseconds spin_from_environment() {
    return std::chrono::microseconds(int_from_environment("LOOM_SPIN_US", 0, 100000, 50));
  }

  /// Spins until ready() holds (returns true) or spin_ has passed (false), reading only atomics.
  /// Every 64 checks it yields the core: where more threads are runnable than there are cores (two
  /// test processes on two cores), the thread it waits for may need this one's core.
  template <class Ready>
  bool spin_until(Ready ready) const {
    if (ready()) return true;  // often so for the caller: its own chunks were the last
    if (spin_.count() == 0) return false;
    const auto deadline = std::chrono::steady_clock::now() + spin_;
    for (int i = 1; !ready(); ++i) {
      pause();
      if (i % 64 == 0) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::yield();
      }
    }
    return true;
  }

  /// Takes `lock`'s mutex right after a spin saw what it waited for: the thread that made it so
  /// still holds the mutex for a moment, so try a few hundred times before sleeping on it.
  static void lock_soon(std::unique_lock<std::mutex>& lock) {
    for (int i = 0; i < 256; ++i) {
      if (lock.try_lock()) return;
      pause();
    }
    lock.lock();
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  static bool& in_task() {
    static thread_local bool flag = false;
    return flag;
  }

  /// Takes chunks of `job` until none are left; counts the ones this thread finished.
  void run_chunks(Job& job) {
    int64_t finished = 0;
    bool& task_flag = in_task();
    const bool was_in_task = task_flag;
    task_flag = true;
    for (;;) {
      int64_t c = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
      if (c >= job.num_chunks) break;
      ++finished;
      if (job.status.load(std::memory_order_relaxed) != 0) continue;  // an error: skip the rest
      int64_t begin = job.n * c / job.num_chunks, end = job.n * (c + 1) / job.num_chunks;
      int32_t s = job.body(job.closure, begin, end, job.ctx);
      if (s != 0) {
        int32_t expected = 0;
        job.status.compare_exchange_strong(expected, s, std::memory_order_relaxed);
      }
    }
    task_flag = was_in_task;
    std::lock_guard<std::mutex> lock(mutex_);
    job.finished_chunks += finished;
    if (job.finished_chunks == job.num_chunks) job_done_.notify_all();
  }

  /// Removes a job whose chunks are all taken from the queue (called with mutex_ held).
  void retire(Job& job) {
    auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    queued_.store(queue_.size(), std::memory_order_release);
  }

  /// Worker `index` (1-based; the caller is 0) takes jobs while set_num_threads allows it.
  void worker_loop(int index) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (queue_.empty()) {
        lock.unlock();
        if (spin_until([&] { return queued_.load(std::memory_order_acquire) > 0; }))
          lock_soon(lock);
        else
          lock.lock();
      }
      work_ready_.wait(lock, [&] { return !queue_.empty() && index < num_threads(); });
      Job& job = *queue_.front();
      if (job.next_chunk.load(std::memory_order_relaxed) >= job.num_chunks) {
        retire(job);
        continue;
      }
      ++job.holders;
      lock.unlock();
      run_chunks(job);
      lock.lock();
      retire(job);
      if (--job.holders == 0) job_done_.notify_all();
    }
  }

  std::atomic<int> pool_size_;
  std::atomic<int> max_threads_;
  const std::chrono::microseconds spin_;
  std::atomic<size_t> queued_{0};  // queue_.size(), for spinning workers (written with mutex_ held)
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable job_done_;
  std::deque<Job*> queue_;
};

}  // namespace loom::runtime

// Memory for the heap allocations of JIT-compiled kernels (their temporaries: packed panels, a GEMM's
// product before its epilogue) and for Buffers. Blocks of 2 MiB and more are mapped directly,
// aligned to 2 MiB with transparent huge pages requested, and kept after they are freed so that the
// next call reuses them. Why: glibc maps allocations above 32 MiB afresh on every malloc and unmaps
// them on free, so a kernel with a 64 MiB temporary took 16,384 page faults (4 KiB pages, each
// zeroed by the OS) on every call, 7% of a 4096^3 GEMM with an epilogue on a 2-core VM; and with 4
// KiB pages a GEMM's packed panels and operands need many more TLB entries than with 2 MiB ones.
// Smaller blocks come from operator new, whose heap keeps them already.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

// Clang says whether AddressSanitizer is on through __has_feature, GCC through __SANITIZE_ADDRESS__.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_WORKSPACE_POOL_ASAN 1
#endif
#endif
#if !defined(LOOM_WORKSPACE_POOL_ASAN) && defined(__SANITIZE_ADDRESS__)
#define LOOM_WORKSPACE_POOL_ASAN 1
#endif
#if defined(__linux__) && !defined(LOOM_WORKSPACE_POOL_ASAN)
#define LOOM_WORKSPACE_POOL_MAPS 1
#else
#define LOOM_WORKSPACE_POOL_MAPS 0
#endif

namespace loom::runtime {

/// Where kernels' temporaries and Buffers get their memory; see the file comment.
class WorkspacePool {
 public:
  /// Blocks of this size and more are mapped (huge pages requested) and kept for reuse when freed;
  /// smaller ones would waste too much of the 2 MiB they are rounded up to.
  static constexpr size_t kLargeBlockBytes = size_t{2} << 20;
  /// The huge page size: large blocks start on and are rounded up to multiples of it.
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
  /// Whether large blocks are mapped and kept at all: on Linux, and not under AddressSanitizer, where
  /// every block comes from operator new so that it checks their bounds (a program mixes no
  /// sanitized and unsanitized translation units: each kind frees only its own blocks).
  static constexpr bool kMapsLargeBlocks = LOOM_WORKSPACE_POOL_MAPS;

  /// The process-wide pool. It keeps at most LOOM_WORKSPACE_CACHE_MB MiB of freed blocks (default:
  /// 1024, or an eighth of the machine's memory if that is less; 0 keeps none).
  static WorkspacePool& global() {
    static WorkspacePool* pool = new WorkspacePool(default_cache_limit());  // never destroyed:
    return *pool;  // kernels may run during static destruction
  }

  /// 64-byte aligned memory of `bytes` (at least 1), or null when there is no memory. `zeroed` says
  /// whether the caller needs zeros: a block just mapped is zero already, a reused one is cleared.
  void* allocate(size_t bytes, bool zeroed) {
    bytes = std::max<size_t>(bytes, 1);
    if (bytes > kMaxBytes) return nullptr;  // rounding it up would wrap around
    if (!kMapsLargeBlocks) {  // AddressSanitizer: the block exactly, with the sanitizer's redzones
      void* data = ::operator new (bytes, std::align_val_t{kSmallOffset}, std::nothrow);
      if (data && zeroed) std::memset(data, 0, bytes);
      return data;
    }
    if (bytes < kLargeBlockBytes) {
      // base is 128-byte aligned and the block starts 64 bytes into it, so no small block starts
      // on a 2 MiB boundary: that is how free() tells the two kinds apart.
      void* base = ::operator new (bytes + kSmallOffset, std::align_val_t{2 * kSmallOffset}, std::nothrow);
      if (!base) return nullptr;
      void* data = static_cast<char*>(base) + kSmallOffset;
      if (zeroed) std::memset(data, 0, bytes);
      return data;
    }
    const size_t need = round_up(bytes, kHugePageBytes);
    void* data = take_cached(need);
    const bool fresh = data == nullptr;
    if (fresh) data = map(need);
    if (!data && release_cached() > 0) data = map(need);  // the kept blocks may be what is missing
    if (!data) return nullptr;
    if (zeroed && !fresh) std::memset(data, 0, bytes);
    return data;
  }

  /// Frees memory from allocate(): a large block is kept for reuse, the oldest kept blocks unmapped
  /// while the pool keeps more than its limit.
  void free(void* data) {
    if (!data) return;
    if (!kMapsLargeBlocks) {
      ::operator delete (data, std::align_val_t{kSmallOffset});
      return;
    }
    if (reinterpret_cast<uintptr_t>(data) % kHugePageBytes != 0) {
      ::operator delete (static_cast<char*>(data) - kSmallOffset, std::align_val_t{2 * kSmallOffset});
      return;
    }
    Block block{};
    bool keep = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto live = std::find_if(live_.begin(), live_.end(), [&](const Block& b) { return b.base == data; });
      if (live == live_.end()) return;  // not a block of this pool's (freed twice): nothing to do
      block = *live;
      live_.erase(live);
      // A block larger than the limit is unmapped at once rather than making room for it.
      if (block.bytes <= limit_) {
        try {
          cached_.push_back(block);
          cached_bytes_ += block.bytes;
          keep = true;
        } catch (const std::bad_alloc&) {  // no memory for the list: unmap the block instead
        }
      }
    }
    if (!keep) {
      unmap(block);
      return;
    }
    trim_to_limit();
  }

  /// Unmaps every kept block; returns the bytes given back to the system.
  size_t release_cached() {
    std::vector<Block> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(cached_);
      cached_bytes_ = 0;
    }
    size_t bytes = 0;
    for (const Block& b : blocks) bytes += b.bytes, unmap(b);
    return bytes;
  }

  /// What the pool holds and has done, for tests and diagnostics.
  struct Stats {
    size_t cached_bytes = 0;   ///< freed large blocks kept for reuse
    size_t cached_blocks = 0;  ///< their number
    size_t live_blocks = 0;    ///< large blocks in use
    uint64_t maps = 0;         ///< large blocks mapped from the system so far
    uint64_t reuses = 0;       ///< large allocations served by a kept block
  };
  /// The counts now.
  Stats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {cached_bytes_, cached_.size(), live_.size(), maps_, reuses_};
  }

  /// The most bytes of freed blocks the pool keeps, and setting it (lowering it unmaps the oldest
  /// kept blocks).
  /// @{
  size_t cache_limit() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  void set_cache_limit(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes;
    }
    trim_to_limit();
  }
  /// @}

 private:
  static constexpr size_t kSmallOffset = 64;
  // The largest request: rounded up to 2 MiB and mapped with 2 MiB to spare, it must not wrap.
  static constexpr size_t kMaxBytes = static_cast<size_t>(PTRDIFF_MAX) - 4 * kHugePageBytes;
  struct Block {
    void* base;
    size_t bytes;
  };
  explicit WorkspacePool(size_t limit) : limit_(limit) {
#if defined(__linux__)
    // A child forked while another thread held the lock (loom::tune's measurement workers are forked)
    // would wait for it forever: the lock is held across fork() and released on both sides.
    pthread_atfork([] { global().mutex_.lock(); }, [] { global().mutex_.unlock(); },
                   [] { global().mutex_.unlock(); });
#endif
  }

  static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

  static size_t default_cache_limit() {
    size_t limit = size_t{1024} << 20;
#if defined(__linux__)
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      limit = std::min(limit, static_cast<size_t>(pages) * static_cast<size_t>(page) / 8);
#endif
    if (const char* env = std::getenv("LOOM_WORKSPACE_CACHE_MB")) {
      char* end = nullptr;
      const long long mb = std::strtoll(env, &end, 10);
      if (end != env && *end == '\0' && mb >= 0)
        limit = static_cast<size_t>(std::min<long long>(mb, 1LL << 30)) << 20;
    }
    return limit;
  }

  // The smallest kept block that fits `need` without leaving more than half of itself unused.
  void* take_cached(size_t need) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = cached_.end();
    for (auto b = cached_.begin(); b != cached_.end(); ++b)
      if (b->bytes >= need && b->bytes <= 2 * need && (best == cached_.end() || b->bytes < best->bytes))
        best = b;
    if (best == cached_.end()) return nullptr;
    const Block block = *best;
    try {
      live_.push_back(block);
    } catch (const std::bad_alloc&) {  // no memory for the list: the block stays kept
      return nullptr;
    }
    cached_bytes_ -= block.bytes;
    cached_.erase(best);
    ++reuses_;
    return block.base;
  }

  // `bytes` (a multiple of 2 MiB) of fresh zeroed memory starting on a 2 MiB boundary, so that every
  // 2 MiB of it can be one huge page.
  void* map(size_t bytes) {
#if defined(__linux__)
    const size_t span = bytes + kHugePageBytes;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = round_up(start, kHugePageBytes), end = start + span;
    if (aligned > start) munmap(raw, aligned - start);
    if (end > aligned + bytes) munmap(reinterpret_cast<void*>(aligned + bytes), end - (aligned + bytes));
    void* base = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
    madvise(base, bytes, MADV_HUGEPAGE);  // a request: without transparent huge pages, 4 KiB pages
#endif
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      live_.push_back({base, bytes});
    } catch (const std::bad_alloc&) {  // no memory for the list: as if the mapping had failed
      munmap(base, bytes);
      return nullptr;
    }
    ++maps_;
    return base;
#else
    (void)bytes;
    return nullptr;
#endif
  }

  static void unmap(const Block& b) {
#if defined(__linux__)
    munmap(b.base, b.bytes);
#else
    (void)b;
#endif
  }

  void trim_to_limit() {
    std::vector<Block> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (cached_bytes_ > limit_) {
        evicted.push_back(cached_.front());
        cached_bytes_ -= cached_.front().bytes;
        cached_.erase(cached_.begin());
      }
    }
    for (const Block& b : evicted) unmap(b);
  }

  mutable std::mutex mutex_;
  std::vector<Block> live_;    // large blocks in use
  std::vector<Block> cached_;  // freed large blocks, oldest first
  size_t cached_bytes_ = 0;
  size_t limit_;
  uint64_t maps_ = 0, reuses_ = 0;
};

}  // namespace loom::runtime

// runtime::WorkspacePool: small blocks from operator new, large ones mapped on 2 MiB boundaries and
// kept for reuse (zeroed again when asked), the limit on what it keeps, and Buffers drawing from it.
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

using namespace loom;
using runtime::WorkspacePool;

namespace {

bool all_zero(const void* p, size_t bytes) {
  const auto* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i)
    if (c[i] != 0) return false;
  return true;
}

// Sets the pool's limit for one test case and puts the old one back.
struct PoolLimit {
  size_t old;
  explicit PoolLimit(size_t bytes) : old(WorkspacePool::global().cache_limit()) {
    WorkspacePool::global().release_cached();
    WorkspacePool::global().set_cache_limit(bytes);
  }
  ~PoolLimit() { WorkspacePool::global().set_cache_limit(old); }
};

}  // namespace

TEST_CASE("workspace pool: small blocks are 64-byte aligned heap memory, zeroed when asked") {
  WorkspacePool& pool = WorkspacePool::global();
  const WorkspacePool::Stats before = pool.stats();
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, WorkspacePool::kLargeBlockBytes - 1}) {
    CAPTURE(bytes);
    void* p = pool.allocate(bytes, true);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    if (WorkspacePool::kMapsLargeBlocks)
      CHECK(reinterpret_cast<uintptr_t>(p) % WorkspacePool::kHugePageBytes != 0);
    CHECK(all_zero(p, bytes));
    std::memset(p, 0xab, bytes);
    pool.free(p);
  }
  pool.free(nullptr);
  // A size that rounding up would wrap around is refused, not mapped short.
  CHECK(pool.allocate(SIZE_MAX, false) == nullptr);
  CHECK(pool.allocate(SIZE_MAX - WorkspacePool::kHugePageBytes, true) == nullptr);
  const WorkspacePool::Stats after = pool.stats();
  CHECK(after.maps == before.maps);
  CHECK(after.cached_blocks == before.cached_blocks);
}

TEST_CASE("workspace pool: large blocks are mapped on 2 MiB boundaries and kept for the next allocation") {
  if (!WorkspacePool::kMapsLargeBlocks) return;  // AddressSanitizer, or not Linux
  PoolLimit limit(size_t{32} << 20);
  WorkspacePool& pool = WorkspacePool::global();
  const size_t bytes = (size_t{5} << 20) + 100;  // rounded up to 6 MiB
  const WorkspacePool::Stats s0 = pool.stats();
  auto* p = static_cast<unsigned char*>(pool.allocate(bytes, false));
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(p) % WorkspacePool::kHugePageBytes == 0);
  CHECK(all_zero(p, bytes));  // fresh mappings are zero
  std::memset(p, 0x5a, bytes);
  const WorkspacePool::Stats s1 = pool.stats();
  CHECK(s1.maps == s0.maps + 1);
  CHECK(s1.live_blocks == s0.live_blocks + 1);
  pool.free(p);
  const WorkspacePool::Stats s2 = pool.stats();
  CHECK(s2.cached_blocks == 1);
  CHECK(s2.cached_bytes == (size_t{6} << 20));
  CHECK(s2.live_blocks == s0.live_blocks);

  // A smaller request that fits the kept block gets it back: as it was, or zeroed when asked.
  auto* q = static_cast<unsigned char*>(pool.allocate(size_t{4} << 20, false));
  CHECK(q == p);
  CHECK(q[0] == 0x5a);
  pool.free(q);
  auto* z = static_cast<unsigned char*>(pool.allocate(size_t{4} << 20, true));
  CHECK(z == p);
  CHECK(all_zero(z, size_t{4} << 20));
  const WorkspacePool::Stats s3 = pool.stats();
  CHECK(s3.reuses == s2.reuses + 2);
  CHECK(s3.maps == s2.maps);

  // One that would leave more than half of it unused, or does not fit, maps a block of its own.
  pool.free(z);
  void* small = pool.allocate(size_t{2} << 20, false);
  void* big = pool.allocate(size_t{7} << 20, false);
  CHECK(small != p);
  CHECK(big != p);
  CHECK(pool.stats().maps == s3.maps + 2);
  pool.free(small);
  pool.free(big);
  CHECK(pool.stats().cached_bytes == (size_t{16} << 20));  // 6 + 2 + 8 MiB
  CHECK(pool.release_cached() == (size_t{16} << 20));
  CHECK(pool.stats().cached_blocks == 0);
}

TEST_CASE("workspace pool: it keeps no more than its limit, the oldest blocks unmapped first") {
  if (!WorkspacePool::kMapsLargeBlocks) return;
  PoolLimit limit(size_t{8} << 20);
  WorkspacePool& pool = WorkspacePool::global();
  void* a = pool.allocate(size_t{4} << 20, false);
  void* b = pool.allocate(size_t{4} << 20, false);
  void* c = pool.allocate(size_t{4} << 20, false);
  pool.free(a);
  pool.free(b);
  pool.free(c);  // 12 MiB freed, 8 kept: a's block goes
  CHECK(pool.stats().cached_bytes == (size_t{8} << 20));
  void* again = pool.allocate(size_t{4} << 20, false);
  CHECK((again == b || again == c));
  pool.free(again);
  // A block larger than the limit is unmapped, leaving the kept ones; a limit of 0 keeps nothing.
  pool.free(pool.allocate(size_t{16} << 20, false));
  CHECK(pool.stats().cached_bytes == (size_t{8} << 20));
  pool.set_cache_limit(size_t{2} << 20);
  CHECK(pool.stats().cached_bytes == 0);
  pool.free(pool.allocate(size_t{4} << 20, false));
  CHECK(pool.stats().cached_blocks == 0);
  pool.set_cache_limit(0);
  pool.free(pool.allocate(size_t{2} << 20, false));
  CHECK(pool.stats().cached_blocks == 0);
}

TEST_CASE("workspace pool: a large Buffer draws from it, and a new Buffer is zero even in a reused block") {
  if (!WorkspacePool::kMapsLargeBlocks) return;
  PoolLimit limit(size_t{64} << 20);
  WorkspacePool& pool = WorkspacePool::global();
  const float* first = nullptr;
  {
    Buffer<float> a({1024, 1024});  // 4 MiB
    first = a.data();
    CHECK(reinterpret_cast<uintptr_t>(first) % WorkspacePool::kHugePageBytes == 0);
    a.fill(3.0f);
  }
  const WorkspacePool::Stats before = pool.stats();
  Buffer<float> b({1000, 1024});
  CHECK(b.data() == first);
  CHECK(pool.stats().reuses == before.reuses + 1);
  for (int64_t i = 0; i < b.num_elements(); ++i) REQUIRE(b.at_flat(i) == 0.0f);
}

// The kernel caches and concurrency: a memory hit returns the same compiled code; a second process
// loads the object file from the disk cache; a corrupt or truncated entry is rebuilt; kernels with
// extern stages stay out of the disk cache; build() from 8 threads; one kernel called from 8.
#include <loom/ir/extern_c.hpp>
#include <loom/runtime/disk_cache.hpp>
#include <loom/runtime/kernel_cache.hpp>
#include <loom/te/tensor_intrin.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "../runtime/interp_test_util.hpp"
#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// The same function every time it is called (fresh variables: equal only structurally).
LoweredFunc scaled_sum(const std::string& name = "scaled_sum", float scale = 3.0f) {
  Var n("n"), i("i");
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n}),
              C = buffer_param("C", f32, {n});
  return make_func(name, {param(A), param(B), param(C)},
                   loop(i, 0, n, store(C, load(A, i) * Expr(scale) + load(B, i), i), ForKind::Vectorized),
                   {n});
}

void check_scaled_sum(const Kernel& k, float scale = 3.0f) {
  Buffer<float> a({100}), b({100}), c({100});
  fill_random(a, 1);
  fill_random(b, 2);
  k(a, b, c);
  for (int x = 0; x < 100; ++x) REQUIRE(c(x) == a(x) * scale + b(x));
}

std::vector<std::filesystem::path> cache_files(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".lobj") files.push_back(entry.path());
  return files;
}

/// Runs this test program again, selecting one (skipped by default) test case, with `env`.
int run_child(const std::string& test_case, const std::string& env) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = env + " LOOM_JIT_TEST_CHILD=1 '" + exe + "' --no-skip --test-case='" +
                              test_case + "' --no-intro --no-version > /dev/null 2>&1";
  return std::system(command.c_str());
}

}  // namespace

TEST_CASE("jit cache: a memory hit returns the same compiled code, for structurally equal IR") {
  ScopedCacheDir dir;
  Kernel first = build(scaled_sum(), Target::cpu());
  Kernel second = build(scaled_sum(), Target::cpu());  // new Var objects, same structure
  CHECK(first.cache_outcome() == CacheOutcome::Compiled);
  CHECK(second.cache_outcome() == CacheOutcome::MemoryHit);
  CHECK(second.code_address() == first.code_address());
  CHECK(second.lowered().params[0].buffer.data.same_as(first.lowered().params[0].buffer.data) == false);
  check_scaled_sum(second);

  SUBCASE("a different constant, name or target is a different kernel") {
    CHECK(build(scaled_sum("scaled_sum", 4.0f), Target::cpu()).code_address() != first.code_address());
    CHECK(build(scaled_sum("other_name"), Target::cpu()).code_address() != first.code_address());
    Kernel v3 = build(scaled_sum(), Target::cpu("x86-64-v3"));
    CHECK(v3.code_address() != first.code_address());
    check_scaled_sum(v3);
  }
}

TEST_CASE("jit cache: the disk cache serves a build after the memory cache forgot it") {
  ScopedCacheDir dir;
  {
    Kernel k = build(scaled_sum(), Target::cpu());
    CHECK(k.cache_outcome() == CacheOutcome::Compiled);
  }
  REQUIRE(cache_files(dir.path).size() == 1);
  runtime::MemoryKernelCache::global().clear();
  Kernel again = build(scaled_sum(), Target::cpu());
  CHECK(again.cache_outcome() == CacheOutcome::DiskHit);
  check_scaled_sum(again);
  CHECK(again.llvm_ir().find("@loom_scaled_sum") != std::string::npos);  // regenerated on request
}

// Run only by the test below, in a second process that shares its cache directory.
TEST_CASE("jit cache child: load from the disk cache" * doctest::skip()) {
  Kernel k = build(scaled_sum(), Target::cpu());
  check_scaled_sum(k);
  REQUIRE(k.cache_outcome() == CacheOutcome::DiskHit);
}

TEST_CASE("jit cache: a second process loads the kernel from the disk cache") {
  ScopedCacheDir dir;
  CHECK(build(scaled_sum(), Target::cpu()).cache_outcome() == CacheOutcome::Compiled);
  CHECK(run_child("jit cache child: load from the disk cache", "LOOM_CACHE_DIR='" + dir.path + "'") == 0);
  // And a child with an empty cache compiles, so the check above can fail.
  ScopedCacheDir empty;
  CHECK(run_child("jit cache child: load from the disk cache", "LOOM_CACHE_DIR='" + empty.path + "'") != 0);
}

TEST_CASE("jit cache: a corrupt or truncated entry is detected and rebuilt") {
  ScopedCacheDir dir;
  { Kernel k = build(scaled_sum(), Target::cpu()); }
  std::vector<std::filesystem::path> files = cache_files(dir.path);
  REQUIRE(files.size() == 1);
  const std::filesystem::path file = files[0];
  std::string good;
  {
    std::ifstream in(file, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto rewrite = [&](const std::string& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  auto rebuilt = [&]() {
    runtime::MemoryKernelCache::global().clear();
    Kernel k = build(scaled_sum(), Target::cpu());
    check_scaled_sum(k);
    return k.cache_outcome() == CacheOutcome::Compiled;
  };
  SUBCASE("one flipped bit in the object code") {
    std::string bad = good;
    bad[bad.size() / 2] ^= 0x10;
    rewrite(bad);
    CHECK(rebuilt());
  }
  SUBCASE("truncated") {
    rewrite(good.substr(0, good.size() - 100));
    CHECK(rebuilt());
  }
  SUBCASE("only half a header") {
    rewrite(good.substr(0, 20));
    CHECK(rebuilt());
  }
  SUBCASE("garbage") {
    rewrite(std::string(4096, 'x'));
    CHECK(rebuilt());
  }
  // The rebuild wrote a good entry again.
  runtime::MemoryKernelCache::global().clear();
  CHECK(build(scaled_sum(), Target::cpu()).cache_outcome() == CacheOutcome::DiskHit);
}

TEST_CASE("jit cache: the entry format round-trips and rejects other keys") {
  runtime::DiskKernelCache::Key key{1, 2, "target"};
  std::string file = runtime::DiskKernelCache::encode(key, "payload bytes");
  CHECK(runtime::DiskKernelCache::decode(file, key) == std::optional<std::string>("payload bytes"));
  CHECK_FALSE(runtime::DiskKernelCache::decode(file, runtime::DiskKernelCache::Key{1, 3, "target"}));
  CHECK_FALSE(runtime::DiskKernelCache::decode(file, runtime::DiskKernelCache::Key{1, 2, "other"}));
  CHECK_FALSE(runtime::DiskKernelCache::decode(file + "x", key));
}

TEST_CASE("jit cache: kernels with extern stages are not disk-cached (their ids are per process)") {
  ScopedCacheDir dir;
  static int64_t copier = ExternRegistry::global().add(
      [](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        std::memcpy(out[0].data, in[0].data, static_cast<size_t>(in[0].num_elements()) * 4);
      },
      "copier");
  BufferParam A = buffer_param("A", f32, {4}), B = buffer_param("B", f32, {4});
  ExternStageCall call;
  call.function_id = copier;
  call.inputs.push_back({A.data, f32, {4}, {1}});
  call.outputs.push_back({B.data, f32, {4}, {1}});
  Kernel k =
      build(make_func("ext_copy", {param(A), param(B)}, EvaluateNode::make(call.encode())), Target::cpu());
  Buffer<float> a({4}), b({4});
  fill_random(a, 3);
  k(a, b);
  for (int x = 0; x < 4; ++x) CHECK(b(x) == a(x));
  CHECK(cache_files(dir.path).empty());
}

namespace {
int32_t jit_cache_twice(int32_t x) { return 2 * x; }
}  // namespace

TEST_CASE("jit cache: a kernel calling a registered extern C function is relinked from the disk cache") {
  ScopedCacheDir dir;
  register_extern_c("jit_cache_twice", &jit_cache_twice);
  auto make = [] {
    BufferParam out = buffer_param("out", i32, {4});
    Var i("i");
    return make_func("twice", {param(out)},
                     loop(i, 0, 4, store(out, call_extern(i32, "jit_cache_twice", {i}), i)));
  };
  CHECK(build(make(), Target::cpu()).cache_outcome() == CacheOutcome::Compiled);
  runtime::MemoryKernelCache::global().clear();
  Kernel k = build(make(), Target::cpu());
  CHECK(k.cache_outcome() == CacheOutcome::DiskHit);
  Buffer<int32_t> o({4});
  k(o);
  for (int x = 0; x < 4; ++x) CHECK(o(x) == 2 * x);
}

TEST_CASE("jit cache: LOOM_CACHE_DIR=off disables the disk cache") {
  ScopedCacheDir dir;
  ::setenv("LOOM_CACHE_DIR", "off", 1);
  runtime::MemoryKernelCache::global().clear();
  Kernel k = build(scaled_sum("uncached"), Target::cpu());
  check_scaled_sum(k);
  ::setenv("LOOM_CACHE_DIR", dir.path.c_str(), 1);
  CHECK(cache_files(dir.path).empty());
}

TEST_CASE("jit concurrency: build() from 8 threads, the same kernel and different ones") {
  ScopedCacheDir dir;
  runtime::MemoryKernelCache::global().clear();
  std::vector<Kernel> same(8), different(8);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      try {
        same[t] = build(scaled_sum("shared"), Target::cpu());
        different[t] =
            build(scaled_sum("own" + std::to_string(t), 1.0f + static_cast<float>(t)), Target::cpu());
      } catch (...) {
        ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  REQUIRE(failures == 0);
  int compiled = 0;
  for (int t = 0; t < 8; ++t) {
    CHECK(same[t].code_address() == same[0].code_address());
    compiled += same[t].cache_outcome() == CacheOutcome::Compiled;
    check_scaled_sum(same[t]);
    check_scaled_sum(different[t], 1.0f + static_cast<float>(t));
  }
  CHECK(compiled == 1);  // the others waited for that compilation
}

TEST_CASE("jit concurrency: one kernel (with a parallel loop) called from 8 threads at once") {
  const int n = 4096;
  Var i("i"), j("j");
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n});
  // An outer parallel loop with an inner parallel loop: the inner one runs serially in its task.
  Stmt body = loop(i, 0, n / 64,
                   loop(j, 0, 64, store(B, load(A, i * 64 + j) * Expr(2.0f) + cast(f32, i), i * 64 + j),
                        ForKind::Parallel),
                   ForKind::Parallel);
  Kernel k = build(make_func("par2", {param(A), param(B)}, body), Target::cpu());
  std::vector<Buffer<float>> ins, outs;
  for (int t = 0; t < 8; ++t) {
    ins.emplace_back(std::vector<int64_t>{n});
    outs.emplace_back(std::vector<int64_t>{n});
    fill_random(ins.back(), static_cast<uint32_t>(t));
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) k(ins[t], outs[t]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t)
    for (int x = 0; x < n; ++x) REQUIRE(outs[t](x) == ins[t](x) * 2.0f + static_cast<float>(x / 64));
}

TEST_CASE("jit concurrency: kernels' large temporaries and Buffers from the workspace pool, from 4 threads") {
  // Each call allocates a 3 MiB temporary (a large block: mapped, kept, reused), fills it and copies
  // it out; with a limit of two such blocks, threads take, return and unmap them all the time, and
  // create and drop large Buffers between calls. ThreadSanitizer runs this (scripts/sanitize.sh).
  runtime::WorkspacePool& pool = runtime::WorkspacePool::global();
  const size_t limit = pool.cache_limit();
  pool.set_cache_limit(size_t{8} << 20);
  const int n = 3 << 18;  // floats: 3 MiB
  Var i("i"), tmp("tmp", handle_type);
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n});
  Stmt body =
      AllocateNode::make(tmp, f32, {n}, "global",
                         SeqNode::make({loop(i, 0, n, StoreNode::make(tmp, load(A, i) + Expr(1.0f), i)),
                                        loop(i, 0, n, store(B, LoadNode::make(f32, tmp, i), i))}));
  Kernel k = build(make_func("big_tmp", {param(A), param(B)}, body), Target::cpu());
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 6; ++rep) {
        Buffer<float> in({n}), out({n}), extra({n + 1000 * rep});
        in.fill(static_cast<float>(t * 10 + rep));
        k(in, out);
        if (out(0) != in(0) + 1.0f || out(n - 1) != in(n - 1) + 1.0f) ++wrong;
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(pool.stats().cached_bytes <= (size_t{8} << 20));
  pool.set_cache_limit(limit);
}

namespace {
struct NestedProbe {
  std::atomic<int> inner_on_other_thread{0};
  std::atomic<int64_t> iterations{0};
};
int32_t outer_body(void* closure, int64_t begin, int64_t end, void* ctx) {
  auto* probe = static_cast<NestedProbe*>(closure);
  for (int64_t i = begin; i < end; ++i) {
    struct Check {
      NestedProbe* probe;
      std::thread::id outer;
    } check{probe, std::this_thread::get_id()};
    // The inner loop must run entirely on this thread, in one call.
    runtime::ThreadPool::global().parallel_for(
        100,
        [](void* c, int64_t b, int64_t e, void*) -> int32_t {
          auto* k = static_cast<Check*>(c);
          if (std::this_thread::get_id() != k->outer || b != 0 || e != 100) ++k->probe->inner_on_other_thread;
          k->probe->iterations += e - b;
          return 0;
        },
        &check, ctx);
  }
  return 0;
}
int32_t failing_body(void*, int64_t begin, int64_t, void* ctx) {
  if (begin == 0) static_cast<runtime::CallContext*>(ctx)->fail("chunk 0 failed");
  return begin == 0 ? -1 : 0;
}
}  // namespace

TEST_CASE("jit concurrency: the thread pool runs nested loops serially and reports the first error") {
  NestedProbe probe;
  runtime::CallContext ctx;
  CHECK(runtime::ThreadPool::global().parallel_for(16, outer_body, &probe, &ctx) == 0);
  CHECK(probe.inner_on_other_thread == 0);
  CHECK(probe.iterations == 16 * 100);
  CHECK(runtime::ThreadPool::global().parallel_for(64, failing_body, nullptr, &ctx) == -1);
  CHECK(ctx.message == "chunk 0 failed");
  CHECK(runtime::ThreadPool::global().num_threads() >= 1);
}

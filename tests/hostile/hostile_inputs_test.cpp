// Hostile inputs at call time, on every executor (the interpreter, the CPU JIT, the GPU simulator):
// buffers of the wrong shape, dtype or alignment, null pointers, sizes that disagree, sizes whose flat
// index overflows 32 bits, corrupt disk-cache entries. Each is refused with a message naming the
// argument, and the output memory (filled with a sentinel) is left untouched.
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "../support/capture_stderr.hpp"
#include "../support/jit_harness.hpp"

#include <loom/lib/gemm.hpp>
#include <loom/lib/gemm_tuning.hpp>
#include <loom/lib/gpu_gemm.hpp>
#include <loom/runtime/amx_permission.hpp>

using namespace loom;
using doctest::Contains;

namespace {

constexpr float kSentinel = -31337.0f;

/// lib::gemm of a size^3 bfloat16 product on `dot` with an nr-column register tile (and mr rows,
/// where given), the model's configuration otherwise.
lib::Gemm bf16_gemm_on(int64_t size, lib::DotInstruction dot, int64_t nr, int64_t mr = 0) {
  lib::GemmProblem p;
  p.m = p.n = p.k = size;
  p.dtype = bf16;
  lib::GemmConfig cfg = lib::model_gemm_config(p);
  cfg.lanes = 16;
  cfg.nr = nr;
  if (mr > 0) cfg.mr = mr;
  cfg.dot = dot;
  return lib::gemm(p, cfg);
}
// Sizes that do not divide the split factors below (8, 32).
constexpr int64_t kRows = 13, kCols = 37;

/// C[n, m] = A[n, m] * 2 + B[m] with symbolic n and m of type `size_type`, and three ways to run it.
struct Broadcast {
  Var n, m;
  Tensor A, B, C;
  explicit Broadcast(DType size_type = i32) : n(size_var("n", size_type)), m(size_var("m", size_type)) {
    A = placeholder({n, m}, f32, "A");
    B = placeholder({m}, f32, "B");
    C = compute(
        {n, m}, [&](Expr i, Expr j) { return A(i, j) * 2.0f + B(j); }, "C");
  }
  LoweredFunc lowered() const { return lower(create_schedule(C), {A, B, C}, "bcast"); }
  Kernel jit() const {
    Schedule s = create_schedule(C);
    auto [jo, ji] = s[C].split(C.axis(1), 8);
    s[C].vectorize(ji);
    s[C].parallel(C.axis(0));
    return build(s, {A, B, C}, Target::cpu(), "bcast");
  }
  Kernel sim() const {
    Schedule s = create_schedule(C);
    auto [jo, ji] = s[C].split(C.axis(1), 32);
    s[C].bind(C.axis(0), thread_axis("blockIdx.x"));
    s[C].bind(ji, thread_axis("threadIdx.x"));
    return build(s, {A, B, C}, Target::cuda_sim(), "bcast");
  }
};

/// One way to run a function: its name and a call.
struct Executor {
  std::string name;
  std::function<void(const std::vector<KernelArg>&)> call;
};

std::vector<Executor> executors(const Broadcast& g) {
  LoweredFunc f = g.lowered();
  Kernel jit = g.jit(), sim = g.sim();
  return {{"interpreter", [f](const std::vector<KernelArg>& args) { interpret(f, args); }},
          {"cpu jit", [jit](const std::vector<KernelArg>& args) { jit(args); }},
          {"cuda_sim", [sim](const std::vector<KernelArg>& args) { sim(args); }}};
}

Buffer<float> sentinel(std::vector<int64_t> shape) {
  Buffer<float> b(std::move(shape));
  b.fill(kSentinel);
  return b;
}

bool untouched(const float* data, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (data[i] != kSentinel) return false;
  return true;
}
bool untouched(const Buffer<float>& b) { return untouched(b.data(), b.num_elements()); }

Buffer<float> random_buffer(std::vector<int64_t> shape, uint32_t seed) {
  Buffer<float> b(std::move(shape));
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    x = x * 1664525u + 1013904223u;
    b.at_flat(i) = static_cast<float>(x >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  return b;
}

/// Runs `call` on every executor and expects an ArgumentError containing `message` each time.
void expect_refused(const std::vector<Executor>& execs, const std::vector<KernelArg>& args,
                    const std::string& message) {
  for (const Executor& e : execs) {
    CAPTURE(e.name);
    CHECK_THROWS_WITH_AS(e.call(args), Contains(message.c_str()), ArgumentError);
  }
}

std::vector<std::filesystem::path> cache_files(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".lobj") files.push_back(entry.path());
  return files;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Builds the JIT kernel, runs it, and checks the result against the formula.
CacheOutcome build_and_check(const Broadcast& g) {
  Kernel k = g.jit();
  Buffer<float> a = random_buffer({kRows, kCols}, 1), b = random_buffer({kCols}, 2);
  Buffer<float> c = sentinel({kRows, kCols});
  k(a, b, c);
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) REQUIRE(c(i, j) == a(i, j) * 2.0f + b(j));
  return k.cache_outcome();
}

}  // namespace

TEST_CASE(
    "hostile: a correct call works on every executor (the baseline the refusals are measured against)") {
  Broadcast g;
  Buffer<float> a = random_buffer({kRows, kCols}, 3), b = random_buffer({kCols}, 4);
  for (const Executor& e : executors(g)) {
    CAPTURE(e.name);
    Buffer<float> c = sentinel({kRows, kCols});
    e.call({a, b, c});
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kCols; ++j) REQUIRE(c(i, j) == a(i, j) * 2.0f + b(j));
  }
}

TEST_CASE("hostile: buffers of the wrong shape, rank or dtype write nothing") {
  Broadcast g;
  std::vector<Executor> execs = executors(g);
  Buffer<float> a = random_buffer({kRows, kCols}, 5), b = random_buffer({kCols}, 6);
  Buffer<float> c = sentinel({kRows, kCols});
  SUBCASE("the output has one row too many") {
    Buffer<float> tall = sentinel({kRows + 1, kCols});
    expect_refused(
        execs, {a, b, tall},
        "dimension 0 of argument 'C' is 14, but 'n' is already 13 from argument 'A' (dimension 0) in "
        "the call of kernel 'bcast': pass arguments that agree on 'n'");
    CHECK(untouched(tall));
  }
  SUBCASE("the broadcast vector disagrees with the matrix on 'm'") {
    Buffer<float> short_b = random_buffer({kCols - 1}, 7);
    expect_refused(
        execs, {a, short_b, c},
        "dimension 0 of argument 'B' is 36, but 'm' is already 37 from argument 'A' (dimension 1)");
  }
  SUBCASE("the output is a flat vector") {
    Buffer<float> flat = sentinel({kRows * kCols});
    expect_refused(execs, {a, b, flat},
                   "argument 'C' of kernel 'bcast' has 1 dimension but the kernel expects 2 (shape [n, m])");
    CHECK(untouched(flat));
  }
  SUBCASE("an input of doubles") {
    Buffer<double> doubles({kRows, kCols});
    expect_refused(
        execs, {doubles, b, c},
        "argument 'A' of kernel 'bcast' has float64 elements but the kernel expects float32: pass a "
        "loom::Buffer<float>");
  }
  SUBCASE("an output of int32") {
    Buffer<int32_t> ints({kRows, kCols});
    ints.fill(7);
    expect_refused(execs, {a, b, ints}, "argument 'C' of kernel 'bcast' has int32 elements");
    for (int64_t x = 0; x < ints.num_elements(); ++x) REQUIRE(ints.at_flat(x) == 7);
  }
  SUBCASE("a transposed (strided) output view") {
    Buffer<float> storage = sentinel({kCols, kRows});
    BufferView transposed(storage.data(), {kRows, kCols}, {1, kRows});
    expect_refused(execs, {a, b, transposed},
                   "argument 'C' of kernel 'bcast' has strides [1, 13] but the kernel expects [37, 1]");
    CHECK(untouched(storage));
  }
  SUBCASE("a negative dimension") {
    expect_refused(execs, {a, b, BufferView(c.data(), {-kRows, kCols})},
                   "dimension 0 of argument 'C' is negative (-13)");
  }
  CHECK(untouched(c));
}

TEST_CASE("hostile: null data pointers are refused, whether input or output") {
  Broadcast g;
  std::vector<Executor> execs = executors(g);
  Buffer<float> a = random_buffer({kRows, kCols}, 8), b = random_buffer({kCols}, 9);
  Buffer<float> c = sentinel({kRows, kCols});
  expect_refused(execs, {a, BufferView(static_cast<float*>(nullptr), {kCols}), c},
                 "argument 'B' of kernel 'bcast' has a null data pointer");
  CHECK(untouched(c));
  expect_refused(execs, {a, b, BufferView(static_cast<float*>(nullptr), {kRows, kCols})},
                 "argument 'C' of kernel 'bcast' has a null data pointer");
  const DLTensor* null_tensor = nullptr;
  expect_refused(execs, {a, b, null_tensor}, "argument 'C' of kernel 'bcast' is a null DLTensor pointer");
  // A DLTensor whose shape pointer is null (ndim > 0) is refused before its shape is read.
  DLTensor t{};
  t.data = c.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 2;
  t.shape = nullptr;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  expect_refused(execs, {a, b, &t}, "argument 'C' of kernel 'bcast' is a DLTensor without a valid shape");
  CHECK(untouched(c));
}

TEST_CASE("hostile: misaligned data is refused by compiled kernels and read exactly by the interpreter") {
  Broadcast g;
  std::vector<Executor> execs = executors(g);
  Buffer<float> a = random_buffer({kRows, kCols}, 10), b = random_buffer({kCols}, 11);
  // The output starts one byte into a float array: every element straddles two floats.
  std::vector<float> storage(kRows * kCols + 1, kSentinel);
  auto* bytes = reinterpret_cast<unsigned char*>(storage.data());
  BufferView misaligned(reinterpret_cast<float*>(bytes + 1), {kRows, kCols});
  for (const Executor& e : execs) {
    if (e.name == "interpreter") continue;
    CAPTURE(e.name);
    CHECK_THROWS_WITH_AS(e.call({a, b, misaligned}),
                         Contains("argument 'C' of kernel 'bcast' has its data at address"), ArgumentError);
    CHECK_THROWS_WITH_AS(e.call({a, b, misaligned}),
                         Contains("which is not aligned to 4 bytes (one float32 element)"), ArgumentError);
    CHECK(untouched(storage.data(), static_cast<int64_t>(storage.size())));
  }
  // The interpreter copies elements byte-wise, so it needs no alignment and gets the same values.
  interpret(g.lowered(), {a, b, misaligned});
  for (int64_t x = 0; x < kRows * kCols; ++x) {
    float value;
    std::memcpy(&value, bytes + 1 + 4 * x, 4);
    REQUIRE(value == a.at_flat(x) * 2.0f + b.at_flat(x % kCols));
  }
}

TEST_CASE("hostile: an output that overlaps an input is refused by compiled kernels") {
  Broadcast g;
  Buffer<float> b = random_buffer({kCols}, 12);
  Buffer<float> both = sentinel({kRows * kCols + 1});
  BufferView in(both.data(), {kRows, kCols}), out(both.data() + 1, {kRows, kCols});
  for (const Executor& e : executors(g)) {
    if (e.name == "interpreter") continue;  // it does not assume noalias: it runs in order
    CAPTURE(e.name);
    CHECK_THROWS_WITH_AS(
        e.call({in, b, out}),
        Contains("arguments 'C' and 'A' of kernel 'bcast' overlap in memory, and the kernel writes "
                 "'C'"),
        ArgumentError);
    CHECK(untouched(both));
  }
}

TEST_CASE("hostile: sizes whose flat index overflows 32 bits are refused before any access (int32 sizes)") {
  // 65536 x 65536 floats (16 GiB) described over 64 floats of real memory: every dimension fits int32,
  // but the flat index of the last element is 2^32 - 1. Running would write far past the allocation.
  Broadcast g;
  std::vector<Executor> execs = executors(g);
  std::vector<float> out_memory(64, kSentinel), in_memory(64, kSentinel);
  Buffer<float> b = random_buffer({65536}, 13);
  BufferView huge_out(out_memory.data(), {65536, 65536}), huge_in(in_memory.data(), {65536, 65536});
  expect_refused(execs, {huge_in, b, huge_out},
                 "argument 'A' of kernel 'bcast' has shape [65536, 65536], whose elements reach flat index "
                 "4294967295, beyond the 2147483647 that the kernel's int32 index arithmetic can address: "
                 "build the kernel with int64 sizes");
  CHECK(untouched(out_memory.data(), 64));
  // At the boundary: [2, 2^30] reaches flat index 2^31 - 1 exactly and is accepted (only bound here:
  // the memory is not there); one more row is refused.
  BufferView wide_b(in_memory.data(), {1 << 30});
  LoweredFunc f = g.lowered();
  CHECK_NOTHROW(bind_arguments(
      f, {BufferView(in_memory.data(), {2, 1 << 30}), wide_b, BufferView(out_memory.data(), {2, 1 << 30})}));
  expect_refused(
      execs,
      {BufferView(in_memory.data(), {3, 1 << 30}), wide_b, BufferView(out_memory.data(), {3, 1 << 30})},
      "argument 'A' of kernel 'bcast' has shape [3, 1073741824], whose elements reach flat index 3221225471, "
      "beyond the 2147483647");
  CHECK(untouched(out_memory.data(), 64));
  // A single dimension of 2^31 does not fit the int32 size variable itself.
  expect_refused(
      execs, {BufferView(in_memory.data(), {1, int64_t{1} << 31}), b, huge_out},
      "dimension 1 of argument 'A' of kernel 'bcast' is 2147483648, which does not fit 'm' (int32");
  CHECK(untouched(out_memory.data(), 64));
}

TEST_CASE("hostile: with int64 sizes the same shapes are accepted, and the index arithmetic is 64-bit") {
  Broadcast g(i64);
  LoweredFunc f = g.lowered();
  // The argument check accepts the 2^32-element description (nothing runs: the memory is not there).
  std::vector<float> small(64, kSentinel);
  BufferView huge(small.data(), {65536, 65536});
  Buffer<float> b({65536});
  BoundArgs bound = bind_arguments(f, {huge, b, huge});
  CHECK(bound.scalar(g.n) == 65536);
  CHECK(bound.scalar(g.m) == 65536);
  CHECK(untouched(small.data(), 64));
  // Loops and the flat index are int64 in the IR: (i * m + j) cannot wrap for any 64-bit size.
  const std::string ir = to_string(f.body);
  CHECK(ir.find("for (i: int64") != std::string::npos);
  CHECK(ir.find("for (j: int64") != std::string::npos);
  CHECK(ir.find("int32") == std::string::npos);
  // And the int64 kernels run correctly on ordinary sizes on every executor.
  Buffer<float> a = random_buffer({kRows, kCols}, 14), bb = random_buffer({kCols}, 15);
  for (const Executor& e : executors(g)) {
    CAPTURE(e.name);
    Buffer<float> c = sentinel({kRows, kCols});
    e.call({a, bb, c});
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kCols; ++j) REQUIRE(c(i, j) == a(i, j) * 2.0f + bb(j));
  }
}

TEST_CASE("hostile: corrupt disk-cache entries are detected and the kernel is compiled again") {
  test::ScopedCacheDir dir;
  Broadcast g;
  CHECK(build_and_check(g) == CacheOutcome::Compiled);
  std::vector<std::filesystem::path> files = cache_files(dir.path);
  REQUIRE(files.size() == 1);
  const std::filesystem::path file = files[0];
  const std::string good = read_file(file);
  REQUIRE(good.size() > runtime::DiskKernelCache::kHeaderBytes);

  // The header's fields, to forge entries that pass the header and checksum checks.
  auto field = [&](size_t offset) {
    uint64_t v;
    std::memcpy(&v, good.data() + offset, 8);
    return v;
  };
  uint32_t target_length;
  std::memcpy(&target_length, good.data() + 12, 4);
  runtime::DiskKernelCache::Key key{field(16), field(24),
                                    good.substr(runtime::DiskKernelCache::kHeaderBytes, target_length)};
  REQUIRE(runtime::DiskKernelCache::decode(good, key).has_value());

  auto recompiled_after = [&](const std::string& bytes) {
    write_file(file, bytes);
    runtime::MemoryKernelCache::global().clear();
    return build_and_check(g) == CacheOutcome::Compiled;
  };
  SUBCASE("garbage bytes") { CHECK(recompiled_after(std::string(8192, '\xAB'))); }
  SUBCASE("empty file") { CHECK(recompiled_after("")); }
  SUBCASE("truncated in the header") { CHECK(recompiled_after(good.substr(0, 30))); }
  SUBCASE("truncated in the object code") { CHECK(recompiled_after(good.substr(0, good.size() - 1))); }
  SUBCASE("one flipped bit in the object code") {
    std::string bad = good;
    bad[bad.size() - 7] ^= 0x01;
    CHECK(recompiled_after(bad));
  }
  SUBCASE("a header that claims a payload of 2^64 - 1 bytes") {
    std::string bad = good;
    const uint64_t huge = ~uint64_t{0};
    std::memcpy(bad.data() + 32, &huge, 8);
    CHECK(recompiled_after(bad));
  }
  SUBCASE("a well-formed entry (valid checksum) whose object code is not an object file") {
    CHECK(recompiled_after(runtime::DiskKernelCache::encode(key, std::string(4096, '\x7f'))));
  }
  SUBCASE("a well-formed entry holding an ELF header and nothing else") {
    std::string elf_prefix = good.substr(runtime::DiskKernelCache::kHeaderBytes + target_length, 64);
    CHECK(recompiled_after(runtime::DiskKernelCache::encode(key, elf_prefix)));
  }
  SUBCASE("the entry is a directory") {
    // Not even replaceable: the kernel is compiled and works; the cache warns once (on stderr).
    std::filesystem::remove(file);
    std::filesystem::create_directory(file);
    runtime::MemoryKernelCache::global().clear();
    CHECK(build_and_check(g) == CacheOutcome::Compiled);
  }
  // Afterwards a good entry is served again (a directory in its place stays there).
  runtime::MemoryKernelCache::global().clear();
  if (!std::filesystem::is_directory(file)) CHECK(build_and_check(g) == CacheOutcome::DiskHit);
}

// Run only by the test below, in a fresh process: the cache warns once per process.
TEST_CASE("hostile child: build with the cache directory of LOOM_CACHE_DIR" * doctest::skip()) {
  REQUIRE(build_and_check(Broadcast()) == CacheOutcome::Compiled);
}

TEST_CASE("E-CACHE-UNWRITABLE: a kernel cache directory that cannot be written") {
  // The cache "directory" lies under a regular file, so it can be neither created nor written. A
  // second process of this program builds a kernel with it; its stderr is kept.
  test::ScopedCacheDir dir;
  const std::string blocker = dir.path + "/not-a-directory";
  write_file(blocker, "x");
  const std::string log = dir.path + "/stderr.txt";
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = "LOOM_CACHE_DIR='" + blocker + "/cache' '" + exe +
                              "' --no-skip --test-case='hostile child: build with the cache directory*' "
                              "--no-intro --no-version > /dev/null 2> '" +
                              log + "'";
  CHECK(std::system(command.c_str()) == 0);  // the kernel was built and gave the right result
  const std::string warning = read_file(log);
  CHECK_MESSAGE(
      warning.find("loom: the kernel cache in " + blocker + "/cache is not usable") != std::string::npos,
      warning);
  CHECK_MESSAGE(warning.find("kernels are compiled anew. Set LOOM_CACHE_DIR to a writable directory, or "
                             "LOOM_CACHE_DIR=off") != std::string::npos,
                warning);
}

TEST_CASE("E-TARGET-CPU-UNKNOWN: Target::cpu() naming a CPU LLVM does not know") {
  Broadcast g;
  CHECK_THROWS_WITH_AS(build(g.lowered(), Target::cpu("pentium-9000")),
                       Contains("Target::cpu(\"pentium-9000\"): LLVM 19"), Error);
  CHECK_THROWS_WITH_AS(
      build(g.lowered(), Target::cpu("pentium-9000")),
      Contains("does not know this CPU; use \"host\" (Target::cpu()), a micro-architecture level "
               "(x86-64, x86-64-v2, x86-64-v3, x86-64-v4)"),
      Error);
}

TEST_CASE("E-TARGET-CPU-FEATURE: a CPU feature that is misspelled or lacks its + or -") {
  Broadcast g;
  CHECK_THROWS_WITH_AS(
      build(g.lowered(), Target::cpu("x86-64-v3", "avx2")),
      Contains("feature 'avx2' must start with + (enable) or - (disable), e.g. \"+avx2,-avx512f\""), Error);
  CHECK_THROWS_WITH_AS(build(g.lowered(), Target::cpu("x86-64-v3", "+avx3000")),
                       Contains("'avx3000' is not a feature LLVM knows for"), Error);
}

TEST_CASE("E-BUILD-INTRINSIC-FEATURE: an LLVM intrinsic built for a target without its CPU feature") {
  // lib::gemm's bfloat16 micro-kernel with vdpbf16ps, built for AVX2: refused, not an LLVM abort.
  lib::Gemm g = bf16_gemm_on(32, lib::DotInstruction::Vdpbf16ps, 32);
  CHECK_THROWS_WITH_AS(
      build(g.schedule, g.args(), Target::cpu("x86-64-v3"), "bf16_gemm"),
      Contains("kernel 'bf16_gemm' calls the LLVM intrinsic 'llvm.x86.avx512bf16.dpbf16ps.512', "
               "which needs the CPU feature 'avx512bf16'; the target (llvm-19"),
      Error);
  // The same kernel with the widened multiply-add builds for any x86-64.
  g = bf16_gemm_on(32, lib::DotInstruction::MultiplyAdd, 32);
  CHECK_NOTHROW(build(g.schedule, g.args(), Target::cpu("x86-64-v3"), "bf16_gemm"));
}

TEST_CASE("E-BUILD-GPU-ONLY: a cross-thread reduction or a warp intrinsic built for the CPU") {
  Tensor A = placeholder({8, 64}, f32, "A");
  IterVar k = reduce_axis(0, 64, "k");
  Tensor B = compute(
      {8}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), 16);
  s[B].bind(ki, thread_axis("threadIdx.x"));
  CHECK_THROWS_WITH_AS(
      build(s, {A, B}, Target::cpu(), "row_sum"),
      Contains("kernel 'row_sum' has a cross-thread reduction (a reduce axis bound to threadIdx), which only "
               "GPU targets run: build it for Target::cuda_sim() or Target::cuda(), or leave the reduce axis "
               "unbound (or split it and parallelize an outer data axis) for the CPU"),
      Error);
  // The same schedule runs on the GPU simulator.
  CHECK_NOTHROW(build(s, {A, B}, Target::cuda_sim(), "row_sum"));
  CHECK_THROWS_WITH_AS(build(lib::gpu_gemm(64, 64, 64).func, Target::cpu()),
                       Contains("kernel 'gpu_gemm_float16' calls the warp intrinsic 'ptx.cp.async.cg.shared."
                                "global.16', which only GPU targets run: build it for Target::cuda_sim() or "
                                "Target::cuda()"),
                       Error);
}

TEST_CASE("errors: build() names build and the kernel in the messages of its lowering") {
  Var n = size_var("n"), m = size_var("m");
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  CHECK_THROWS_WITH_AS(build(create_schedule(C), {C}, Target::cpu(), "no_input"),
                       Contains("build 'no_input': placeholder 'A' is read but is not an argument; add it to "
                                "the arguments (build(s, {A, ...}, ...))"),
                       Error);
  Tensor Q = placeholder({m * 2}, f32, "Q");
  Tensor R = compute(
      {m * 2}, [&](Expr i) { return Q(i); }, "R");
  CHECK_THROWS_WITH_AS(
      build(create_schedule(R), {Q, R}, Target::cpu(), "expr_only"),
      Contains("build 'expr_only': size variable 'm' appears in argument shapes only inside "
               "expressions, so a call cannot bind it; pass 'm' itself as an argument (build(s, "
               "{..., m}, ...))"),
      Error);
  // On a GPU target too (where the unbound stage is found first).
  CHECK_THROWS_WITH_AS(build(create_schedule(R), {Q, R}, Target::cuda_sim(), "on_sim"),
                       Contains("build 'on_sim'"), Error);
}

TEST_CASE("jit: LOOM_JIT_REMARKS names the kernel's function instead of an unknown location") {
  // Compiled anew (no cache can serve it), so that LLVM runs and remarks.
  test::ScopedCacheDir dir;
  runtime::MemoryKernelCache::global().clear();
  Broadcast g;
  ::setenv("LOOM_JIT_REMARKS", "1", 1);
  const std::string err = test::capture_stderr([&] { build(g.lowered(), Target::cpu()); });
  ::unsetenv("LOOM_JIT_REMARKS");
  CHECK_MESSAGE(err.find("loom jit: function 'loom_bcast', ") != std::string::npos, err);
  CHECK_MESSAGE(err.find("<unknown>") == std::string::npos, err);
}

TEST_CASE("E-BUILD-AMX-FEATURE: an AMX tile product built for a target without AMX") {
  const lib::Gemm g = bf16_gemm_on(64, lib::DotInstruction::Amx, 32, 32);
  CHECK_THROWS_WITH_AS(
      build(g.schedule, g.args(), Target::cpu("x86-64-v4"), "amx_gemm"),
      Contains("kernel 'amx_gemm' uses the AMX instruction tdpbf16ps, which needs the CPU feature "
               "'amx-tile'; the target (llvm-19"),
      Error);
  // The same kernel with emulated tiles builds for any x86-64.
  CHECK_NOTHROW(build(g.schedule, g.args(), Target::cpu("x86-64-v3").set_amx_emulation(), "amx_gemm"));
}

TEST_CASE("E-RUN-AMX-PERMISSION: Linux refuses the AMX tile state") {
  const std::string& refusal = runtime::request_amx_permission();
  if (CpuCacheInfo::host().amx_bf16 || CpuCacheInfo::host().amx_int8) {
    MESSAGE("this CPU has AMX: Linux " << (refusal.empty() ? "granted" : "refused") << " the tile state");
  } else {
    CHECK(refusal.find("Linux refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA: ") == 0);
    CHECK(refusal.find("AMX needs a CPU with AMX and Linux 5.16 or later") != std::string::npos);
  }
  CHECK(&runtime::request_amx_permission() == &refusal);  // asked once per process
}

TEST_CASE("E-AMX-BLOCK: AMX blocks, rows, types and K that AMX cannot take") {
  CHECK_THROWS_WITH_AS(
      x86::amx_intrin(bf16, bf16, 2, 3, 64),
      "x86::amx_intrin 'x86.amx.tdpbf16ps.2x3.r16.k64': an AMX block of 2 x 3 accumulator tiles "
      "needs 9 tile registers (accumulators, the smaller side's tiles and one more); AMX has 8: "
      "use 1 x 1 to 1 x 6, 2 x 2, or 2 x 1 to 6 x 1",
      Error);
  CHECK_THROWS_WITH_AS(x86::amx_intrin(u8, i8, 1, 1, 64, 17),
                       Contains("an AMX tile has 1 to 16 rows, not 17"), Error);
  CHECK_THROWS_WITH_AS(
      x86::amx_intrin(bf16, bf16, 1, 1, 48),
      Contains("K (48) must be a positive multiple of 32 (64 bytes of bfloat16, one tile row); pad K "
               "with zeros"),
      Error);
  CHECK_THROWS_WITH_AS(x86::amx_intrin(f16, f16, 1, 1, 64),
                       Contains("AMX multiplies bfloat16 x bfloat16 (tdpbf16ps) or 8-bit integers"), Error);
}

// The one translation unit of the JIT tests that compiles the LLVM backend (<loom/loom.hpp>
// registers it for the whole test program), plus the tests that look at its LLVM-level output.
// It also points LOOM_CACHE_DIR at a fresh temporary directory for the whole test process.
#include <loom/loom.hpp>
#include <loom/support/cpu_info.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../runtime/interp_test_util.hpp"
#include "../support/jit_harness.hpp"
#include "../support/matmul_program.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// Tests never touch the user's ~/.cache/loom: every test process gets its own cache directory,
/// removed at exit. A child process started by a cache test inherits its parent's directory.
struct ProcessCacheDir {
  std::string path;
  ProcessCacheDir() {
    if (std::getenv("LOOM_JIT_TEST_CHILD")) return;
    char tmpl[] = "/tmp/loom-jit-tests-XXXXXX";
    if (const char* p = ::mkdtemp(tmpl)) {
      path = p;
      ::setenv("LOOM_CACHE_DIR", path.c_str(), 1);
    }
  }
  ~ProcessCacheDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};
const ProcessCacheDir process_cache_dir;

LoweredFunc saxpy_func() {
  Var n("n"), alpha("alpha", f32), i("i");
  BufferParam X = buffer_param("X", f32, {n}), Y = buffer_param("Y", f32, {n});
  return make_func("saxpy", {param(X), param(Y), scalar_param(alpha)},
                   loop(i, 0, n, store(Y, alpha * load(X, i) + load(Y, i), i), ForKind::Vectorized), {n});
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("jit backend: llvm_ir() and assembly() show the optimized code for the target") {
  Kernel k = build(saxpy_func(), Target::cpu());
  const std::string& ir = k.llvm_ir();
  CHECK(contains(ir, "define"));
  CHECK(contains(ir, "@loom_saxpy"));
  // The vectorize hint at this machine's width: AVX-512's 16 lanes, or AVX2's 8.
  const bool avx512 = CpuCacheInfo::host().vector_bytes == 64;
  CHECK(contains(ir, avx512 ? "<16 x float>" : "<8 x float>"));
  CHECK(contains(ir, "!alias.scope"));  // distinct buffers do not alias
  const std::string& assembly = k.assembly();
  CHECK(contains(assembly, "loom_saxpy:"));
  CHECK(contains(assembly, avx512 ? "zmm" : "ymm"));
  CHECK(&k.llvm_ir() == &ir);  // generated once, then kept

  SUBCASE("an older micro-architecture level gets narrower vectors and still runs") {
    Kernel v3 = build(saxpy_func(), Target::cpu("x86-64-v3"));
    CHECK(contains(v3.assembly(), "ymm"));
    CHECK_FALSE(contains(v3.assembly(), "zmm"));
    CHECK(contains(v3.target_description(), "-mcpu=x86-64-v3"));
    Buffer<float> x({37}), y({37});
    fill_random(x, 1);
    fill_random(y, 2);
    check_jit_matches_interpreter(v3.lowered(), {x, y, 0.5}, JitCheckOptions{Target::cpu("x86-64-v3")});
  }
}

TEST_CASE("jit backend: a prefetch in a reduction loop leaves the accumulator in a register") {
  // S[i] = sum over k of X[i, k], X prefetched 16 iterations of k ahead. A prefetch only hints at X:
  // LLVM must still see that it touches no other buffer, or it keeps storing S[i] every k.
  const int rows = 5, cols = 300;
  Tensor X = placeholder({rows, cols}, f32, "X");
  IterVar k = reduce_axis(0, cols, "k");
  Tensor S = compute(
      {rows}, [&](Expr i) { return sum(X(i, k), {k}); }, "S");
  Schedule s = create_schedule(S);
  s[S].prefetch(X, k, 16);
  Kernel f = build(s, {X, S}, Target::cpu(), "row_sum_prefetch");
  // The optimized IR prints a blank line before each basic block: the block that prefetches (the
  // loop over k) stores nothing.
  const std::string& ir = f.llvm_ir();
  const size_t call_in_body = ir.find("call void @llvm.prefetch");
  REQUIRE(call_in_body != std::string::npos);
  const size_t block_start = ir.rfind("\n\n", call_in_body), block_end = ir.find("\n\n", call_in_body);
  REQUIRE(block_start != std::string::npos);
  const std::string block = ir.substr(block_start, block_end - block_start);
  CAPTURE(block);
  CHECK_FALSE(contains(block, " store "));
  Buffer<float> x({rows, cols}), out({rows});
  fill_random(x, 3);
  f(x, out);
  for (int i = 0; i < rows; ++i) {
    double expected = 0;
    for (int j = 0; j < cols; ++j) expected += x(i, j);
    CHECK(std::abs(out(i) - expected) <= 1e-4 * cols);
  }
}

TEST_CASE("jit backend: a spread prefetch of the next block's copy keeps the result") {
  // C = A B with B's columns copied a block of 16 at a time; while a block computes, its k loop
  // prefetches the rows the next block's copy reads (as lib::gemm does with few rows). The JIT
  // result must match the interpreter's, which ignores prefetches.
  const auto [A, B, C, k] = test::matmul_program(9, 45, 70);
  Schedule s = create_schedule(C);
  Tensor BC = s.cache_read(B, "global", {C});
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].reorder({jo, C.axis(0), k, ji});
  s[C].vectorize(ji);
  s[BC].compute_at(s[C], jo);
  s[C].prefetch(B, jo, 1, k);
  Kernel f = build(s, {A, B, C}, Target::cpu(), "spread_prefetch");
  CHECK(contains(f.llvm_ir(), "call void @llvm.prefetch"));
  Buffer<float> a({9, 70}), b({70, 45}), c({9, 45});
  fill_random(a, 4);
  fill_random(b, 5);
  check_jit_matches_interpreter(f.lowered(), {a, b, c});
}

TEST_CASE("jit backend: LOOM_DUMP_IR writes the LLVM IR next to the loop IR") {
  char tmpl[] = "/tmp/loom-dump-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  ::setenv("LOOM_DUMP_IR", dir.c_str(), 1);
  Tensor A = placeholder({16}, f32, "A");
  Tensor B = compute(
      {16}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Schedule s = create_schedule(B);
  Kernel k = build(s, {A, B}, Target::cpu(), "dumped");
  ::unsetenv("LOOM_DUMP_IR");
  std::ifstream ir(std::filesystem::path(dir) / "dumped" / "llvm_ir.ll");
  std::stringstream text;
  text << ir.rdbuf();
  CHECK(contains(text.str(), "@loom_dumped"));
  CHECK(std::filesystem::exists(std::filesystem::path(dir) / "dumped" / "llvm_ir_unoptimized.ll"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("jit backend: targets are validated with a helpful message") {
  CHECK_THROWS_WITH_AS(build(saxpy_func(), Target::cpu("pentium-9000")),
                       doctest::Contains("does not know this CPU; use \"host\""), Error);
  CHECK_THROWS_WITH_AS(build(saxpy_func(), Target::cpu("x86-64-v3", "avx512f")),
                       doctest::Contains("must start with + (enable) or - (disable)"), Error);
  CHECK_THROWS_WITH_AS(build(saxpy_func(), Target::cpu("x86-64-v3", "+warp-drive")),
                       doctest::Contains("'warp-drive' is not a feature LLVM knows"), Error);
}

TEST_CASE("jit backend: a kernel for features this host lacks is inspectable but refuses to run") {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::stringstream flags;
  flags << cpuinfo.rdbuf();
  Kernel k = build(saxpy_func(), Target::cpu("x86-64-v3", "+amx-tile"));
  CHECK(contains(k.target_description(), "+amx-tile"));
  CHECK_FALSE(k.assembly().empty());
  if (!contains(flags.str(), "amx_tile")) {
    Buffer<float> x({4}), y({4});
    CHECK_THROWS_WITH_AS(k(x, y, 1.0), doctest::Contains("needs CPU features this host lacks (amx-tile"),
                         Error);
  }
}

TEST_CASE("jit backend: fast math is opt-in per target and relaxes float semantics") {
  Target fast = Target::cpu().set_fast_math();
  CHECK(fast.str() == "cpu -mcpu=host -fast-math");
  Kernel k = build(saxpy_func(), fast);
  CHECK(contains(k.llvm_ir(), "fast"));
  CHECK_FALSE(contains(build(saxpy_func(), Target::cpu()).llvm_ir(), " fast "));
  Buffer<float> x({1000}), y({1000});
  fill_random(x, 5);
  fill_random(y, 6);
  JitCheckOptions options;
  options.target = fast;
  options.relative_tolerance = 1e-4;  // contraction into FMAs changes the last bits
  check_jit_matches_interpreter(k.lowered(), {x, y, 0.25}, options);
}

// loom::lint on the cliffs it names (a masked vector loop, a gather, a strided innermost loop,
// per-lane libm math, a parallel loop with too few iterations) and on the fixed schedules, which
// give no findings; LOOM_LINT=1 prints them from build(). The linted kernels still compute what
// the unscheduled reference does: lint only reports.
#include <loom/backend/lint.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../support/capture_stderr.hpp"
#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// The checks among `findings`, in order.
std::vector<std::string> checks_of(const std::vector<LintFinding>& findings) {
  std::vector<std::string> out;
  for (const LintFinding& f : findings) out.push_back(f.check);
  return out;
}

/// The JIT and the interpreter agree on random data: lint changes nothing in the kernel.
void check_runs(const LoweredFunc& f) {
  RandomArgs args = random_args(f, 7);
  check_jit_matches_interpreter(f, args.args);
}

std::string messages_of(const std::vector<LintFinding>& findings) {
  std::string out;
  for (const LintFinding& f : findings) out += f.message + "\n";
  return out;
}

/// C = exp(A) * 2 over 8 x 56, its rows split by `lanes` and vectorized, the outer axis parallel.
struct RowExp {
  Tensor A = placeholder({8, 56}, f32, "A");
  Tensor C = compute(
      {8, 56}, [&](Expr i, Expr j) { return exp(A(i, j)) * 2.0f; }, "C");
  Schedule schedule(int lanes) const {
    Schedule s = create_schedule(C);
    auto [o, in] = s[C].split(C.axis(1), lanes);
    s[C].vectorize(in);
    s[C].parallel(C.axis(0));
    return s;
  }
};

}  // namespace

TEST_CASE("lint: a vectorized loop whose extent is not a multiple of its lanes is masked") {
  RowExp g;
  std::vector<LintFinding> masked = lint(lower(g.schedule(16), {g.A, g.C}, "row_exp"), 4);
  REQUIRE(checks_of(masked) == std::vector<std::string>{"masked-vector"});
  CHECK(masked[0].kernel == "row_exp");
  CHECK(masked[0].loop == "j.outer");
  CHECK(masked[0].message.find("kernel 'row_exp': stores to 'C' in loop 'j.outer' are masked on every "
                               "iteration (16 lanes") == 0);
  // 8 lanes divide 56: nothing to say. The masked kernel is still right.
  CHECK(lint(lower(g.schedule(8), {g.A, g.C}, "row_exp8"), 4).empty());
  check_runs(lower(g.schedule(16), {g.A, g.C}, "row_exp"));
}

TEST_CASE("lint: a parallel loop with fewer iterations than threads") {
  RowExp g;
  std::vector<LintFinding> few = lint(lower(g.schedule(8), {g.A, g.C}, "few"), 16);
  REQUIRE(checks_of(few) == std::vector<std::string>{"parallel-few-iterations"});
  CHECK(few[0].message ==
        "kernel 'few': parallel loop 'i' has 8 iterations for 16 threads, so 8 threads idle; parallelize an "
        "outer loop with more iterations, or fuse loops before parallel (fuse, then parallel)");
}

TEST_CASE("lint: a transposed read vectorized along the wrong axis is a gather") {
  Tensor A = placeholder({8, 56}, f32, "A");
  Tensor D = compute(
      {56, 8}, [&](Expr i, Expr j) { return A(j, i) * 2.0f; }, "D");
  Schedule s = create_schedule(D);
  s[D].vectorize(D.axis(1));
  std::vector<LintFinding> gather = lint(lower(s, {A, D}, "transpose"), 4);
  REQUIRE(checks_of(gather) == std::vector<std::string>{"strided-access"});
  CHECK(
      gather[0].message.find("kernel 'transpose': loads of 'A' in loop 'i' are strided (56 elements between "
                             "lanes): a gather or scatter") == 0);
  check_runs(lower(s, {A, D}, "transpose"));
}

TEST_CASE("lint: an interleave of two rows is two contiguous runs, not a gather") {
  // P[kg][j][t] = B[2kg + t][j], vectorized across (j, t): lanes alternate between two rows of B,
  // which the backend loads as two vectors and interleaves (ir/lane_runs.hpp).
  Tensor B = placeholder({16, 64}, f32, "B");
  Tensor P = compute(
      {8, 64, 2}, [&](Expr kg, Expr j, Expr t) { return B(kg * 2 + t, j); }, "P");
  Schedule s = create_schedule(P);
  IterVar both = s[P].fuse(P.axis(1), P.axis(2));
  auto [outer, inner] = s[P].split(both, 16);
  (void)outer;
  s[P].vectorize(inner);
  CHECK_MESSAGE(lint(lower(s, {B, P}, "pairs"), 4).empty(), messages_of(lint(lower(s, {B, P}), 4)));
  check_runs(lower(s, {B, P}, "pairs"));
}

TEST_CASE("lint: a stencil's neighbour clamped at the edge is a vector load inside it, not a gather") {
  // C[i][j] = A[i][min(j + 1, 63)] + A[i][max(j - 1, 0)], vectorized along j: a ramp under a clamp,
  // one vector load wherever the lanes are inside the edge (ir/clamped_ramp.hpp).
  Tensor A = placeholder({4, 64}, f32, "A");
  Tensor C = compute(
      {4, 64}, [&](Expr i, Expr j) { return A(i, min(j + 1, Expr(63))) + A(i, max(j - 1, Expr(0))); }, "C");
  Schedule s = create_schedule(C);
  auto [outer, inner] = s[C].split(C.axis(1), 16);
  (void)outer;
  s[C].vectorize(inner);
  CHECK_MESSAGE(lint(lower(s, {A, C}, "edges"), 4).empty(), messages_of(lint(lower(s, {A, C}), 4)));
  check_runs(lower(s, {A, C}, "edges"));
}

TEST_CASE("lint: the naive matmul's innermost k loop strides through B") {
  const int n = 24;
  Tensor A = placeholder({n, n}, f32, "A"), B = placeholder({n, n}, f32, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  std::vector<LintFinding> naive = lint(lower(s, {A, B, C}, "naive"), 4);
  REQUIRE(checks_of(naive) == std::vector<std::string>{"strided-access"});
  CHECK(naive[0].message ==
        "kernel 'naive': loads of 'B' in the innermost loop 'k' step 24 elements per iteration, so each "
        "touches a new cache line; make the axis that is contiguous in 'B' (its last dimension) the "
        "innermost loop (reorder), or cache the tile (cache_read)");
  // With k outside j, every innermost access is contiguous (or does not move).
  s[C].reorder({C.axis(0), C.reduce_axis(0), C.axis(1)});
  CHECK_MESSAGE(lint(lower(s, {A, B, C}, "reordered"), 4).empty(), messages_of(lint(lower(s, {A, B, C}), 4)));
}

TEST_CASE(
    "lint: double-precision sin and pow in a vector loop run one libm call per lane, exp and erf do not") {
  Tensor A = placeholder({64}, f64, "A");
  Tensor C = compute(
      {64}, [&](Expr i) { return sin(A(i)) + pow(A(i), A(i)) + exp(A(i)) + erf(A(i)); }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 8);
  s[C].vectorize(in);
  std::vector<LintFinding> math = lint(lower(s, {A, C}, "f64_math"), 1);
  REQUIRE(checks_of(math) == std::vector<std::string>{"scalar-math", "scalar-math"});
  CHECK(messages_of(math).find("kernel 'f64_math': sin on float64 in vector code (loop 'i.outer') runs as 8 "
                               "libm calls, one per lane") != std::string::npos);
  CHECK(messages_of(math).find("kernel 'f64_math': pow on float64") != std::string::npos);
  CHECK(messages_of(math).find("exp on") == std::string::npos);
  CHECK(messages_of(math).find("erf on") == std::string::npos);
  // float32 exp stays in vector instructions.
  Tensor F = placeholder({64}, f32, "F");
  Tensor G = compute(
      {64}, [&](Expr i) { return exp(F(i)); }, "G");
  Schedule t = create_schedule(G);
  auto [o2, in2] = t[G].split(G.axis(0), 16);
  t[G].vectorize(in2);
  CHECK(lint(lower(t, {F, G}, "f32_exp"), 1).empty());
}

TEST_CASE("lint: LOOM_LINT=1 prints the findings as build() compiles the kernel") {
  RowExp g;
  ::setenv("LOOM_LINT", "1", 1);
  const std::string err = capture_stderr([&] {
    build(g.schedule(16), {g.A, g.C}, Target::cpu(), "printed");
  });
  ::unsetenv("LOOM_LINT");
  CHECK_MESSAGE(err.find("loom lint: kernel 'printed': stores to 'C' in loop 'j.outer' are masked") !=
                    std::string::npos,
                err);
  const std::string quiet = capture_stderr([&] {
    build(g.schedule(16), {g.A, g.C}, Target::cpu(), "quiet");
  });
  CHECK(quiet.find("loom lint") == std::string::npos);
}

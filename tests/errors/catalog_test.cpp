// The error catalog (docs/errors.md) as tests: one TEST_CASE per catalog id, named "<id>: ...", that
// triggers the mistake and checks the message, unless a broader test of tests/errors already does and
// tags that check "// catalog: <id>". A last test parses the catalog and checks that every id has
// exactly one such test case or tag (here, in tests/errors or tests/hostile) and every one an entry.
#include <loom/backend/build.hpp>
#include <loom/backend/cuda/driver.hpp>
#include <loom/core.hpp>
#include <loom/ir/grid_flags.hpp>
#include <loom/sim/interpreter.hpp>
#include <loom/sim/simulator.hpp>
#include <loom/te/ptx_tensor_intrins.hpp>

#include <doctest/doctest.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include "../cuda/cuda_test_util.hpp"
#include "../support/interpret_checked.hpp"
#include "errors_test_util.hpp"

using namespace loom;
using namespace loom::test;
using doctest::Contains;

namespace {

/// C = A + 1 over a symbolic n, lowered for the interpreter.
struct SymbolicAddOne {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "add_one");
};

/// B = A * 2 over n = 200 elements, 64 threads per block, built for the GPU simulator.
struct SimKernel {
  static constexpr int n = 200;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Schedule s = create_schedule(B);
  SimKernel() {
    auto [xo, xi] = s[B].split(B.axis(0), 64);
    s[B].bind(xo, thread_axis("blockIdx.x"));
    s[B].bind(xi, thread_axis("threadIdx.x"));
  }
  Kernel build_sim() { return build(s, {A, B}, Target::cuda_sim(), "twice"); }
};

/// Every id that follows `prefix` in `text` (an id: "E-" then capitals, digits and dashes).
std::vector<std::string> ids_after(const std::string& text, const std::string& prefix) {
  std::vector<std::string> ids;
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    size_t begin = at + prefix.size(), end = begin;
    while (end < text.size() && (std::isupper(static_cast<unsigned char>(text[end])) ||
                                 std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '-'))
      ++end;
    // Nothing after the prefix: the prefix itself quoted (as in the drift check below), not an id.
    if (end > begin) ids.push_back(text.substr(begin - 2, end - begin + 2));  // with its "E-"
  }
  return ids;
}

/// The ids of the test cases in a test source: TEST_CASE("<id>: ..."), possibly across lines.
std::vector<std::string> test_case_ids(const std::string& source) {
  std::string joined;  // each TEST_CASE( with the whitespace after it removed
  const std::string call = "TEST_CASE(";
  for (size_t at = source.find(call); at != std::string::npos; at = source.find(call, at + 1)) {
    size_t next = at + call.size();
    while (next < source.size() && std::isspace(static_cast<unsigned char>(source[next]))) ++next;
    joined += cat("\n", call, source.substr(next, 64));
  }
  return ids_after(joined, cat(call, "\"E-"));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

// ---- tensor expressions ----------------------------------------------------------------------

TEST_CASE("E-TE-LAMBDA-ARITY: the compute lambda takes a different number of indices than the shape") {
  Tensor A = placeholder({4, 4}, f32, "A");
  CHECK_THROWS_WITH_AS(
      compute(
          {4, 4}, [&](Expr i) { return A(i, i); }, "C"),
      Contains("compute 'C': the shape has 2 dimensions but the lambda takes 1 index argument; "
               "give the lambda one index per dimension"),
      Error);
}

TEST_CASE("E-TE-AXIS-RANGE: asking a compute for an axis it does not have") {
  Tensor A = placeholder({4, 4}, f32, "A");
  Tensor C = compute(
      {4, 4}, [&](Expr i, Expr j) { return A(i, j); }, "C");
  CHECK_THROWS_WITH_AS(
      C.axis(2), Contains("compute 'C' has 2 axes; axis(2) does not exist (use axis(0) to axis(1))"), Error);
  CHECK_THROWS_WITH_AS(A.axis(0),
                       Contains("tensor 'A' is produced by a placeholder, which has no compute axes"), Error);
}

TEST_CASE("E-TE-REDUCE-AXIS-OUTSIDE: a reduce axis used outside the reducer that lists it") {
  Tensor A = placeholder({4, 4}, f32, "A");
  IterVar k = reduce_axis(0, 4, "k");
  CHECK_THROWS_WITH_AS(
      compute(
          {4}, [&](Expr i) { return A(i, k); }, "C"),
      Contains("compute 'C': reduce axis 'k' is used outside of a reduction that lists it; wrap "
               "the expression that uses it in a reducer with the axis listed, e.g. sum(expr, {k})"),
      Error);
}

TEST_CASE("E-TE-REDUCE-NESTED: a reduction inside a larger expression") {
  Tensor A = placeholder({4, 4}, f32, "A");
  IterVar k = reduce_axis(0, 4, "k");
  CHECK_THROWS_WITH_AS(
      compute(
          {4}, [&](Expr i) { return sum(A(i, k), {k}) + 1.0f; }, "C"),
      Contains("compute 'C': a reduction (sum) must be the whole body of a compute, but one "
               "appears inside a larger expression; compute the reduction in a compute of its own"),
      Error);
}

TEST_CASE("E-TE-REDUCE-DATA-AXIS: a reducer given a data-parallel axis") {
  Tensor A = placeholder({4, 4}, f32, "A");
  Tensor C = compute(
      {4, 4}, [&](Expr i, Expr j) { return A(i, j); }, "C");
  CHECK_THROWS_WITH_AS(
      max(A(0, 0), {C.axis(0)}),
      Contains(
          "max(): axis 'i' is not a reduce axis; create reduction axes with reduce_axis(begin, end, name)"),
      Error);
}

TEST_CASE("E-TE-MULTI-OUTPUT-MIX: a multi-output compute mixing reductions and plain values") {
  Tensor A = placeholder({4, 4}, f32, "A");
  IterVar k = reduce_axis(0, 4, "k");
  CHECK_THROWS_WITH_AS(
      compute(
          {4},
          [&](Expr i) {
            return std::vector<Expr>{sum(A(i, k), {k}), A(i, 0)};
          },
          "M"),
      Contains("compute 'M': either every output of a multi-output compute is a reduction or "
               "none is"),
      Error);
}

// ---- schedule primitives -----------------------------------------------------------------------

TEST_CASE("E-AXIS-STALE-SPLIT: an axis used after it was split") {
  Graph g;
  Schedule s = create_schedule(g.D);
  IterVar i = g.D.axis(0);
  s[g.D].split(i, 4);
  CHECK_THROWS_WITH_AS(
      s[g.D].parallel(i),
      Contains("parallel: axis 'i' of stage 'D' was already split into 'i.outer' and 'i.inner'; "
               "use those instead (the loops of 'D' are now: i.outer, i.inner, j)"),
      ScheduleError);
}

TEST_CASE("E-SPLIT-FACTOR: a split factor or nparts that is not positive") {
  Graph g;
  Schedule s = create_schedule(g.D);
  CHECK_THROWS_WITH_AS(s[g.D].split(g.D.axis(1), 0),
                       Contains("split: the factor for axis 'j' of stage 'D' must be positive, got 0"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].split(g.D.axis(0), NParts{-1}),
                       Contains("split: the nparts for axis 'i' of stage 'D' must be positive, got -1"),
                       ScheduleError);
}

TEST_CASE("E-SPLIT-SYMBOLIC-FACTOR: a symbolic split factor that is not positive at run time") {
  const int n = 6;
  Var f = size_var("f");
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  s[C].split(C.axis(0), Factor{Expr(f)});
  LoweredFunc fn = lower(s, {A, C, f}, "symbolic_factor");
  Buffer<float> a({n}), c = sentinel({n});
  a.fill(1.0f);
  CHECK_THROWS_WITH_AS(
      test::interpret_checked(fn, {a, c, 0}),
      Contains("stage 'C': the split of axis 'i' by Factor{f} needs a positive value when the "
               "function runs; pass f > 0"),
      Error);
  CHECK(untouched(c));
}

TEST_CASE("E-SPLIT-ANNOTATED: splitting a loop that is already annotated or bound") {
  Tensor A = placeholder({64}, f32, "A");
  Tensor C = compute(
      {64}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  s[C].parallel(C.axis(0));
  CHECK_THROWS_WITH_AS(
      s[C].split(C.axis(0), 8),
      Contains("split: axis 'i' of stage 'C' is already marked parallel, which its split parts "
               "would not inherit; split it first, then annotate the outer or inner part"),
      ScheduleError);
}

TEST_CASE("E-REORDER-DUPLICATE: an axis listed twice in reorder") {
  Graph g;
  Schedule s = create_schedule(g.C);
  CHECK_THROWS_WITH_AS(s[g.C].reorder({g.C.axis(1), g.C.axis(0), g.C.axis(1)}),
                       Contains("reorder: axis 'j' of stage 'C' is listed twice; list each loop once"),
                       ScheduleError);
}

TEST_CASE("E-PARALLEL-REDUCE: parallelizing a reduce axis") {
  Graph g;
  Schedule s = create_schedule(g.C);
  CHECK_THROWS_WITH_AS(
      s[g.C].parallel(g.k),
      Contains("parallel: axis 'k' of stage 'C' is a reduction axis; parallel iterations would "
               "race on one accumulator"),
      ScheduleError);
}

TEST_CASE(
    "E-COMPUTE-AT-SHARED-UNBOUND: a producer in shared memory with none of its loops bound to threadIdx") {
  Graph g;
  Schedule s = create_schedule(g.D);
  s[g.D].bind(g.D.axis(0), thread_axis("blockIdx.x"));
  s[g.D].bind(g.D.axis(1), thread_axis("threadIdx.x"));
  s[g.C].compute_at(s[g.D], g.D.axis(0));  // inside a block loop only: shared by the block's threads
  CHECK_THROWS_WITH_AS(
      lower(s, {g.A, g.D}, "unbound_shared"),
      Contains("compute_at: stage 'C' is stored in shared memory (it is computed at loop 'i' of stage 'D', "
               "which is bound to blockIdx.x), but none of its loops is bound to threadIdx, so every thread "
               "of the block would compute all of 'C' and write each element (a data race, and the work "
               "repeated by every thread). Bind one of its loops (i, j, k) to threadIdx.x, splitting it by "
               "the number of threads first if it is longer, or compute it at a loop of 'D' bound to "
               "threadIdx, where each thread keeps its own copy in local memory"),
      ScheduleError);
}

TEST_CASE("E-PLACE-PLACEHOLDER: placing an input (compute_at, compute_inline)") {
  Graph g;
  Schedule s = create_schedule(g.D);
  CHECK_THROWS_WITH_AS(s[g.A].compute_at(s[g.D], g.D.axis(0)),
                       Contains("compute_at: 'A' is a placeholder (an input); it is not computed"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.A].compute_inline(),
                       Contains("compute_inline: 'A' is a placeholder (an input); it is not computed"),
                       ScheduleError);
}

TEST_CASE("E-BIND-EXTENT: a loop bound to a thread axis declared with another extent") {
  Tensor A = placeholder({256}, f32, "A");
  Tensor B = compute(
      {256}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 64);
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis(Range(0, 32), "threadIdx.x"));
  CHECK_THROWS_WITH_AS(
      lower(s, {A, B}, "declared"),
      Contains("bind: loop 'i.inner' of stage 'B' has extent 64 but thread axis 'threadIdx.x' was "
               "declared with extent 32; split the loop by that extent before binding"),
      ScheduleError);
}

TEST_CASE("E-STORAGE-SCOPE: an unknown memory scope") {
  Graph g;
  Schedule s = create_schedule(g.D);
  CHECK_THROWS_WITH_AS(s.cache_read(g.A, "texture", {g.C}),
                       Contains("unknown storage scope 'texture'; use one of global, shared, local, warp, "
                                "shared.dyn, local.fragment"),
                       ScheduleError);
}

TEST_CASE("E-STORAGE-ALIGN: storage_align with a bad axis, factor or offset") {
  Graph g;
  Schedule s = create_schedule(g.D);
  CHECK_THROWS_WITH_AS(
      s[g.B].storage_align(g.B.axis(0), 8, 8),
      Contains("storage_align: offset for axis 'i' of stage 'B' must be in [0, factor), got 8 with "
               "factor 8"),
      ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.B].storage_align(g.B.axis(0), 0, 0),
                       Contains("storage_align: factor for axis 'i' of stage 'B' must be positive, got 0"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.B].storage_align(g.D.axis(0), 8, 1),
                       Contains("' is not a dimension of 'B'; pass one of its axes (i, j), e.g. B.axis(0)"),
                       ScheduleError);
}

TEST_CASE("E-CACHE-READ-READER: cache_read for a stage that does not read the tensor") {
  Graph g;
  Schedule s = create_schedule(g.D);
  CHECK_THROWS_WITH_AS(
      s.cache_read(g.A, "shared", {g.D}),
      Contains("cache_read of 'A': stage 'D' does not read 'A'; list only stages that read it"),
      ScheduleError);
}

TEST_CASE("E-CACHE-WRITE-ORDER: cache_write after the stage was scheduled") {
  Graph g;
  Schedule s = create_schedule(g.D);
  s[g.C].split(g.C.axis(0), 4);
  CHECK_THROWS_WITH_AS(
      s.cache_write(g.C, "local"),
      Contains("cache_write of 'C': stage 'C' was already scheduled (split, fuse, reorder or "
               "compute_at); call cache_write first"),
      ScheduleError);
}

TEST_CASE("E-RFACTOR-NOT-REDUCTION: rfactor of a stage that is not a reduction") {
  Graph g;
  Schedule s = create_schedule(g.D);
  CHECK_THROWS_WITH_AS(
      s.rfactor(g.B, g.B.axis(0)),
      Contains("rfactor of 'B': stage 'B' is not a reduction; rfactor applies to a compute whose "
               "body is a reducer such as sum(expr, {k})"),
      ScheduleError);
  CHECK_THROWS_WITH_AS(
      s.rfactor(g.C, g.C.axis(0)),
      Contains("rfactor of 'C': axis 'i' of stage 'C' is data-parallel; rfactor takes one of its "
               "reduce loops"),
      ScheduleError);
}

// ---- lowering ------------------------------------------------------------------------------------

TEST_CASE("E-LOWER-MISSING-INPUT: a placeholder that is read but not an argument") {
  SymbolicAddOne g;
  CHECK_THROWS_WITH_AS(
      lower(create_schedule(g.C), {g.C}, "no_input"),
      Contains("lower 'no_input': placeholder 'A' is read but is not an argument; add it to the arguments "
               "(lower(s, {A, ...}, ...))"),
      Error);
}

TEST_CASE("E-LOWER-THREAD-INDEX: a thread index used outside every loop bound to it") {
  Tensor A = placeholder({64}, f32, "A");
  IterVar tx = thread_axis("threadIdx.x");
  Tensor C = compute(
      {64}, [&](Expr i) { return A(i) + cast(f32, tx->var); }, "C");
  CHECK_THROWS_WITH_AS(
      lower(create_schedule(C), {A, C}, "free_tx"),
      Contains("lower 'free_tx': the computation uses the thread index 'threadIdx.x' outside every loop "
               "bound to it; bind a loop around that use to it (s[stage].bind(axis, "
               "thread_axis(\"threadIdx.x\"))) or compute the stage that uses it inside such a loop "
               "(compute_at)"),
      Error);
}

TEST_CASE("E-LOWER-DUPLICATE-ARG: an argument listed twice") {
  SymbolicAddOne g;
  CHECK_THROWS_WITH_AS(lower(create_schedule(g.C), {g.A, g.C, g.A}, "dup"),
                       Contains("lower 'dup': tensor 'A' is listed twice among the arguments"), Error);
}

TEST_CASE("E-LOWER-FOREIGN-ARG: an argument that is not part of the schedule") {
  SymbolicAddOne g;
  Tensor Z = placeholder({3}, f32, "Z");
  CHECK_THROWS_WITH_AS(
      lower(create_schedule(g.C), {g.A, g.C, Z}, "foreign"),
      Contains("lower 'foreign': argument 'Z' is not part of the schedule; pass tensors that the "
               "schedule's outputs depend on"),
      Error);
}

namespace {

/// What fragment_gemm varies: where A is staged, the fragments' scope, whether C's store is
/// tensorized, the extent of the copies' threadIdx.x loop (0: not bound), and the columns of C.
struct FragmentGemmCase {
  std::string a_stage_scope = scope::shared, fragment_scope = scope::fragment;
  bool store = true;
  int lanes = 32;
  int n = 8;
  bool store_tiles_on_lanes = false;  // C's tile loop (n / 8 of them) bound to threadIdx.x
  bool double_buffer_c = false;
};

/// One warp's 16 x n x 16 GEMM on tensor cores as TE: A and B staged in shared memory (copied by
/// `lanes` threads on threadIdx.x), their fragments and C's accumulator in fragments, C stored by
/// store_c.
LoweredFunc fragment_gemm(const FragmentGemmCase& c) {
  Tensor A = placeholder({16, 16}, f16, "A"), B = placeholder({16, c.n}, f16, "B");
  IterVar k = reduce_axis(0, 16, "k");
  Tensor C = compute(
      {16, c.n}, [&](Expr i, Expr j) { return sum(cast(f32, A(i, k)) * cast(f32, B(k, j)), {k}); }, "C");
  Schedule s = create_schedule(C);
  Tensor AS = c.a_stage_scope.empty() ? A : s.cache_read(A, c.a_stage_scope, {C});
  Tensor BS = s.cache_read(B, scope::shared, {C});
  Tensor AF = s.cache_read(AS, c.fragment_scope, {C}), BF = s.cache_read(BS, scope::fragment, {C});
  Tensor CF = s.cache_write(C, scope::fragment);
  auto [cjo, cji] = s[CF].split(CF.axis(1), 8);
  s[CF].reorder({cjo, CF.axis(0), cji, CF.reduce_axis(0)});
  s[CF].tensorize(CF.axis(0), ptx_tensor::mma(f16, ptx_tensor::BLayout::KN));
  s[AF].tensorize(AF.axis(0), ptx_tensor::load_a(f16));
  auto [bjo, bji] = s[BF].split(BF.axis(1), 8);
  s[BF].reorder({bjo, BF.axis(0), bji});
  s[BF].tensorize(BF.axis(0), ptx_tensor::load_b(f16, ptx_tensor::BLayout::KN));
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].reorder({jo, C.axis(0), ji});
  if (c.store) s[C].tensorize(C.axis(0), ptx_tensor::store_c());
  if (c.store_tiles_on_lanes) s[C].bind(jo, thread_axis(thread_tag::threadIdx_x));
  if (c.double_buffer_c) s[CF].double_buffer();
  if (c.lanes)
    for (const Tensor& t : {AS, BS}) {
      if (t.op()->kind == OpKind::Placeholder) continue;
      IterVar f = s[t].fuse(t.axis(0), t.axis(1));
      auto [fo, x] = s[t].split(f, c.lanes);
      s[t].bind(x, thread_axis(thread_tag::threadIdx_x));
    }
  return lower(s, {A, B, C}, "fragment_gemm");
}

}  // namespace

TEST_CASE("E-LOWER-FRAGMENT-ACCESS: a fragment read element by element, outside a tensorized loop") {
  CHECK_NOTHROW(fragment_gemm({}));
  FragmentGemmCase c;
  c.store = false;
  CHECK_THROWS_WITH_AS(
      fragment_gemm(c),
      Contains(
          "'C.local.fragment' is in scope local.fragment (a warp's tile spread over its lanes' registers), "
          "but it is read by stage 'C' element by element, outside a tensorized loop; tensorize the loops "
          "of every stage that reads or writes it with intrinsics that know the fragment layout "
          "(ptx_tensor:: in te/ptx_tensor_intrins.hpp), or use scope \"local\""),
      Error);
  // Written element by element: a fragment stage whose loops are not tensorized.
  Tensor A = placeholder({32}, f32, "A");
  Tensor C = compute(
      {32}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  Tensor CF = s.cache_write(C, scope::fragment);
  auto [o, x] = s[C].split(C.axis(0), 32);
  s[C].bind(o, thread_axis(thread_tag::blockIdx_x));
  s[CF].compute_at(s[C], o);
  Tensor AS = s.cache_read(A, scope::shared, {CF});
  s[AS].compute_at(s[C], o);
  s[AS].bind(AS.axis(0), thread_axis(thread_tag::threadIdx_x));
  CHECK_THROWS_WITH_AS(
      lower(s, {A, C}, "written"),
      Contains("'C.local.fragment' is in scope local.fragment (a warp's tile spread over its "
               "lanes' registers), but it is written element by element"),
      Error);
}

TEST_CASE("E-LOWER-FRAGMENT-SIZE: a fragment whose region 32 lanes cannot share evenly") {
  Tensor A = placeholder({5, 7}, f32, "A");
  Tensor C = compute(
      {5, 7}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  Tensor CF = s.cache_write(C, scope::fragment);
  Tensor AS = s.cache_read(A, scope::shared, {CF});
  IterVar f = s[AS].fuse(AS.axis(0), AS.axis(1));
  auto [fo, x] = s[AS].split(f, 32);
  s[AS].bind(x, thread_axis(thread_tag::threadIdx_x));
  CHECK_THROWS_WITH_AS(
      lower(s, {A, C}, "odd_fragment"),
      Contains("stage 'C.local.fragment' is in scope local.fragment, which spreads 35 elements "
               "over the 32 lanes of a warp; the region it is computed for must have a constant "
               "number of elements that 32 divides"),
      Error);
}

TEST_CASE("E-LOWER-FRAGMENT-OPERAND: a tensor-core intrinsic given an operand in the wrong memory") {
  FragmentGemmCase global_a;
  global_a.a_stage_scope = "";
  CHECK_THROWS_WITH_AS(
      fragment_gemm(global_a),
      Contains("tensor intrinsic 'ptx_tensor.load_a.mk.float16': operand 'A' (the A tile) is in "
               "scope 'global', but ldmatrix reads shared memory: stage it with "
               "cache_read(tensor, \"shared\", ...)"),
      Error);
  FragmentGemmCase local_a;
  local_a.fragment_scope = scope::local;
  CHECK_THROWS_WITH_AS(
      fragment_gemm(local_a),
      Contains("operand 'A.shared.local' (the A fragment) is in scope 'local', but the tensor "
               "core keeps it in registers: make it a fragment (cache_read / cache_write with "
               "scope \"local.fragment\")"),
      Error);
}

TEST_CASE("E-LOWER-FRAGMENT-LANES: fragments in a kernel whose threadIdx.x is not one warp") {
  FragmentGemmCase half_warp;
  half_warp.lanes = 16;
  CHECK_THROWS_WITH_AS(
      fragment_gemm(half_warp),
      Contains("stage 'A.shared.local.fragment' is in scope local.fragment, a tile the 32 lanes "
               "of a warp hold together, but threadIdx.x has extent 16 (loop "),
      Error);
  CHECK_THROWS_WITH_AS(fragment_gemm(half_warp),
                       Contains("bind loops of extent 32 to threadIdx.x (the lanes)"), Error);
  FragmentGemmCase no_lanes;
  no_lanes.lanes = 0;
  CHECK_THROWS_WITH_AS(
      fragment_gemm(no_lanes),
      Contains("but no loop is bound to threadIdx.x; bind a loop of extent 32 to threadIdx.x"), Error);
}

TEST_CASE("E-LOWER-FRAGMENT-THREAD-X: a loop over a fragment bound to threadIdx.x") {
  FragmentGemmCase c;
  c.n = 256;  // 32 tiles of C, one per lane: the lanes would not share their tiles
  c.store_tiles_on_lanes = true;
  CHECK_THROWS_WITH_AS(
      fragment_gemm(c),
      Contains("stage 'C' reads 'C.local.fragment' (scope local.fragment, a tile the warp's 32 "
               "lanes hold together) in its loop 'j.outer', which is bound to threadIdx.x: each "
               "lane would take tiles of its own"),
      Error);
}

TEST_CASE("E-LOWER-FRAGMENT-SLOTS: double_buffer or pipeline on a fragment") {
  FragmentGemmCase c;
  c.double_buffer_c = true;
  CHECK_THROWS_WITH_AS(fragment_gemm(c),
                       Contains("double_buffer: stage 'C.local.fragment' is in scope local.fragment, whose "
                                "registers are indexed by constants; rotating slots would move it to local "
                                "memory. Pipeline the shared-memory tiles it is loaded from instead"),
                       Error);
}

TEST_CASE("E-LOWER-USER-PASS: a user pass that returns an undefined Stmt") {
  SymbolicAddOne g;
  PassContext ctx;
  ctx.add_pass(PassPosition::AfterFlatten, "forgetful", [](Stmt, const PassContext&) { return Stmt(); });
  CHECK_THROWS_WITH_AS(
      lower(create_schedule(g.C), {g.A, g.C}, "user_pass", ctx),
      Contains("lower 'user_pass': user pass 'forgetful' (after phase 'flatten') returned an "
               "undefined Stmt; a pass must return the body it was given, or its rewritten version"),
      Error);
}

// ---- build and targets -------------------------------------------------------------------------

TEST_CASE("E-BUILD-NO-CPU-BACKEND: build for the CPU in a program without the LLVM backend") {
  SymbolicAddOne g;
  runtime::CpuBackend* registered = runtime::cpu_backend_slot();
  runtime::cpu_backend_slot() = nullptr;  // as in a program that does not link loom::jit
  std::string message;
  try {
    build(g.f, Target::cpu());
  } catch (const Error& e) {
    message = e.what();
  }
  runtime::cpu_backend_slot() = registered;
  CHECK_MESSAGE(
      message.find("build(): this program has no CPU backend: link the CMake target loom::jit (it needs LLVM "
                   "19, Debian package llvm-19-dev); without CMake, include <loom/loom.hpp> header-only") !=
          std::string::npos,
      message);
}

TEST_CASE("E-CUDA-ARCH: an unknown CUDA architecture") {
  SimKernel k;
  CHECK_THROWS_WITH_AS(
      build(k.s, {k.A, k.B}, Target::cuda("gfx90a"), "twice"),
      Contains("unknown CUDA architecture 'gfx90a': name one as sm_<major><minor>, e.g. sm_80"), Error);
}

TEST_CASE("E-CUDA-NO-DRIVER: Target::cuda() on a machine without a CUDA driver or GPU") {
  if (runtime::cuda::driver_available()) {
    MESSAGE("a CUDA driver and GPU are present; this entry applies to machines without one");
    return;
  }
  SimKernel k;
  CHECK_THROWS_WITH_AS(build(k.s, {k.A, k.B}, Target::cuda(), "twice"),
                       Contains("build for Target::cuda_sim() (the GPU simulator)"), Error);
}

// ---- GPU launch limits (checked when the kernel is built) ------------------------------------

TEST_CASE("E-LAUNCH-BLOCK-DIM: more threads along one block dimension than CUDA allows") {
  Tensor A = placeholder({4096}, f32, "A");
  Tensor B = compute(
      {4096}, [&](Expr i) { return A(i); }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 2048);
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.x"));
  CHECK_THROWS_WITH_AS(
      build(s, {A, B}, Target::cuda_sim(), "wide"),
      Contains("kernel wide_kernel0 has threadIdx.x = 2048 (stage 'B'), more than the 1024 threads "
               "CUDA allows along x; split that axis by a smaller factor"),
      Error);
}

TEST_CASE("E-LAUNCH-BLOCK-SIZE: more threads per block than CUDA allows") {
  Tensor A = placeholder({64, 64}, f32, "A");
  Tensor B = compute(
      {64, 64}, [&](Expr i, Expr j) { return A(i, j); }, "B");
  Schedule s = create_schedule(B);
  auto [yo, yi] = s[B].split(B.axis(0), 32);
  s[B].bind(yo, thread_axis("blockIdx.x"));
  s[B].bind(yi, thread_axis("threadIdx.y"));
  s[B].bind(B.axis(1), thread_axis("threadIdx.x"));
  CHECK_THROWS_WITH_AS(
      build(s, {A, B}, Target::cuda_sim(), "square"),
      Contains("has 2048 threads per block (threadIdx.x = 64 (stage 'B'), threadIdx.y = 32 (stage "
               "'B')), more than the 1024 CUDA allows; split the axes bound to threadIdx by smaller "
               "factors"),
      Error);
}

TEST_CASE("E-LAUNCH-GRID: more blocks along a grid dimension than CUDA allows") {
  Tensor A = placeholder({70000, 2}, f32, "A");
  Tensor B = compute(
      {70000, 2}, [&](Expr i, Expr j) { return A(i, j); }, "B");
  Schedule s = create_schedule(B);
  s[B].bind(B.axis(0), thread_axis("blockIdx.y"));
  s[B].bind(B.axis(1), thread_axis("threadIdx.x"));
  CHECK_THROWS_WITH_AS(
      build(s, {A, B}, Target::cuda_sim(), "tall"),
      Contains("has blockIdx.y = 70000 (stage 'B'), more than the 65535 blocks CUDA allows along y; "
               "bind the larger axis to blockIdx.x"),
      Error);
}

TEST_CASE("E-LAUNCH-SHARED: more shared memory per block than the architecture has") {
  // Every block reads all of A (256 x 256 floats = 256 KB) through one shared-memory tile.
  const int n = 256;
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar r = reduce_axis(0, n, "r"), c = reduce_axis(0, n, "c");
  Tensor B = compute(
      {n},
      [&](Expr i) {
        return sum(A(r, c) * cast(f32, i), {r, c});
      },
      "B");
  Schedule s = create_schedule(B);
  Tensor AS = s.cache_read(A, "shared", {B});
  auto [bo, bi] = s[B].split(B.axis(0), 64);
  s[B].bind(bo, thread_axis("blockIdx.x"));
  s[B].bind(bi, thread_axis("threadIdx.x"));
  s[AS].compute_at(s[B], bo);
  auto [ao, ai] = s[AS].split(AS.axis(1), 64);  // the block's 64 threads copy the tile together
  s[AS].bind(ai, thread_axis("threadIdx.x"));
  CHECK_THROWS_WITH_AS(
      build(s, {A, B}, Target::cuda_sim(), "big_tile"),
      Contains("bytes of shared memory per block for A.shared (262144 bytes), more than the"), Error);
}

TEST_CASE("E-SIM-FLAG-DEADLOCK: a block waits on a flag that only a block never dispatched signals") {
  // Block 0 waits for block 1's flag; the modelled GPU holds one block at a time.
  const LoweredFunc f = cuda_test::flag_pair(/*waiter_first=*/true);
  SimOptions one_slot;
  one_slot.device = GpuDeviceSpec::for_compute_capability(80, 1);
  one_slot.device.max_blocks_per_sm = 1;
  Buffer<float> o({64});
  CHECK_THROWS_WITH_AS(
      simulate(f, {o}, one_slot),
      Contains("kernel flags_kernel0 deadlocks on grid flags (loom.flag_wait): block (0, 0, 0) (thread 0) "
               "waits until flags[0] == 1 (it is 0). Every resident block waits and none can run: 1 blocks "
               "are resident on sm_80 with 1 SMs (1 SMs x 1 blocks per SM, limited by blocks), so the grid's "
               "other 1 blocks (of 2) can never be dispatched: the grid is larger than what is co-resident "
               "(1 blocks)"),
      Error);
  CHECK_NOTHROW(simulate(f, {o}));  // the H100 holds both blocks
}

// ---- kernel calls (checked before anything runs; a rejected call writes nothing) ---------------

TEST_CASE("E-ARG-COUNT: a call with the wrong number of arguments") {
  SymbolicAddOne g;
  Buffer<float> a({5});
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {a}),
      Contains("kernel 'add_one' takes 2 arguments (A, C) but was called with 1: pass one argument "
               "per parameter, in this order"),
      ArgumentError);
}

TEST_CASE("E-ARG-KIND: a scalar where a buffer is expected, or a buffer for a scalar") {
  SymbolicAddOne g;
  Buffer<float> c = sentinel({5});
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {3, c}),
      Contains("argument 'A' of kernel 'add_one' is a buffer of float32 but a scalar was passed: "
               "pass a loom::Buffer<float> or a loom::BufferView"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-DTYPE: a buffer of the wrong element type") {
  SymbolicAddOne g;
  Buffer<double> a({5});
  Buffer<float> c = sentinel({5});
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {a, c}),
      Contains("argument 'A' of kernel 'add_one' has float64 elements but the kernel expects "
               "float32: pass a loom::Buffer<float> (convert the data first)"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-RANK: a buffer with the wrong number of dimensions") {
  SymbolicAddOne g;
  Buffer<float> a({5, 1});
  Buffer<float> c = sentinel({5});
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {a, c}),
      Contains("argument 'A' of kernel 'add_one' has 2 dimensions but the kernel expects 1 (shape "
               "[n]): pass a 1-dimensional buffer"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-SHAPE: a dimension that differs from the kernel's constant or computed extent") {
  Tensor A = placeholder({6, 6}, f32, "A");
  Tensor C = compute(
      {6, 6}, [&](Expr i, Expr j) { return A(i, j) + 1.0f; }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "fixed");
  Buffer<float> wide({6, 7});
  Buffer<float> c = sentinel({6, 6});
  CHECK_THROWS_WITH_AS(
      interpret(f, {wide, c}),
      Contains("dimension 1 of argument 'A' is 7, but kernel 'fixed' expects 6: pass a buffer of "
               "shape [6, 6]"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-SIZE-MISMATCH: two arguments that disagree on a symbolic size") {
  SymbolicAddOne g;
  Buffer<float> a({8});
  Buffer<float> c = sentinel({7});
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {a, c}),
      Contains("dimension 0 of argument 'C' is 7, but 'n' is already 8 from argument 'A' (dimension "
               "0) in the call of kernel 'add_one': pass arguments that agree on 'n'"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-NEGATIVE-DIM: a view with a negative dimension") {
  SymbolicAddOne g;
  Buffer<float> a({4});
  Buffer<float> c = sentinel({4});
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {a, BufferView(c.data(), {-4})}),
      Contains("dimension 0 of argument 'C' is negative (-4) in the call of kernel 'add_one': "
               "shapes must be >= 0"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-NULL: a buffer with a null data pointer") {
  SymbolicAddOne g;
  Buffer<float> c = sentinel({4});
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {BufferView(static_cast<float*>(nullptr), {4}), c}),
      Contains("argument 'A' of kernel 'add_one' has a null data pointer: allocate its memory (e.g. "
               "loom::Buffer<float>) before the call"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-STRIDES: a buffer laid out with other strides than the kernel's") {
  Tensor A = placeholder({4, 5}, f32, "A");
  Tensor C = compute(
      {4, 5}, [&](Expr i, Expr j) { return A(i, j) + 1.0f; }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "rows");
  Buffer<float> a({4, 5});
  Buffer<float> padded({4, 5}, {8, 1});
  padded.fill(kSentinel);
  CHECK_THROWS_WITH_AS(
      interpret(f, {a, padded}),
      Contains(
          "argument 'C' of kernel 'rows' has strides [8, 1] but the kernel expects [5, 1] "
          "(dimension 0 has stride 8, expected 5): pass a buffer laid out with strides [5, 1] (a compact "
          "row-major copy of this one: a kernel lowered from tensors takes its arguments compact)"),
      ArgumentError);
  CHECK(untouched(padded));
}

TEST_CASE("E-ARG-SIZE-RANGE: a size that does not fit the kernel's size variable") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, i8, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i); }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "bytes");
  int8_t small[16] = {};
  BufferView huge(small, {int64_t{1} << 32});
  CHECK_THROWS_WITH_AS(
      bind_arguments(f, {huge, huge}),
      Contains("dimension 0 of argument 'A' of kernel 'bytes' is 4294967296, which does not fit 'n' "
               "(int32, range -2147483648 to 2147483647): use smaller data or a kernel built with "
               "int64 sizes"),
      ArgumentError);
}

TEST_CASE("E-ARG-INDEX-RANGE: a buffer whose elements lie beyond the kernel's 32-bit flat index") {
  // Each dimension fits int32, but 65536 x 65536 elements do not: the flat index would wrap.
  Var n = size_var("n"), m = size_var("m");
  Tensor A = placeholder({n, m}, i8, "A");
  Tensor C = compute(
      {n, m}, [&](Expr i, Expr j) { return A(i, j); }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "wide_bytes");
  int8_t small[16] = {};
  BufferView huge(small, {65536, 65536});
  CHECK_THROWS_WITH_AS(
      bind_arguments(f, {huge, huge}),
      Contains("argument 'A' of kernel 'wide_bytes' has shape [65536, 65536], whose elements reach "
               "flat index 4294967295, beyond the 2147483647 that the kernel's int32 index "
               "arithmetic can address: build the kernel with int64 sizes"),
      ArgumentError);
}

TEST_CASE("E-ARG-UNBOUND-SIZE: a size variable no argument of the call binds") {
  Var m = size_var("m");
  SymbolicAddOne g;
  LoweredFunc f = g.f;
  f.size_vars.push_back(m);  // as a hand-built function that needs 'm' and takes no argument for it
  Buffer<float> a({5});
  Buffer<float> c = sentinel({5});
  CHECK_THROWS_WITH_AS(
      interpret(f, {a, c}),
      Contains("extent variable 'm' of kernel 'add_one' is unbound at call time: pass a buffer whose "
               "shape has 'm' as a dimension, or pass 'm' itself as a scalar argument"),
      ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-DLPACK: a DLTensor Loom cannot use (null, vector lanes, unsupported dtype)") {
  SymbolicAddOne g;
  Buffer<float> c = sentinel({4});
  const DLTensor* null_tensor = nullptr;
  CHECK_THROWS_WITH_AS(interpret(g.f, {null_tensor, c}),
                       Contains("argument 'A' of kernel 'add_one' is a null DLTensor pointer"),
                       ArgumentError);
  float data[4] = {};
  int64_t shape[1] = {4};
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.shape = shape;
  t.dtype = DLDataType{kDLFloat, 32, 4};
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {&t, c}),
      Contains("argument 'A' of kernel 'add_one' is a DLTensor with 4-lane elements; pass one element "
               "per lane (lanes = 1)"),
      ArgumentError);
  t.dtype = DLDataType{kDLComplex, 64, 1};
  CHECK_THROWS_WITH_AS(interpret(g.f, {&t, c}), Contains("which Loom does not support"), ArgumentError);
  CHECK(untouched(c));
}

TEST_CASE("E-ARG-DEVICE: GPU memory for a CPU kernel; another device or GPU for a Target::cuda() kernel") {
  SymbolicAddOne g;
  Buffer<float> c = sentinel({4});
  float data[4] = {};
  int64_t shape[1] = {4};
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCUDA, 0};
  t.ndim = 1;
  t.shape = shape;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  CHECK_THROWS_WITH_AS(
      interpret(g.f, {&t, c}),
      Contains("argument 'A' of kernel 'add_one' is in memory of DLPack device type 2 (id 0), which "
               "the CPU cannot access: copy it to host memory first"),
      ArgumentError);
  CHECK(untouched(c));

  // A kernel built for Target::cuda() takes host memory or CUDA memory of device 0.
  if (!cuda_test::have_nvrtc()) {
    MESSAGE("NVRTC is not installed: the Target::cuda() half needs it");
    return;
  }
  SimKernel k;
  Kernel f = build(k.s, {k.A, k.B}, Target::cuda("sm_80"), "twice");
  float gpu_data[SimKernel::n] = {};  // never read: every call below stops before the kernel runs
  int64_t gpu_shape[1] = {SimKernel::n};
  auto tensor = [&](DLDeviceType type, int id) {
    DLTensor x{};
    x.data = gpu_data;
    x.device = DLDevice{type, id};
    x.ndim = 1;
    x.shape = gpu_shape;
    x.dtype = DLDataType{kDLFloat, 32, 1};
    return x;
  };
  DLTensor rocm = tensor(kDLROCM, 0), second_gpu = tensor(kDLCUDA, 1), first_gpu = tensor(kDLCUDA, 0);
  Buffer<float> b = sentinel({SimKernel::n});
  CHECK_THROWS_WITH_AS(
      f(&rocm, b),
      Contains("argument 'A' of kernel 'twice' is in memory of DLPack device type 10 (id 0); a "
               "kernel built for Target::cuda() takes host memory or CUDA device memory "
               "(kDLCUDA): copy it to one of them first"),
      ArgumentError);
  CHECK_THROWS_WITH_AS(f(&second_gpu, b),
                       Contains("argument 'A' of kernel 'twice' is in the memory of CUDA device 1; Loom runs "
                                "kernels on device 0: pass memory of device 0 or host memory"),
                       ArgumentError);
  CHECK(untouched(b));
  // CUDA memory of device 0 passes every check: without a GPU, the call stops at the driver.
  if (!runtime::cuda::driver_available())
    CHECK_THROWS_WITH_AS(f(&first_gpu, b), Contains("no CUDA driver"), Error);
  // The simulator runs on the CPU: it refuses CUDA memory as a CPU kernel does.
  Kernel sim = k.build_sim();
  CHECK_THROWS_WITH_AS(sim(&first_gpu, b),
                       Contains("which the CPU cannot access: copy it to host memory first"), ArgumentError);
  CHECK(untouched(b));
}

TEST_CASE("E-ARG-ALIGNMENT: a buffer not aligned to its element type (compiled kernels)") {
  SimKernel k;
  Kernel f = k.build_sim();
  alignas(8) unsigned char bytes[4 * SimKernel::n + 8] = {};
  BufferView misaligned(reinterpret_cast<float*>(bytes + 1), {SimKernel::n});
  Buffer<float> b = sentinel({SimKernel::n});
  CHECK_THROWS_WITH_AS(f(misaligned, b), Contains("argument 'A' of kernel 'twice' has its data at address"),
                       ArgumentError);
  CHECK_THROWS_WITH_AS(
      f(misaligned, b),
      Contains("which is not aligned to 4 bytes (one float32 element): pass memory aligned to its "
               "element type"),
      ArgumentError);
  CHECK(untouched(b));
}

TEST_CASE("E-ARG-OVERLAP: an output that overlaps another argument (compiled kernels)") {
  SimKernel k;
  Kernel f = k.build_sim();
  Buffer<float> both = sentinel({SimKernel::n + 1});
  BufferView in(both.data(), {SimKernel::n}), out(both.data() + 1, {SimKernel::n});
  CHECK_THROWS_WITH_AS(
      f(in, out),
      Contains("arguments 'B' and 'A' of kernel 'twice' overlap in memory, and the kernel writes "
               "'B': compiled kernels assume distinct tensors do not alias; pass separate buffers"),
      ArgumentError);
  CHECK(untouched(both));
}

TEST_CASE("E-KERNEL-EMPTY: calling a default-constructed Kernel") {
  Kernel k;
  Buffer<float> a({4});
  CHECK_THROWS_WITH_AS(
      k(a), Contains("this loom::Kernel is empty: get one from build(...) before calling it"), Error);
}

TEST_CASE("E-KERNEL-WRONG-INSPECTION: asking a kernel for output of another target") {
  SimKernel k;
  Kernel f = k.build_sim();
  CHECK_THROWS_WITH_AS(
      f.sim_report(),
      Contains("kernel 'twice': sim_report() is for kernels built for Target::cuda_sim() and called "
               "at least once"),
      Error);
  CHECK_THROWS_WITH_AS(f.llvm_ir(), Contains("which has no LLVM IR or host assembly; see source() and ptx()"),
                       Error);
  CHECK_THROWS_WITH_AS(
      f.last_device_ms(),
      Contains("kernel 'twice': last_device_ms() is for kernels built for Target::cuda() and "
               "called at least once on a GPU; this one is built for cuda_sim"),
      Error);
}

TEST_CASE("E-INTERP-OUT-OF-BOUNDS: a read outside its input (interpreter)") {
  // The call's region check (E-ARG-INPUT-REGION) refuses this first; switched off, the
  // interpreter still catches the load itself.
  const int n = 8;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + A(i + 1); }, "C");
  PassContext unchecked;
  unchecked.check_input_regions = false;
  LoweredFunc f = lower(create_schedule(C), {A, C}, "overrun", unchecked);
  Buffer<float> a({n}), c({n});
  CHECK_THROWS_WITH_AS(
      interpret(f, {a, c}),
      Contains("out-of-bounds load from buffer 'A': index 8 is outside its extent of 8 float32 "
               "elements (valid indices are 0 to 7)"),
      Error);
}

// ---- the catalog and the tests stay in step --------------------------------------------------

TEST_CASE("catalog: every id in docs/errors.md has a test case, and every test case an entry") {
  const std::string source_dir = LOOM_SOURCE_DIR;
  const std::string catalog = read_text(source_dir + "/docs/errors.md");
  std::set<std::string> documented;
  for (const std::string& id : ids_after(catalog, "\n### `E-"))
    CHECK_MESSAGE(documented.insert(id).second, "id listed twice in docs/errors.md: ", id);
  // Every test source of tests/errors, and tests/hostile for the entries that need the LLVM backend.
  std::vector<std::string> files = {source_dir + "/tests/hostile/hostile_inputs_test.cpp"};
  for (const auto& entry : std::filesystem::directory_iterator(source_dir + "/tests/errors"))
    if (entry.path().extension() == ".cpp") files.push_back(entry.path().string());
  REQUIRE(files.size() >= 5);  // the catalog, te, schedule and lower-call errors, hostile inputs
  std::set<std::string> tested;
  for (const std::string& file : files) {
    const std::string source = read_text(file);
    // A test case named "<id>: what it is about", or a check tagged "// catalog: <id>" inside a
    // broader test case that already makes the mistake (so the catalog does not repeat it).
    std::vector<std::string> ids = test_case_ids(source);
    for (const std::string& id : ids_after(source, "// catalog: E-")) ids.push_back(id);
    for (const std::string& id : ids) CHECK_MESSAGE(tested.insert(id).second, "two test cases for ", id);
  }
  for (const std::string& id : documented) CHECK_MESSAGE(tested.count(id), id, " has no test case");
  for (const std::string& id : tested) CHECK_MESSAGE(documented.count(id), id, " is not in docs/errors.md");
  CHECK(documented.size() >= 40);
}

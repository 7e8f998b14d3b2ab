// Stage::pipeline(stages) (lower/inject_pipeline.hpp): shared tiles of a TE GEMM get a slot per
// stage, filled stages - 1 iterations ahead by cp.async (4-byte element copies, 16-byte vector
// copies), one commit group per iteration and wait_group(stages - 2) plus a barrier before a tile
// is read. Checked on the simulator (values against a double reference on sizes no tile divides,
// no races, cp.async's asynchrony enforced), through NVRTC and ptxas; copies cp.async cannot make
// stay plain stores; misuse is refused with the stage's name.
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// Builds `s` for the simulator, runs it on A (m x k), B (k x n) of small integers, and returns
/// the largest |C - A B| (exact: the sums of small integer products are exact in f32).
template <typename T>
double simulated_gemm_error(const Schedule& s, const Tensor& A, const Tensor& B, const Tensor& C, int64_t m,
                            int64_t n, int64_t k, SimReport* report = nullptr) {
  Kernel f = build(s, {A, B, C}, Target::cuda_sim("sm_80"), "pipelined");
  Buffer<T> a({m, k}), b({k, n});
  Buffer<float> c({m, n});
  for (int64_t i = 0; i < a.num_elements(); ++i)
    a.at_flat(i) = static_cast<T>(static_cast<float>(i * 7 % 13) - 6);
  for (int64_t i = 0; i < b.num_elements(); ++i)
    b.at_flat(i) = static_cast<T>(static_cast<float>(i * 5 % 11) - 5);
  f(a, b, c);
  if (report) *report = f.sim_report();
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
      worst = std::max(worst, std::abs(sum - static_cast<double>(c(i, j))));
    }
  return worst;
}

/// C = A B in 64 x 64 blocks of 16 x 16 threads with 4 x 4 outputs each; per k step of 16, the
/// A (64 x 16) and B (16 x 64) tiles are copied four floats per thread and access.
struct VectorCopyGemm {
  Tensor A, B, C;
  Schedule s;
  /// `lanes` floats per copy (4 or 2); with 2, each thread makes two copies of each tile, in a loop
  /// that `unroll_copies` unrolls into two statements.
  VectorCopyGemm(int64_t m, int64_t n, int64_t k, int stages, int lanes = 4, bool unroll_copies = false) {
    A = placeholder({m, k}, f32, "A");
    B = placeholder({k, n}, f32, "B");
    IterVar r = reduce_axis(0, k, "k");
    C = compute(
        {m, n}, [&](Expr i, Expr j) { return sum(A(i, r) * B(r, j), {r}); }, "C");
    s = create_schedule(C);
    Tensor AS = s.cache_read(A, scope::shared, {C}), BS = s.cache_read(B, scope::shared, {C});
    Tensor CL = s.cache_write(C, scope::local);
    auto [by, bx, yi, xi] = s[C].tile(C.axis(0), C.axis(1), 64, 64);
    auto [ty, yv] = s[C].split(yi, 4);
    auto [tx, xv] = s[C].split(xi, 4);
    s[C].reorder({by, bx, ty, tx, yv, xv});
    s[C].bind(by, thread_axis(thread_tag::blockIdx_y));
    s[C].bind(bx, thread_axis(thread_tag::blockIdx_x));
    s[C].bind(ty, thread_axis(thread_tag::threadIdx_y));
    s[C].bind(tx, thread_axis(thread_tag::threadIdx_x));
    s[CL].compute_at(s[C], tx);
    auto [ko, ki] = s[CL].split(CL.reduce_axis(0), 16);
    s[CL].reorder({ko, CL.axis(0), CL.axis(1), ki});
    for (const Tensor& t : {AS, BS}) {
      s[t].compute_at(s[CL], ko);
      auto [co, ci] = s[t].split(t.axis(1), lanes);  // four contiguous floats: one 16-byte copy
      IterVar f = s[t].fuse(t.axis(0), co);
      auto [fy, fx] = s[t].split(f, 16);
      if (lanes != 4) {  // 2 copies per thread: fy is 32 long
        auto [copies, y] = s[t].split(fy, 16);
        if (unroll_copies) s[t].unroll(copies);
        fy = y;
      }
      s[t].bind(fy, thread_axis(thread_tag::threadIdx_y));
      s[t].bind(fx, thread_axis(thread_tag::threadIdx_x));
      s[t].vectorize(ci);
      if (stages > 0) s[t].pipeline(stages);
    }
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("pipeline: the tiled GEMM's shared tiles in 2 to 4 stages of 4-byte cp.async copies") {
  for (int stages : {2, 3, 4}) {
    CAPTURE(stages);
    lib::TiledGemm g = lib::gpu_tiled_gemm(72, 16);  // 4.5 tiles: guarded copies, 5 k steps
    for (const auto& st : g.schedule.stages())
      if (st->scope == scope::shared) Stage(st.get()).pipeline(stages);
    const std::string ir = lower(g.schedule, {g.A, g.B, g.C}, "pipelined").to_string();
    CHECK(count(ir, "ptx.cp.async.ca.shared.global.4") == 2 * stages);  // prologue's and loop's, A and B
    if (stages > 2) CHECK(count(ir, cat("ptx.cp.async.wait_group.", stages - 2, "\"")) == 1);
    CHECK(count(ir, "ptx.cp.async.wait_group.0") == (stages == 2 ? 2 : 1));  // + the drain after the loop
    CHECK(count(ir, "ptx.cp.async.commit_group") == stages);                 // prologue's, one per iteration
    CHECK(contains(ir, cat("float32, [", stages * 256, "]), storage_scope = shared")));
    SimReport report;
    CHECK(simulated_gemm_error<float>(g.schedule, g.A, g.B, g.C, 72, 72, 72, &report) == 0);
    CHECK(report.races.empty());
  }
}

TEST_CASE("pipeline: vectorized tile copies become 16-byte cp.async, in as many stages as asked") {
  // K = 100: rows of A are whole float4s (100 = 25 x 4), so every copy is one 16-byte cp.async,
  // guarded where the tiles pass M, N or K. M and N divide no tile.
  VectorCopyGemm g(100, 72, 100, 3);
  const LoweredFunc f = lower(g.s, {g.A, g.B, g.C}, "pipelined");
  const std::string ir = f.to_string();
  CHECK(count(ir, "ptx.cp.async.cg.shared.global.16") == 6);  // A and B: 2 ahead, 1 in the loop
  CHECK_FALSE(contains(ir, "ptx.cp.async.ca.shared.global.4"));
  SimReport report;
  CHECK(simulated_gemm_error<float>(g.s, g.A, g.B, g.C, 100, 72, 100, &report) == 0);
  CHECK(report.races.empty());
  // K = 98 splits float4s across rows of A: its copies stay plain stores (in stages all the same),
  // B's (N = 72) are 16-byte cp.async; the results are the same.
  VectorCopyGemm odd(70, 72, 98, 4);
  const std::string odd_ir = lower(odd.s, {odd.A, odd.B, odd.C}, "pipelined").to_string();
  CHECK(count(odd_ir, "ptx.cp.async.cg.shared.global.16") == 4);  // B's: 3 ahead, 1 in the loop
  CHECK(simulated_gemm_error<float>(odd.s, odd.A, odd.B, odd.C, 70, 72, 98) == 0);
  if (!have_nvrtc()) return;
  cuda::CudaModule m = cuda::codegen_cuda(f);
  const std::string kernel = m.kernels.back().kernel.name;
  for (const std::string arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, "pipelined", arch, true);
    CHECK(contains(out.ptx, "cp.async.cg.shared.global"));
    CHECK(contains(out.ptx, "cp.async.wait_group 1"));
    if (auto r = runtime::cuda::run_ptxas(out.ptx, arch, kernel)) {
      CHECK(r->spill_stores == 0);
      CHECK(r->spill_loads == 0);
    }
  }
}

TEST_CASE("pipeline: a tile copy unrolled into several statements is still pipelined") {
  // Two 8-byte copies per thread and tile; unrolled, the producer of each buffer is two statements.
  for (bool unroll : {false, true}) {
    CAPTURE(unroll);
    VectorCopyGemm g(128, 64, 96, 3, 2, unroll);
    const std::string ir = lower(g.s, {g.A, g.B, g.C}, "pipelined").to_string();
    // A and B, two copies each, for 2 iterations ahead and 1 in the loop: 12 statements unrolled,
    // 6 copy loops rolled.
    CHECK(count(ir, "ptx.cp.async.ca.shared.global.8") == (unroll ? 12 : 6));
    CHECK(contains(ir, "ptx.cp.async.wait_group.1"));
    SimReport report;
    CHECK(simulated_gemm_error<float>(g.s, g.A, g.B, g.C, 128, 64, 96, &report) == 0);
    CHECK(report.races.empty());
  }
}

TEST_CASE("pipeline: copies cp.async cannot make (2-byte elements) stay stores, still in stages") {
  lib::TiledGemm g = lib::gpu_tiled_gemm(48, 16, f16);
  for (const auto& st : g.schedule.stages())
    if (st->scope == scope::shared) Stage(st.get()).pipeline(3);
  const std::string ir = lower(g.schedule, {g.A, g.B, g.C}, "pipelined").to_string();
  CHECK_FALSE(contains(ir, "cp.async"));
  CHECK(contains(ir, "float16, [768]), storage_scope = shared"));
  SimReport report;
  CHECK(simulated_gemm_error<half>(g.schedule, g.A, g.B, g.C, 48, 48, 48, &report) == 0);
  CHECK(report.races.empty());
}

TEST_CASE("pipeline: misuse names the stage and the fix; a refused call changes nothing") {
  lib::TiledGemm g = lib::gpu_tiled_gemm(32, 16);
  Stage as;
  for (const auto& st : g.schedule.stages())
    if (st->scope == scope::shared && !as.defined()) as = Stage(st.get());
  REQUIRE(as.defined());
  CHECK_THROWS_WITH_AS(as.pipeline(1),
                       doctest::Contains("pipeline: stage 'A.shared' asks for 1 stages; give 2 to 8"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(as.pipeline(9), doctest::Contains("asks for 9 stages"), ScheduleError);
  CHECK_THROWS_WITH_AS(g.schedule[g.A].pipeline(3),
                       doctest::Contains("pipeline: 'A' is a placeholder; pipeline a computed buffer"),
                       ScheduleError);
  as.double_buffer();
  CHECK_THROWS_WITH_AS(
      as.pipeline(3),
      doctest::Contains("'A.shared' is already double-buffered; double_buffer() is pipeline(2) "
                        "without cp.async: use one of them"),
      ScheduleError);
  lib::TiledGemm h = lib::gpu_tiled_gemm(32, 16);
  Stage hs;
  for (const auto& st : h.schedule.stages())
    if (st->scope == scope::shared && !hs.defined()) hs = Stage(st.get());
  hs.pipeline(3);
  CHECK_THROWS_WITH_AS(hs.double_buffer(), doctest::Contains("is already pipelined with 3 stages"),
                       ScheduleError);
  CHECK(hs->pipeline_stages == 3);
  CHECK_FALSE(hs->double_buffer);
}

TEST_CASE("pipeline: inside another serial loop, a run's prologue waits for the last run's readers") {
  // The fuzzer's seed 503476: k.inner outside k.outer, so the pipelined k.outer loop runs 8 times;
  // without a barrier before its prologue, the next run's cp.async copies overwrote slots that
  // other threads were still reading. A.shared and B.shared ask for different stage counts: the
  // loop takes the first, B.shared stays single.
  const int n = 22, m = 3, k = 19;
  Tensor A = placeholder({n, k}, f32, "A"), B = placeholder({k, m}, f32, "B");
  IterVar r = reduce_axis(0, k, "r");
  Tensor C = compute(
      {n, m}, [&](Expr i, Expr j) { return sum(A(i, r) * B(r, j), {r}); }, "C");
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, "shared", {C}), BS = s.cache_read(B, "shared", {C});
  auto [ko, ki] = s[C].split(C.reduce_axis(0), 8);
  auto [by, yi] = s[C].split(C.axis(0), 17);
  s[C].bind(by, thread_axis("blockIdx.y"));
  auto [ty, yv] = s[C].split(yi, NParts{13});
  s[C].bind(ty, thread_axis("threadIdx.y"));
  auto [bx, xi] = s[C].split(C.axis(1), 6);
  s[C].bind(bx, thread_axis("blockIdx.x"));
  auto [tx, xv] = s[C].split(xi, NParts{33});
  s[C].bind(tx, thread_axis("threadIdx.x"));
  s[C].reorder({by, bx, ty, tx, ki, ko, yv, xv});
  for (auto [t, stages] : {std::pair{AS, 4}, std::pair{BS, 2}}) {
    s[t].compute_at(s[C], ko);
    s[t].pipeline(stages);
    IterVar f = s[t].fuse(t.axis(0), t.axis(1));
    auto [fo, fx] = s[t].split(f, 33);
    s[t].bind(fx, thread_axis("threadIdx.x"));
    auto [fz, fy] = s[t].split(fo, 13);
    s[t].bind(fy, thread_axis("threadIdx.y"));
  }
  const std::string ir = lower(s, {A, B, C}, "pipelined").to_string();
  CHECK(contains(ir, "float32, [104]), storage_scope = shared"));  // A: 4 slots of 26
  CHECK(contains(ir, "float32, [33]), storage_scope = shared"));   // B: one
  SimReport report;
  CHECK(simulated_gemm_error<float>(s, A, B, C, n, m, k, &report) == 0);
  CHECK(report.races.empty());
}

// Virtual threads on the GPU path: the vthread GEMM and a vthread 1-D convolution give the reference
// results on Target::cuda_sim(), and with the virtual threads injected they load their shared tiles
// and pass barriers once instead of once per virtual thread; NVRTC compiles them without spills.
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>

#include <cmath>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// The lowering before virtual-thread injection existed: virtual-thread loops run serially.
LoweredFunc lower_with_serial_vthreads(const Case& c) {
  PassContext ctx;
  struct Serialize : IRMutator {
    using IRMutator::mutate;
    using IRMutator::visit;
    Stmt visit(const ForNode* op) override {
      Stmt s = IRMutator::visit(op);
      const auto* loop = s.as<ForNode>();
      if (loop->kind != ForKind::ThreadBinding || !is_virtual_thread_tag(loop->thread_tag)) return s;
      return ForNode::make(loop->loop_var, loop->min, loop->extent, ForKind::Serial, loop->body);
    }
  };
  ctx.add_pass(PassPosition::AfterFlatten, "serial_vthreads",
               [](Stmt body, const PassContext&) { return Serialize().mutate(body); });
  return lower(c.s, c.args, c.name, ctx);
}

/// Barriers one thread passes: each barrier times the trip counts of the loops around it that
/// are not launch dimensions (all constant in these kernels).
int64_t barriers_passed(const Stmt& s, int64_t trips = 1) {
  if (!s.defined()) return 0;
  if (s.as<BarrierNode>()) return trips;
  if (const auto* op = s.as<ForNode>()) {
    const bool launch = op->kind == ForKind::ThreadBinding && !is_virtual_thread_tag(op->thread_tag);
    const int64_t* extent = as_const_int(op->extent);
    REQUIRE((launch || extent));
    return barriers_passed(op->body, launch ? trips : trips * *extent);
  }
  int64_t n = 0;
  if (const auto* op = s.as<SeqNode>())
    for (const Stmt& part : op->seq) n += barriers_passed(part, trips);
  if (const auto* op = s.as<AllocateNode>()) n = barriers_passed(op->body, trips);
  if (const auto* op = s.as<AttrStmtNode>()) n = barriers_passed(op->body, trips);
  if (const auto* op = s.as<LetStmtNode>()) n = barriers_passed(op->body, trips);
  if (const auto* op = s.as<IfThenElseNode>())
    n = barriers_passed(op->then_case, trips) + barriers_passed(op->else_case, trips);
  return n;
}

/// C[i] = sum_k A[i + k] * W[k]: 64 outputs per block as 2 virtual threads ("vthread") of 32
/// threads, a local accumulator, A's window and W staged in shared memory 8 taps at a time.
Case vthread_conv1d(int n, int taps) {
  Tensor A = placeholder({n + taps - 1}, f32, "A");
  Tensor W = placeholder({taps}, f32, "W");
  IterVar k = reduce_axis(0, taps, "k");
  Tensor C = compute(
      {n}, [&](Expr i) { return sum(A(i + k) * W(k), {k}); }, "C");
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, "shared", {C});
  Tensor WS = s.cache_read(W, "shared", {C});
  Tensor CL = s.cache_write(C, "local");
  auto [bx, xi] = s[C].split(C.axis(0), 64);
  auto [v, xi2] = s[C].split(xi, NParts{2});
  auto [tx, xi3] = s[C].split(xi2, NParts{32});
  s[C].bind(bx, thread_axis("blockIdx.x"));
  s[C].bind(v, thread_axis("vthread"));
  s[C].bind(tx, thread_axis("threadIdx.x"));
  s[CL].compute_at(s[C], tx);
  auto [ko, ki] = s[CL].split(CL.reduce_axis(0), 8);
  s[CL].reorder({ko, ki, CL.axis(0)});
  for (const Tensor& c : {AS, WS}) {
    s[c].compute_at(s[CL], ko);
    auto [t, rest] = s[c].split(c.axis(0), NParts{32});
    s[c].bind(t, thread_axis("threadIdx.x"));
    (void)rest;
  }
  return {s, {A, W, C}, "vthread_conv1d"};
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

struct Run {
  SimReport report;
  int64_t barriers = 0;
};

/// Runs the gemm on the simulator and checks it against a float64 reference.
Run run_gemm(const LoweredFunc& lf, int n) {
  Kernel f = build(lf, Target::cuda_sim());
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  fill(a, 11);
  fill(b, 12);
  f(a, b, c);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int k = 0; k < n; ++k) acc += static_cast<double>(a(i, k)) * static_cast<double>(b(k, j));
      REQUIRE(std::abs(c(i, j) - acc) <= 1e-5 * (1 + std::abs(acc)));
    }
  return {f.sim_report(), barriers_passed(lf.body)};
}

Run run_conv1d(const LoweredFunc& lf, int n, int taps) {
  Kernel f = build(lf, Target::cuda_sim());
  Buffer<float> a({n + taps - 1}), w({taps}), c({n});
  fill(a, 13);
  fill(w, 14);
  f(a, w, c);
  for (int i = 0; i < n; ++i) {
    double acc = 0;
    for (int k = 0; k < taps; ++k) acc += static_cast<double>(a(i + k)) * static_cast<double>(w(k));
    REQUIRE(std::abs(c(i) - acc) <= 1e-5 * (1 + std::abs(acc)));
  }
  return {f.sim_report(), barriers_passed(lf.body)};
}

}  // namespace

TEST_CASE("cuda_vthread: the vthread GEMM loads its shared tiles once for its 4 virtual threads") {
  for (int n : {64, 70}) {  // 70: neither the 32-wide block tile nor the 8-deep k tile divides it
    CAPTURE(n);
    Case g = vthread_gemm(n);
    LoweredFunc injected = lower(g.s, g.args, g.name);
    Run now = run_gemm(injected, n);
    Run serial = run_gemm(lower_with_serial_vthreads(g), n);
    MESSAGE("n=" << n << ": barriers per thread " << serial.barriers << " -> " << now.barriers
                 << "; A.shared stores " << serial.report.buffer("A.shared").store.instructions << " -> "
                 << now.report.buffer("A.shared").store.instructions << "\n"
                 << now.report.to_string());
    CHECK(now.report.races.empty());
    CHECK(now.report.uninitialized_reads.empty());
    CHECK(now.report.launches.at(0).block == SimDim3{4, 4, 1});
    // Each tile is stored once instead of once per virtual thread (2 x 2); the reads stay one per
    // virtual thread and multiply-add.
    for (const char* tile : {"A.shared", "B.shared"}) {
      CAPTURE(tile);
      CHECK(serial.report.buffer(tile).store.instructions == 4 * now.report.buffer(tile).store.instructions);
      CHECK(serial.report.buffer(tile).load.instructions == now.report.buffer(tile).load.instructions);
    }
    // Two barriers per k.outer step (before the tile stores, before the reads), not eight.
    const int64_t k_steps = (n + 7) / 8;
    CHECK(now.barriers <= 2 * k_steps);
    CHECK(serial.barriers >= 4 * 2 * k_steps);
    const std::string text = injected.to_string();
    CHECK(count_of(text, "vthread") == count_of(text, "vthread_gemm"));  // only the kernel's name
  }
}

TEST_CASE("cuda_vthread: a 1-D convolution over 2 virtual threads, sizes that do not divide the tiles") {
  for (auto [n, taps] : {std::pair{300, 20}, {64, 8}, {5, 3}}) {
    CAPTURE(n);
    CAPTURE(taps);
    Case c = vthread_conv1d(n, taps);
    LoweredFunc injected = lower(c.s, c.args, c.name);
    const std::string text = injected.to_string();
    MESSAGE(text);
    // One 32-thread load of the window and the taps per k.outer step; two accumulators per thread.
    CHECK(text.find("IterVar(vthread") == std::string::npos);
    CHECK(text.find("allocate(C.local: Pointer(local float32), float32, [2])") != std::string::npos);
    Run now = run_conv1d(injected, n, taps);
    Run serial = run_conv1d(lower_with_serial_vthreads(c), n, taps);
    CHECK(now.report.races.empty());
    CHECK(now.report.uninitialized_reads.empty());
    for (const char* tile : {"A.shared", "W.shared"}) {
      CAPTURE(tile);
      CHECK(serial.report.buffer(tile).store.instructions == 2 * now.report.buffer(tile).store.instructions);
      CHECK(serial.report.buffer(tile).load.instructions == now.report.buffer(tile).load.instructions);
    }
    MESSAGE("barriers per thread " << serial.barriers << " -> " << now.barriers);
    CHECK(now.barriers <= 2 * ((taps + 7) / 8));
    CHECK(now.barriers < serial.barriers);
  }
}

TEST_CASE("cuda_vthread: NVRTC compiles the injected kernels and ptxas reports no spills") {
  if (!have_nvrtc()) return;
  for (const Case& c : {vthread_gemm(64), vthread_conv1d(300, 20)}) {
    CAPTURE(c.name);
    cuda::CudaModule m = cuda::codegen_cuda(lower(c.s, c.args, c.name));
    CHECK(count_of(m.source, "vthread") == count_of(m.source, c.name));  // no virtual-thread loop is left
    runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, c.name, "sm_80", true);
    CHECK(out.ptx.find(".entry " + m.kernels.at(0).kernel.name) != std::string::npos);
    std::optional<runtime::cuda::PtxasReport> report =
        runtime::cuda::run_ptxas(out.ptx, "sm_80", m.kernels[0].kernel.name);
    if (!report) {
      MESSAGE("ptxas not found; " << c.name << " compiled by NVRTC in " << out.milliseconds << " ms");
      continue;
    }
    MESSAGE(c.name << " (sm_80, NVRTC " << out.milliseconds << " ms):\n" << report->text);
    CHECK(report->spill_stores == 0);
    CHECK(report->spill_loads == 0);
  }
}

TEST_CASE("cuda_vthread: a virtual-thread count known only at run time runs as a serial loop in the kernel") {
  Var n("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  auto [bx, xi] = s[B].split(B.axis(0), NParts{4});
  auto [tx, v] = s[B].split(xi, NParts{32});  // ceil(ceil(n / 4) / 32) virtual threads per thread
  s[B].bind(bx, thread_axis("blockIdx.x"));
  s[B].bind(tx, thread_axis("threadIdx.x"));
  s[B].bind(v, thread_axis("vthread"));
  LoweredFunc f = lower(s, {A, B}, "symbolic_vthread");
  MESSAGE(f.to_string());
  CHECK(count_of(f.to_string(), "IterVar(vthread") == 0);
  Kernel k = build(f, Target::cuda_sim());
  for (int size : {1, 100, 333}) {
    CAPTURE(size);
    Buffer<float> a({size}), b({size});
    fill(a, 15);
    k(a, b);
    for (int i = 0; i < size; ++i) REQUIRE(b(i) == a(i) * 2.0f + 1.0f);
  }
}

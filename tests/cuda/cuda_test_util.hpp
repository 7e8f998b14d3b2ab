// Schedules the CUDA tests share (elementwise, tiled GEMM with shared/local caches, vthread GEMM,
// row sum with a cross-thread reduction, f16), and helpers to compile them with NVRTC and ptxas.
#pragma once

#include <loom/backend/build.hpp>
#include <loom/backend/cuda/nvrtc.hpp>
#include <loom/backend/cuda/ptxas.hpp>
#include <loom/core.hpp>
#include <loom/ir/grid_flags.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>

namespace loom::cuda_test {

struct Case {
  Schedule s;
  std::vector<LowerArg> args;
  std::string name;
};

/// B = A * 2 + 1 over n elements, 128 threads per block; n symbolic when n < 0.
inline Case elementwise(int n, DType t = f32) {
  Var nv("n");
  Expr size = n < 0 ? Expr(nv) : Expr(n);
  Tensor A = placeholder({size}, t, "A");
  Tensor B = compute(
      {size}, [&](Expr i) { return A(i) * make_const(t, 2.0) + make_const(t, 1.0); }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 128);
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.x"));
  return {s, {A, B}, "elementwise"};
}

/// C = A x B (n x n), tile x tile threads per block, shared tiles of A and B, a local accumulator.
inline Case tiled_gemm(int n, int tile = 16, DType t = f32) {
  lib::TiledGemm g = lib::gpu_tiled_gemm(n, tile, t);
  return {g.schedule, {g.A, g.B, g.C}, "gemm"};
}

/// TVM's GPU GEMM pattern at a small size: a 32x32 block tile over 2x2 virtual threads of 4x4
/// threads, each computing 4x4 elements in registers; 32x8 shared tiles of A and B (of scope
/// `shared_scope`: "shared" or "shared.dyn").
inline Case vthread_gemm(int n, const std::string& shared_scope = "shared") {
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, shared_scope, {C});
  Tensor BS = s.cache_read(B, shared_scope, {C});
  Tensor CL = s.cache_write(C, "local");
  auto [by, yi] = s[C].split(C.axis(0), 32);
  auto [bx, xi] = s[C].split(C.axis(1), 32);
  auto [vy, yi2] = s[C].split(yi, NParts{2});
  auto [vx, xi2] = s[C].split(xi, NParts{2});
  auto [ty, yi3] = s[C].split(yi2, NParts{4});
  auto [tx, xi3] = s[C].split(xi2, NParts{4});
  s[C].reorder({by, bx, vy, vx, ty, tx, yi3, xi3});
  s[C].bind(by, thread_axis("blockIdx.y"));
  s[C].bind(bx, thread_axis("blockIdx.x"));
  s[C].bind(vy, thread_axis("vthread.y"));
  s[C].bind(vx, thread_axis("vthread.x"));
  s[C].bind(ty, thread_axis("threadIdx.y"));
  s[C].bind(tx, thread_axis("threadIdx.x"));
  s[CL].compute_at(s[C], tx);
  auto [ko, ki] = s[CL].split(CL.reduce_axis(0), 8);
  s[CL].reorder({ko, ki, CL.axis(0), CL.axis(1)});
  for (const Tensor& c : {AS, BS}) {
    s[c].compute_at(s[CL], ko);
    IterVar fused = s[c].fuse(c.axis(0), c.axis(1));
    auto [f_ty, rest] = s[c].split(fused, NParts{4});
    auto [f_tx, f_in] = s[c].split(rest, NParts{4});
    s[c].bind(f_ty, thread_axis("threadIdx.y"));
    s[c].bind(f_tx, thread_axis("threadIdx.x"));
    (void)f_in;
  }
  return {s, {A, B, C}, "vthread_gemm"};
}

/// B[i] = sum_k A[i, k] (n x m): rows over blockIdx.x and threadIdx.y (32 per block), the reduce
/// axis split by `lanes` with the inner part on threadIdx.x: a cross-thread reduction.
inline Case row_sum(int n, int m, int lanes = 16, int rows = 32) {
  Tensor A = placeholder({n, m}, f32, "A");
  IterVar k = reduce_axis(0, m, "k");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  auto [ko, ki] = s[B].split(B.reduce_axis(0), lanes);
  auto [xo, xi] = s[B].split(B.axis(0), rows);
  s[B].reorder({xo, xi, ko, ki});
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.y"));
  s[B].bind(ki, thread_axis("threadIdx.x"));
  return {s, {A, B}, "row_sum"};
}

template <typename T>
void fill(const Buffer<T>& b, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<T>(dist(rng));
}

/// Whether NVRTC is present; when not, says why once per test (the test then skips NVRTC).
/// The venv scripts/sass-tools.sh makes in the build tree this test runs from (LOOM_SASS_TOOLS
/// and LOOM_CUOBJDUMP, which find_cuobjdump reads itself, name others).
inline std::string sass_tools_venv() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (exe.parent_path().parent_path() / "sass-tools" / "venv").string();
}

inline bool have_nvrtc() {
  if (runtime::cuda::nvrtc()) return true;
  MESSAGE("skipping NVRTC checks: " << runtime::cuda::nvrtc_unavailable_reason());
  return false;
}

/// A hand-built kernel: `body` run by `blocks` blocks (bx) of `threads` threads (tx), with flat
/// buffer parameters (data variable, element type, element count).
struct FlatParam {
  Var data;
  DType dtype;
  int64_t elements;
};
inline LoweredFunc flat_kernel(const std::string& name, const Var& bx, const Var& tx, int blocks, int threads,
                               Stmt body, const std::vector<FlatParam>& params) {
  body = ForNode::make(tx, 0, threads, ForKind::ThreadBinding, body, thread_tag::threadIdx_x);
  body = ForNode::make(bx, 0, blocks, ForKind::ThreadBinding, body, thread_tag::blockIdx_x);
  LoweredFunc f;
  f.name = name;
  for (const FlatParam& q : params) {
    FuncParam p;
    p.buffer = BufferParam{q.data.name(), q.data, q.dtype, {Expr(q.elements)}, {Expr(1)}};
    f.params.push_back(p);
  }
  f.body = body;
  return f;
}

/// Two blocks: one signals flags[0] = 1, the other waits for it.
inline LoweredFunc flag_pair(bool waiter_first) {
  Var flags("flags", handle_type), bx("bx", i32), tx("tx", i32), out("out", handle_type);
  const Expr waiter = waiter_first ? Expr(0) : Expr(1);
  Stmt body = SeqNode::make({IfThenElseNode::make(bx == waiter, flag_wait(flags, 0, 1),
                                                  IfThenElseNode::make(tx == 0, flag_signal(flags, 0, 1))),
                             StoreNode::make(out, cast(f32, bx), bx * 32 + tx)});
  body = ForNode::make(tx, 0, 32, ForKind::ThreadBinding, body, "threadIdx.x");
  body = ForNode::make(bx, 0, 2, ForKind::ThreadBinding, body, "blockIdx.x");
  LoweredFunc f;
  f.name = "flags";
  FuncParam p;
  p.buffer = BufferParam{"out", out, f32, {Expr(64)}, {Expr(1)}};
  f.params.push_back(p);
  f.body = AllocateNode::make(flags, i32, {Expr(1)}, "global", body);
  return f;
}

}  // namespace loom::cuda_test

// The definitions of lib/gpu_gemm.hpp: one block per tile of C, each running the shared main loop
// (lib/impl/gpu_gemm_main_loop.hpp) over the whole K range, then the guarded store of its
// accumulators as C is stored.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gpu_gemm.hpp");

#include <string>
#include <vector>

#include "loom/ir/op.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/lib/gpu_gemm.hpp"
#include "loom/lib/impl/gpu_gemm_main_loop.hpp"
#include "loom/lower/lower.hpp"

namespace loom::lib {

namespace detail {

/// The data-parallel kernel: a grid of ceil(n / block_n) x ceil(m / block_m) blocks, one per tile.
inline LoweredFunc build_gpu_gemm(const GpuGemm& g) {
  GpuGemmMainLoop main(g);
  LoweredFunc f;
  f.name =
      cat("gpu_gemm_", g.input.str(), g.a_layout == Layout::RowMajor ? "" : "_A_col",
          g.b_layout == Layout::RowMajor ? "" : "_B_col", g.c_layout == Layout::RowMajor ? "" : "_C_col");
  main.add_operands(f);
  const bool c_row = g.c_layout == Layout::RowMajor;
  Var out("C", handle_type);
  FuncParam p;
  const int rows = static_cast<int>(c_row ? g.m : g.n), cols = static_cast<int>(c_row ? g.n : g.m);
  p.buffer = BufferParam{"C", out, f32, {Expr(rows), Expr(cols)}, {Expr(cols), Expr(1)}};
  f.params.push_back(p);
  Var bx("block_n", i32), by("block_m", i32);
  const Expr m0 = by * g.config.block_m, n0 = bx * g.config.block_n;
  // Each lane's accumulators to C, inside M x N. Column-major, a warp's stores stay 32-byte
  // segments: lanes of a quad (t) write two adjacent columns of a row row-major, and the 8 groups
  // (g) write adjacent rows of a column column-major.
  Stmt store_c = main.each_accumulator([&](int i, const Expr& r, const Expr& c) {
    const Expr row = m0 + r, col = n0 + c;
    const Expr index = c_row ? row * static_cast<int>(g.n) + col : col * static_cast<int>(g.m) + row;
    const Expr value = LoadNode::make(f32, main.accumulator_buffer(), Expr(i));
    return IfThenElseNode::make(row < static_cast<int>(g.m) && col < static_cast<int>(g.n),
                                StoreNode::make(out, value, index));
  });
  Stmt s = main.allocate(SeqNode::make({main.tile_loop(m0, n0), store_c}));
  s = ForNode::make(main.thread(), 0, main.threads(), ForKind::ThreadBinding, s, thread_tag::threadIdx_x);
  s = ForNode::make(bx, 0, static_cast<int>((g.n + g.config.block_n - 1) / g.config.block_n),
                    ForKind::ThreadBinding, s, thread_tag::blockIdx_x);
  s = ForNode::make(by, 0, static_cast<int>((g.m + g.config.block_m - 1) / g.config.block_m),
                    ForKind::ThreadBinding, s, thread_tag::blockIdx_y);
  f.body = s;
  return lower_from(std::move(f), Phase::Loops);
}

/// How describe() names the copies of A (`a`: bytes per cp.async, 0 for element copies) and B.
inline std::string copies_text(int a, int b) {
  auto one = [](int bytes) {
    return bytes > 0 ? cat(bytes, "-byte cp.async") : std::string("element copies");
  };
  if (a == b) return one(a);
  return cat(one(a), " of A, ", one(b), " of B");
}

/// How describe() names operand A's (`a`) or B's layout.
inline const char* layout_text(Layout l, bool a) {
  if (l == Layout::RowMajor) return a ? "row-major (m x k)" : "row-major (k x n)";
  return a ? "column-major (stored k x m)" : "column-major (stored n x k)";
}

}  // namespace detail

LOOM_DECL std::string GpuGemm::describe() const {
  const bool tf32 = input == f32;
  return cat(
      "gpu_gemm ", m, "x", n, "x", k, " ",
      tf32 ? (config.tf32_round ? "float32 (rounded to tf32)" : "float32 (truncated to tf32)") : input.str(),
      " -> float32, A ", detail::layout_text(a_layout, true), ", B ", detail::layout_text(b_layout, false),
      c_layout == Layout::RowMajor ? "" : ", C column-major (stored n x m)", ": block ", config.block_m, "x",
      config.block_n, "x", config.block_k, ", warp ", config.warp_m, "x", config.warp_n, ", ", config.stages,
      " stages, ", detail::copies_text(a_copy_bytes, b_copy_bytes),
      tf32 ? ", mma.sync m16n8k8 tf32" : ", mma.sync m16n8k16");
}

LOOM_DECL GpuGemm gpu_gemm(int64_t m, int64_t n, int64_t k, DType input, const GpuGemmConfig& config,
                           Layout a_layout, Layout b_layout, Layout c_layout) {
  GpuGemm g =
      detail::gpu_gemm_problem(m, n, k, input, config, a_layout, b_layout, c_layout, "gpu_gemm", "config");
  g.func = detail::build_gpu_gemm(g);
  return g;
}

LOOM_DECL GpuGemm gpu_gemm(int64_t m, int64_t n, int64_t k, DType input) {
  return gpu_gemm(m, n, k, input, recorded_gpu_gemm_config(m, n, k, input));
}

}  // namespace loom::lib

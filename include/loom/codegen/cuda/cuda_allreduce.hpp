// CUDA lowering of thread_allreduce: warp shuffles (__shfl_down_sync) inside warps, shared memory
// between them, and a shared-memory tree when the reduced threads are not contiguous lanes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/codegen/cuda/cuda_types.hpp"
#include "loom/ir/thread_allreduce.hpp"

namespace loom::cuda {

/// Emits the allreduce through `e`, an emitter with: line(text), fresh(base) -> a new C name,
/// combine(r, k, lhs names, rhs names) -> C expression, expr(Expr) -> C expression,
/// thread_index(d) -> the C expression of threadIdx.x/y/z, result_store(r, k, value) -> statement,
/// and note_shared(bytes).
template <typename Emitter>
void emit_allreduce(Emitter& e, const ThreadAllreduce& r, const AllreducePlan& p) {
  const size_t n = r.size();
  std::vector<std::string> types, vals;
  for (size_t k = 0; k < n; ++k) types.push_back(c_type(r.combine[k].dtype()));
  e.line(cat("{  // thread_allreduce over ", p.group, " threads (",
             p.kind == AllreducePlan::Kind::WarpShuffle ? "warp shuffles"
             : p.kind == AllreducePlan::Kind::WarpsAndShared
                 ? "warp shuffles, then shared memory across warps"
                 : "shared-memory tree",
             ")"));
  e.indent(1);
  for (size_t k = 0; k < n; ++k) {
    vals.push_back(e.fresh("red_val"));
    e.line(cat(types[k], " ", vals[k], " = ", e.expr(r.values[k]), ";"));
  }
  // Combines `other` into vals (all values at once: a combiner may read every lhs and rhs).
  auto combine_into = [&](const std::vector<std::string>& other) {
    std::vector<std::string> next;
    for (size_t k = 0; k < n; ++k) next.push_back(e.fresh("red_next"));
    for (size_t k = 0; k < n; ++k)
      e.line(cat("const ", types[k], " ", next[k], " = ", e.combine(r, k, vals, other), ";"));
    for (size_t k = 0; k < n; ++k) e.line(cat(vals[k], " = ", next[k], ";"));
  };
  // The linear thread index, which the warp-only plan needs just for a partial last warp.
  const bool need_tid = p.kind != AllreducePlan::Kind::WarpShuffle || p.threads % 32 != 0;
  const std::string tid = need_tid ? e.fresh("red_tid") : "";
  if (need_tid)
    e.line(cat("const int ", tid, " = ", e.thread_index(0), " + ", p.block[0], " * (", e.thread_index(1),
               " + ", p.block[1], " * ", e.thread_index(2), ");"));
  // The lanes of the last warp when the block is not a multiple of 32 threads.
  const std::string mask = e.fresh("red_mask");
  if (p.threads % 32 == 0) {
    e.line(cat("const unsigned ", mask, " = 0xffffffffu;"));
  } else {
    e.line(cat("const unsigned ", mask, " = (", tid, " / 32 == ", p.threads / 32, ") ? ((1u << ",
               p.threads % 32, ") - 1u) : 0xffffffffu;"));
  }
  auto shuffle_reduce = [&](int64_t width) {
    e.line(cat("for (int off = ", width / 2, "; off > 0; off >>= 1) {"));
    e.indent(1);
    std::vector<std::string> other;
    for (size_t k = 0; k < n; ++k) {
      other.push_back(e.fresh("red_other"));
      e.line(cat("const ", types[k], " ", other[k], " = loom_shfl_down(", mask, ", ", vals[k], ", off, ",
                 width, ");"));
    }
    combine_into(other);
    e.indent(-1);
    e.line("}");
  };
  e.use_shuffle();
  if (p.kind == AllreducePlan::Kind::WarpShuffle) {
    if (p.group > 1) shuffle_reduce(p.group);
    for (size_t k = 0; k < n; ++k)
      e.line(cat(vals[k], " = loom_shfl(", mask, ", ", vals[k], ", 0, ", p.group, ");"));
  } else if (p.kind == AllreducePlan::Kind::WarpsAndShared) {
    const int64_t warps = p.group / 32;  // warps per group
    std::vector<std::string> bufs;
    for (size_t k = 0; k < n; ++k) {
      bufs.push_back(e.fresh("red_buf"));
      e.line(cat("__shared__ ", types[k], " ", bufs[k], "[", p.groups * warps, "];"));
      e.note_shared(p.groups * warps * r.combine[k].dtype().bytes());
    }
    shuffle_reduce(32);
    const std::string g = e.fresh("red_group"), lane = e.fresh("red_lane");
    e.line(cat("const int ", g, " = ", tid, " / ", p.group, ", ", lane, " = ", tid, " % ", p.group, ";"));
    e.line(cat("if (", lane, " % 32 == 0) {"));
    for (size_t k = 0; k < n; ++k)
      e.line(cat("  ", bufs[k], "[", g, " * ", warps, " + ", lane, " / 32] = ", vals[k], ";"));
    e.line("}");
    e.line("__syncthreads();");
    e.line(cat("if (", lane, " < 32) {"));
    e.indent(1);
    for (size_t k = 0; k < n; ++k)
      e.line(cat(vals[k], " = ", lane, " < ", warps, " ? ", bufs[k], "[", g, " * ", warps, " + ", lane,
                 "] : ", e.expr(r.identity[k]), ";"));
    shuffle_reduce(32);
    e.line(cat("if (", lane, " == 0) {"));
    for (size_t k = 0; k < n; ++k) e.line(cat("  ", bufs[k], "[", g, " * ", warps, "] = ", vals[k], ";"));
    e.line("}");
    e.indent(-1);
    e.line("}");
    e.line("__syncthreads();");
    for (size_t k = 0; k < n; ++k) e.line(cat(vals[k], " = ", bufs[k], "[", g, " * ", warps, "];"));
    e.line("__syncthreads();  // the buffers may be reused by the next allreduce");
  } else {
    // Position of this thread in its group (r) and the group's index (g), over the reduced
    // and the kept dimensions.
    std::string r_expr = "0", g_expr = "0";
    int64_t r_scale = 1, g_scale = 1;
    for (int d = 0; d < 3; ++d) {
      std::string& target = p.reduced[d] ? r_expr : g_expr;
      int64_t& scale = p.reduced[d] ? r_scale : g_scale;
      if (p.block[d] == 1) continue;
      target = cat(target, " + ", scale, " * ", e.thread_index(d));
      scale *= p.block[d];
    }
    const std::string g = e.fresh("red_group"), lane = e.fresh("red_lane");
    e.line(cat("const int ", lane, " = ", r_expr, ", ", g, " = ", g_expr, ";"));
    std::vector<std::string> bufs;
    for (size_t k = 0; k < n; ++k) {
      bufs.push_back(e.fresh("red_buf"));
      e.line(cat("__shared__ ", types[k], " ", bufs[k], "[", p.threads, "];"));
      e.note_shared(p.threads * r.combine[k].dtype().bytes());
      e.line(cat(bufs[k], "[", g, " * ", p.group, " + ", lane, "] = ", vals[k], ";"));
    }
    e.line("__syncthreads();");
    int64_t half = 1;
    while (half * 2 < p.group) half *= 2;
    e.line(cat("for (int s = ", half, "; s > 0; s >>= 1) {"));
    e.indent(1);
    e.line(cat("if (", lane, " < s && ", lane, " + s < ", p.group, ") {"));
    e.indent(1);
    std::vector<std::string> other;
    for (size_t k = 0; k < n; ++k) {
      other.push_back(e.fresh("red_other"));
      e.line(cat(vals[k], " = ", bufs[k], "[", g, " * ", p.group, " + ", lane, "];"));
      e.line(cat("const ", types[k], " ", other[k], " = ", bufs[k], "[", g, " * ", p.group, " + ", lane,
                 " + s];"));
    }
    combine_into(other);
    for (size_t k = 0; k < n; ++k)
      e.line(cat(bufs[k], "[", g, " * ", p.group, " + ", lane, "] = ", vals[k], ";"));
    e.indent(-1);
    e.line("}");
    e.line("__syncthreads();");
    e.indent(-1);
    e.line("}");
    for (size_t k = 0; k < n; ++k) e.line(cat(vals[k], " = ", bufs[k], "[", g, " * ", p.group, "];"));
    e.line("__syncthreads();  // the buffers may be reused by the next allreduce");
  }
  for (size_t k = 0; k < n; ++k) e.line(e.result_store(r, k, vals[k]));
  e.indent(-1);
  e.line("}");
}

}  // namespace loom::cuda

// Bank-conflict avoidance for a shared-memory tile: measure the accesses' conflicts analytically
// (sim/bank_analysis.hpp), then choose the smallest storage_align padding or a CuTe-style XOR
// swizzle that makes every load and store conflict-free, and apply it to the schedule.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/lower.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/sim/bank_analysis.hpp"
#include "loom/sim/simulator.hpp"
#include "loom/te/compute.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/reduction.hpp"
#include "loom/te/thread_axis.hpp"

namespace loom::lib {

/// What avoid_bank_conflicts chose for one buffer, and the counts before and after.
struct BankConflictFix {
  enum class Kind { None, Padding, Swizzle };
  std::string buffer;
  Kind kind = Kind::None;
  int64_t row_length = 0;                      // elements in a row of the realized tile
  int64_t row_stride = 0;                      // elements from one row to the next once laid out
  int64_t align_factor = 0, align_offset = 0;  // Padding: the storage_align(axis, factor, offset) applied
  SwizzleLayout swizzle;                       // Swizzle: the swizzle applied
  SimBankStats before_load, before_store, after_load, after_store;
  bool conflict_free = false;  // after the fix, no access of the buffer has a conflict

  int64_t before_conflicts() const { return before_load.conflicts() + before_store.conflicts(); }
  int64_t after_conflicts() const { return after_load.conflicts() + after_store.conflicts(); }
  std::string choice() const {
    switch (kind) {
      case Kind::None: return "none";
      case Kind::Padding:
        return cat("padding: storage_align(factor ", align_factor, ", offset ", align_offset,
                   "), row stride ", row_stride, " instead of ", row_length);
      case Kind::Swizzle: return cat("swizzle ", swizzle.str());
    }
    return "?";
  }
  std::string str() const {
    return cat(buffer, ": ", choice(), "; conflicts ", before_conflicts(), " -> ", after_conflicts(),
               " (wavefronts ", before_load.wavefronts + before_store.wavefronts, " -> ",
               after_load.wavefronts + after_store.wavefronts, ")");
  }
};

/// Which layouts avoid_bank_conflicts may choose, and the analysis' inputs.
struct BankFixOptions {
  bool allow_padding = true;  // storage_align padding of the rows (costs shared memory)
  bool allow_swizzle = true;  // an XOR swizzle (costs index arithmetic; not for tensorize/extern operands)
  BankAnalysisOptions analysis;
};

namespace detail {

/// One candidate layout and what the replayed trace says about it.
struct BankCandidate {
  BankConflictFix::Kind kind = BankConflictFix::Kind::None;
  int64_t padding = 0;
  SwizzleLayout swizzle;
  int64_t conflicts = 0, wavefronts = 0;
  SimBankStats load, store;
};

/// The counts of the buffers in `rows` (indices into trace.buffers) under `map`.
inline BankCandidate score_layout(const BankTrace& trace, const std::vector<int>& rows,
                                  const std::function<int64_t(int64_t)>& map) {
  LayoutMaps maps;
  if (map)
    for (int r : rows) maps[r] = map;
  BankReport report = replay_bank_trace(trace, maps);
  BankCandidate c;
  for (int r : rows) {
    c.load += report.buffers[static_cast<size_t>(r)].load;
    c.store += report.buffers[static_cast<size_t>(r)].store;
  }
  c.conflicts = c.load.conflicts() + c.store.conflicts();
  c.wavefronts = c.load.wavefronts + c.store.wavefronts;
  return c;
}

inline std::function<int64_t(int64_t)> padding_map(int64_t row, int64_t stride) {
  return
      [row, stride](int64_t x) { return int_math::floordiv(x, row) * stride + int_math::floormod(x, row); };
}

/// The best layout for a buffer with rows of `row` elements: conflict-free first, then fewer
/// wavefronts, then no extra memory (a swizzle), then the smallest padding or swizzle.
/// Candidates: paddings of 1 element up to 32 banks' worth, and every Swizzle<B,M,S> whose
/// permuted blocks (2^(M+B) elements) divide the row.
inline BankCandidate choose_layout(const BankTrace& trace, const std::vector<int>& rows, int64_t row,
                                   int element_bytes, bool allow_padding, bool allow_swizzle = true) {
  BankCandidate best = score_layout(trace, rows, nullptr);
  const BankCandidate baseline = best;
  auto better = [&](const BankCandidate& c) {
    if ((c.conflicts == 0) != (best.conflicts == 0)) return c.conflicts == 0;
    if (c.conflicts != 0 && c.conflicts != best.conflicts) return c.conflicts < best.conflicts;
    if (c.wavefronts != best.wavefronts) return c.wavefronts < best.wavefronts;
    // Equal counts: a swizzle costs no memory; otherwise the first (smallest) candidate stays.
    return best.kind == BankConflictFix::Kind::Padding && c.kind == BankConflictFix::Kind::Swizzle;
  };
  if (baseline.conflicts == 0) return baseline;
  if (allow_padding) {
    const int64_t max_padding = std::max<int64_t>(1, 128 / element_bytes);
    for (int64_t p = 1; p <= max_padding; ++p) {
      BankCandidate c = score_layout(trace, rows, padding_map(row, row + p));
      c.kind = BankConflictFix::Kind::Padding;
      c.padding = p;
      if (better(c)) best = c;
    }
  }
  for (int b = 1; b <= 6 && allow_swizzle; ++b)
    for (int s = b; s <= 10; ++s)
      for (int m = 0; m + b <= 16; ++m) {
        const SwizzleLayout layout{b, m, s};
        if (row % layout.period() != 0) continue;
        BankCandidate c = score_layout(trace, rows, [layout](int64_t x) { return layout.apply(x); });
        c.kind = BankConflictFix::Kind::Swizzle;
        c.swizzle = layout;
        if (better(c)) best = c;
      }
  // A layout that does not lower the wavefronts is not worth applying.
  if (best.wavefronts >= baseline.wavefronts) return baseline;
  return best;
}

/// The trace rows (shared Allocates) named `name`.
inline std::vector<int> rows_named(const BankTrace& trace, const std::string& name) {
  std::vector<int> rows;
  for (size_t i = 0; i < trace.buffers.size(); ++i)
    if (trace.buffers[i].name == name) rows.push_back(static_cast<int>(i));
  return rows;
}

/// The realized extents of every tensor, read from the Realize nodes after the schedule phase.
struct RealizedShapes {
  std::unordered_map<std::string, std::vector<Expr>> extents;  // by tensor name
  std::unordered_map<std::string, std::string> scope;
  Stmt operator()(Stmt body, const PassContext&) {
    struct Visitor : IRVisitor {
      RealizedShapes* self;
      void visit(const RealizeNode* op) override {
        Tensor t = as_tensor(op->producer);
        std::vector<Expr> e;
        for (const Range& r : op->bounds) e.push_back(r.extent);
        self->extents.emplace(t.name(), e);
        self->scope.emplace(t.name(), op->scope);
        IRVisitor::visit(op);
      }
    } v;
    v.self = this;
    v.visit_stmt(body);
    return body;
  }
};

inline int64_t constant_row_length(const std::vector<Expr>& extents, const std::string& where) {
  int64_t row = 1;
  for (size_t d = extents.size() >= 2 ? extents.size() - 1 : 0; d < extents.size(); ++d) {
    const int64_t* n = as_const_int(extents[d]);
    if (!n)
      throw Error(
          cat(where, ": the row length ", to_string(extents[d]),
              " of the realized tile is not a constant; bank conflicts are analysed for constant tiles"));
    row *= *n;
  }
  return row;
}

}  // namespace detail

/// Measures the bank conflicts of `cached` (a shared-memory stage of `s`, e.g. from
/// cache_read(..., "shared")) in the lowering of `s` with `args`, and when some load or store has
/// conflicts applies the best of: the smallest storage_align padding of its rows, or an XOR
/// swizzle (s[cached].swizzle). Returns what it chose, with the analytic counts before and after.
///
///   lib::BankConflictFix fix = lib::avoid_bank_conflicts(s, AS, {A, B}, "transpose");
///   std::cout << fix.str();   // A.shared: padding ... or swizzle Swizzle<5,0,5>; conflicts 4690 -> 0
inline BankConflictFix avoid_bank_conflicts(Schedule& s, const Tensor& cached,
                                            const std::vector<LowerArg>& args,
                                            const std::string& name = "main",
                                            const BankFixOptions& options = {}) {
  const std::string where = cat("avoid_bank_conflicts on '", cached.defined() ? cached.name() : "?", "'");
  if (!cached.defined()) throw Error(cat(where, ": the tensor is undefined"));
  Stage stage = s[cached];
  StageNode& node = *stage.operator->();
  if (!is_shared_scope(node.scope))
    throw Error(cat(
        where, ": stage '", cached.name(), "' is in scope '", node.scope.empty() ? scope::global : node.scope,
        "'; pass a shared-memory stage, e.g. the result of cache_read(tensor, \"shared\", readers)"));
  if (!node.storage_align.empty() || node.swizzle.defined())
    throw Error(cat(where, ": stage '", cached.name(), "' already has ",
                    node.swizzle.defined() ? "a swizzle" : "storage_align padding",
                    "; remove it and let avoid_bank_conflicts choose the layout"));

  auto shapes = std::make_shared<detail::RealizedShapes>();
  auto lower_and_trace = [&](const Schedule& sch) {
    PassContext ctx;
    ctx.add_pass(PassPosition::AfterSchedule, "realized_shapes",
                 [shapes](Stmt body, const PassContext& c) { return (*shapes)(std::move(body), c); });
    return trace_bank_accesses(lower(sch, args, name, ctx), options.analysis);
  };
  BankTrace trace = lower_and_trace(s);
  auto found = shapes->extents.find(cached.name());
  if (found == shapes->extents.end())
    throw Error(cat(where, ": the lowering of '", name, "' does not allocate '", cached.name(),
                    "'; pass a stage of this schedule that is computed (not inlined) in a kernel"));
  std::vector<int> rows = detail::rows_named(trace, cached.name());
  if (rows.empty())
    throw Error(cat(where, ": '", cached.name(),
                    "' is not accessed in a kernel (a loop bound to blockIdx/threadIdx)"));
  const std::vector<Expr>& extents = found->second;
  const int64_t row = detail::constant_row_length(extents, where);
  const int bytes = cached.dtype().bytes();

  BankConflictFix fix;
  fix.buffer = cached.name();
  fix.row_length = fix.row_stride = row;
  const detail::BankCandidate before = detail::score_layout(trace, rows, nullptr);
  fix.before_load = before.load;
  fix.before_store = before.store;
  const detail::BankCandidate best = detail::choose_layout(
      trace, rows, row, bytes, options.allow_padding && extents.size() >= 2, options.allow_swizzle);
  fix.kind = best.kind;
  if (best.kind == BankConflictFix::Kind::Padding) {
    fix.row_stride = row + best.padding;
    // TVM's rule: the stride becomes the smallest k * factor + offset >= row.
    fix.align_factor = best.padding < row ? row : row + best.padding;
    fix.align_offset = best.padding < row ? best.padding : 0;
    stage.storage_align(cached.axis(static_cast<int>(extents.size()) - 2), fix.align_factor,
                        fix.align_offset);
  } else if (best.kind == BankConflictFix::Kind::Swizzle) {
    fix.swizzle = best.swizzle;
    stage.swizzle(best.swizzle.bits, best.swizzle.base, best.swizzle.shift);
  }
  // The counts after: from the real lowering with the layout applied, not from the prediction.
  BankTrace after = fix.kind == BankConflictFix::Kind::None ? trace : lower_and_trace(s);
  const detail::BankCandidate measured =
      detail::score_layout(after, detail::rows_named(after, cached.name()), nullptr);
  fix.after_load = measured.load;
  fix.after_store = measured.store;
  fix.conflict_free = measured.conflicts == 0;
  return fix;
}

}  // namespace loom::lib

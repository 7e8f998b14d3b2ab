// The definitions of backend/lint.hpp: one walk over a CPU kernel's lowered body that keeps the
// loops around each statement and reports each cliff once per (check, loop, buffer or function).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/backend/lint.hpp");

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "loom/backend/lint.hpp"
#include "loom/codegen/llvm/math_lanes.hpp"
#include "loom/ir/clamped_ramp.hpp"
#include "loom/ir/lane_runs.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/runtime/thread_pool.hpp"

namespace loom {

namespace detail {

/// The distance between neighbouring lanes of a vector index, where it is a constant: ramps,
/// broadcasts, and sums, differences and constant multiples of them.
inline std::optional<int64_t> lane_stride(const Expr& index) {
  if (index.dtype().lanes == 1) return 0;
  if (const RampNode* r = index.as<RampNode>()) {
    if (const int64_t* s = as_const_int(simplify(r->stride))) return *s;
    return std::nullopt;
  }
  if (index.as<BroadcastNode>()) return 0;
  auto both = [](const Expr& a, const Expr& b) -> std::optional<std::pair<int64_t, int64_t>> {
    std::optional<int64_t> x = lane_stride(a), y = lane_stride(b);
    if (!x || !y) return std::nullopt;
    return std::make_pair(*x, *y);
  };
  if (const AddNode* add = index.as<AddNode>())
    if (auto s = both(add->a, add->b)) return s->first + s->second;
  if (const SubNode* sub = index.as<SubNode>())
    if (auto s = both(sub->a, sub->b)) return s->first - s->second;
  if (const MulNode* mul = index.as<MulNode>()) {
    // A ramp times a broadcast constant (either side).
    for (auto [v, c] : {std::make_pair(mul->a, mul->b), std::make_pair(mul->b, mul->a)}) {
      const BroadcastNode* b = c.as<BroadcastNode>();
      const int64_t* k = b ? as_const_int(b->value) : nullptr;
      std::optional<int64_t> s = lane_stride(v);
      if (k && s) return *s * *k;
    }
  }
  return std::nullopt;
}

class Linter : public IRVisitor {
 public:
  Linter(std::string kernel, int threads) : kernel_(std::move(kernel)), threads_(threads) {}
  std::vector<LintFinding> findings;

 protected:
  using IRVisitor::visit;

  void visit(const ForNode* op) override {
    const int64_t* extent = as_const_int(op->extent);
    const std::string& name = op->loop_var.name();
    if (op->kind == ForKind::Vectorized)
      report(
          "scalar-vector-loop", name, "",
          cat("loop '", name,
              "' is marked vectorized, but its body could not become vector code (it "
              "allocates, holds a loop whose bounds vary across lanes, or has a side effect): it runs as "
              "a scalar loop unless LLVM vectorizes it. Vectorize a loop whose body is plain arithmetic on "
              "loads and stores"));
    if (op->kind == ForKind::Parallel && extent && *extent < threads_)
      report("parallel-few-iterations", name, "",
             cat("parallel loop '", name, "' has ", *extent, " iterations for ", threads_, " threads, so ",
                 threads_ - *extent,
                 " threads idle; parallelize an outer loop with more iterations, or fuse loops before "
                 "parallel (fuse, then parallel)"));
    loops_.push_back(op);
    // Whether this loop holds no other: decided once here, not at every access inside it.
    innermost_serial_.push_back(op->kind == ForKind::Serial && !contains_loop(op->body));
    IRVisitor::visit(op);
    innermost_serial_.pop_back();
    loops_.pop_back();
  }

  void visit(const StoreNode* op) override {
    const ForNode* loop = innermost();
    if (loop && op->value.dtype().lanes > 1 && op->predicate.defined() && op->predicate.dtype().lanes > 1 &&
        !runs_once(loop))
      report("masked-vector", loop->loop_var.name(), op->buffer.name(),
             cat("stores to '", op->buffer.name(), "' in loop '", loop->loop_var.name(),
                 "' are masked on every iteration (", op->value.dtype().lanes,
                 " lanes, guarded by a condition that varies across lanes): the vectorized extent is not a "
                 "multiple of its lanes, or a guard depends on the vectorized loop. Split by a factor that "
                 "divides the extent (or pad the tensor to a multiple of the lanes), so that no lane is ever "
                 "masked"));
    check_access(op->buffer, op->index, "stores to");
    IRVisitor::visit(op);
  }

  void visit(const LoadNode* op) override {
    check_access(op->buffer, op->index, "loads of");
    IRVisitor::visit(op);
  }

  void visit(const CallNode* op) override {
    const ForNode* loop = innermost();
    if (op->dtype.lanes > 1 && op->is_pure() && codegen::is_math_function(op->name) &&
        !codegen::cpu_math_stays_vector(op->name, op->dtype.element_of()))
      report("scalar-math", loop ? loop->loop_var.name() : "", op->name,
             cat(op->name, " on ", op->dtype.element_of().str(), " in vector code",
                 loop ? cat(" (loop '", loop->loop_var.name(), "')") : std::string(), " runs as ",
                 op->dtype.lanes,
                 " libm calls, one per lane: the CPU backend keeps sqrt, floor, ceil, round, trunc, abs, "
                 "exp, log, tanh and erf in vector instructions; express it with those where you can "
                 "(exp2(x) = exp(x * ln 2), pow(x, y) = exp(y * log(x)) for x > 0)"));
    IRVisitor::visit(op);
  }

 private:
  const ForNode* innermost() const { return loops_.empty() ? nullptr : loops_.back(); }
  static bool runs_once(const ForNode* loop) {
    const int64_t* e = as_const_int(loop->extent);
    return e && *e <= 1;
  }

  void check_access(const Var& buffer, const Expr& index, const char* what) {
    const ForNode* loop = innermost();
    if (!loop) return;
    const std::string& name = loop->loop_var.name();
    if (index.dtype().lanes > 1) {
      std::optional<int64_t> stride = lane_stride(index);
      if (stride && (*stride == 1 || *stride == 0)) return;
      if (access_as_runs(index)) return;  // a few contiguous runs and a shuffle (ir/lane_runs.hpp)
      // A load of a ramp under a border's clamp: one vector inside the border (ir/clamped_ramp.hpp).
      if (std::string_view(what) == "loads of" && clamped_ramp(index)) return;
      report(
          "strided-access", name, buffer.name(),
          cat(what, " '", buffer.name(), "' in loop '", name, "' are ",
              stride ? cat("strided (", *stride, " elements between lanes)") : std::string("not contiguous"),
              ": a gather or scatter, one element per lane. Vectorize the axis that is contiguous in '",
              buffer.name(),
              "' (its last dimension), reorder so that it is innermost, or copy the tile "
              "into a transposed cache (cache_read) first"));
      return;
    }
    // A scalar access of the innermost serial loop: the step of its index per iteration.
    if (!innermost_serial_.back()) return;
    const Var& v = loop->loop_var;
    const int64_t* step = as_const_int(simplify(substitute(index, v, v + 1) - index));
    if (!step || *step == 0 || *step == 1 || *step == -1) return;
    report("strided-access", name, buffer.name(),
           cat(what, " '", buffer.name(), "' in the innermost loop '", name, "' step ", *step,
               " elements per iteration, so each touches a new cache line; make the axis that is contiguous "
               "in '",
               buffer.name(),
               "' (its last dimension) the innermost loop (reorder), or cache the tile "
               "(cache_read)"));
  }

  void report(const std::string& check, const std::string& loop, const std::string& what,
              const std::string& text) {
    if (!seen_.insert(std::make_tuple(check, loop, what)).second) return;
    findings.push_back(LintFinding{kernel_, check, loop, cat("kernel '", kernel_, "': ", text)});
  }

  std::string kernel_;
  int threads_;
  std::vector<const ForNode*> loops_;
  std::vector<bool> innermost_serial_;  // per entry of loops_: a serial loop with no loop inside
  std::set<std::tuple<std::string, std::string, std::string>> seen_;
};

}  // namespace detail

LOOM_DECL std::vector<LintFinding> lint(const LoweredFunc& f, int threads) {
  if (f.device_split || !f.body.defined()) return {};
  detail::Linter linter(f.name, threads > 0 ? threads : runtime::ThreadPool::global().num_threads());
  linter.visit_stmt(f.body);
  return std::move(linter.findings);
}

LOOM_DECL std::vector<LintFinding> lint(const Schedule& s, const std::vector<LowerArg>& args,
                                        const std::string& name) {
  return lint(lower(s, args, name));
}

}  // namespace loom

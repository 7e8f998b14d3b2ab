// Analytic shared-memory bank conflicts of a lowered GPU function: for every warp of every block it
// follows the kernel's control flow and evaluates only index, guard and loop-bound expressions
// (with ir/int_eval.hpp; no kernel data is computed or moved), then counts wavefronts with the
// simulator's own bank model.
#pragma once

#include <algorithm>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/int_eval.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/sim_report.hpp"
#include "loom/sim/access_recorder.hpp"
#include "loom/sim/bank_trace.hpp"

namespace loom::lib {

namespace detail {

/// Thrown inside the tracer when a value it needs is not known without running the kernel.
struct BankUnknown {
  std::string why;
};

/// Follows a lowered function the way the simulator runs it (sim/warp_stmts.hpp): host code once,
/// each kernel region block by block and warp by warp, 32 lanes under an active mask.
class BankTracer {
 public:
  BankTracer(const Stmt& body, std::string func_name,
             const std::unordered_map<const VarNode*, int64_t>& sizes)
      : body_(body), func_name_(std::move(func_name)) {
    for (const auto& [var, value] : sizes) host_[var] = {value};
  }

  BankTrace run() {
    number_kernels(body_);
    try {
      host(body_);
    } catch (const BankUnknown& u) {
      throw Error(
          cat("bank-conflict analysis of '", func_name_, "': ", u.why,
              "; the analysis evaluates only indices, guards and loop bounds, so these must not depend on "
              "data in memory or on sizes it was not given (BankAnalysisOptions::sizes)"));
    }
    return std::move(trace_);
  }

 private:
  using Values = std::vector<int64_t>;  // one per vector lane; empty: not known
  using Frame = std::unordered_map<const VarNode*, Values>;
  using Mask = uint32_t;

  // --- expressions ------------------------------------------------------------------------------

  static int lane_of(const Expr& e, int lane) { return e.dtype().lanes == 1 ? 0 : lane; }

  /// Lane `lane` of the integer expression `e` in frame `f` (ir/int_eval.hpp).
  int64_t eval(const Expr& e, const Frame& f, int lane) const {
    auto lookup = [&f](const VarNode* v, int l) -> const int64_t* {
      auto it = f.find(v);
      if (it == f.end() || it->second.empty()) return nullptr;
      return &it->second[static_cast<size_t>(l) % it->second.size()];
    };
    try {
      return IntEvaluator<decltype(lookup)>(lookup)(e, lane);
    } catch (const IntEvalFailure& failure) {
      throw BankUnknown{why_unknown(failure)};
    }
  }

  static std::string why_unknown(const IntEvalFailure& failure) {
    const Expr& e = failure.expr;
    switch (failure.kind) {
      case IntEvalFailure::Kind::UnboundVar:
        return cat("the value of '", failure.var->name, "' is not known (", to_string(e), ")");
      case IntEvalFailure::Kind::DivisionByZero: return cat("division by zero in ", to_string(e));
      case IntEvalFailure::Kind::NotInteger: break;
    }
    if (e.as<LoadNode>()) return cat("the value ", to_string(e), " is read from memory");
    if (e.as<CallNode>()) return cat("the analysis cannot evaluate the call ", to_string(e));
    if (e.as<CastNode>()) return cat("the analysis needs integers, not ", to_string(e));
    return cat("the analysis cannot evaluate ", to_string(e));
  }

  /// Every vector lane of `e`, or empty when some lane is not known (a float, a loaded value).
  Values values_of(const Expr& e, const Frame& f) const {
    Values out;
    if (!e.dtype().is_integral() && !e.dtype().is_bool()) return out;
    try {
      for (int i = 0; i < e.dtype().lanes; ++i) out.push_back(eval(e, f, i));
    } catch (const BankUnknown&) {
      out.clear();
    }
    return out;
  }

  /// Records the shared Loads that evaluating lane `lane` of `e` performs in simulated lane `l`,
  /// in the order and with the laziness of the interpreter's compiled expressions.
  void collect(const Expr& e, const Frame& f, int l, int lane) {
    switch (e.kind()) {
      case IRNodeKind::Load: {
        const LoadNode* op = e.as<LoadNode>();
        if (op->predicate.defined()) {
          collect(op->predicate, f, l, lane_of(op->predicate, lane));
          if (!eval(op->predicate, f, lane_of(op->predicate, lane))) return;
        }
        collect(op->index, f, l, lane_of(op->index, lane));
        auto shared = shared_of_.find(op->buffer.get());
        if (shared == shared_of_.end()) return;
        const int64_t index = eval(op->index, f, lane_of(op->index, lane));
        const int access = access_id(op, shared->second, false, op->index, whole_vector_loads_.bytes(op));
        record(access, l, index, op->dtype.element_of().bytes());
        return;
      }
      case IRNodeKind::Call: {
        const CallNode* op = e.as<CallNode>();
        if (op->name == intrinsic::if_then_else) {
          collect(op->args[0], f, l, lane_of(op->args[0], lane));
          const bool taken = eval(op->args[0], f, lane_of(op->args[0], lane));
          collect(op->args[taken ? 1 : 2], f, l, lane);
          return;
        }
        for (const Expr& a : op->args) collect(a, f, l, lane_of(a, lane));
        return;
      }
      case IRNodeKind::Let: {
        const LetNode* op = e.as<LetNode>();
        collect(op->value, f, l, lane_of(op->value, lane));
        Frame inner = f;
        inner[op->var.get()] = values_of(op->value, f);
        collect(op->body, inner, l, lane);
        return;
      }
      case IRNodeKind::Ramp:
        collect(e.as<RampNode>()->base, f, l, 0);
        collect(e.as<RampNode>()->stride, f, l, 0);
        return;
      case IRNodeKind::Broadcast: collect(e.as<BroadcastNode>()->value, f, l, 0); return;
      case IRNodeKind::Select: {
        const SelectNode* op = e.as<SelectNode>();  // both sides are evaluated
        collect(op->condition, f, l, lane_of(op->condition, lane));
        collect(op->true_value, f, l, lane);
        collect(op->false_value, f, l, lane);
        return;
      }
      case IRNodeKind::Not: collect(e.as<NotNode>()->a, f, l, lane); return;
      case IRNodeKind::Cast:
        collect(e.as<CastNode>()->value, f, l, lane_of(e.as<CastNode>()->value, lane));
        return;
#define LOOM_BANK_COLLECT(kind, node)           \
  case IRNodeKind::kind: {                      \
    const node* op = e.as<node>();              \
    collect(op->a, f, l, lane_of(op->a, lane)); \
    collect(op->b, f, l, lane_of(op->b, lane)); \
    return;                                     \
  }
        LOOM_BINARY_EXPR_NODES(LOOM_BANK_COLLECT)
#undef LOOM_BANK_COLLECT
      default: return;
    }
  }

  // --- the trace ----------------------------------------------------------------------------------

  int access_id(const void* node, int buffer, bool is_store, const Expr& index, int vector_bytes) {
    auto [it, inserted] = access_ids_.try_emplace(node, static_cast<int>(trace_.accesses.size()));
    if (inserted) {
      std::string text = to_string(index);
      if (text.size() > 48) text = text.substr(0, 45) + "...";
      trace_.accesses.push_back(
          BankTrace::Access{buffer, is_store,
                            cat(is_store ? "store " : "load ",
                                trace_.buffers[static_cast<size_t>(buffer)].name, "[", text, "]"),
                            vector_bytes});
    }
    return it->second;
  }
  void record(int access, int lane, int64_t element, int bytes) {
    trace_.events.push_back(BankTrace::Event{access, lane, bytes, element});
    pending_ = true;
  }
  void end_statement() {
    if (pending_) trace_.events.push_back(BankTrace::Event{});
    pending_ = false;
  }

  // --- host code ----------------------------------------------------------------------------------

  static bool is_launch_loop(const Stmt& s) {
    const ForNode* op = s.as<ForNode>();
    return op && op->kind == ForKind::ThreadBinding && launch_index_of_tag(op->thread_tag) >= 0;
  }

  /// Kernel names as the simulator gives them: <function>_kernel<i>, regions in program order.
  void number_kernels(const Stmt& s) {
    struct Numberer : IRVisitor {
      BankTracer* self;
      void visit(const ForNode* op) override {
        if (op->kind == ForKind::ThreadBinding && launch_index_of_tag(op->thread_tag) >= 0) {
          self->kernel_names_[op] = cat(self->func_name_, "_kernel", self->kernel_names_.size());
          return;
        }
        IRVisitor::visit(op);
      }
    } n;
    n.self = this;
    n.visit_stmt(s);
  }

  void host(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case IRNodeKind::Seq:
        for (const Stmt& c : s.as<SeqNode>()->seq) host(c);
        return;
      case IRNodeKind::AttrStmt: host(s.as<AttrStmtNode>()->body); return;
      case IRNodeKind::AssertStmt: host(s.as<AssertStmtNode>()->body); return;
      case IRNodeKind::Allocate: host(s.as<AllocateNode>()->body); return;
      case IRNodeKind::LetStmt: {
        const LetStmtNode* op = s.as<LetStmtNode>();
        Values saved = host_[op->var.get()];
        host_[op->var.get()] = values_of(op->value, host_);
        host(op->body);
        host_[op->var.get()] = saved;
        return;
      }
      case IRNodeKind::IfThenElse: {
        const IfThenElseNode* op = s.as<IfThenElseNode>();
        if (eval(op->condition, host_, 0))
          host(op->then_case);
        else
          host(op->else_case);
        return;
      }
      case IRNodeKind::For: {
        if (is_launch_loop(s)) return kernel(s);
        const ForNode* op = s.as<ForNode>();
        const int64_t min = eval(op->min, host_, 0), extent = eval(op->extent, host_, 0);
        for (int64_t i = 0; i < extent; ++i) {
          host_[op->loop_var.get()] = {min + i};
          host(op->body);
        }
        host_.erase(op->loop_var.get());
        return;
      }
      default: return;  // host stores, evaluates and barriers touch no shared memory
    }
  }

  // --- kernels ------------------------------------------------------------------------------------

  void kernel(const Stmt& region) {
    kernel_name_ = kernel_names_.at(region.as<ForNode>());
    // Launch dimensions: the first loop of each tag; the body runs where the index < its own loop's extent.
    int64_t dims[kNumLaunchIndices] = {1, 1, 1, 1, 1, 1};
    bool seen[kNumLaunchIndices] = {};
    loop_extent_.clear();
    struct LaunchLoops : IRVisitor {
      std::vector<const ForNode*> loops;
      void visit(const ForNode* op) override {
        if (op->kind == ForKind::ThreadBinding && launch_index_of_tag(op->thread_tag) >= 0)
          loops.push_back(op);
        IRVisitor::visit(op);
      }
    } launch;
    launch.visit_stmt(region);
    for (const ForNode* op : launch.loops) {
      const int d = launch_index_of_tag(op->thread_tag);
      const int64_t extent = eval(op->extent, host_, 0);
      loop_extent_[op] = extent;
      if (!seen[d]) dims[d] = extent;
      seen[d] = true;
    }
    for (int64_t d : dims)
      if (d <= 0) return;
    const int64_t threads = dims[0] * dims[1] * dims[2];
    buffer_of_alloc_.clear();
    for (int64_t bz = 0; bz < dims[5]; ++bz)
      for (int64_t by = 0; by < dims[4]; ++by)
        for (int64_t bx = 0; bx < dims[3]; ++bx) {
          block_index_[0] = bx;
          block_index_[1] = by;
          block_index_[2] = bz;
          for (int64_t first = 0; first < threads; first += sim::kWarpSize) {
            const int lanes = static_cast<int>(std::min<int64_t>(sim::kWarpSize, threads - first));
            frames_.assign(static_cast<size_t>(lanes), host_);
            for (int l = 0; l < lanes; ++l) {
              const int64_t t = first + l;
              thread_index_[0][l] = t % dims[0];
              thread_index_[1][l] = t / dims[0] % dims[1];
              thread_index_[2][l] = t / (dims[0] * dims[1]);
            }
            const Mask full = lanes == 32 ? ~Mask{0} : (Mask{1} << lanes) - 1;
            warp(region, full);
            end_statement();
          }
        }
  }

  template <typename Fn>
  static void for_each_lane(Mask mask, Fn&& fn) {
    for (int l = 0; l < sim::kWarpSize; ++l)
      if (mask >> l & 1u) fn(l);
  }

  void warp(const Stmt& s, Mask mask) {
    if (!s.defined() || !mask) return;
    switch (s.kind()) {
      case IRNodeKind::Seq:
        for (const Stmt& c : s.as<SeqNode>()->seq) warp(c, mask);
        return;
      case IRNodeKind::AttrStmt: warp(s.as<AttrStmtNode>()->body, mask); return;
      case IRNodeKind::AssertStmt: {
        const AssertStmtNode* op = s.as<AssertStmtNode>();
        for_each_lane(mask, [&](int l) { collect(op->condition, frames_[l], l, 0); });
        end_statement();
        warp(op->body, mask);
        return;
      }
      case IRNodeKind::LetStmt: {
        const LetStmtNode* op = s.as<LetStmtNode>();
        if (op->var.dtype().is_handle()) {  // a second name for a buffer
          const VarNode* source = op->value.as<VarNode>();
          auto it = source ? shared_of_.find(source) : shared_of_.end();
          if (it != shared_of_.end()) shared_of_[op->var.get()] = it->second;
          warp(op->body, mask);
          shared_of_.erase(op->var.get());
          return;
        }
        for_each_lane(mask, [&](int l) {
          for (int i = 0; i < op->value.dtype().lanes; ++i) collect(op->value, frames_[l], l, i);
          frames_[l][op->var.get()] = values_of(op->value, frames_[l]);
        });
        end_statement();
        warp(op->body, mask);
        return;
      }
      case IRNodeKind::Store: return store(s.as<StoreNode>(), mask);
      case IRNodeKind::Allocate: {
        const AllocateNode* op = s.as<AllocateNode>();
        const bool shared = is_shared_scope(op->scope);
        if (shared) {
          auto [it, inserted] = buffer_of_alloc_.try_emplace(op, static_cast<int>(trace_.buffers.size()));
          if (inserted)
            trace_.buffers.push_back(BankTrace::Buffer{op->buffer.name(), kernel_name_, op->dtype});
          shared_of_[op->buffer.get()] = it->second;
        }
        end_statement();
        warp(op->body, mask);
        if (shared) shared_of_.erase(op->buffer.get());
        return;
      }
      case IRNodeKind::For: return loop(s.as<ForNode>(), mask);
      case IRNodeKind::IfThenElse: {
        const IfThenElseNode* op = s.as<IfThenElseNode>();
        Mask taken = 0;
        for_each_lane(mask, [&](int l) {
          collect(op->condition, frames_[l], l, 0);
          if (eval(op->condition, frames_[l], 0)) taken |= Mask{1} << l;
        });
        end_statement();
        warp(op->then_case, taken);
        warp(op->else_case, mask & ~taken);
        return;
      }
      case IRNodeKind::Evaluate: {
        const Expr& value = s.as<EvaluateNode>()->value;
        if (const CallNode* call = value.as<CallNode>(); call && call->name == intrinsic::thread_allreduce)
          throw BankUnknown{"a thread_allreduce (cross-thread reduction) is not modelled by the analysis"};
        if (value.dtype().is_handle()) return;
        for_each_lane(mask, [&](int l) {
          for (int i = 0; i < value.dtype().lanes; ++i) collect(value, frames_[l], l, i);
        });
        end_statement();
        return;
      }
      default: return;  // barriers and prefetches touch no shared memory
    }
  }

  void loop(const ForNode* op, Mask mask) {
    const VarNode* var = op->loop_var.get();
    if (op->kind == ForKind::ThreadBinding) {
      const int d = launch_index_of_tag(op->thread_tag);
      if (d >= 0) {
        const int64_t extent = loop_extent_.at(op);
        Mask active = 0;
        for_each_lane(mask, [&](int l) {
          const int64_t index =
              d < kFirstBlockIndex ? thread_index_[d][l] : block_index_[d - kFirstBlockIndex];
          if (index >= extent) return;
          active |= Mask{1} << l;
          frames_[l][var] = {eval(op->min, frames_[l], 0) + index};
        });
        end_statement();
        warp(op->body, active);
        return;
      }
    }
    int64_t mins[sim::kWarpSize] = {}, extents[sim::kWarpSize] = {}, longest = 0;
    for_each_lane(mask, [&](int l) {
      mins[l] = eval(op->min, frames_[l], 0);
      extents[l] = eval(op->extent, frames_[l], 0);
      longest = std::max(longest, extents[l]);
    });
    end_statement();
    for (int64_t i = 0; i < longest; ++i) {
      Mask active = 0;
      for_each_lane(mask, [&](int l) {
        if (i >= extents[l]) return;
        active |= Mask{1} << l;
        frames_[l][var] = {mins[l] + i};
      });
      warp(op->body, active);
    }
  }

  void store(const StoreNode* op, Mask mask) {
    const int n = op->value.dtype().lanes;
    auto shared = shared_of_.find(op->buffer.get());
    std::vector<std::pair<int, int64_t>> stores;  // (lane, element) of the shared elements written
    for_each_lane(mask, [&](int l) {
      const Frame& f = frames_[l];
      for (int i = 0; i < n; ++i) {
        if (op->predicate.defined()) {
          collect(op->predicate, f, l, lane_of(op->predicate, i));
          if (!eval(op->predicate, f, lane_of(op->predicate, i))) continue;
        }
        collect(op->value, f, l, i);
        collect(op->index, f, l, lane_of(op->index, i));
        if (shared != shared_of_.end()) stores.emplace_back(l, eval(op->index, f, lane_of(op->index, i)));
      }
    });
    end_statement();
    if (shared == shared_of_.end() || stores.empty()) return;
    const int access = access_id(op, shared->second, true, op->index,
                                 whole_access_bytes(op->value.dtype(), op->index, op->predicate));
    const int bytes = op->value.dtype().element_of().bytes();
    for (const auto& [l, element] : stores) record(access, l, element, bytes);
    end_statement();
  }

  Stmt body_;
  WholeVectorLoads whole_vector_loads_{body_};
  std::string func_name_;
  BankTrace trace_;
  bool pending_ = false;
  Frame host_;
  std::vector<Frame> frames_;
  int64_t thread_index_[3][sim::kWarpSize] = {};
  int64_t block_index_[3] = {};
  std::string kernel_name_;
  std::unordered_map<const ForNode*, std::string> kernel_names_;
  std::unordered_map<const ForNode*, int64_t> loop_extent_;
  std::unordered_map<const AllocateNode*, int> buffer_of_alloc_;
  std::unordered_map<const VarNode*, int> shared_of_;
  std::unordered_map<const void*, int> access_ids_;
};

}  // namespace detail

/// The trace of a lowered body (`func_name` names its kernels), with `sizes` for free variables.
inline BankTrace trace_bank_accesses(const Stmt& body, const std::string& func_name,
                                     const std::unordered_map<const VarNode*, int64_t>& sizes = {}) {
  return detail::BankTracer(body, func_name, sizes).run();
}

inline BankTrace trace_bank_accesses(const LoweredFunc& f, const BankAnalysisOptions& options = {}) {
  std::unordered_map<const VarNode*, int64_t> sizes;
  for (const Var& v : f.size_vars) {
    auto it = options.sizes.find(v.name());
    if (it != options.sizes.end()) sizes[v.get()] = it->second;
  }
  return trace_bank_accesses(f.body, f.name, sizes);
}

/// Bank conflicts of every shared-memory access of `f`, without running it; the counts are those
/// simulate(f, ...) reports (SimReport::shared_buffers), per buffer and per access.
///
///   BankReport r = lib::analyze_bank_conflicts(lower(s, {A, B}, "transpose"));
///   CHECK(r.buffer("A.shared").load.conflicts() == 0);
inline BankReport analyze_bank_conflicts(const LoweredFunc& f, const BankAnalysisOptions& options = {}) {
  return replay_bank_trace(trace_bank_accesses(f, options));
}

}  // namespace loom::lib

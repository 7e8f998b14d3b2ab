// Compiles a kernel region (the outermost loop bound to blockIdx/threadIdx and all it holds) into
// warp-wide statements for the GPU simulator, reusing the interpreter's compiled expressions.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/interp/compiler.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/shared_memory_layout.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/sim/allreduce.hpp"
#include "loom/sim/global_load.hpp"
#include "loom/sim/grid_flags.hpp"
#include "loom/sim/launch.hpp"
#include "loom/sim/op_count.hpp"
#include "loom/sim/shared_load.hpp"
#include "loom/sim/warp_intrinsic_stmt.hpp"
#include "loom/te/ptx_intrinsics.hpp"

namespace loom::sim {

/// Kernel code is compiled like host code (same frame slots, same expression nodes) except for
/// statements, which become WarpStmts, loops bound to launch indices, which stop being loops,
/// and allocations, whose scope decides whether they are per thread or per block.
class KernelCompiler {
 public:
  /// `current` is set to the kernel's KernelInfo while its statements are compiled: the loads of
  /// its shared and global buffers, which the host Compiler hands to RegionCompiler, are numbered
  /// there. `local_slots` collects the frame slots of per-thread buffers, which are not global.
  KernelCompiler(interp::Compiler& compiler, Stmt region, std::string name, KernelInfo*& current,
                 std::unordered_set<int>& local_slots)
      : c_(compiler),
        region_(std::move(region)),
        name_(std::move(name)),
        current_(current),
        local_slots_(local_slots) {}

  interp::StmtPtr compile() {
    auto kernel = std::make_unique<KernelInfo>();
    kernel->name = name_;
    kernel->layout = c_.frame_layout();
    kernel_ = kernel.get();
    kernel_->whole_vector_loads = WholeVectorLoads(region_);
    collect_launch_loops();
    struct Reset {
      KernelInfo*& current;
      ~Reset() { current = nullptr; }
    } reset{current_};
    current_ = kernel_;  // makes Loads of shared buffers watched ones
    WarpStmtPtr body = stmt(region_);
    kernel_->static_shared_bytes += kernel_->planned_bytes;
    kernel_->plan_global_races([&](int slot) { return c_.buffer_name(slot); });
    return std::make_unique<KernelLaunch>(std::move(kernel), std::move(body));
  }

 private:
  // -------------------------------------------------------------------------------------------
  // Launch dimensions

  /// Every loop bound to a launch index, with its extent compiled as a host expression: the
  /// launch evaluates them all before any thread runs, so they may not use the kernel's own
  /// variables (loop indices, lets), only what the host knows.
  void collect_launch_loops() {
    struct Collector : IRVisitor {
      std::vector<const ForNode*> loops;
      std::unordered_set<const VarNode*> bound;
      void visit(const ForNode* op) override {
        bound.insert(op->loop_var.get());
        if (op->kind == ForKind::ThreadBinding && launch_index_of_tag(op->thread_tag) >= 0)
          loops.push_back(op);
        IRVisitor::visit(op);
      }
      void visit(const LetStmtNode* op) override {
        bound.insert(op->var.get());
        IRVisitor::visit(op);
      }
      void visit(const LetNode* op) override {
        bound.insert(op->var.get());
        IRVisitor::visit(op);
      }
      void visit(const AllocateNode* op) override {
        bound.insert(op->buffer.get());
        IRVisitor::visit(op);
      }
    } collector;
    collector.visit_stmt(region_);
    for (const ForNode* loop : collector.loops) {
      for_each_expr(loop->extent, [&](const Expr& e) {
        const VarNode* v = e.as<VarNode>();
        if (v && collector.bound.count(v))
          throw Error(
              cat("kernel ", name_, ": the extent of the loop bound to ", loop->thread_tag, " ('",
                  loop->loop_var.name(), "') is ", to_string(loop->extent), ", which uses '", v->name,
                  "', a variable bound inside the kernel. Launch dimensions are fixed when the kernel "
                  "is launched, so they may only use values known outside it (parameters, sizes, "
                  "variables of host loops)"));
      });
      loop_of_node_[loop] = static_cast<int>(kernel_->loops.size());
      kernel_->loops.push_back(LaunchLoop{launch_index_of_tag(loop->thread_tag), loop->loop_var.name(),
                                          c_.compile_int(loop->extent, 0)});
    }
  }

  // -------------------------------------------------------------------------------------------
  // Statements

  WarpStmtPtr stmt(const Stmt& s) {
    if (!s.defined()) return std::make_unique<WarpNoOp>();
    switch (s.kind()) {
      case IRNodeKind::LetStmt: return let_stmt(s.as<LetStmtNode>());
      case IRNodeKind::AttrStmt: {
        const AttrStmtNode* op = s.as<AttrStmtNode>();
        if (op->key == attr::shared_memory_offset) planned_offset_[op->node.get()] = op->value;
        return stmt(op->body);
      }
      case IRNodeKind::AssertStmt: {
        const AssertStmtNode* op = s.as<AssertStmtNode>();
        return counted(
            std::make_unique<WarpAssert>(c_.compile_int(op->condition, 0), op->message, stmt(op->body)),
            {&op->condition});
      }
      case IRNodeKind::Store: return store(s.as<StoreNode>());
      case IRNodeKind::Allocate: return allocate(s.as<AllocateNode>());
      case IRNodeKind::For: return loop(s.as<ForNode>());
      case IRNodeKind::IfThenElse: {
        const IfThenElseNode* op = s.as<IfThenElseNode>();
        std::string condition = short_text(to_string(op->condition));
        if (condition.front() != '(') condition = "(" + condition + ")";
        interp::IntExprPtr test = c_.compile_int(op->condition, 0);
        WarpStmtPtr then_case = in_context("if " + condition, [&] { return stmt(op->then_case); });
        WarpStmtPtr else_case;
        if (op->else_case.defined())
          else_case = in_context("else of if " + condition, [&] { return stmt(op->else_case); });
        return counted(std::make_unique<WarpIf>(std::move(test), std::move(then_case), std::move(else_case)),
                       {&op->condition});
      }
      case IRNodeKind::Seq: {
        std::vector<WarpStmtPtr> stmts;
        for (const Stmt& child : s.as<SeqNode>()->seq) stmts.push_back(stmt(child));
        return std::make_unique<WarpSeq>(std::move(stmts));
      }
      case IRNodeKind::Evaluate: return evaluate(s.as<EvaluateNode>()->value);
      case IRNodeKind::Barrier: return barrier(s.as<BarrierNode>());
      case IRNodeKind::Prefetch: return std::make_unique<WarpNoOp>();  // no cache model
      case IRNodeKind::Provide: c_.not_lowered("Provide");
      case IRNodeKind::Realize: c_.not_lowered("Realize");
      default: break;
    }
    throw InternalError(cat("GPU simulator: unknown statement kind ", kind_name(s.kind())));
  }

  WarpStmtPtr let_stmt(const LetStmtNode* op) {
    DType t = op->var.dtype();
    interp::VarBinding b;
    if (t.is_handle()) {
      const VarNode* source = op->value.as<VarNode>();
      if (!source || c_.lookup(source).kind != interp::VarBinding::Kind::Buffer)
        throw Error(cat("the interpreter can only bind handle '", op->var.name(),
                        "' to another buffer, not to ", to_string(op->value)));
      const interp::VarBinding source_binding = c_.lookup(source);
      const std::string name = c_.buffer_name(source_binding.slot);
      return c_.with_binding(
          op->var, b,
          [&]() -> WarpStmtPtr {
            c_.set_shared_id(op->var, source_binding.shared_id);  // an alias stays shared
            if (local_slots_.count(source_binding.slot)) local_slots_.insert(b.slot);  // and local
            kernel_->note_buffer_alias(b.slot, source_binding.slot);  // and the same global memory
            return std::make_unique<WarpBufferAlias>(b.slot, source_binding.slot, stmt(op->body));
          },
          name);
    }
    auto make = [&](auto value_tag) -> WarpStmtPtr {
      using V = decltype(value_tag);
      std::vector<ExprPtr<V>> lanes;
      for (int i = 0; i < t.lanes; ++i) lanes.push_back(c_.compile<V>(op->value, i));
      return c_.with_binding(op->var, b, [&]() -> WarpStmtPtr {
        std::vector<int> slots;
        for (int i = 0; i < t.lanes; ++i) slots.push_back(b.slot_of_lane(i));
        return counted(std::make_unique<WarpLet<V>>(std::move(slots), std::move(lanes), stmt(op->body)),
                       {&op->value});
      });
    };
    return t.is_float() ? make(double{}) : make(int64_t{});
  }

  WarpStmtPtr loop(const ForNode* op) {
    interp::VarBinding b;
    const int launch_index = op->kind == ForKind::ThreadBinding ? launch_index_of_tag(op->thread_tag) : -1;
    if (launch_index >= 0) {
      interp::IntExprPtr min = c_.compile_int(op->min, 0);
      return c_.with_binding(op->loop_var, b, [&]() -> WarpStmtPtr {
        auto it = launch_index_of_var_.try_emplace(op->loop_var.get(), -1).first;
        const int previous = std::exchange(it->second, launch_index);
        WarpStmtPtr body = stmt(op->body);
        launch_index_of_var_[op->loop_var.get()] = previous;
        return std::make_unique<WarpLaunchIndex>(b.slot, launch_index, loop_of_node_.at(op), std::move(min),
                                                 std::move(body));
      });
    }
    // Any other loop (serial, unrolled, vectorized, parallel, vthread) runs its iterations in order.
    interp::IntExprPtr min = c_.compile_int(op->min, 0), extent = c_.compile_int(op->extent, 0);
    return c_.with_binding(op->loop_var, b, [&]() -> WarpStmtPtr {
      internal_check(b.kind == interp::VarBinding::Kind::Int, "loop variable '", op->loop_var.name(),
                     "' of type ", op->loop_var.dtype().str());
      WarpStmtPtr body = in_context("for " + op->loop_var.name(), [&] { return stmt(op->body); });
      return counted(std::make_unique<WarpLoop>(b.slot, std::move(min), std::move(extent), std::move(body)),
                     {&op->min, &op->extent});
    });
  }

  WarpStmtPtr allocate(const AllocateNode* op) {
    const std::string& scope = op->scope;
    const bool shared = is_shared_scope(scope);
    const bool local = is_local_scope(scope);
    if (!shared && !local) {
      if (is_global_scope(scope))
        throw Error(
            cat("kernel ", name_, " allocates buffer '", op->buffer.name(), "' in global memory, ",
                "inside the kernel: a CUDA kernel cannot allocate global memory. Allocate it outside "
                "the loops bound to blockIdx/threadIdx (on the host), or use scope \"shared\" (one per "
                "block) or \"local\" (one per thread)"));
      throw Error(
          cat("kernel ", name_, " allocates buffer '", op->buffer.name(), "' in memory scope '", scope,
              "', which the GPU simulator does not know; it knows \"shared\", \"shared.dyn\" (one buffer "
              "per block), \"local\" and \"warp\" (one per thread)"));
    }
    std::vector<interp::IntExprPtr> extents;
    for (const Expr& e : op->extents) extents.push_back(c_.compile_int(e, 0));
    interp::VarBinding b;
    if (local) {
      if (const std::optional<int64_t> bytes = loom::detail::constant_allocation_bytes(op))
        kernel_->local_words += (*bytes + 3) / 4;
      return c_.with_binding(op->buffer, b, [&]() -> WarpStmtPtr {
        local_slots_.insert(b.slot);
        return std::make_unique<WarpLocalAllocate>(b.slot, op->buffer.name(), op->dtype, std::move(extents),
                                                   stmt(op->body));
      });
    }
    const int buffer = static_cast<int>(kernel_->shared_buffers.size());
    SharedBufferInfo info{c_.next_shared_buffer_id(), op->buffer.name(), name_};
    info.element_bytes = op->dtype.bytes();
    if (auto placed = planned_offset_.find(op->buffer.get()); placed != planned_offset_.end()) {
      const int64_t* offset = as_const_int(placed->second);
      const std::optional<int64_t> bytes = loom::detail::constant_allocation_bytes(op);
      internal_check(offset && bytes, "planned shared buffer '", op->buffer.name(),
                     "' without a constant place");
      info.planned_offset = *offset;
      kernel_->planned_bytes = std::max(kernel_->planned_bytes, *offset + *bytes);
      kernel_->planned_granule = std::min(kernel_->planned_granule, info.element_bytes);
    } else if (const std::optional<int64_t> bytes = loom::detail::constant_allocation_bytes(op)) {
      kernel_->static_shared_bytes += *bytes;
    }
    kernel_->shared_buffers.push_back(info);
    return c_.with_binding(op->buffer, b, [&]() -> WarpStmtPtr {
      c_.set_shared_id(op->buffer, buffer);
      return std::make_unique<WarpSharedAllocate>(b.slot, buffer, op->buffer.name(), op->dtype,
                                                  std::move(extents), stmt(op->body));
    });
  }

  WarpStmtPtr store(const StoreNode* op) {
    const int slot = c_.buffer_slot(op->buffer);
    const int buffer = c_.lookup(op->buffer.get()).shared_id;
    const int access =
        buffer >= 0 ? kernel_->access_id(op, buffer, true,
                                         whole_access_bytes(op->value.dtype(), op->index, op->predicate))
                    : -1;
    const int global = buffer < 0 && !local_slots_.count(slot) ? kernel_->global_access_id(op) : -1;
    const DType element = op->value.dtype().element_of();
    if (global >= 0) kernel_->note_global_access(global, slot, element.bytes(), true);
    const int lanes = op->value.dtype().lanes;
    interp::AccessSite site = c_.site_of(op->buffer, op->index, true);
    return interp::with_codec(element, [&](auto codec) -> WarpStmtPtr {
      using Codec = decltype(codec);
      using V = typename Codec::Value;
      std::vector<typename WarpStore<Codec>::Lane> store_lanes;
      for (int i = 0; i < lanes; ++i) {
        store_lanes.push_back({c_.compile_int(op->index, i), c_.compile<V>(op->value, i),
                               op->predicate.defined() ? c_.compile_int(op->predicate, i) : nullptr});
      }
      return counted(std::make_unique<WarpStore<Codec>>(slot, std::move(store_lanes), site, element, access,
                                                        buffer, global),
                     {&op->value, &op->index, &op->predicate});
    });
  }

  WarpStmtPtr evaluate(const Expr& value) {
    if (const CallNode* call = value.as<CallNode>()) {
      if (call->name == intrinsic::thread_allreduce) return allreduce(call);
      if (call->name == intrinsic::warp_intrinsic) return warp_intrinsic(call);
      if (is_grid_flag_call(call)) return grid_flag(call);
      if (call->name == intrinsic::extern_stage)
        throw Error(cat("kernel ", name_,
                        " calls an extern stage inside the kernel; extern stages are host "
                        "functions and run only outside the loops bound to blockIdx/threadIdx"));
    }
    if (value.dtype().is_handle()) return std::make_unique<WarpNoOp>();
    auto make = [&](auto value_tag) -> WarpStmtPtr {
      using V = decltype(value_tag);
      std::vector<ExprPtr<V>> lanes;
      for (int i = 0; i < value.dtype().lanes; ++i) lanes.push_back(c_.compile<V>(value, i));
      return counted(std::make_unique<WarpEvaluate<V>>(std::move(lanes)), {&value});
    };
    return value.dtype().is_float() ? make(double{}) : make(int64_t{});
  }

  WarpStmtPtr warp_intrinsic(const CallNode* call) {
    const WarpIntrinsicCall decoded = WarpIntrinsicCall::decode(call);
    const WarpIntrinsic* w = find_warp_intrinsic(decoded.name);
    if (!w)
      throw Error(
          cat("kernel ", name_, " calls warp intrinsic '", decoded.name, "', which is not registered"));
    if (decoded.operands.size() != w->operands.size())
      throw Error(cat("kernel ", name_, " calls warp intrinsic '", decoded.name, "' with ",
                      decoded.operands.size(), " operands; it takes ", w->operands.size()));
    std::vector<WarpIntrinsicStmt::Operand> operands;
    for (size_t i = 0; i < decoded.operands.size(); ++i) {
      const WarpOperand& o = decoded.operands[i];
      WarpIntrinsicStmt::Operand op;
      op.spec = &w->operands[i];
      if (op.spec->value != !o.buffer.defined())
        throw Error(cat("kernel ", name_, ": operand ", op.spec->name, " of warp intrinsic ", decoded.name,
                        " is ", op.spec->value ? "a value, not an address" : "an address, not a value"));
      if (op.spec->value) {
        op.index = c_.compile_int(o.index, 0);
        operands.push_back(std::move(op));
        continue;
      }
      op.slot = c_.buffer_slot(o.buffer);
      op.index = c_.compile_int(o.index, 0);
      op.site = c_.site_of(o.buffer, o.index, op.spec->writes);
      op.element_bytes = o.dtype.bytes();
      op.shared = c_.lookup(o.buffer.get()).shared_id;
      const WarpOperandSpace space = op.shared >= 0                ? WarpOperandSpace::Shared
                                     : local_slots_.count(op.slot) ? WarpOperandSpace::Local
                                                                   : WarpOperandSpace::Global;
      if (space != op.spec->space)
        throw Error(cat("kernel ", name_, ": operand ", op.spec->name, " of warp intrinsic ", decoded.name,
                        " is buffer '", o.buffer.name(), "', in ", space_name(space),
                        " memory; the instruction's ", op.spec->name, " is in ", space_name(op.spec->space),
                        " memory (",
                        op.spec->space == WarpOperandSpace::Local    ? "a \"local\" allocation: registers"
                        : op.spec->space == WarpOperandSpace::Shared ? "a \"shared\" allocation"
                                                                     : "a kernel parameter",
                        ")"));
      // The instruction's accesses are numbered like Load and Store nodes; its read and its write
      // of one operand are two instructions, keyed by two addresses inside the call node.
      const char* key = reinterpret_cast<const char*>(call) + 2 * i;
      if (op.shared >= 0) {
        if (op.spec->reads) op.read_access = kernel_->access_id(key, op.shared, false);
        if (op.spec->writes) op.write_access = kernel_->access_id(key + 1, op.shared, true);
      } else if (space == WarpOperandSpace::Global) {
        op.read_access = kernel_->global_access_id(key);
        kernel_->note_global_access(op.read_access, op.slot, op.element_bytes, false);
      }
      operands.push_back(std::move(op));
    }
    return std::make_unique<WarpIntrinsicStmt>(*w, std::move(operands), name_);
  }

  WarpStmtPtr grid_flag(const CallNode* call) {
    const VarNode* flags = call->args.empty() ? nullptr : call->args[0].as<VarNode>();
    check_grid_flag_call(call, name_, flags && c_.lookup(flags).shared_id >= 0);
    const Var buffer{Ref<const ExprNode>(flags)};
    const bool signal = call->name == intrinsic::flag_signal;
    if (!signal) kernel_->has_flag_wait = true;
    return std::make_unique<WarpGridFlag>(signal, c_.buffer_slot(buffer), c_.compile_int(call->args[1], 0),
                                          c_.compile_int(call->args[2], 0),
                                          c_.site_of(buffer, call->args[1], signal));
  }

  WarpStmtPtr barrier(const BarrierNode* op) {
    if (is_shared_scope(op->scope)) {
      kernel_->has_sync = true;
      return std::make_unique<WarpBarrier>(where("barrier", ++num_barriers_));
    }
    if (op->scope == scope::warp)
      return std::make_unique<WarpSyncwarp>(where("__syncwarp", ++num_syncwarps_));
    throw Error(cat("kernel ", name_, " has a barrier among the threads sharing memory scope '", op->scope,
                    "'; the GPU simulator knows \"shared\" (CUDA's __syncthreads) and \"warp\" (__syncwarp). "
                    "A grid-wide barrier is not simulated: blocks wait for each other through grid flags "
                    "(loom.flag_signal / loom.flag_wait)"));
  }

  WarpStmtPtr allreduce(const CallNode* call) {
    const ThreadAllreduce r = ThreadAllreduce::decode(call);
    const size_t n = r.size();
    if (n == 0 || n > WarpAllreduce::kMaxValues)
      throw Error(cat("kernel ", name_, ": the simulator's thread_allreduce combines 1 to ",
                      WarpAllreduce::kMaxValues, " values, not ", n));
    std::array<bool, 3> reduced = {false, false, false};
    for (const Var& v : r.threads) {
      auto it = launch_index_of_var_.find(v.get());
      if (it == launch_index_of_var_.end() || it->second < 0)
        throw Error(cat("kernel ", name_, ": thread_allreduce reduces over '", v.name(),
                        "', which is not the "
                        "variable of an enclosing loop bound to threadIdx"));
      if (it->second >= kFirstBlockIndex)
        throw Error(cat("kernel ", name_, ": thread_allreduce reduces over '", v.name(), "', bound to ",
                        launch_index_name(it->second),
                        "; threads of different blocks cannot combine values "
                        "without global memory and a second kernel"));
      reduced[static_cast<size_t>(it->second)] = true;
    }
    std::vector<WarpAllreduce::Value> values(n);
    for (size_t k = 0; k < n; ++k) {
      if (!r.values[k].dtype().is_scalar())
        throw Error(cat("kernel ", name_, ": thread_allreduce of the vector ", to_string(r.values[k]),
                        "; the simulator combines scalars only"));
      values[k].is_float = r.combine[k].dtype().is_float();
      if (values[k].is_float) {
        values[k].float_value = c_.compile_float(r.values[k], 0);
      } else {
        values[k].int_value = c_.compile_int(r.values[k], 0);
      }
    }
    // The combiners see fresh slots for lhs and rhs; the results travel to the results buffers
    // through one more fresh variable each, stored by ordinary warp stores.
    std::vector<Var> carriers;
    for (size_t k = 0; k < n; ++k) {
      values[k].lhs_slot = c_.bind(r.lhs[k]).slot;
      values[k].rhs_slot = c_.bind(r.rhs[k]).slot;
    }
    for (size_t k = 0; k < n; ++k) {
      if (values[k].is_float) {
        values[k].float_combine = c_.compile_float(r.combine[k], 0);
      } else {
        values[k].int_combine = c_.compile_int(r.combine[k], 0);
      }
    }
    for (size_t k = 0; k < n; ++k) {
      c_.unbind(r.lhs[k]);
      c_.unbind(r.rhs[k]);
    }
    std::vector<Stmt> stores;
    for (size_t k = 0; k < n; ++k) {
      carriers.push_back(Var(r.results[k].name() + ".value", r.combine[k].dtype()));
      values[k].result_slot = c_.bind(carriers.back()).slot;
      stores.push_back(StoreNode::make(r.results[k], carriers.back(), IntImmNode::make(i32, 0)));
    }
    WarpStmtPtr store_results = stmt(SeqNode::make(stores));
    for (const Var& v : carriers) c_.unbind(v);
    kernel_->has_sync = true;
    return std::make_unique<WarpAllreduce>(std::move(values), reduced, std::move(store_results),
                                           where("thread_allreduce", ++num_allreduces_));
  }

  /// A statement with the arithmetic of its own expressions `exprs` (not its body's) counted.
  template <typename T>
  static WarpStmtPtr counted(std::unique_ptr<T> s, std::initializer_list<const Expr*> exprs) {
    s->set_arith_ops(count_arith_ops(exprs));
    return s;
  }

  // -------------------------------------------------------------------------------------------
  // Where we are, for messages

  template <typename Fn>
  WarpStmtPtr in_context(std::string step, Fn&& fn) {
    context_.push_back(std::move(step));
    struct Pop {
      std::vector<std::string>& context;
      ~Pop() { context.pop_back(); }
    } pop{context_};
    return fn();
  }

  std::string where(const char* what, int number) const {
    std::string path;
    for (const std::string& step : context_) path += (path.empty() ? "" : " > ") + step;
    return cat(what, " #", number, " of kernel ", name_,
               path.empty() ? std::string(" (at the kernel's top level)") : " (in: " + path + ")");
  }

  static std::string short_text(std::string text) {
    constexpr size_t kMax = 60;
    if (text.size() > kMax) text = text.substr(0, kMax - 3) + "...";
    return text;
  }

  interp::Compiler& c_;
  Stmt region_;
  std::string name_;
  KernelInfo*& current_;
  std::unordered_set<int>& local_slots_;
  KernelInfo* kernel_ = nullptr;
  std::unordered_map<const ForNode*, int> loop_of_node_;         // KernelInfo::loops index
  std::unordered_map<const VarNode*, int> launch_index_of_var_;  // -1 once out of scope
  std::unordered_map<const ExprNode*, Expr> planned_offset_;     // buffer var -> planned byte offset
  std::vector<std::string> context_;
  int num_barriers_ = 0, num_syncwarps_ = 0, num_allreduces_ = 0;
};

/// loom.lane_id(): the lane of the thread that evaluates it, which its frame knows.
class LaneId final : public interp::CompiledExpr<int64_t> {
 public:
  int64_t eval(interp::Frame& frame) const override { return frame.lane->lane; }
};

/// The simulator's part of compiling a program: the interpreter's Compiler hands it every kernel
/// region, which becomes a KernelLaunch of warp-wide statements, and every load from a shared
/// buffer, which becomes a load the bank model and race detector watch.
class RegionCompiler final : public interp::KernelRegionCompiler {
 public:
  interp::StmtPtr compile_region(interp::Compiler& host, const Stmt& region, int index) override {
    return KernelCompiler(host, region, cat(host.name(), "_kernel", index), current_, local_slots_).compile();
  }
  interp::IntExprPtr shared_load_int(const LoadNode* op, int slot, interp::IntExprPtr index,
                                     interp::AccessSite site, int shared) override {
    return shared_load<int64_t>(op, slot, std::move(index), std::move(site), shared);
  }
  interp::FloatExprPtr shared_load_float(const LoadNode* op, int slot, interp::IntExprPtr index,
                                         interp::AccessSite site, int shared) override {
    return shared_load<double>(op, slot, std::move(index), std::move(site), shared);
  }
  interp::IntExprPtr global_load_int(const LoadNode* op, int slot, interp::IntExprPtr& index,
                                     const interp::AccessSite& site) override {
    return global_load<int64_t>(op, slot, index, site);
  }
  interp::FloatExprPtr global_load_float(const LoadNode* op, int slot, interp::IntExprPtr& index,
                                         const interp::AccessSite& site) override {
    return global_load<double>(op, slot, index, site);
  }
  interp::IntExprPtr lane_id() override {
    if (!current_) return nullptr;
    return std::make_unique<LaneId>();
  }

 private:
  template <typename V>
  interp::ExprPtr<V> shared_load(const LoadNode* op, int slot, interp::IntExprPtr index,
                                 interp::AccessSite site, int shared) {
    internal_check(current_, "GPU simulator: a shared load outside a kernel region");
    const DType element = op->dtype.element_of();
    const int access = current_->access_id(op, shared, false, current_->whole_vector_loads.bytes(op));
    return interp::with_codec(element, [&](auto codec) -> interp::ExprPtr<V> {
      using Codec = decltype(codec);
      if constexpr (std::is_same_v<typename Codec::Value, V>) {
        return std::make_unique<SharedLoadLane<Codec>>(slot, std::move(index), std::move(site), element,
                                                       access, shared);
      } else {
        throw InternalError("GPU simulator: shared load of mismatched value class");
      }
    });
  }

  /// Inside a kernel region, a load from a buffer neither shared nor local reads global memory.
  template <typename V>
  interp::ExprPtr<V> global_load(const LoadNode* op, int slot, interp::IntExprPtr& index,
                                 const interp::AccessSite& site) {
    if (!current_ || local_slots_.count(slot)) return nullptr;
    const DType element = op->dtype.element_of();
    const int access = current_->global_access_id(op);
    current_->note_global_access(access, slot, element.bytes(), false);
    return interp::with_codec(element, [&](auto codec) -> interp::ExprPtr<V> {
      using Codec = decltype(codec);
      if constexpr (std::is_same_v<typename Codec::Value, V>) {
        return std::make_unique<GlobalLoadLane<Codec>>(slot, std::move(index), site, element, access);
      } else {
        throw InternalError("GPU simulator: global load of mismatched value class");
      }
    });
  }

  KernelInfo* current_ = nullptr;        // the kernel region being compiled
  std::unordered_set<int> local_slots_;  // frame slots of "local" buffers and their aliases
};

}  // namespace loom::sim

// Host/device split for the CUDA backend: finds the kernel regions of a lowered function (each
// outermost loop bound to blockIdx/threadIdx), their parameters and launch dimensions, and the
// host program that allocates scratch memory and launches them in order.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/free_vars.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/grid_flags.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/structural_equal.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/lowered_func.hpp"

namespace loom::cuda {

/// A loop bound to one of the six launch indices (ir/gpu_vocabulary.hpp), where a kernel region
/// starts. Any other tag, a misspelt threadIdx/blockIdx one included, leaves an ordinary loop.
inline bool is_launch_loop(const ForNode* op) {
  return op->kind == ForKind::ThreadBinding && find_launch_index(op->thread_tag) >= 0;
}

/// One parameter of a generated kernel: a buffer (passed as a device pointer) or an integer.
struct KernelParam {
  Var var;
  bool is_buffer = false;
  DType element;         // for buffers: the element type the kernel accesses them with
  bool written = false;  // for buffers: the kernel stores to it
};

/// One kernel region and what launching it needs.
struct DeviceKernel {
  std::string name;
  Stmt body;  // the region: its outermost statement is a loop bound to a launch index
  std::vector<KernelParam> params;
  /// Extents of the launch dimensions (threadIdx.x/y/z, blockIdx.x/y/z) as host expressions;
  /// 1 where no loop is bound. Loops of one tag must all have the same extent.
  std::array<Expr, kNumLaunchIndices> extents;
  /// The loop variable and extent of every loop bound to each index (for messages).
  std::array<std::vector<const ForNode*>, kNumLaunchIndices> loops;
};

/// The whole split: the host program (the function's body with every region replaced by an
/// Evaluate of loom.cuda_launch(i)) and the kernels.
struct DeviceSplit {
  Stmt source;  // the function body this split was made from
  Stmt host;
  std::vector<DeviceKernel> kernels;
};

namespace intrinsic {
inline constexpr const char* cuda_launch = "loom.cuda_launch";
}

namespace detail {

inline std::string c_identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "f_" + out;
  return out;
}

/// The variables a region uses without binding them (its parameters), in order of first use:
/// its buffers too, those it only loads from or stores to included (ir/free_vars.hpp). Also
/// records which buffers it writes, whose pointers the kernel then does not take as const.
class RegionFreeVars : public FreeVarCollector {
 public:
  RegionFreeVars() : FreeVarCollector({.handles = true, .buffer_accesses = true}) {}

  std::unordered_set<const VarNode*> written;

 protected:
  using FreeVarCollector::visit;
  void visit(const StoreNode* op) override {
    written.insert(op->buffer.get());
    FreeVarCollector::visit(op);
  }
  void visit(const CallNode* op) override {
    if (op->name == loom::intrinsic::thread_allreduce)  // it stores the results
      for (const Var& v : ThreadAllreduce::decode(op).results) written.insert(v.get());
    if (op->name == loom::intrinsic::flag_signal)  // it stores to its flags buffer
      if (const VarNode* flags = op->args.at(0).as<VarNode>()) written.insert(flags);
    FreeVarCollector::visit(op);
  }
};

/// The element type each buffer is accessed with inside a region.
inline std::unordered_map<const VarNode*, DType> access_types(const Stmt& region) {
  std::unordered_map<const VarNode*, DType> types;
  struct Finder : IRVisitor {
    std::unordered_map<const VarNode*, DType>& types;
    explicit Finder(std::unordered_map<const VarNode*, DType>& t) : types(t) {}
    using IRVisitor::visit;
    void visit(const LoadNode* op) override {
      types.try_emplace(op->buffer.get(), op->dtype.element_of());
      IRVisitor::visit(op);
    }
    void visit(const StoreNode* op) override {
      types.try_emplace(op->buffer.get(), op->value.dtype().element_of());
      IRVisitor::visit(op);
    }
  } finder(types);
  finder.visit_stmt(region);
  return types;
}

class Splitter {
 public:
  explicit Splitter(const LoweredFunc& f) : f_(f) {
    for (const FuncParam& p : f.params) {
      if (p.kind == FuncParam::Kind::Buffer) buffer_types_[p.buffer.data.get()] = p.buffer.dtype;
      if (p.kind == FuncParam::Kind::Scalar && p.scalar.dtype().is_float())
        float_params_.insert(p.scalar.get());
    }
  }

  DeviceSplit run() {
    DeviceSplit out;
    out.source = f_.body;
    out.host = host(f_.body);
    out.kernels = std::move(kernels_);
    return out;
  }

 private:
  [[noreturn]] void host_error(const std::string& what) const {
    throw Error(cat("build '", f_.name, "' for CUDA: ", what,
                    ". On a GPU all computation runs in kernels: bind the outer loops of every stage to "
                    "blockIdx/threadIdx (s[T].bind(axis, thread_axis(\"blockIdx.x\")), and likewise "
                    "threadIdx.x), or compute_at the stage inside a bound loop"));
  }

  Stmt host(const Stmt& s) {
    if (!s.defined()) return s;
    switch (s.kind()) {
      case IRNodeKind::Seq: {
        std::vector<Stmt> out;
        for (const Stmt& c : s.as<SeqNode>()->seq) out.push_back(host(c));
        return SeqNode::make(out);
      }
      case IRNodeKind::LetStmt: {
        const LetStmtNode* op = s.as<LetStmtNode>();
        if (!op->var.dtype().is_integral() || op->var.dtype().is_vector())
          host_error(cat("the host code binds '", op->var.name(), "' of type ", op->var.dtype().str(),
                         " outside any kernel; only integer values can be computed on the host"));
        return LetStmtNode::make(op->var, op->value, host(op->body));
      }
      case IRNodeKind::AttrStmt: {
        const AttrStmtNode* op = s.as<AttrStmtNode>();
        return AttrStmtNode::make(op->key, op->node, op->value, host(op->body));
      }
      case IRNodeKind::AssertStmt: {
        const AssertStmtNode* op = s.as<AssertStmtNode>();
        return AssertStmtNode::make(op->condition, op->message, host(op->body));
      }
      case IRNodeKind::IfThenElse: {
        const IfThenElseNode* op = s.as<IfThenElseNode>();
        return IfThenElseNode::make(op->condition, host(op->then_case), host(op->else_case));
      }
      case IRNodeKind::Allocate: {
        const AllocateNode* op = s.as<AllocateNode>();
        if (!is_global_scope(op->scope))
          host_error(cat("buffer '", op->buffer.name(), "' in scope '", op->scope,
                         "' is allocated outside any kernel, where only global memory exists (its stage "
                         "is attached outside the loops bound to blockIdx/threadIdx; compute_at it inside "
                         "them)"));
        buffer_types_[op->buffer.get()] = op->dtype;
        return AllocateNode::make(op->buffer, op->dtype, op->extents, op->scope, host(op->body));
      }
      case IRNodeKind::For: {
        const ForNode* op = s.as<ForNode>();
        if (is_launch_loop(op)) return region(s);
        if (op->kind == ForKind::ThreadBinding)  // a vthread outside any kernel: a host loop
          return ForNode::make(op->loop_var, op->min, op->extent, ForKind::Serial, host(op->body));
        if (op->kind == ForKind::Serial || op->kind == ForKind::Unrolled)
          return ForNode::make(op->loop_var, op->min, op->extent, ForKind::Serial, host(op->body));
        host_error(
            cat("loop '", op->loop_var.name(), "' is ", for_kind_name(op->kind), " outside any kernel"));
      }
      case IRNodeKind::Store: {
        const StoreNode* op = s.as<StoreNode>();
        host_error(cat("stage '", op->buffer.name(), "' is computed outside any kernel (it stores ",
                       op->buffer.name(), "[", to_string(op->index), "] on the host)"));
      }
      case IRNodeKind::Evaluate: {
        const EvaluateNode* op = s.as<EvaluateNode>();
        if (op->value.as<IntImmNode>()) return s;
        // An extern stage between kernels: the host program runs it on host copies of its buffers
        // (backend/cuda/extern_stage.hpp).
        if (const CallNode* call = op->value.as<CallNode>();
            call && call->name == loom::intrinsic::extern_stage)
          return s;
        host_error(cat("the host code evaluates ", to_string(op->value), " outside any kernel"));
      }
      case IRNodeKind::Barrier: host_error("a barrier stands outside any kernel");
      case IRNodeKind::Prefetch: return Stmt();
      default: break;
    }
    host_error(cat("the host code has a ", kind_name(s.kind()), " statement outside any kernel"));
  }

  Stmt region(const Stmt& s) {
    DeviceKernel k;
    k.name = cat(c_identifier(f_.name), "_kernel", kernels_.size());
    k.body = s;
    for (Expr& e : k.extents) e = make_const(i32, 1);

    // Launch loops, and checks that their extents are host values and agree.
    std::unordered_set<const VarNode*> inner;  // variables the region binds
    struct Loops : IRVisitor {
      std::vector<const ForNode*> loops;
      std::unordered_set<const VarNode*>& inner;
      explicit Loops(std::unordered_set<const VarNode*>& i) : inner(i) {}
      using IRVisitor::visit;
      void visit(const ForNode* op) override {
        inner.insert(op->loop_var.get());
        if (is_launch_loop(op)) loops.push_back(op);
        IRVisitor::visit(op);
      }
      void visit(const LetStmtNode* op) override {
        inner.insert(op->var.get());
        IRVisitor::visit(op);
      }
      void visit(const AllocateNode* op) override {
        inner.insert(op->buffer.get());
        IRVisitor::visit(op);
      }
    } loops(inner);
    loops.visit_stmt(s);
    for (const ForNode* loop : loops.loops) {
      for_each_expr(loop->extent, [&](const Expr& e) {
        if (const VarNode* v = e.as<VarNode>(); v && inner.count(v))
          throw Error(cat("build '", f_.name, "' for CUDA: the loop '", loop->loop_var.name(), "' bound to ",
                          loop->thread_tag, " has extent ", to_string(loop->extent), ", which uses '",
                          v->name,
                          "', a variable bound inside the kernel; launch dimensions are fixed at launch, so "
                          "they may only use sizes and parameters"));
      });
      const int d = find_launch_index(loop->thread_tag);
      if (k.loops[d].empty()) {
        k.extents[d] = loop->extent;
      } else {
        const ForNode* first = k.loops[d].front();
        const int64_t* a = as_const_int(first->extent);
        const int64_t* b = as_const_int(loop->extent);
        const bool differ = (a && b) ? *a != *b
                                     : !structural_equal(simplify(first->extent - loop->extent),
                                                         make_const(first->extent.dtype(), 0));
        if (differ)
          throw Error(cat("build '", f_.name, "' for CUDA: kernel ", k.name, " binds ", loop->thread_tag,
                          " with two different extents: ", to_string(first->extent), " (loop '",
                          first->loop_var.name(), "') and ", to_string(loop->extent), " (loop '",
                          loop->loop_var.name(),
                          "'). All loops bound to one thread tag share one launch dimension: split the "
                          "stages by the same factor, or bind the shorter one under a guard of its own"));
      }
      k.loops[d].push_back(loop);
    }

    // Parameters: buffers first (the function's in its order, then host-allocated ones), then
    // integers and the function's float arguments in order of first use.
    RegionFreeVars free;
    free.visit_stmt(s);
    std::vector<Var> vars = free.vars();
    std::stable_sort(vars.begin(), vars.end(),
                     [&](const Var& a, const Var& b) { return param_rank(a) < param_rank(b); });
    std::unordered_map<const VarNode*, DType> types = access_types(s);
    for (const Var& v : vars) {
      if (!v.dtype().is_handle()) continue;
      KernelParam p;
      p.var = v;
      p.is_buffer = true;
      auto it = types.find(v.get());
      if (it != types.end()) {
        p.element = it->second;
      } else if (auto b = buffer_types_.find(v.get()); b != buffer_types_.end()) {
        p.element = b->second;
      } else {
        p.element = u8;
      }
      p.written = free.written.count(v.get()) != 0;
      k.params.push_back(p);
    }
    for (const Var& v : vars) {
      if (v.dtype().is_handle()) continue;
      const bool passed = v.dtype().is_integral() || float_params_.count(v.get());
      if (!passed || v.dtype().is_vector())
        throw Error(cat("build '", f_.name, "' for CUDA: kernel ", k.name, " uses '", v.name(), "' of type ",
                        v.dtype().str(),
                        ", a value the host would have to compute; only integers and the function's "
                        "float arguments cross into kernels"));
      KernelParam p;
      p.var = v;
      p.element = v.dtype();
      k.params.push_back(p);
    }
    const int index = static_cast<int>(kernels_.size());
    kernels_.push_back(std::move(k));
    return EvaluateNode::make(
        CallNode::make(i32, intrinsic::cuda_launch, {make_const(i32, index)}, CallKind::Intrinsic));
  }

  size_t param_rank(const Var& v) const {
    for (size_t i = 0; i < f_.params.size(); ++i)
      if (f_.params[i].kind == FuncParam::Kind::Buffer && f_.params[i].buffer.data.same_as(v)) return i;
    return f_.params.size();
  }

  const LoweredFunc& f_;
  std::unordered_map<const VarNode*, DType> buffer_types_;
  std::unordered_set<const VarNode*> float_params_;  // float scalar arguments: the host has their values
  std::vector<DeviceKernel> kernels_;
};

}  // namespace detail

/// Splits `f` into host code and kernels; throws loom::Error naming the stage when computation
/// happens outside every kernel.
inline DeviceSplit split_host_device(const LoweredFunc& f) { return detail::Splitter(f).run(); }

}  // namespace loom::cuda

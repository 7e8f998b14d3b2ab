// The definition of lower() (lower/lower.hpp): the arguments become the function's parameters, the
// pipeline's passes and the user's run phase by phase, then the size variables are collected.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lower/lower.hpp");

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/ir/structural_equal.hpp"
#include "loom/lower/lower.hpp"
#include "loom/lower/pipeline.hpp"
#include "loom/support/file_name.hpp"

namespace loom {

namespace detail {

/// Runs one pass with the dump and timing the context asks for.
class PassRunner {
 public:
  PassRunner(const PassContext& ctx, LoweredFunc& func) : ctx_(ctx), func_(func) {
    if (!ctx.dump_dir.empty()) {
      dir_ = std::filesystem::path(ctx.dump_dir) / sanitize_file_name(func.name);
      std::filesystem::create_directories(dir_);
    }
  }

  Stmt run(Phase phase, const NamedPass& pass, Stmt body) {
    auto start = std::chrono::steady_clock::now();
    Stmt out = pass.fn(body, ctx_);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ctx_.time_passes)
      std::fprintf(stderr, "loom pass %-9s %-28s %9.3f ms\n", phase_name(phase), pass.name.c_str(), ms);
    if (!dir_.empty()) {
      char prefix[16];
      std::snprintf(prefix, sizeof prefix, "%02d_", counter_++);
      std::ofstream file(
          dir_ / (std::string(prefix) + phase_name(phase) + "_" + sanitize_file_name(pass.name) + ".txt"));
      bool unchanged = body.defined() && out.defined() && (out.same_as(body) || structural_equal(out, body));
      if (unchanged) {
        file << "unchanged\n";
      } else {
        func_.body = out;
        file << func_.to_string();
      }
    }
    return out;
  }

 private:
  const PassContext& ctx_;
  LoweredFunc& func_;
  std::filesystem::path dir_;
  int counter_ = 0;
};

/// Every free variable of `e` that is not in `known`.
inline void collect_free_vars(const Expr& e, std::vector<Var>& out,
                              std::unordered_set<const VarNode*>& seen) {
  for_each_expr(e, [&](const Expr& x) {
    if (const VarNode* v = x.as<VarNode>(); v && !v->dtype.is_handle() && seen.insert(v).second)
      out.push_back(Var(Ref<const ExprNode>(v)));
  });
}

/// Variables the body uses without binding them.
class FreeVarCollector : public IRVisitor {
 public:
  std::vector<Var> free;
  std::unordered_set<const VarNode*> bound;

 protected:
  using IRVisitor::visit;
  void visit(const VarNode* op) override {
    if (!bound.count(op) && !op->dtype.is_handle()) {
      bound.insert(op);
      free.push_back(Var(Ref<const ExprNode>(op)));
    }
  }
  void visit(const ForNode* op) override {
    bound.insert(op->loop_var.get());
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
  void visit(const CallNode* op) override {
    if (op->name == intrinsic::thread_allreduce) {
      ThreadAllreduce r = ThreadAllreduce::decode(op);
      for (const Var& v : r.lhs) bound.insert(v.get());
      for (const Var& v : r.rhs) bound.insert(v.get());
    }
    IRVisitor::visit(op);
  }
};

}  // namespace detail

LOOM_DECL LoweredFunc lower(const Schedule& s, const std::vector<LowerArg>& args, const std::string& name,
                            PassContext ctx) {
  LowerState state;
  state.func_name = name;
  state.schedule = s.copy();
  LoweredFunc func;
  func.name = name;

  std::unordered_set<const VarNode*> scalar_seen;
  std::vector<Var> scalar_args;
  for (const LowerArg& a : args) {
    if (a.tensor.defined()) {
      const Tensor& t = a.tensor;
      const StageNode* stage = state.schedule->find(t.op().get());
      if (!stage)
        throw Error(cat("lower '", name, "': argument '", t.name(),
                        "' is not part of the schedule; pass tensors that the schedule's outputs depend on"));
      // An inlined stage is never stored: as a parameter, its buffer would silently stay unwritten.
      if (stage->attach_type == AttachType::Inline || stage->attach_type == AttachType::InlinedAlready)
        throw Error(cat("lower '", name, "': argument '", t.name(),
                        "' is computed inline (compute_inline), so ",
                        "it is never stored; remove it from the arguments, or compute it at the root ",
                        "(compute_root) to get its values"));
      if (state.param_tensors.count(TensorKey(t)))
        throw Error(cat("lower '", name, "': tensor '", t.name(), "' is listed twice among the arguments"));
      state.param_tensors.insert(TensorKey(t));
      FlatBuffer b;
      b.data = Var(t.name(), handle_type);
      b.dtype = t.dtype();
      b.extents = t.shape();
      for (const Expr& e : t.shape()) b.mins.push_back(make_zero(e.dtype()));
      b.strides = aligned_strides(t.shape(), {});
      state.params[TensorKey(t)] = b;
      FuncParam p;
      p.kind = FuncParam::Kind::Buffer;
      p.buffer = BufferParam{t.name(), b.data, b.dtype, b.extents, b.strides};
      func.params.push_back(p);
    } else if (a.var.defined()) {
      if (!a.var.dtype().is_integral())
        throw Error(
            cat("lower '", name, "': scalar argument '", a.var.name(), "' must be an integer size variable"));
      if (!scalar_seen.insert(a.var.get()).second)
        throw Error(
            cat("lower '", name, "': variable '", a.var.name(), "' is listed twice among the arguments"));
      FuncParam p;
      p.kind = FuncParam::Kind::Scalar;
      p.scalar = a.var;
      func.params.push_back(p);
      scalar_args.push_back(a.var);
    } else {
      throw Error(cat("lower '", name, "': an argument is undefined"));
    }
  }

  ctx.state = &state;
  detail::PassRunner runner(ctx, func);
  Stmt body;
  for (const PhasePasses& phase : default_pipeline()) {
    for (const NamedPass& pass : phase.passes) body = runner.run(phase.phase, pass, body);
    for (const PassContext::UserPass& user : ctx.user_passes) {
      if (phase_of(user.where) != phase.phase) continue;
      Stmt given = body;
      body = runner.run(phase.phase, user.pass, body);
      // A pass that drops the program (e.g. a mutator that forgot to return) would otherwise
      // yield an empty kernel that silently writes nothing.
      if (given.defined() && !body.defined())
        throw Error(cat("lower '", name, "': user pass '", user.pass.name, "' (after phase '",
                        phase_name(phase.phase), "') returned an undefined Stmt; a pass must return the ",
                        "body it was given, or its rewritten version"));
    }
  }
  func.body = body;

  // Symbolic sizes: bound at call time from a buffer dimension that is exactly the variable,
  // or passed as scalars. Anything else the body uses freely cannot be bound.
  std::unordered_set<const VarNode*> seen;
  std::vector<Var> shape_vars;
  std::unordered_set<const VarNode*> bindable(scalar_seen);
  for (const FuncParam& p : func.params) {
    if (p.kind != FuncParam::Kind::Buffer) continue;
    for (const Expr& e : p.buffer.shape) {
      detail::collect_free_vars(e, shape_vars, seen);
      if (const VarNode* v = e.as<VarNode>()) bindable.insert(v);
    }
  }
  for (const Var& v : shape_vars)
    if (!bindable.count(v.get()))
      throw Error(
          cat("lower '", name, "': size variable '", v.name(),
              "' appears in argument shapes only inside expressions, so a call cannot bind it; pass '",
              v.name(), "' itself as an argument (lower(s, {..., ", v.name(), "}, ...))"));
  detail::FreeVarCollector free;
  free.visit_stmt(func.body);
  for (const Var& v : free.free) {
    if (!bindable.count(v.get()))
      throw Error(
          cat("lower '", name, "': the computation uses variable '", v.name(),
              "', which is neither a dimension of an argument nor an argument; pass it as an argument"));
    if (!seen.count(v.get())) {
      seen.insert(v.get());
      shape_vars.push_back(v);
    }
  }
  for (const Var& v : scalar_args)
    if (seen.insert(v.get()).second) shape_vars.push_back(v);
  func.size_vars = shape_vars;
  return func;
}

}  // namespace loom

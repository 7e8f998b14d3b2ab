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

#include "loom/ir/free_vars.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/structural_equal.hpp"
#include "loom/lower/input_regions.hpp"
#include "loom/lower/lower.hpp"
#include "loom/lower/pipeline.hpp"
#include "loom/support/file_name.hpp"

namespace loom {

namespace detail {

/// The schedule as the steps of phase schedule leave it, for IR dumps before any loop exists:
/// where each stage is computed and its loops, with their ranges once bounds are inferred.
inline std::string describe_schedule(const LowerState& state) {
  std::string out = cat("schedule of ", state.func.name, " (no loops yet)\n");
  for (const Ref<StageNode>& s : state.schedule->stages) {
    if (s->is_group) continue;
    out += cat("  stage ", s->op->name, ": ", attach_type_name(s->attach_type));
    if (s->attach_stage && s->attach_ivar.defined())
      out += cat(" at ", s->attach_stage->op->name, ".", s->attach_ivar->var.name());
    if (!s->scope.empty()) out += cat(", scope ", s->scope);
    out += "\n";
    for (const IterVar& iv : s->leaf_iter_vars) {
      out += cat("    for ", iv->var.name());
      auto r = state.bounds.ranges.find(iv.get());
      if (r != state.bounds.ranges.end() && r->second.defined())
        out += cat(" in [", to_string(r->second.min), ", +", to_string(r->second.extent), ")");
      if (!iv->thread_tag.empty()) out += cat(" bound to ", iv->thread_tag);
      out += "\n";
    }
  }
  return out;
}

/// The kernels of the host/device split, for IR dumps after phase device.
inline std::string describe_split(const cuda::DeviceSplit& split) {
  std::string out = cat("host program:\n", to_string(split.host), "\n");
  for (const cuda::DeviceKernel& k : split.kernels) {
    out += cat("kernel ", k.name, "(");
    for (size_t i = 0; i < k.params.size(); ++i)
      out += cat(i ? ", " : "", k.params[i].var.name(), k.params[i].is_buffer ? "[]" : "");
    out += ") launched with";
    for (int d = 0; d < kNumLaunchIndices; ++d)
      if (k.extents[static_cast<size_t>(d)].defined())
        out += cat(" ", launch_index_name(d), "=", to_string(k.extents[static_cast<size_t>(d)]));
    out += cat(":\n", to_string(k.body), "\n");
  }
  return out;
}

/// Runs the recipe's passes on one lowering, each with the dump and timing the context asks for.
class PassRunner {
 public:
  PassRunner(PassContext& ctx, LowerState& state) : ctx_(ctx), state_(state), view_(state) {
    if (!ctx.dump_dir.empty()) {
      dir_ = std::filesystem::path(ctx.dump_dir) / sanitize_file_name(state.func.name);
      std::filesystem::create_directories(dir_);
    }
  }

  /// The phases from `first` on: Loom's passes of each phase, then the user's passes after it.
  void run_from(Phase first) {
    ctx_.lowering_ = &view_;
    for (const PhasePasses& phase : default_pipeline()) {
      if (phase.phase < first) continue;
      for (const PipelinePass& pass : phase.passes)
        run(phase.phase, pass.name, [&](Stmt b) { return pass.fn(std::move(b), state_, ctx_); });
      for (const PassContext::UserPass& user : ctx_.user_passes) {
        if (phase_of(user.where) != phase.phase) continue;
        const bool given = state_.func.body.defined();
        run(phase.phase, user.pass.name, [&](Stmt b) { return user.pass.fn(std::move(b), ctx_); });
        // A pass that drops the program (e.g. a mutator that forgot to return) would otherwise
        // yield an empty kernel that silently writes nothing.
        if (given && !state_.func.body.defined())
          throw Error(cat(state_.entry, " '", state_.func.name, "': user pass '", user.pass.name,
                          "' (after phase '", phase_name(phase.phase),
                          "') returned an undefined Stmt; a pass must return the ",
                          "body it was given, or its rewritten version"));
      }
    }
    ctx_.lowering_ = nullptr;
  }

 private:
  template <typename F>
  void run(Phase phase, const std::string& name, F&& pass) {
    auto start = std::chrono::steady_clock::now();
    Stmt body = state_.func.body;
    Stmt out = pass(body);
    state_.func.body = out;
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (ctx_.time_passes)
      std::fprintf(stderr, "loom pass %-9s %-30s %9.3f ms  kernel '%s'\n", phase_name(phase), name.c_str(),
                   ms, state_.func.name.c_str());
    if (dir_.empty()) return;
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02d_", counter_++);
    std::ofstream file(dir_ /
                       (std::string(prefix) + phase_name(phase) + "_" + sanitize_file_name(name) + ".txt"));
    if (!out.defined()) {
      file << describe_schedule(state_);
    } else if (phase == Phase::Device && state_.device) {
      file << state_.func.to_string() << "\n" << describe_split(*state_.device);
    } else if (body.defined() && (out.same_as(body) || structural_equal(out, body))) {
      file << "unchanged\n";
    } else {
      file << state_.func.to_string();
    }
  }

  PassContext& ctx_;
  LowerState& state_;
  LoweringView view_;
  std::filesystem::path dir_;
  int counter_ = 0;
};

}  // namespace detail

LOOM_DECL LoweredFunc lower(const Schedule& s, const std::vector<LowerArg>& args, const std::string& name,
                            PassContext ctx) {
  return detail::lower_for("lower", s, args, name, std::move(ctx));
}

LOOM_DECL LoweredFunc detail::lower_for(const char* entry, const Schedule& s,
                                        const std::vector<LowerArg>& args, const std::string& name,
                                        PassContext ctx) {
  LowerState state;
  state.entry = entry;
  // Messages begin with the call and the kernel: "lower 'main': ..." or "build 'main': ...".
  const std::string where = cat(entry, " '", name, "'");
  state.schedule = s.copy();
  LoweredFunc& func = state.func;
  func.name = name;

  std::unordered_set<const VarNode*> scalar_seen;
  std::vector<Var> scalar_args;
  InputParams inputs;  // the placeholders among the arguments, for the call's region checks
  for (const LowerArg& a : args) {
    if (a.tensor.defined()) {
      const Tensor& t = a.tensor;
      const StageNode* stage = state.schedule->find(t.op().get());
      if (!stage)
        throw Error(cat(where, ": argument '", t.name(),
                        "' is not part of the schedule; pass tensors that the schedule's outputs depend on"));
      // An inlined stage is never stored: as a parameter, its buffer would silently stay unwritten.
      if (stage->attach_type == AttachType::Inline || stage->attach_type == AttachType::InlinedAlready)
        throw Error(cat(where, ": argument '", t.name(), "' is computed inline (compute_inline), so ",
                        "it is never stored; remove it from the arguments, or compute it at the root ",
                        "(compute_root) to get its values"));
      if (state.param_tensors.count(TensorKey(t)))
        throw Error(cat(where, ": tensor '", t.name(), "' is listed twice among the arguments"));
      state.param_tensors.insert(TensorKey(t));
      FlatBuffer b;
      b.data = Var(t.name(), handle_type);
      b.dtype = t.dtype();
      b.extents = t.shape();
      for (const Expr& e : t.shape()) b.mins.push_back(make_zero(e.dtype()));
      b.strides = aligned_strides(t.shape(), {});
      state.params[TensorKey(t)] = b;
      if (t.op()->kind == OpKind::Placeholder) inputs[TensorKey(t)] = func.params.size();
      FuncParam p;
      p.kind = FuncParam::Kind::Buffer;
      p.buffer = BufferParam{t.name(), b.data, b.dtype, b.extents, b.strides};
      func.params.push_back(p);
    } else if (a.var.defined()) {
      const DType t = a.var.dtype();
      if (!t.is_integral() && !t.is_float())
        throw Error(cat(where, ": scalar argument '", a.var.name(), "' has type ", t.str(),
                        "; a scalar argument is an integer or a float (declare it Var(\"", a.var.name(),
                        "\", i32) or Var(\"", a.var.name(), "\", f32))"));
      if (t.lanes != 1)
        throw Error(cat(where, ": scalar argument '", a.var.name(), "' has ", t.lanes,
                        " lanes; declare it with one lane and broadcast it in the computation"));
      if (!scalar_seen.insert(a.var.get()).second)
        throw Error(cat(where, ": variable '", a.var.name(), "' is listed twice among the arguments"));
      FuncParam p;
      p.kind = FuncParam::Kind::Scalar;
      p.scalar = a.var;
      func.params.push_back(p);
      scalar_args.push_back(a.var);
    } else {
      throw Error(cat(where, ": an argument is undefined"));
    }
  }

  if (ctx.check_input_regions) {
    std::vector<Operation> outputs;
    for (const Ref<StageNode>& stage : state.schedule->stages)
      if (stage->is_output) outputs.push_back(stage->origin_op);
    func.input_reads = infer_input_reads(outputs, inputs);
  }

  detail::PassRunner(ctx, state).run_from(Phase::Schedule);
  func.device_split = state.device;

  // Symbolic sizes: bound at call time from a buffer dimension that is exactly the variable,
  // or passed as scalars. Anything else the body uses freely cannot be bound.
  std::unordered_set<const VarNode*> seen;
  std::vector<Var> shape_vars;
  std::unordered_set<const VarNode*> bindable(scalar_seen);
  for (const FuncParam& p : func.params) {
    if (p.kind != FuncParam::Kind::Buffer) continue;
    for (const Expr& e : p.buffer.shape) {
      append_free_vars(e, shape_vars, seen);
      if (const VarNode* v = e.as<VarNode>()) bindable.insert(v);
    }
  }
  for (const Var& v : shape_vars)
    if (!bindable.count(v.get()))
      throw Error(
          cat(where, ": size variable '", v.name(),
              "' appears in argument shapes only inside expressions, so a call cannot bind it; pass '",
              v.name(), "' itself as an argument (", entry, "(s, {..., ", v.name(), "}, ...))"));
  // Float scalar arguments are values, not sizes: the call passes them, nothing binds them.
  for (const Var& v : free_vars(func.body)) {
    if (v.dtype().is_float()) {
      if (!bindable.count(v.get()))
        throw Error(cat(where, ": the computation uses the ", v.dtype().str(), " variable '", v.name(),
                        "', which is not an argument; pass it as one (", entry, "(s, {..., ", v.name(),
                        "}, ...))"));
      continue;
    }
    // A thread axis's index (thread_axis("threadIdx.x") is named after its tag) is free only where
    // no loop around its use is bound to it: passing it as an argument would not help.
    if (!bindable.count(v.get()) && (is_gpu_thread_tag(v.name()) || is_virtual_thread_tag(v.name())))
      throw Error(
          cat(where, ": the computation uses the thread index '", v.name(),
              "' outside every loop bound to it; bind a loop around that use to it (s[stage].bind(axis, "
              "thread_axis(\"",
              v.name(), "\"))) or compute the stage that uses it inside such a loop (compute_at)"));
    if (!bindable.count(v.get()))
      throw Error(
          cat(where, ": the computation uses variable '", v.name(),
              "', which is neither a dimension of an argument nor an argument; pass it as an argument"));
    if (!seen.count(v.get())) {
      seen.insert(v.get());
      shape_vars.push_back(v);
    }
  }
  for (const Var& v : scalar_args)
    if (!v.dtype().is_float() && seen.insert(v.get()).second) shape_vars.push_back(v);
  func.size_vars = shape_vars;
  return std::move(func);
}

LOOM_DECL LoweredFunc lower_from(LoweredFunc f, Phase from, PassContext ctx) {
  if (from == Phase::Schedule || from == Phase::Flatten)
    throw Error(cat("lower_from '", f.name, "': phase '", phase_name(from),
                    "' works on a schedule, which a function built by hand does not have; start at phase ",
                    "'loops', 'memory' or 'device', or call lower() with the schedule"));
  if (!f.body.defined()) throw Error(cat("lower_from '", f.name, "': the function has no body"));
  LowerState state;
  state.func = std::move(f);
  detail::PassRunner(ctx, state).run_from(from);
  state.func.device_split = state.device;
  return std::move(state.func);
}

}  // namespace loom

// Runs the host part of a CUDA module (lower/split_host_device.hpp): evaluates integer
// lets, loops, conditions and asserts, allocates global scratch buffers, launches kernels with
// their launch dimensions evaluated and runs extern stages between them, through callbacks (the
// Driver API, or a test's recorder).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/backend/cuda/extern_stage.hpp"
#include "loom/backend/cuda/launch_limits.hpp"
#include "loom/codegen/cuda/codegen_cuda.hpp"
#include "loom/ir/extern_call.hpp"

namespace loom::runtime::cuda {

using loom::cuda::CudaModule;
using loom::cuda::KernelCode;
using loom::cuda::LaunchDims;

/// Integer values of host variables, and device addresses of buffers (by their handle Var).
struct HostEnv {
  std::unordered_map<const VarNode*, int64_t> ints;
  std::unordered_map<const VarNode*, uint64_t> buffers;
};

/// What running the host program does to the device.
struct HostOps {
  std::function<uint64_t(int64_t bytes, const std::string& name)> allocate;
  std::function<void(uint64_t)> free;
  /// Waits until every kernel launched so far has finished (launches are asynchronous): called
  /// before a scratch buffer is freed, which kernels still running may use. Optional.
  std::function<void()> synchronize;
  /// kernel index, its dimensions, and the values of its parameters in order: a device address
  /// for each buffer, the integer for each scalar.
  std::function<void(size_t, const LaunchDims&, const std::vector<uint64_t>& buffers,
                     const std::vector<int64_t>& ints)>
      launch;
  /// An extern stage: the registered function's id and its buffers in device memory.
  std::function<void(int64_t function_id, const std::vector<DeviceBufferView>& inputs,
                     const std::vector<DeviceBufferView>& outputs)>
      extern_stage;
};

/// The value of a host integer expression (sizes, loop variables, launch extents).
inline int64_t eval_host_int(const Expr& e, const HostEnv& env, const std::string& where) {
  auto rec = [&](const Expr& x) { return eval_host_int(x, env, where); };
  auto div_check = [&](int64_t b) {
    if (b == 0) throw Error(cat(where, ": division by zero in ", to_string(e)));
  };
  switch (e.kind()) {
    case IRNodeKind::IntImm: return e.as<IntImmNode>()->value;
    case IRNodeKind::Var: {
      auto it = env.ints.find(static_cast<const VarNode*>(e.get()));
      if (it == env.ints.end())
        throw InternalError(cat(where, ": host variable '", e.as<VarNode>()->name, "' has no value"));
      return it->second;
    }
    case IRNodeKind::Add: return rec(e.as<AddNode>()->a) + rec(e.as<AddNode>()->b);
    case IRNodeKind::Sub: return rec(e.as<SubNode>()->a) - rec(e.as<SubNode>()->b);
    case IRNodeKind::Mul: return rec(e.as<MulNode>()->a) * rec(e.as<MulNode>()->b);
    case IRNodeKind::Div: {
      int64_t b = rec(e.as<DivNode>()->b);
      div_check(b);
      return rec(e.as<DivNode>()->a) / b;
    }
    case IRNodeKind::Mod: {
      int64_t b = rec(e.as<ModNode>()->b);
      div_check(b);
      return rec(e.as<ModNode>()->a) % b;
    }
    case IRNodeKind::FloorDiv: {
      int64_t a = rec(e.as<FloorDivNode>()->a), b = rec(e.as<FloorDivNode>()->b);
      div_check(b);
      int64_t q = a / b;
      return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case IRNodeKind::FloorMod: {
      int64_t a = rec(e.as<FloorModNode>()->a), b = rec(e.as<FloorModNode>()->b);
      div_check(b);
      int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case IRNodeKind::Min: return std::min(rec(e.as<MinNode>()->a), rec(e.as<MinNode>()->b));
    case IRNodeKind::Max: return std::max(rec(e.as<MaxNode>()->a), rec(e.as<MaxNode>()->b));
    case IRNodeKind::EQ: return rec(e.as<EQNode>()->a) == rec(e.as<EQNode>()->b);
    case IRNodeKind::NE: return rec(e.as<NENode>()->a) != rec(e.as<NENode>()->b);
    case IRNodeKind::LT: return rec(e.as<LTNode>()->a) < rec(e.as<LTNode>()->b);
    case IRNodeKind::LE: return rec(e.as<LENode>()->a) <= rec(e.as<LENode>()->b);
    case IRNodeKind::GT: return rec(e.as<GTNode>()->a) > rec(e.as<GTNode>()->b);
    case IRNodeKind::GE: return rec(e.as<GENode>()->a) >= rec(e.as<GENode>()->b);
    case IRNodeKind::And: return rec(e.as<AndNode>()->a) && rec(e.as<AndNode>()->b);
    case IRNodeKind::Or: return rec(e.as<OrNode>()->a) || rec(e.as<OrNode>()->b);
    case IRNodeKind::Not: return !rec(e.as<NotNode>()->a);
    case IRNodeKind::Select: {
      const SelectNode* s = e.as<SelectNode>();
      return rec(s->condition) ? rec(s->true_value) : rec(s->false_value);
    }
    case IRNodeKind::Cast: {
      const CastNode* c = e.as<CastNode>();
      if (c->value.dtype().is_float()) break;
      int64_t v = rec(c->value);
      DType t = c->dtype;
      if (t.is_bool()) return v != 0;
      if (t.bits < 64) {
        const int shift = 64 - t.bits;
        return t.is_int() ? static_cast<int64_t>(static_cast<uint64_t>(v) << shift) >> shift
                          : static_cast<int64_t>(static_cast<uint64_t>(v) & ((uint64_t{1} << t.bits) - 1));
      }
      return v;
    }
    case IRNodeKind::Call: {
      const CallNode* c = e.as<CallNode>();
      if (c->name == loom::intrinsic::likely) return rec(c->args.at(0));
      if (c->name == loom::intrinsic::if_then_else)
        return rec(c->args.at(0)) ? rec(c->args.at(1)) : rec(c->args.at(2));
      break;
    }
    case IRNodeKind::Let: {
      const LetNode* l = e.as<LetNode>();
      HostEnv inner = env;
      inner.ints[l->var.get()] = rec(l->value);
      return eval_host_int(l->body, inner, where);
    }
    default: break;
  }
  throw Error(
      cat(where, ": the host cannot evaluate ", to_string(e), " (only integer arithmetic runs there)"));
}

/// The dimensions of launching `k` in `env`.
inline LaunchDims launch_dims(const KernelCode& k, const HostEnv& env, const std::string& where) {
  LaunchDims dims;
  for (int d = 0; d < 6; ++d) {
    const int64_t v = eval_host_int(k.kernel.extents[static_cast<size_t>(d)], env, where);
    (d < 3 ? dims.block[d] : dims.grid[d - 3]) = v;
  }
  dims.dynamic_shared = eval_host_int(k.dynamic_shared_bytes, env, where);
  return dims;
}

/// Runs the host program of `m`: `env` holds the arguments; launches are checked against
/// `limits` (dimensions only known now, such as symbolic sizes) before `ops.launch` runs them.
inline void run_host_program(const CudaModule& m, const Stmt& s, HostEnv& env, const HostOps& ops,
                             const loom::cuda::ArchLimits& limits) {
  if (!s.defined()) return;
  const std::string where = cat("kernel '", m.name, "'");
  switch (s.kind()) {
    case IRNodeKind::Seq:
      for (const Stmt& c : s.as<SeqNode>()->seq) run_host_program(m, c, env, ops, limits);
      return;
    case IRNodeKind::LetStmt: {
      const LetStmtNode* op = s.as<LetStmtNode>();
      env.ints[op->var.get()] = eval_host_int(op->value, env, where);
      run_host_program(m, op->body, env, ops, limits);
      env.ints.erase(op->var.get());
      return;
    }
    case IRNodeKind::AttrStmt: return run_host_program(m, s.as<AttrStmtNode>()->body, env, ops, limits);
    case IRNodeKind::AssertStmt: {
      const AssertStmtNode* op = s.as<AssertStmtNode>();
      if (!eval_host_int(op->condition, env, where)) throw Error(op->message);
      return run_host_program(m, op->body, env, ops, limits);
    }
    case IRNodeKind::IfThenElse: {
      const IfThenElseNode* op = s.as<IfThenElseNode>();
      return run_host_program(m, eval_host_int(op->condition, env, where) ? op->then_case : op->else_case,
                              env, ops, limits);
    }
    case IRNodeKind::For: {
      const ForNode* op = s.as<ForNode>();
      const int64_t min = eval_host_int(op->min, env, where), extent = eval_host_int(op->extent, env, where);
      for (int64_t i = min; i < min + extent; ++i) {
        env.ints[op->loop_var.get()] = i;
        run_host_program(m, op->body, env, ops, limits);
      }
      env.ints.erase(op->loop_var.get());
      return;
    }
    case IRNodeKind::Allocate: {
      const AllocateNode* op = s.as<AllocateNode>();
      int64_t elements = 1;
      for (const Expr& e : op->extents) elements *= eval_host_int(e, env, where);
      const uint64_t address =
          ops.allocate(std::max<int64_t>(elements, 1) * op->dtype.bytes(), op->buffer.name());
      env.buffers[op->buffer.get()] = address;
      struct Free {
        const HostOps& ops;
        uint64_t address;
        ~Free() {
          if (ops.synchronize) ops.synchronize();
          ops.free(address);
        }
      } free_at_end{ops, address};
      run_host_program(m, op->body, env, ops, limits);
      env.buffers.erase(op->buffer.get());
      return;
    }
    case IRNodeKind::Evaluate: {
      const CallNode* call = s.as<EvaluateNode>()->value.as<CallNode>();
      if (call && call->name == loom::intrinsic::extern_stage) {
        const ExternStageCall decoded = ExternStageCall::decode(call);
        auto views = [&](const std::vector<ExternBufferArg>& args) {
          std::vector<DeviceBufferView> out;
          for (const ExternBufferArg& a : args) {
            DeviceBufferView v;
            auto it = env.buffers.find(a.data.get());
            internal_check(it != env.buffers.end(), "extern stage: no device buffer for '", a.data.name(),
                           "'");
            v.address = it->second;
            v.dtype = a.dtype;
            v.name = a.data.name();
            for (const Expr& e : a.shape) v.shape.push_back(eval_host_int(e, env, where));
            for (const Expr& e : a.strides) v.strides.push_back(eval_host_int(e, env, where));
            out.push_back(std::move(v));
          }
          return out;
        };
        internal_check(static_cast<bool>(ops.extern_stage), "CUDA host program: no extern stage handler");
        ops.extern_stage(decoded.function_id, views(decoded.inputs), views(decoded.outputs));
        return;
      }
      if (!call || call->name != loom::cuda::intrinsic::cuda_launch) return;
      const size_t index = static_cast<size_t>(call->args.at(0).as<IntImmNode>()->value);
      const KernelCode& k = m.kernels.at(index);
      LaunchDims dims = launch_dims(k, env, cat("kernel ", k.kernel.name));
      loom::cuda::check_launch(k, dims, limits, cat("launch of kernel ", k.kernel.name));
      for (int d = 0; d < 3; ++d)
        if (dims.block[d] <= 0 || dims.grid[d] <= 0) return;  // an empty launch runs nothing
      std::vector<uint64_t> buffers;
      std::vector<int64_t> ints;
      for (const loom::cuda::KernelParam& p : k.kernel.params) {
        if (p.is_buffer) {
          auto it = env.buffers.find(p.var.get());
          internal_check(it != env.buffers.end(), "kernel ", k.kernel.name, ": no device buffer for '",
                         p.var.name(), "'");
          buffers.push_back(it->second);
        } else {
          ints.push_back(eval_host_int(p.var, env, where));
        }
      }
      ops.launch(index, dims, buffers, ints);
      return;
    }
    default: break;
  }
  throw InternalError(cat("CUDA host program: unexpected ", kind_name(s.kind())));
}

}  // namespace loom::runtime::cuda

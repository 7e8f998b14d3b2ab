// Runs the host part of a CUDA module (lower/split_host_device.hpp): evaluates integer
// lets, loops, conditions and asserts, allocates global scratch buffers, launches kernels with
// their launch dimensions evaluated and runs extern stages between them, through callbacks (the
// Driver API, or a test's recorder).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/backend/cuda/extern_stage.hpp"
#include "loom/backend/cuda/launch_limits.hpp"
#include "loom/codegen/cuda/codegen_cuda.hpp"
#include "loom/ir/dtype_arith.hpp"
#include "loom/ir/extern_call.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/int_eval.hpp"

namespace loom::runtime::cuda {

using loom::cuda::CudaModule;
using loom::cuda::KernelCode;
using loom::cuda::LaunchDims;

/// Integer values of host variables, values of float scalar arguments, and device addresses of
/// buffers (by their handle Var).
struct HostEnv {
  std::unordered_map<const VarNode*, int64_t> ints;
  std::unordered_map<const VarNode*, double> floats;
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
  /// for each buffer, and for each scalar the bytes of its value in the C type the kernel declares
  /// (scalar_bytes(), little-endian, zero-padded to 8 bytes).
  std::function<void(size_t, const LaunchDims&, const std::vector<uint64_t>& buffers,
                     const std::vector<uint64_t>& scalars)>
      launch;
  /// An extern stage: the registered function's id and its buffers in device memory.
  std::function<void(int64_t function_id, const std::vector<DeviceBufferView>& inputs,
                     const std::vector<DeviceBufferView>& outputs)>
      extern_stage;
};

/// The value of a host integer expression (sizes, loop variables, launch extents).
inline int64_t eval_host_int(const Expr& e, const HostEnv& env, const std::string& where) {
  auto lookup = [&](const VarNode* v, int) -> const int64_t* {
    auto it = env.ints.find(v);
    return it == env.ints.end() ? nullptr : &it->second;
  };
  try {
    return IntEvaluator<decltype(lookup)>(lookup)(e);
  } catch (const IntEvalFailure& failure) {
    switch (failure.kind) {
      case IntEvalFailure::Kind::UnboundVar:
        throw InternalError(cat(where, ": host variable '", failure.var->name, "' has no value"));
      case IntEvalFailure::Kind::DivisionByZero:
        throw Error(cat(where, ": division by zero in ", to_string(failure.expr)));
      case IntEvalFailure::Kind::NotInteger: break;
    }
    throw Error(cat(where, ": the host cannot evaluate ", to_string(failure.expr),
                    " (only integer arithmetic runs there)"));
  }
}

/// The bytes of a scalar kernel parameter of type `t` in its C type (int64_t, int32_t, float,
/// double, __half, ...), zero-padded to 8: an integer from env.ints, a float argument from
/// env.floats, rounded to `t` as the CPU backend rounds it.
inline uint64_t scalar_bytes(const Var& v, const HostEnv& env, const std::string& where) {
  const DType t = v.dtype();
  uint64_t bytes = 0;
  if (!t.is_float()) {
    const int64_t value = eval_host_int(v, env, where);
    std::memcpy(&bytes, &value, 8);  // little-endian: the low bytes are the narrower types
    return bytes;
  }
  auto it = env.floats.find(v.get());
  internal_check(it != env.floats.end(), where, ": float argument '", v.name(), "' has no value");
  const double value = arith::round_double_to(it->second, arith::float_format_of(t));
  if (t.bits == 64) {
    std::memcpy(&bytes, &value, 8);
  } else if (t.bits == 32) {
    bytes = float_bits(static_cast<float>(value));
  } else {  // float16, bfloat16: value is exact in float once rounded to the 16-bit format
    bytes = t.is_bfloat() ? float_to_bfloat16_bits(static_cast<float>(value))
                          : float_to_half_bits(static_cast<float>(value));
  }
  return bytes;
}

/// The dimensions of launching `k` in `env`.
inline LaunchDims launch_dims(const KernelCode& k, const HostEnv& env, const std::string& where) {
  LaunchDims dims;
  for (int d = 0; d < kNumLaunchIndices; ++d) {
    const int64_t v = eval_host_int(k.kernel.extents[static_cast<size_t>(d)], env, where);
    (d < kFirstBlockIndex ? dims.block[d] : dims.grid[d - kFirstBlockIndex]) = v;
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
      std::vector<uint64_t> scalars;
      for (const loom::cuda::KernelParam& p : k.kernel.params) {
        if (p.is_buffer) {
          auto it = env.buffers.find(p.var.get());
          internal_check(it != env.buffers.end(), "kernel ", k.kernel.name, ": no device buffer for '",
                         p.var.name(), "'");
          buffers.push_back(it->second);
        } else {
          scalars.push_back(scalar_bytes(p.var, env, where));
        }
      }
      ops.launch(index, dims, buffers, scalars);
      return;
    }
    default: break;
  }
  throw InternalError(cat("CUDA host program: unexpected ", kind_name(s.kind())));
}

}  // namespace loom::runtime::cuda

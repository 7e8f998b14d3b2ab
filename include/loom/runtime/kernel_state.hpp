// What a Kernel holds (shared by its copies): the lowered function, the target, the entry's argument
// slots and either the machine code (CPU) or the device runner (GPU targets); and the two ways a
// backend makes a Kernel.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/codegen/kernel_abi.hpp"
#include "loom/ir/amx_tile_product.hpp"
#include "loom/ir/extern_call.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/runtime/cpu_backend.hpp"
#include "loom/runtime/device_runner.hpp"
#include "loom/runtime/kernel.hpp"

namespace loom::runtime {

struct KernelState {
  LoweredFunc func;
  Target target;
  KernelSignature signature;
  std::vector<bool> param_written;
  std::shared_ptr<const CompiledCode> code;
  CacheOutcome outcome = CacheOutcome::Compiled;
  CpuBackend* backend = nullptr;
  std::shared_ptr<const DeviceRunner> device;  // GPU targets
  mutable std::once_flag text_once[2];
  mutable std::string text[2];
  KernelState(LoweredFunc f, Target t) : func(std::move(f)), target(std::move(t)) {}
};

/// The buffer parameters whose memory the body writes (stores, extern stage outputs, AMX tile
/// products' C), by index.
inline std::vector<bool> written_buffer_params(const LoweredFunc& f) {
  std::unordered_set<const VarNode*> written;
  std::unordered_map<const VarNode*, const VarNode*> alias;  // LetStmt handle aliases
  struct Finder : IRVisitor {
    std::unordered_set<const VarNode*>& written;
    std::unordered_map<const VarNode*, const VarNode*>& alias;
    Finder(std::unordered_set<const VarNode*>& w, std::unordered_map<const VarNode*, const VarNode*>& a)
        : written(w), alias(a) {}
    using IRVisitor::visit;
    void visit(const StoreNode* op) override {
      written.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const LetStmtNode* op) override {
      if (const VarNode* source = op->value.as<VarNode>(); source && op->var.dtype().is_handle())
        alias[op->var.get()] = source;
      IRVisitor::visit(op);
    }
    void visit(const CallNode* op) override {
      if (op->name == intrinsic::extern_stage) {
        for (const ExternBufferArg& b : ExternStageCall::decode(op).outputs) written.insert(b.data.get());
      } else if (op->name == intrinsic::amx_tile_product) {
        written.insert(AmxTileProduct::decode(op).c.data.get());
      } else if (op->call_kind == CallKind::Extern) {
        // A C function may write through any handle it receives.
        for (const Expr& a : op->args)
          if (const VarNode* v = a.as<VarNode>(); v && v->dtype.is_handle()) written.insert(v);
      }
      IRVisitor::visit(op);
    }
  } finder(written, alias);
  finder.visit_stmt(f.body);
  auto root = [&](const VarNode* v) {
    for (int guard = 0; guard < 64 && alias.count(v); ++guard) v = alias.at(v);
    return v;
  };
  std::unordered_set<const VarNode*> written_roots;
  for (const VarNode* v : written) written_roots.insert(root(v));
  std::vector<bool> out;
  for (const FuncParam& p : f.params)
    out.push_back(p.kind == FuncParam::Kind::Buffer && written_roots.count(p.buffer.data.get()) != 0);
  return out;
}

/// A CPU kernel of the machine code `result` that `backend` compiled.
inline Kernel make_kernel(LoweredFunc f, Target target, CpuBackend::Result result, CpuBackend* backend) {
  auto state = std::make_shared<KernelState>(std::move(f), std::move(target));
  state->signature = kernel_signature(state->func);
  state->param_written = written_buffer_params(state->func);
  state->code = std::move(result.code);
  state->outcome = result.outcome;
  state->backend = backend;
  return Kernel(std::move(state));
}

inline Kernel make_device_kernel(LoweredFunc f, Target target, std::shared_ptr<const DeviceRunner> device,
                                 CacheOutcome outcome) {
  auto state = std::make_shared<KernelState>(std::move(f), std::move(target));
  state->param_written = written_buffer_params(state->func);
  state->device = std::move(device);
  state->outcome = outcome;
  return Kernel(std::move(state));
}

}  // namespace loom::runtime

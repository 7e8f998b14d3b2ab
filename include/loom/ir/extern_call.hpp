// The calling convention of an extern stage in the IR: one intrinsic call that names a
// registered C++ function and describes every input and output buffer it receives.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/ir/expr.hpp"

namespace loom {

/// One buffer handed to an extern function: its memory, element type, shape and strides.
struct ExternBufferArg {
  Var data;
  DType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // in elements
};

/// A decoded `loom.extern_stage` call.
struct ExternStageCall {
  int64_t function_id = 0;
  std::vector<ExternBufferArg> inputs;
  std::vector<ExternBufferArg> outputs;

  static int64_t pack_dtype(DType t) {
    return static_cast<int64_t>(t.code) | (int64_t{t.bits} << 8) | (int64_t{t.lanes} << 16);
  }
  static DType unpack_dtype(int64_t v) {
    return DType(static_cast<TypeCode>(v & 0xff), static_cast<int>((v >> 8) & 0xff),
                 static_cast<int>(v >> 16));
  }

  /// Layout of the call's arguments: id, #inputs, #outputs, then per buffer:
  /// data, packed dtype, rank r, r shape extents, r strides.
  Expr encode() const {
    std::vector<Expr> args{IntImmNode::make(i64, function_id),
                           IntImmNode::make(i32, static_cast<int64_t>(inputs.size())),
                           IntImmNode::make(i32, static_cast<int64_t>(outputs.size()))};
    auto add = [&](const ExternBufferArg& b) {
      args.push_back(b.data);
      args.push_back(IntImmNode::make(i64, pack_dtype(b.dtype)));
      args.push_back(IntImmNode::make(i32, static_cast<int64_t>(b.shape.size())));
      for (const Expr& e : b.shape) args.push_back(e);
      for (const Expr& e : b.strides) args.push_back(e);
    };
    for (const ExternBufferArg& b : inputs) add(b);
    for (const ExternBufferArg& b : outputs) add(b);
    return CallNode::make(i32, intrinsic::extern_stage, std::move(args), CallKind::Intrinsic);
  }

  static ExternStageCall decode(const CallNode* call) {
    internal_check(call->name == intrinsic::extern_stage, "not an extern stage call");
    const std::vector<Expr>& a = call->args;
    auto int_at = [&](size_t i) {
      const IntImmNode* imm = a.at(i).as<IntImmNode>();
      internal_check(imm != nullptr, "malformed extern stage call");
      return imm->value;
    };
    ExternStageCall c;
    c.function_id = int_at(0);
    int64_t n_in = int_at(1), n_out = int_at(2);
    size_t pos = 3;
    auto take = [&]() {
      ExternBufferArg b;
      b.data = Var(Ref<const ExprNode>(a.at(pos++).get()));
      b.dtype = unpack_dtype(int_at(pos++));
      int64_t rank = int_at(pos++);
      for (int64_t d = 0; d < rank; ++d) b.shape.push_back(a.at(pos++));
      for (int64_t d = 0; d < rank; ++d) b.strides.push_back(a.at(pos++));
      return b;
    };
    for (int64_t i = 0; i < n_in; ++i) c.inputs.push_back(take());
    for (int64_t i = 0; i < n_out; ++i) c.outputs.push_back(take());
    return c;
  }
};

}  // namespace loom

// The list of every IR node kind, as X-macros, so that visitors, mutators, the printer,
// equality and hashing can all be generated from one place and never miss a node.
#pragma once

#include <cstdint>

// X(KindName, NodeStruct)
#define LOOM_BINARY_EXPR_NODES(X) \
  X(Add, AddNode)                 \
  X(Sub, SubNode)                 \
  X(Mul, MulNode)                 \
  X(Div, DivNode)                 \
  X(Mod, ModNode)                 \
  X(FloorDiv, FloorDivNode)       \
  X(FloorMod, FloorModNode)       \
  X(Min, MinNode)                 \
  X(Max, MaxNode)                 \
  X(EQ, EQNode)                   \
  X(NE, NENode)                   \
  X(LT, LTNode)                   \
  X(LE, LENode)                   \
  X(GT, GTNode)                   \
  X(GE, GENode)                   \
  X(And, AndNode)                 \
  X(Or, OrNode)                   \
  X(BitwiseAnd, BitwiseAndNode)   \
  X(BitwiseOr, BitwiseOrNode)     \
  X(BitwiseXor, BitwiseXorNode)   \
  X(ShiftLeft, ShiftLeftNode)     \
  X(ShiftRight, ShiftRightNode)

#define LOOM_EXPR_NODES(X)    \
  X(IntImm, IntImmNode)       \
  X(FloatImm, FloatImmNode)   \
  X(StringImm, StringImmNode) \
  X(Var, VarNode)             \
  LOOM_BINARY_EXPR_NODES(X)   \
  X(Not, NotNode)             \
  X(Select, SelectNode)       \
  X(Cast, CastNode)           \
  X(Load, LoadNode)           \
  X(Ramp, RampNode)           \
  X(Broadcast, BroadcastNode) \
  X(Call, CallNode)           \
  X(Let, LetNode)             \
  X(Reduce, ReduceNode)       \
  X(ProducerLoad, ProducerLoadNode)

#define LOOM_STMT_NODES(X)      \
  X(LetStmt, LetStmtNode)       \
  X(AttrStmt, AttrStmtNode)     \
  X(AssertStmt, AssertStmtNode) \
  X(Store, StoreNode)           \
  X(Provide, ProvideNode)       \
  X(Allocate, AllocateNode)     \
  X(Realize, RealizeNode)       \
  X(For, ForNode)               \
  X(IfThenElse, IfThenElseNode) \
  X(Seq, SeqNode)               \
  X(Evaluate, EvaluateNode)     \
  X(Barrier, BarrierNode)       \
  X(Prefetch, PrefetchNode)

namespace loom {

/// The kind of every IR node, one per node class (Add, Var, For, ...); ExprNode and StmtNode carry it.
enum class IRNodeKind : uint8_t {
#define LOOM_DECLARE_KIND(name, node) name,
  LOOM_EXPR_NODES(LOOM_DECLARE_KIND) LOOM_STMT_NODES(LOOM_DECLARE_KIND)
#undef LOOM_DECLARE_KIND
};

/// The kind's name as written here ("Add", "FloorDiv", "For").
inline const char* kind_name(IRNodeKind kind) {
  switch (kind) {
#define LOOM_KIND_NAME(name, node) \
  case IRNodeKind::name: return #name;
    LOOM_EXPR_NODES(LOOM_KIND_NAME) LOOM_STMT_NODES(LOOM_KIND_NAME)
#undef LOOM_KIND_NAME
  }
  return "?";
}

}  // namespace loom

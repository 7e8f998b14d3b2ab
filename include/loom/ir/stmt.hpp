// Statement nodes of the loop IR and the Stmt handle. Before storage flattening, stages write
// through Provide into Realize'd producers; afterwards through Store into Allocate'd buffers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loom/ir/iter_var.hpp"
#include "loom/ir/producer.hpp"

namespace loom {

/// The base of every statement node: its IRNodeKind, for Stmt::as<T>(). Nodes are immutable and shared.
class StmtNode : public Object {
 public:
  /// Called by the node classes' constructors; `k` must be the derived class's node_kind.
  explicit StmtNode(IRNodeKind k) : kind(k) {}
  /// The node's class, for Stmt::as<T>() and switches over node kinds.
  const IRNodeKind kind;
};

/// A handle to an immutable statement node; default-constructed it is undefined (an empty statement).
class Stmt {
 public:
  Stmt() = default;
  /// Wraps a node (the node classes' make() return Stmt).
  Stmt(Ref<const StmtNode> node) : node_(std::move(node)) {}
  /// Node access: defined() is false for an empty statement, which every other accessor but get() and
  /// same_as() dereferences. same_as() compares node identity.
  /// @{
  bool defined() const { return static_cast<bool>(node_); }
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  IRNodeKind kind() const { return node_->kind; }
  bool same_as(const Stmt& other) const { return node_.same_as(other.node_); }
  /// @}
  /// The node as T when it is one, otherwise nullptr.
  template <typename T>
  const T* as() const {
    if (node_ && node_->kind == T::node_kind) return static_cast<const T*>(node_.get());
    return nullptr;
  }

 private:
  Ref<const StmtNode> node_;
};

/// `let var = value` in scope for `body` (a value computed once and named).
class LetStmtNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::LetStmt;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  LetStmtNode(Var v, Expr val, Stmt b)
      : StmtNode(node_kind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  /// The variable, its value, and the statement it is bound in.
  /// @{
  const Var var;
  const Expr value;
  const Stmt body;
  /// @}
  /// Binds `var` to `value` for `body`.
  static Stmt make(Var var, Expr value, Stmt body) {
    return Stmt(make_ref<LetStmtNode>(std::move(var), std::move(value), std::move(body)));
  }
};

/// An annotation of `body`: key names it ("pragma_unroll", "storage_alignment", ...), node is
/// what it annotates (a Var, a StringImm), value its value.
class AttrStmtNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::AttrStmt;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  AttrStmtNode(std::string k, Expr n, Expr v, Stmt b)
      : StmtNode(node_kind), key(std::move(k)), node(std::move(n)), value(std::move(v)), body(std::move(b)) {}
  /// The attribute's name, what it annotates, its value, and the statement it applies to.
  /// @{
  const std::string key;
  const Expr node;
  const Expr value;
  const Stmt body;
  /// @}
  /// The attribute `key` of `node` with `value`, over `body`.
  static Stmt make(std::string key, Expr node, Expr value, Stmt body) {
    return Stmt(make_ref<AttrStmtNode>(std::move(key), std::move(node), std::move(value), std::move(body)));
  }
};

/// Checks `condition` at run time before `body`; when false the kernel fails with `message`
/// (the argument checks of a built function).
class AssertStmtNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::AssertStmt;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  AssertStmtNode(Expr c, std::string m, Stmt b)
      : StmtNode(node_kind), condition(std::move(c)), message(std::move(m)), body(std::move(b)) {}
  /// The bool checked, the error message when it is false, and the statement after the check.
  /// @{
  const Expr condition;
  const std::string message;
  const Stmt body;
  /// @}
  /// An assertion of `condition` (bool) with `message`, then `body`.
  static Stmt make(Expr condition, std::string message, Stmt body) {
    return Stmt(make_ref<AssertStmtNode>(std::move(condition), std::move(message), std::move(body)));
  }
};

/// buffer[index] = value on flat memory; a vector index stores several lanes.
class StoreNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Store;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  StoreNode(Var b, Expr v, Expr i, Expr p)
      : StmtNode(node_kind),
        buffer(std::move(b)),
        value(std::move(v)),
        index(std::move(i)),
        predicate(std::move(p)) {}
  /// The buffer variable (a handle), the value (vector values store several lanes), the element index
  /// (a Ramp for vector stores) and the lane mask (undefined: all lanes).
  /// @{
  const Var buffer;
  const Expr value;
  const Expr index;
  const Expr predicate;
  /// @}
  /// A store of `value` at `index` of `buffer`; value and index have the same lanes, `predicate` masks lanes.
  static Stmt make(Var buffer, Expr value, Expr index, Expr predicate = Expr()) {
    internal_check(value.dtype().lanes == index.dtype().lanes, "store of ", value.dtype().str(),
                   " at an index of ", index.dtype().lanes, " lanes");
    return Stmt(
        make_ref<StoreNode>(std::move(buffer), std::move(value), std::move(index), std::move(predicate)));
  }
};

/// producer(indices) = value, before storage flattening.
class ProvideNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Provide;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  ProvideNode(Producer p, std::vector<Expr> idx, Expr v)
      : StmtNode(node_kind), producer(std::move(p)), indices(std::move(idx)), value(std::move(v)) {}
  /// The producer written, one index per dimension, and the value.
  /// @{
  const Producer producer;
  const std::vector<Expr> indices;
  const Expr value;
  /// @}
  /// A write of `value` to `producer` at `indices` (one per dimension).
  static Stmt make(Producer producer, std::vector<Expr> indices, Expr value) {
    return Stmt(make_ref<ProvideNode>(std::move(producer), std::move(indices), std::move(value)));
  }
};

/// A buffer of `extents` elements of `dtype` in memory `scope` ("global", "shared", "local"),
/// live within `body`.
class AllocateNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Allocate;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  AllocateNode(Var b, DType t, std::vector<Expr> e, std::string s, Stmt bd)
      : StmtNode(node_kind),
        buffer(std::move(b)),
        dtype(t),
        extents(std::move(e)),
        scope(std::move(s)),
        body(std::move(bd)) {}
  /// The buffer variable (a handle), the element type, the extents, the memory scope ("global",
  /// "shared", "local", ...), and the statement in which the buffer is live.
  /// @{
  const Var buffer;
  const DType dtype;
  const std::vector<Expr> extents;
  const std::string scope;
  const Stmt body;
  /// @}
  /// An allocation of `buffer`: `extents` elements of `dtype` in `scope`, live within `body`.
  static Stmt make(Var buffer, DType dtype, std::vector<Expr> extents, std::string scope, Stmt body) {
    return Stmt(make_ref<AllocateNode>(std::move(buffer), dtype, std::move(extents), std::move(scope),
                                       std::move(body)));
  }
};

/// The region `bounds` of `producer` is materialised in `scope` within `body`.
class RealizeNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Realize;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  RealizeNode(Producer p, std::vector<Range> b, std::string s, Stmt bd)
      : StmtNode(node_kind),
        producer(std::move(p)),
        bounds(std::move(b)),
        scope(std::move(s)),
        body(std::move(bd)) {}
  /// The producer, the region of it materialised (one Range per dimension), the memory scope, and the
  /// statement in which it is live.
  /// @{
  const Producer producer;
  const std::vector<Range> bounds;
  const std::string scope;
  const Stmt body;
  /// @}
  /// The region `bounds` of `producer` materialised in `scope` (empty means global) for `body`.
  static Stmt make(Producer producer, std::vector<Range> bounds, std::string scope, Stmt body) {
    return Stmt(
        make_ref<RealizeNode>(std::move(producer), std::move(bounds), std::move(scope), std::move(body)));
  }
};

/// How a For loop runs: in order, across threads (parallel), as vector lanes, unrolled, or bound to a GPU
/// thread or block index (thread_tag names which).
enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, ThreadBinding };

/// The name of a ForKind as the IR printer writes it ("serial", "parallel", "vectorized", "unroll",
/// "thread_binding").
inline const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unroll";
    case ForKind::ThreadBinding: return "thread_binding";
  }
  return "?";
}

/// An annotation carried on a loop (a pragma the schedule asked for).
struct LoopAnnotation {
  /// The annotation's name, e.g. "pragma_unroll".
  std::string key;
  /// Its value.
  Expr value;
};

/// A loop of `loop_var` over [min, min + extent), run as `kind` says, with the schedule's annotations.
class ForNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::For;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  ForNode(Var v, Expr mn, Expr ext, ForKind k, std::string tag, std::vector<LoopAnnotation> ann, Stmt b)
      : StmtNode(node_kind),
        loop_var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        kind(k),
        thread_tag(std::move(tag)),
        annotations(std::move(ann)),
        body(std::move(b)) {}
  /// The loop variable, its first value, its iteration count, how the loop runs, the thread tag
  /// (ThreadBinding only), the schedule's annotations, and the body.
  /// @{
  const Var loop_var;
  const Expr min, extent;
  const ForKind kind;
  const std::string thread_tag;  ///< for ThreadBinding: "threadIdx.x", "blockIdx.y", "vthread"
  const std::vector<LoopAnnotation> annotations;
  const Stmt body;
  /// @}
  /// A loop of `v` from `min` for `extent` iterations; `thread_tag` for ForKind::ThreadBinding.
  static Stmt make(Var v, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = "",
                   std::vector<LoopAnnotation> annotations = {}) {
    return Stmt(make_ref<ForNode>(std::move(v), std::move(min), std::move(extent), kind,
                                  std::move(thread_tag), std::move(annotations), std::move(body)));
  }
};

/// `if (condition) then_case else else_case`; `else_case` may be undefined.
class IfThenElseNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::IfThenElse;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(node_kind), condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  /// The bool condition.
  const Expr condition;
  /// Run when the condition holds.
  const Stmt then_case;
  const Stmt else_case;  ///< may be undefined
  /// The branch on `condition` (bool); leave `else_case` undefined for none.
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt()) {
    return Stmt(make_ref<IfThenElseNode>(std::move(condition), std::move(then_case), std::move(else_case)));
  }
};

/// A sequence of statements, run in order; make() keeps it flat.
class SeqNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Seq;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(node_kind), seq(std::move(s)) {}
  /// The statements, in order; never nested Seqs.
  const std::vector<Stmt> seq;
  /// Flattens nested sequences and drops undefined statements; one statement stays itself.
  static Stmt make(const std::vector<Stmt>& stmts) {
    std::vector<Stmt> flat;
    for (const Stmt& s : stmts) {
      if (!s.defined()) continue;
      if (const SeqNode* inner = s.as<SeqNode>()) {
        flat.insert(flat.end(), inner->seq.begin(), inner->seq.end());
      } else {
        flat.push_back(s);
      }
    }
    if (flat.empty()) return Stmt();
    if (flat.size() == 1) return flat[0];
    return Stmt(make_ref<SeqNode>(std::move(flat)));
  }
};

/// Evaluates `value` for its side effects (a call of an intrinsic or extern function).
class EvaluateNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Evaluate;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  explicit EvaluateNode(Expr v) : StmtNode(node_kind), value(std::move(v)) {}
  /// The expression evaluated (usually a Call).
  const Expr value;
  /// A statement that evaluates `value`.
  static Stmt make(Expr value) { return Stmt(make_ref<EvaluateNode>(std::move(value))); }
};

/// A barrier among the threads that share memory `scope` ("shared": a CUDA __syncthreads).
class BarrierNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Barrier;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  explicit BarrierNode(std::string s) : StmtNode(node_kind), scope(std::move(s)) {}
  /// The memory scope the barrier covers: "shared" for a block barrier.
  const std::string scope;
  /// A barrier among the threads that share memory `scope`.
  static Stmt make(std::string scope) { return Stmt(make_ref<BarrierNode>(std::move(scope))); }
};

/// A hint to bring the element read by `location` (a ProducerLoad or Load) into cache.
class PrefetchNode : public StmtNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Prefetch;  ///< The kind as<T>() looks for.
  /// Stores the operands unchecked; build nodes with make().
  PrefetchNode(Expr loc, int rw, int loc_level)
      : StmtNode(node_kind), location(std::move(loc)), read_write(rw), locality(loc_level) {}
  /// A ProducerLoad or Load of the element to prefetch.
  const Expr location;
  const int read_write;  ///< 0 read, 1 write (llvm.prefetch convention)
  const int locality;    ///< 0..3, 3 keeps it in all cache levels
  /// A prefetch of `location`: `read_write` 0 reads, 1 writes; `locality` 0 (none) to 3 (all cache levels).
  static Stmt make(Expr location, int read_write = 0, int locality = 3) {
    return Stmt(make_ref<PrefetchNode>(std::move(location), read_write, locality));
  }
};

}  // namespace loom

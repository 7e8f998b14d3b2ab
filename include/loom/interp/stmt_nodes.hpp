// Compiled statements of the reference interpreter: loops, stores, allocations, lets, branches,
// asserts and extern stage calls, each a small node that runs against a Frame.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "loom/interp/expr_nodes.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/te/extern_registry.hpp"

namespace loom::interp {

class CompiledStmt {
 public:
  virtual ~CompiledStmt() = default;
  virtual void run(Frame& frame) const = 0;
};
using StmtPtr = std::unique_ptr<const CompiledStmt>;

class NoOp final : public CompiledStmt {
 public:
  void run(Frame&) const override {}
};

class Block final : public CompiledStmt {
 public:
  explicit Block(std::vector<StmtPtr> stmts) : stmts_(std::move(stmts)) {}
  void run(Frame& frame) const override {
    for (const StmtPtr& s : stmts_) s->run(frame);
  }

 private:
  std::vector<StmtPtr> stmts_;
};

/// Every loop kind runs its iterations in order: the interpreter is the sequential reference.
class Loop final : public CompiledStmt {
 public:
  Loop(int slot, IntExprPtr min, IntExprPtr extent, StmtPtr body)
      : slot_(slot), min_(std::move(min)), extent_(std::move(extent)), body_(std::move(body)) {}
  void run(Frame& frame) const override {
    const int64_t min = min_->eval(frame), extent = extent_->eval(frame);
    int64_t& loop_var = frame.ints[slot_];
    for (int64_t i = 0; i < extent; ++i) {
      loop_var = min + i;
      body_->run(frame);
    }
  }

 private:
  int slot_;
  IntExprPtr min_, extent_;
  StmtPtr body_;
};

/// let var = value in body; a vector value binds one slot per lane, all evaluated first.
template <typename V>
class LetStmt final : public CompiledStmt {
 public:
  LetStmt(std::vector<int> slots, std::vector<ExprPtr<V>> lanes, StmtPtr body)
      : slots_(std::move(slots)), lanes_(std::move(lanes)), body_(std::move(body)) {}
  void run(Frame& frame) const override {
    for (size_t i = 0; i < lanes_.size(); ++i) frame.slots<V>()[slots_[i]] = lanes_[i]->eval(frame);
    body_->run(frame);
  }

 private:
  std::vector<int> slots_;
  std::vector<ExprPtr<V>> lanes_;
  StmtPtr body_;
};

/// let p = other_buffer in body: a second name for the same memory.
class BufferAlias final : public CompiledStmt {
 public:
  BufferAlias(int slot, int source_slot, StmtPtr body)
      : slot_(slot), source_slot_(source_slot), body_(std::move(body)) {}
  void run(Frame& frame) const override {
    frame.buffers[slot_] = frame.buffers[source_slot_];
    body_->run(frame);
  }

 private:
  int slot_, source_slot_;
  StmtPtr body_;
};

class Assert final : public CompiledStmt {
 public:
  Assert(IntExprPtr condition, std::string message, StmtPtr body)
      : condition_(std::move(condition)), message_(std::move(message)), body_(std::move(body)) {}
  void run(Frame& frame) const override {
    if (!condition_->eval(frame)) throw Error(message_);
    body_->run(frame);
  }

 private:
  IntExprPtr condition_;
  std::string message_;
  StmtPtr body_;
};

class IfElse final : public CompiledStmt {
 public:
  IfElse(IntExprPtr condition, StmtPtr then_case, StmtPtr else_case)
      : condition_(std::move(condition)),
        then_case_(std::move(then_case)),
        else_case_(std::move(else_case)) {}
  void run(Frame& frame) const override {
    if (condition_->eval(frame)) {
      then_case_->run(frame);
    } else if (else_case_) {
      else_case_->run(frame);
    }
  }

 private:
  IntExprPtr condition_;
  StmtPtr then_case_, else_case_;
};

/// Evaluate: computes every lane for its side effects (bounds checks, asserts) and drops it.
template <typename V>
class EvaluateLanes final : public CompiledStmt {
 public:
  explicit EvaluateLanes(std::vector<ExprPtr<V>> lanes) : lanes_(std::move(lanes)) {}
  void run(Frame& frame) const override {
    for (const ExprPtr<V>& lane : lanes_) (void)lane->eval(frame);
  }

 private:
  std::vector<ExprPtr<V>> lanes_;
};

/// The bytes an Allocate of `element` x extents asks for, checked: no negative extent, no
/// overflow, nothing above the interpreter's limit of 2^40 bytes.
inline int64_t allocation_bytes(const std::string& name, DType element,
                                const std::vector<IntExprPtr>& extents, Frame& frame) {
  constexpr int64_t kMaxBytes = int64_t{1} << 40;
  int64_t bytes = element.bytes() * int64_t{element.lanes};
  for (size_t d = 0; d < extents.size(); ++d) {
    int64_t extent = extents[d]->eval(frame);
    if (extent < 0)
      throw Error(cat("allocate of buffer '", name, "': extent ", d, " is negative (", extent, ")"));
    if (__builtin_mul_overflow(bytes, extent, &bytes) || bytes > kMaxBytes)
      throw Error(cat("allocate of buffer '", name, "' asks for more than ", kMaxBytes,
                      " bytes; the interpreter refuses allocations this large"));
  }
  return bytes;
}

/// Fresh zero-filled host memory for the body's lifetime, 64-byte aligned like Buffer<T>.
class Allocation final : public CompiledStmt {
 public:
  Allocation(int slot, std::string name, DType element, std::vector<IntExprPtr> extents, StmtPtr body)
      : slot_(slot),
        name_(std::move(name)),
        element_(element),
        extents_(std::move(extents)),
        body_(std::move(body)) {}

  void run(Frame& frame) const override {
    const int64_t bytes = allocation_bytes(name_, element_, extents_, frame);
    Memory memory(
        static_cast<std::byte*>(::operator new (static_cast<size_t>(bytes) + 1, std::align_val_t{64})));
    std::memset(memory.get(), 0, static_cast<size_t>(bytes));
    frame.buffers[slot_] = BufferSlot{memory.get(), 0, bytes};
    body_->run(frame);
    frame.buffers[slot_] = BufferSlot{};  // a dangling slot would hide a use after the scope
  }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete (p, std::align_val_t{64}); }
  };
  using Memory = std::unique_ptr<std::byte, AlignedDelete>;

  int slot_;
  std::string name_;
  DType element_;
  std::vector<IntExprPtr> extents_;
  StmtPtr body_;
};

template <typename Codec>
class ScalarStore final : public CompiledStmt {
 public:
  using V = typename Codec::Value;
  ScalarStore(int slot, IntExprPtr index, ExprPtr<V> value, IntExprPtr predicate, AccessSite site,
              DType element)
      : slot_(slot),
        index_(std::move(index)),
        value_(std::move(value)),
        predicate_(std::move(predicate)),
        site_(std::move(site)),
        element_(element) {}
  void run(Frame& frame) const override {
    if (predicate_ && !predicate_->eval(frame)) return;
    V value = value_->eval(frame);
    store_element<Codec>(frame.buffers[slot_], index_->eval(frame), value, site_, element_);
  }

 private:
  int slot_;
  IntExprPtr index_;
  ExprPtr<V> value_;
  IntExprPtr predicate_;  // may be null
  AccessSite site_;
  DType element_;
};

/// A vector store: every lane's index, value and mask is computed (into frame scratch slots)
/// before any lane is written, so a store that reads the memory it overwrites sees old values.
template <typename Codec>
class VectorStore final : public CompiledStmt {
 public:
  using V = typename Codec::Value;
  struct Lane {
    IntExprPtr index;
    ExprPtr<V> value;
    IntExprPtr predicate;  // may be null
  };
  VectorStore(int slot, std::vector<Lane> lanes, int scratch_ints, int scratch_values, AccessSite site,
              DType element)
      : slot_(slot),
        lanes_(std::move(lanes)),
        scratch_ints_(scratch_ints),
        scratch_values_(scratch_values),
        site_(std::move(site)),
        element_(element) {}

  void run(Frame& frame) const override {
    const int n = static_cast<int>(lanes_.size());
    int64_t* index = frame.ints + scratch_ints_;
    int64_t* active = index + n;
    V* value = frame.slots<V>() + scratch_values_;
    for (int i = 0; i < n; ++i) {
      const Lane& lane = lanes_[i];
      active[i] = !lane.predicate || lane.predicate->eval(frame);
      if (!active[i]) continue;
      value[i] = lane.value->eval(frame);
      index[i] = lane.index->eval(frame);
    }
    const BufferSlot& buffer = frame.buffers[slot_];
    for (int i = 0; i < n; ++i) {  // check all lanes first: a failing store writes nothing
      if (active[i]) (void)checked_address<typename Codec::Raw>(buffer, index[i], site_, element_);
    }
    for (int i = 0; i < n; ++i) {
      if (active[i]) store_element<Codec>(buffer, index[i], value[i], site_, element_);
    }
  }

 private:
  int slot_;
  std::vector<Lane> lanes_;
  int scratch_ints_;    // 2 * lanes int slots: indices, then masks
  int scratch_values_;  // lanes value slots
  AccessSite site_;
  DType element_;
};

/// One buffer of an extern stage call, with its shape and strides still to evaluate.
struct ExternBufferSpec {
  int slot = 0;
  std::string name;
  DType dtype;
  std::vector<IntExprPtr> shape;
  std::vector<IntExprPtr> strides;
};

/// Calls a registered C++ function with views of the stage's buffers, after checking that
/// every view stays inside the memory it points into.
class ExternStage final : public CompiledStmt {
 public:
  ExternStage(int64_t function_id, std::vector<ExternBufferSpec> inputs,
              std::vector<ExternBufferSpec> outputs)
      : function_id_(function_id), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

  void run(Frame& frame) const override {
    std::vector<BufferView> inputs, outputs;
    for (const ExternBufferSpec& spec : inputs_) inputs.push_back(view_of(spec, frame));
    for (const ExternBufferSpec& spec : outputs_) outputs.push_back(view_of(spec, frame));
    (*ExternRegistry::global().function(function_id_))(inputs, outputs);
  }

 private:
  BufferView view_of(const ExternBufferSpec& spec, Frame& frame) const {
    const BufferSlot& slot = frame.buffers[spec.slot];
    std::vector<int64_t> shape, strides;
    int64_t first = 0, last = 0;  // element offsets spanned by the view
    bool empty = false;
    for (size_t d = 0; d < spec.shape.size(); ++d) {
      shape.push_back(spec.shape[d]->eval(frame));
      strides.push_back(spec.strides[d]->eval(frame));
      if (shape.back() <= 0) empty = true;
      int64_t reach = (shape.back() - 1) * strides.back();
      (reach < 0 ? first : last) += reach;
    }
    const int64_t size = spec.dtype.bytes();
    if (!empty && (first * size < slot.begin_byte || (last + 1) * size > slot.end_byte)) {
      throw Error(cat("extern stage '", ExternRegistry::global().name(function_id_),
                      "': the view of buffer '", spec.name, "' spans elements ", first, " to ", last,
                      ", outside its memory of ", (slot.end_byte - slot.begin_byte) / size, " ",
                      spec.dtype.str(), " elements; the stage's shape or strides do not match the buffer"));
    }
    return BufferView(static_cast<void*>(slot.data), spec.dtype, std::move(shape), std::move(strides));
  }

  int64_t function_id_;
  std::vector<ExternBufferSpec> inputs_, outputs_;
};

}  // namespace loom::interp

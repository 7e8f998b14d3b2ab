// Interpreter nodes for calls into the host: address_of (the address of a buffer element, a
// handle) and calls of registered extern C functions (call_extern), e.g. from a tensorize body.
#pragma once

#include <cstring>
#include <vector>

#include "loom/interp/expr_nodes.hpp"
#include "loom/ir/extern_c.hpp"

namespace loom::interp {

/// address_of(buffer[index]): the element's host address, carried as int64 bits.
class AddressOf final : public CompiledExpr<int64_t> {
 public:
  AddressOf(int slot, IntExprPtr index, int element_bytes)
      : slot_(slot), index_(std::move(index)), element_bytes_(element_bytes) {}
  int64_t eval(Frame& frame) const override {
    const BufferSlot& b = frame.buffers[slot_];
    std::byte* p = b.data + index_->eval(frame) * element_bytes_;
    int64_t bits;
    std::memcpy(&bits, &p, sizeof p);
    return bits;
  }

 private:
  int slot_;
  IntExprPtr index_;
  int element_bytes_;
};

/// One argument of an extern C call, evaluated as an integer/handle or as a float.
struct ExternCArgument {
  IntExprPtr as_int;
  FloatExprPtr as_float;
  bool is_handle = false;
};

template <typename V>
class ExternCCall final : public CompiledExpr<V> {
 public:
  ExternCCall(ExternCFunction fn, std::vector<ExternCArgument> args)
      : fn_(std::move(fn)), args_(std::move(args)) {}
  V eval(Frame& frame) const override {
    std::vector<ExternCValue> values(args_.size());
    for (size_t i = 0; i < args_.size(); ++i) {
      const ExternCArgument& a = args_[i];
      if (a.as_float) {
        values[i].f = a.as_float->eval(frame);
      } else if (a.is_handle) {
        int64_t bits = a.as_int->eval(frame);
        std::memcpy(&values[i].p, &bits, sizeof values[i].p);
      } else {
        values[i].i = a.as_int->eval(frame);
      }
    }
    ExternCValue r = fn_.invoke(values);
    if constexpr (std::is_same_v<V, double>) {
      return r.f;
    } else {
      return r.i;
    }
  }

 private:
  ExternCFunction fn_;
  std::vector<ExternCArgument> args_;
};

}  // namespace loom::interp

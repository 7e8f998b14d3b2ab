// How a kernel's shared buffers are laid out in its one block of shared memory, as the IR records
// it: a `shared_memory_offset` attribute around each shared Allocate that the planner
// (lower/plan_shared_memory.hpp) placed. Code generators and the simulator read the layout here;
// they do not need the planner.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "loom/ir/op.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

namespace attr {
/// Around a shared Allocate: node is its buffer, value its byte offset in the kernel's one block
/// of shared memory (16-byte aligned).
inline constexpr const char* shared_memory_offset = "shared_memory_offset";
}  // namespace attr

namespace detail {

inline int64_t align16(int64_t v) { return (v + 15) / 16 * 16; }

/// The size in bytes of an allocation, when its extents are constants.
inline std::optional<int64_t> constant_allocation_bytes(const AllocateNode* op) {
  Expr elements = make_const(i64, 1);
  for (const Expr& e : op->extents) elements = elements * cast(i64, e);
  const Expr simplified = simplify(elements);  // as_const_int points into it
  const int64_t* n = as_const_int(simplified);
  if (!n) return std::nullopt;
  return *n * op->dtype.bytes();
}

}  // namespace detail

/// One shared buffer placed by merge_shared_memory, as its attribute records it.
struct PlacedSharedBuffer {
  const AllocateNode* alloc = nullptr;
  int64_t offset = 0;
  int64_t bytes = 0;
};

/// The placed shared buffers of a kernel (none when the planner left its buffers apart).
inline std::vector<PlacedSharedBuffer> placed_shared_buffers(const Stmt& kernel) {
  struct Finder : IRVisitor {
    std::vector<PlacedSharedBuffer> out;
    using IRVisitor::visit;
    void visit(const AttrStmtNode* op) override {
      const auto* alloc = op->body.as<AllocateNode>();
      const int64_t* offset = as_const_int(op->value);
      if (op->key == attr::shared_memory_offset && alloc && offset)
        out.push_back({alloc, *offset, detail::constant_allocation_bytes(alloc).value_or(0)});
      IRVisitor::visit(op);
    }
  } finder;
  finder.visit_stmt(kernel);
  return finder.out;
}

}  // namespace loom

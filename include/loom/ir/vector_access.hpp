// How a Load or Store of several lanes reaches memory in generated GPU code: as accesses of 4, 8 or
// 16 bytes that each cover consecutive lanes, or as one access per lane. One rule for the CUDA code
// generator (which emits it), the GPU simulator's bank model and the bank-conflict analysis (which
// count it), so that the wavefronts they report are those of the instructions that run.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "loom/ir/expr.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

/// Whether `e` is a multiple of k for every value of its variables (a proof from the expression's
/// shape: constants, sums, differences, products, left shifts; false when unsure).
inline bool is_multiple_of(const Expr& e, int64_t k) {
  if (k == 1) return true;
  if (const int64_t* c = as_const_int(e)) return *c % k == 0;
  if (const auto* a = e.as<AddNode>()) return is_multiple_of(a->a, k) && is_multiple_of(a->b, k);
  if (const auto* s = e.as<SubNode>()) return is_multiple_of(s->a, k) && is_multiple_of(s->b, k);
  if (const auto* m = e.as<MulNode>()) return is_multiple_of(m->a, k) || is_multiple_of(m->b, k);
  // Widening an integer keeps its value (lowering computes flat indices in 64 bits from 32-bit
  // loop variables): signed to signed, or unsigned to a wider type.
  if (const auto* c = e.as<CastNode>()) {
    const DType from = c->value.dtype(), to = e.dtype();
    const bool keeps_value = (from.is_int() && to.is_int() && to.bits >= from.bits) ||
                             (from.is_uint() && (to.is_int() || to.is_uint()) && to.bits > from.bits);
    return keeps_value && is_multiple_of(c->value, k);
  }
  if (const auto* s = e.as<ShiftLeftNode>()) {
    const int64_t* amount = as_const_int(s->b);
    if (amount && *amount >= 0 && *amount < 62 && (int64_t{1} << *amount) % k == 0) return true;
    return is_multiple_of(s->a, k);
  }
  return false;
}

namespace detail {

/// Whether `n` (a lane-uniform bound) keeps `ramp(b, 1, lanes) < n` the same in every lane: b and n
/// both multiples of the lanes, so no bound falls between a vector's first and last lane.
inline bool ramp_bound_agrees(const Expr& ramp_side, const Expr& bound, int64_t lanes, int64_t bound_shift) {
  const RampNode* ramp = ramp_side.as<RampNode>();
  const BroadcastNode* b = bound.as<BroadcastNode>();
  if (!ramp || !b || ramp->lanes != lanes) return false;
  const int64_t* stride = as_const_int(ramp->stride);
  if (!stride || *stride != 1 || !is_multiple_of(ramp->base, lanes)) return false;
  if (bound_shift == 0) return is_multiple_of(b->value, lanes);
  const int64_t* c = as_const_int(b->value);
  return c && (*c + bound_shift) % lanes == 0;
}

}  // namespace detail

/// Whether every lane of the vector condition `p` has the same value, whatever its variables: a
/// broadcast, likely/!/&&/|| of such, comparisons of broadcasts, and a stride-1 ramp against a
/// bound where the vector cannot straddle it (the guard of a vectorized loop over whole vectors).
inline bool lanes_agree(const Expr& p) {
  const int64_t lanes = p.dtype().lanes;
  if (lanes == 1 || p.as<BroadcastNode>()) return true;
  if (const CallNode* call = p.as<CallNode>())
    return call->name == intrinsic::likely && call->args.size() == 1 && lanes_agree(call->args[0]);
  if (const NotNode* n = p.as<NotNode>()) return lanes_agree(n->a);
  if (const AndNode* a = p.as<AndNode>()) return lanes_agree(a->a) && lanes_agree(a->b);
  if (const OrNode* o = p.as<OrNode>()) return lanes_agree(o->a) && lanes_agree(o->b);
  auto compare = [&](const auto* c, bool strict_below) {
    if (c->a.template as<BroadcastNode>() && c->b.template as<BroadcastNode>()) return true;
    // ramp < n and ramp >= n flip where n is; ramp <= n and ramp > n where n + 1 is.
    const int64_t shift = strict_below ? 0 : 1;
    return detail::ramp_bound_agrees(c->a, c->b, lanes, shift) ||
           detail::ramp_bound_agrees(c->b, c->a, lanes, 1 - shift);
  };
  if (const LTNode* c = p.as<LTNode>()) return compare(c, true);
  if (const GENode* c = p.as<GENode>()) return compare(c, true);
  if (const LENode* c = p.as<LENode>()) return compare(c, false);
  if (const GTNode* c = p.as<GTNode>()) return compare(c, false);
  return false;
}

/// The memory instructions one thread issues for one Load or Store.
struct VectorAccess {
  int pieces = 1;  ///< instructions per thread
  int bytes = 0;   ///< bytes per instruction
  /// True: piece p covers lanes [p * lanes_per_piece, (p + 1) * lanes_per_piece), consecutive in
  /// memory and aligned to `bytes`. False: one instruction per lane, wherever each lane points.
  bool vector = false;
  int lanes_per_piece = 1;
  /// A vector access with a predicate whose lanes agree (lanes_agree): all lanes or none, under
  /// lane 0's condition.
  bool guarded = false;
};

/// The rule: a vector of 2, 4, 8 or 16 lanes whose index is a ramp of stride 1, without a predicate
/// or with one whose lanes agree, whose lanes' bytes are a multiple of 4, becomes accesses of
/// min(total, 16) bytes, each aligned because the ramp's base is provably a multiple of its lanes
/// (is_multiple_of); anything else is one access per lane (a scalar, a gather, a vector guarded lane
/// by lane, an unproven alignment). `value_type` is the loaded or stored value's type.
inline VectorAccess vector_access(DType value_type, const Expr& index, const Expr& predicate) {
  const DType element = value_type.element_of();
  const int element_bytes = element.bits % 8 == 0 ? element.bits / 8 : 0;
  const int lanes = value_type.lanes;
  VectorAccess scalar{lanes, element_bytes, false, 1};
  if (lanes == 1 || element_bytes == 0 || (predicate.defined() && !lanes_agree(predicate))) return scalar;
  if ((lanes & (lanes - 1)) != 0 || lanes > 16) return scalar;
  const int64_t total = int64_t{lanes} * element_bytes;
  if (total % 4 != 0) return scalar;
  const RampNode* ramp = index.as<RampNode>();
  const int64_t* stride = ramp ? as_const_int(ramp->stride) : nullptr;
  if (!stride || *stride != 1) return scalar;
  const int bytes = static_cast<int>(total < 16 ? total : 16);
  const int lanes_per_piece = bytes / element_bytes;
  if (!is_multiple_of(ramp->base, lanes_per_piece)) return scalar;
  return VectorAccess{static_cast<int>(total / bytes), bytes, true, lanes_per_piece, predicate.defined()};
}

/// The bytes per instruction of a Load or Store that generated code moves whole (vector_access's
/// `bytes`), or 0 when it moves it lane by lane.
inline int whole_access_bytes(DType value_type, const Expr& index, const Expr& predicate) {
  const VectorAccess access = vector_access(value_type, index, predicate);
  return access.vector ? access.bytes : 0;
}

/// A vector Load that generated code reads whole before the statement it is in, where all of
/// `guards` hold (conditions whose lanes agree; none: always), as `access` says.
struct HoistedLoad {
  const LoadNode* load = nullptr;
  std::vector<Expr> guards;
  VectorAccess access;
};

/// The vector Loads of a statement's expressions (a Store's value, index and predicate, or a
/// LetStmt's value) that the rule makes whole accesses and that are read whatever the lanes do:
/// not inside a let's body, and inside if_then_else branches only when the branch's condition is
/// the same for all lanes (it becomes the guard). Others are read lane by lane where evaluated.
inline std::vector<HoistedLoad> hoistable_loads(const std::vector<Expr>& exprs) {
  struct Finder : IRVisitor {
    std::vector<HoistedLoad> found;
    std::vector<Expr> guards;
    using IRVisitor::visit;
    void visit(const LoadNode* op) override {
      if (op->dtype.is_vector())
        if (const VectorAccess a = vector_access(op->dtype, op->index, op->predicate); a.vector)
          found.push_back(HoistedLoad{op, guards, a});
      IRVisitor::visit(op);
    }
    void visit(const CallNode* op) override {
      if (op->name != intrinsic::if_then_else || op->args.size() != 3) return IRVisitor::visit(op);
      visit_expr(op->args[0]);
      if (!lanes_agree(op->args[0])) return;
      for (int branch : {1, 2}) {
        guards.push_back(branch == 1 ? op->args[0] : NotNode::make(op->args[0]));
        visit_expr(op->args[static_cast<size_t>(branch)]);
        guards.pop_back();
      }
    }
    void visit(const LetNode* op) override { visit_expr(op->value); }
  } finder;
  for (const Expr& e : exprs) finder.visit_expr(e);
  return std::move(finder.found);
}

/// The Loads of a body that hoistable_loads finds in its statements, with their bytes per
/// instruction: the vector Loads that generated code reads whole, as the simulator and the bank
/// analysis count them.
class WholeVectorLoads {
 public:
  WholeVectorLoads() = default;
  explicit WholeVectorLoads(const Stmt& body) {
    struct Walker : IRVisitor {
      std::unordered_map<const LoadNode*, int>* bytes;
      using IRVisitor::visit;
      void add(const std::vector<Expr>& exprs) {
        for (const HoistedLoad& h : hoistable_loads(exprs)) (*bytes)[h.load] = h.access.bytes;
      }
      void visit(const StoreNode* op) override {
        add({op->value, op->index, op->predicate});
        IRVisitor::visit(op);
      }
      void visit(const LetStmtNode* op) override {
        add({op->value});
        IRVisitor::visit(op);
      }
    } walker;
    walker.bytes = &bytes_;
    walker.visit_stmt(body);
  }
  /// The bytes per instruction of Load `op`; 0 when code reads it lane by lane.
  int bytes(const LoadNode* op) const {
    auto it = bytes_.find(op);
    return it == bytes_.end() ? 0 : it->second;
  }

 private:
  std::unordered_map<const LoadNode*, int> bytes_;
};

}  // namespace loom

// Whether two index expressions into one shared buffer of a GPU kernel can name the same element
// for some threads and loop iterations: a bounds test on their linear forms (in the spirit of
// Banerjee's test) plus a GCD test. insert_thread_sync skips the barrier between accesses that
// can never meet, such as one thread writing S[tx] and S[tx + 256] with 256 threads. A term that
// is not a variable (tx / 64, tx % 64) counts as a quantity of its own within its bounds when it
// depends only on ranged variables.
#pragma once

#include <cstdint>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/analyzer.hpp"
#include "loom/ir/free_vars.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/linear_form.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

class IndexOverlap {
  // Sums of products of int64 values: 128 bits cannot overflow here. (__extension__: GCC and
  // Clang's 128-bit integer, without a -Wpedantic warning.)
  __extension__ using Wide = __int128;

 public:
  /// Learns the variables a kernel binds: loops of constant bounds (thread indices included) get
  /// their range, every other binding is a value that may differ between accesses. blockIdx is
  /// the same for every thread of a block and so is left out, like sizes and parameters.
  void learn_kernel(const Stmt& kernel) {
    ranged_.clear();
    varying_.clear();
    bounds_ = Analyzer();
    struct Binders : IRVisitor {
      IndexOverlap& self;
      explicit Binders(IndexOverlap& s) : self(s) {}
      using IRVisitor::visit;
      void visit(const ForNode* op) override {
        const bool block_index = op->kind == ForKind::ThreadBinding && is_block_index_tag(op->thread_tag);
        const int64_t* min = as_const_int(op->min);
        const int64_t* extent = as_const_int(op->extent);
        if (min && extent && *extent > 0) {
          if (!block_index) {
            self.ranged_[op->loop_var.get()] = {*min, *min + *extent - 1};
            self.bounds_.bind(op->loop_var, Range(op->min, op->extent));
          }
        } else {
          self.varying_.insert(op->loop_var.get());
        }
        IRVisitor::visit(op);
      }
      void visit(const LetStmtNode* op) override {
        self.varying_.insert(op->var.get());
        IRVisitor::visit(op);
      }
    } binders(*this);
    binders.visit_stmt(kernel);
  }

  /// False only when no values of the kernel's loop and thread variables (each access with
  /// values of its own) make `a` and `b` equal.
  bool may_overlap(const Expr& a, const Expr& b) const {
    // a - b = sum of ranged terms + constant (+ invariant terms, which must cancel).
    Wide lo = 0, hi = 0, constant = 0;
    int64_t gcd = 0;
    std::unordered_map<const VarNode*, int64_t> invariant;
    auto add_ranged = [&](int64_t coeff, int64_t min, int64_t max) {
      const Wide x = static_cast<Wide>(coeff) * min, y = static_cast<Wide>(coeff) * max;
      lo += x < y ? x : y;
      hi += x < y ? y : x;
      gcd = std::gcd(gcd, coeff < 0 ? -coeff : coeff);
    };
    // Adds sign * e; false when e is not of a form the test reads.
    auto add = [&](const Expr& e, int64_t sign) {
      Expr scalar = e;
      if (const auto* ramp = e.as<RampNode>()) {
        const int64_t* stride = as_const_int(ramp->stride);
        if (!stride) return false;
        add_ranged(sign * *stride, 0, ramp->lanes - 1);
        scalar = ramp->base;
      }
      if (!LinearForm::applies_to(scalar.dtype())) return false;
      const LinearForm form = LinearForm::parse(scalar);
      constant += static_cast<Wide>(sign) * form.constant();
      for (const LinearTerm& t : form.terms()) {
        const VarNode* v = t.atom.as<VarNode>();
        if (!v) {
          // Each access's tx / 64 may take any value in its bounds independently of the other's
          // (they may be different threads) and of its own tx % 64: the sum's bounds still hold.
          const std::optional<std::pair<int64_t, int64_t>> range = atom_range(t.atom);
          if (!range) return false;
          add_ranged(sign * t.coeff, range->first, range->second);
          continue;
        }
        if (varying_.count(v)) return false;
        if (auto r = ranged_.find(v); r != ranged_.end()) {
          add_ranged(sign * t.coeff, r->second.first, r->second.second);
        } else {
          invariant[v] += sign * t.coeff;
        }
      }
      return true;
    };
    if (!add(a, 1) || !add(b, -1)) return true;
    for (const auto& [v, coeff] : invariant)
      if (coeff != 0) return true;  // a size or parameter that does not cancel: unknown
    // Equal when the ranged terms sum to -constant: within their bounds, and a multiple of their GCD.
    if (-constant < lo || -constant > hi) return false;
    return gcd == 0 ? constant == 0 : constant % gcd == 0;
  }

 private:
  /// The bounds of a non-variable term whose variables are all ranged; none otherwise (a size,
  /// a parameter or a let variable inside it could make it anything, or cancel in a way the
  /// bounds do not see).
  std::optional<std::pair<int64_t, int64_t>> atom_range(const Expr& atom) const {
    for (const Var& v : free_vars(atom))
      if (!ranged_.count(v.get())) return std::nullopt;
    const ConstIntBound b = bounds_.const_int_bound(atom);
    if (!b.is_finite()) return std::nullopt;
    return std::pair{b.min_value, b.max_value};
  }

  std::unordered_map<const VarNode*, std::pair<int64_t, int64_t>> ranged_;
  std::unordered_set<const VarNode*> varying_;
  mutable Analyzer bounds_;  // the ranged variables' ranges
};

}  // namespace loom

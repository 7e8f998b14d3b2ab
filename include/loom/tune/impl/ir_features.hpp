// The definitions of tune/ir_features.hpp: a visitor that keeps the product of the enclosing
// loops' extents (how often the statement at hand runs) and adds it up per loop and per store.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/ir_features.hpp");

#include <cmath>

#include "loom/ir/visitor.hpp"
#include "loom/tune/ir_features.hpp"

namespace loom::tune {

namespace detail {

class FeatureCounter : public IRVisitor {
 public:
  FeatureCounter(IrFeatures& out, int threads) : out_(out), threads_(threads < 1 ? 1 : threads) {}

 protected:
  using IRVisitor::visit;

  void visit(const ForNode* op) override {
    const int64_t* extent = as_const_int(op->extent);
    const double n = extent ? static_cast<double>(*extent) : 1.0;
    out_.loop_iterations += runs_ * n;
    if (op->kind == ForKind::Parallel && !out_.parallel) {
      out_.parallel = true;
      const double tasks = runs_ * n;  // iterations the pool shares, counting the loops around
      if (tasks > 0) out_.parallel_imbalance = std::ceil(tasks / threads_) * threads_ / tasks;
    }
    const double outer = runs_;
    runs_ *= n;
    visit_stmt(op->body);
    runs_ = outer;
  }
  void visit(const StoreNode* op) override {
    const double lanes = op->value.dtype().lanes;
    out_.element_stores += runs_ * lanes;
    if (lanes > 1) vector_elements_ += runs_ * lanes;
    IRVisitor::visit(op);
  }
  // Floating-point arithmetic, per lane: +, -, *, /, min and max (a multiply-add counts two).
  void visit(const AddNode* op) override {
    flop(op->dtype, [&] { IRVisitor::visit(op); });
  }
  void visit(const SubNode* op) override {
    flop(op->dtype, [&] { IRVisitor::visit(op); });
  }
  void visit(const MulNode* op) override {
    flop(op->dtype, [&] { IRVisitor::visit(op); });
  }
  void visit(const DivNode* op) override {
    flop(op->dtype, [&] { IRVisitor::visit(op); });
  }
  void visit(const MinNode* op) override {
    flop(op->dtype, [&] { IRVisitor::visit(op); });
  }
  void visit(const MaxNode* op) override {
    flop(op->dtype, [&] { IRVisitor::visit(op); });
  }

 public:
  void finish() {
    out_.vector_store_fraction = out_.element_stores > 0 ? vector_elements_ / out_.element_stores : 0;
  }

 private:
  template <typename VisitChildren>
  void flop(DType t, VisitChildren&& children) {
    if (t.is_float()) out_.flops += runs_ * t.lanes;
    children();
  }

  IrFeatures& out_;
  double threads_;
  double runs_ = 1;  // how often the statement at hand runs
  double vector_elements_ = 0;
};

}  // namespace detail

LOOM_DECL std::vector<double> IrFeatures::vector() const {
  return {std::log2(1 + loop_iterations),
          std::log2(1 + element_stores),
          std::log2(1 + flops),
          vector_store_fraction,
          parallel_imbalance,
          parallel ? 0.0 : 1.0,
          std::log2(1 + traffic.l1_fill_bytes),
          std::log2(1 + traffic.l2_fill_bytes),
          std::log2(1 + traffic.l3_fill_bytes)};
}

LOOM_DECL IrFeatures ir_features(const LoweredFunc& f, int threads, const CpuCacheInfo& caches) {
  IrFeatures out;
  detail::FeatureCounter counter(out, threads);
  counter.visit_stmt(f.body);
  counter.finish();
  out.traffic = cache_traffic(f, caches, threads);
  return out;
}

}  // namespace loom::tune

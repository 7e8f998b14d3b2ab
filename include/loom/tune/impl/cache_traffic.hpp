// The definitions of tune/cache_traffic.hpp: one walk records the loop tree with each loop's loads
// and stores (buffer, index as loop variables times element strides); footprints are computed per
// loop from its subtree, and the traffic into a cache of a given size descends from the function
// to the outermost loops that fit.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/cache_traffic.hpp");

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/linear_form.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/tune/cache_traffic.hpp"

namespace loom::tune {

namespace detail {

constexpr double kLineBytes = 64;

/// One load or store: which buffer, how many bytes a lane moves, and its index.
struct TrafficAccess {
  const VarNode* buffer = nullptr;
  int elem_bytes = 4;
  int lanes = 1;
  int64_t lane_stride = 1;                                  // elements between a vector's lanes
  std::vector<std::pair<const VarNode*, int64_t>> strides;  // loop variable, elements per step
  bool affine = true;                 // false: the index is not loop variables times constants
  std::vector<const VarNode*> loops;  // the loops around it, outermost first
};

/// A loop (or the function, at index 0) and what runs directly in its body.
struct TrafficLoop {
  const VarNode* var = nullptr;
  double extent = 1;
  std::vector<int> children;  // loops directly inside
  std::vector<int> accesses;  // loads and stores in the body outside those loops
};

/// The number of elements of constant extents `shape`; negative when one is not constant.
inline double constant_elements(const std::vector<Expr>& shape) {
  double elements = 1;
  for (const Expr& e : shape) {
    const int64_t* n = as_const_int(e);
    if (!n) return -1;
    elements *= static_cast<double>(*n);
  }
  return elements;
}

/// The loop variable an index term steps, seen through integer casts; null for anything else.
inline const VarNode* stepped_var(const Expr& atom) {
  Expr e = atom;
  while (const auto* c = e.as<CastNode>()) e = c->value;
  return e.as<VarNode>();
}

class TrafficCollector : public IRVisitor {
 public:
  std::vector<TrafficLoop> loops{TrafficLoop{}};
  std::vector<TrafficAccess> accesses;
  std::unordered_map<const VarNode*, double> extents;
  std::unordered_map<const VarNode*, double> buffer_bytes;  // constant sizes only

 protected:
  using IRVisitor::visit;

  void visit(const ForNode* op) override {
    const int64_t* extent = as_const_int(op->extent);
    TrafficLoop loop;
    loop.var = op->loop_var.get();
    loop.extent = extent && *extent > 0 ? static_cast<double>(*extent) : 1.0;
    extents[loop.var] = loop.extent;
    const int index = static_cast<int>(loops.size());
    loops.push_back(loop);
    loops[static_cast<size_t>(stack_.back())].children.push_back(index);
    visit_expr(op->min);
    visit_expr(op->extent);
    stack_.push_back(index);
    path_.push_back(loop.var);
    visit_stmt(op->body);
    path_.pop_back();
    stack_.pop_back();
  }
  void visit(const AllocateNode* op) override {
    const double elements = constant_elements(op->extents);
    if (elements >= 0) buffer_bytes[op->buffer.get()] = elements * op->dtype.bytes();
    IRVisitor::visit(op);
  }
  void visit(const LetStmtNode* op) override {
    bound_.insert(op->var.get());
    IRVisitor::visit(op);
  }
  void visit(const LetNode* op) override {
    bound_.insert(op->var.get());
    IRVisitor::visit(op);
  }
  void visit(const LoadNode* op) override {
    record(op->buffer.get(), op->dtype, op->index);
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    record(op->buffer.get(), op->value.dtype(), op->index);
    IRVisitor::visit(op);
  }

 private:
  void record(const VarNode* buffer, DType t, const Expr& index) {
    TrafficAccess a;
    a.buffer = buffer;
    a.lanes = t.lanes;
    a.elem_bytes = std::max(1, t.element_of().bytes());
    a.loops = path_;
    Expr base = index;
    if (const auto* ramp = index.as<RampNode>()) {
      const int64_t* stride = as_const_int(ramp->stride);
      a.lane_stride = stride ? std::abs(*stride) : 1;
      a.affine = stride != nullptr;
      base = ramp->base;
    }
    if (!LinearForm::applies_to(base.dtype())) a.affine = false;
    const LinearForm form = a.affine ? LinearForm::parse(base) : LinearForm(base.dtype());
    if (a.affine)
      for (const LinearTerm& term : form.terms()) {
        const VarNode* v = stepped_var(term.atom);
        if (!v || bound_.count(v)) {  // a load, a quotient, a let's value: not a loop's step
          a.affine = false;
          continue;
        }
        if (!extents.count(v)) continue;  // a size or parameter: the same on every iteration
        a.strides.push_back({v, std::abs(term.coeff)});
      }
    loops[static_cast<size_t>(stack_.back())].accesses.push_back(static_cast<int>(accesses.size()));
    accesses.push_back(std::move(a));
  }

  std::vector<int> stack_{0};
  std::vector<const VarNode*> path_;
  std::set<const VarNode*> bound_;  // variables of lets
};

/// The model over a collected loop tree.
class TrafficModel {
 public:
  explicit TrafficModel(TrafficCollector c) : c_(std::move(c)) {
    footprints_.assign(c_.loops.size(), 0.0);
    footprint(0);
  }

  double footprint_of_function() const { return footprints_[0]; }

  /// Bytes loaded into a cache of `capacity` bytes during one call.
  double fill_bytes(double capacity) const { return fill(0, capacity, 1.0); }

 private:
  /// The bytes of the lines access `a` touches while the loops in `varying` run through their
  /// iterations (loop `two` through only two of them, when given): an expected count, so that
  /// one more step along a contiguous run adds the fraction of a line it does on average.
  double access_bytes(const TrafficAccess& a, const std::set<const VarNode*>& varying,
                      const VarNode* two = nullptr) const {
    auto extent = [&](const VarNode* v) {
      return v == two ? std::min(2.0, c_.extents.at(v)) : c_.extents.at(v);
    };
    const double elem = a.elem_bytes;
    double lines = 0;
    if (!a.affine) {
      // A new line per lane group on every iteration of the loops around it that vary.
      lines = std::ceil(a.lanes * elem / kLineBytes);
      for (const VarNode* v : a.loops)
        if (varying.count(v)) lines *= extent(v);
    } else {
      std::vector<std::pair<double, double>> dims;  // (stride in elements, steps)
      if (a.lanes > 1) dims.push_back({static_cast<double>(a.lane_stride), static_cast<double>(a.lanes)});
      for (const auto& [v, stride] : a.strides)
        if (varying.count(v) && stride != 0) dims.push_back({static_cast<double>(stride), extent(v)});
      std::sort(dims.begin(), dims.end());
      double span = 1;  // elements from the first to the last one touched, plus one
      for (const auto& [stride, n] : dims) span += (n - 1) * stride;
      // The smallest stride runs along lines; every other dimension repeats that run. A run of b
      // bytes from a random element-aligned start touches (b - elem) / 64 + 1 lines on average.
      double run = 1;
      if (!dims.empty()) {
        const auto [s0, n0] = dims.front();
        run = s0 * elem < kLineBytes ? (n0 - 1) * s0 * elem / kLineBytes + 1 : n0;
        for (size_t d = 1; d < dims.size(); ++d) run *= dims[d].second;
      }
      lines = std::min(run, span * elem / kLineBytes + 1);
    }
    double bytes = lines * kLineBytes;
    if (auto size = c_.buffer_bytes.find(a.buffer); size != c_.buffer_bytes.end())
      bytes = std::min(bytes, size->second);
    return bytes;
  }

  /// Every loop variable in the subtree of loop `l` (itself included).
  void subtree_vars(int l, std::set<const VarNode*>& out) const {
    const TrafficLoop& loop = c_.loops[static_cast<size_t>(l)];
    if (loop.var) out.insert(loop.var);
    for (int child : loop.children) subtree_vars(child, out);
  }
  void subtree_accesses(int l, std::vector<int>& out) const {
    const TrafficLoop& loop = c_.loops[static_cast<size_t>(l)];
    out.insert(out.end(), loop.accesses.begin(), loop.accesses.end());
    for (int child : loop.children) subtree_accesses(child, out);
  }

  /// The footprint of loop `l` (loop `two` run twice, when given): per buffer, its largest
  /// access's lines (a buffer's accesses in one nest mostly overlap: C's load and store), summed
  /// over buffers.
  double footprint_over(int l, const VarNode* two = nullptr) const {
    std::set<const VarNode*> varying;
    subtree_vars(l, varying);
    if (two) varying.insert(two);
    std::vector<int> inside;
    subtree_accesses(l, inside);
    std::map<const VarNode*, double> per_buffer;
    for (int a : inside) {
      double& b = per_buffer[c_.accesses[static_cast<size_t>(a)].buffer];
      b = std::max(b, access_bytes(c_.accesses[static_cast<size_t>(a)], varying, two));
    }
    double total = 0;
    for (const auto& [buffer, bytes] : per_buffer) total += bytes;
    return total;
  }

  void footprint(int l) {
    for (int child : c_.loops[static_cast<size_t>(l)].children) footprint(child);
    footprints_[static_cast<size_t>(l)] = footprint_over(l);
  }

  /// Bytes loaded into a cache of `capacity` by `runs` runs of loop `l`: its footprint once per run
  /// when it fits. Else each inner loop that fits loads its footprint on the first iteration of
  /// `l` and only what the next iteration adds on each later one (the lines of consecutive
  /// iterations are still cached: B[k][j + 1] is on B[k][j]'s line); inner loops that do not fit
  /// are taken apart the same way, and `l`'s own accesses load their lines once per run.
  double fill(int l, double capacity, double runs) const {
    if (footprints_[static_cast<size_t>(l)] <= capacity) return footprints_[static_cast<size_t>(l)] * runs;
    const TrafficLoop& loop = c_.loops[static_cast<size_t>(l)];
    double total = 0;
    for (int child : loop.children) {
      const double fp = footprints_[static_cast<size_t>(child)];
      if (fp > capacity || !loop.var) {
        total += fill(child, capacity, runs * loop.extent);
        continue;
      }
      const double added = std::max(0.0, footprint_over(child, loop.var) - fp);
      total += runs * (fp + (loop.extent - 1) * added);
    }
    std::set<const VarNode*> own;
    if (loop.var) own.insert(loop.var);
    std::map<const VarNode*, double> per_buffer;
    for (int a : loop.accesses) {
      double& b = per_buffer[c_.accesses[static_cast<size_t>(a)].buffer];
      b = std::max(b, access_bytes(c_.accesses[static_cast<size_t>(a)], own));
    }
    for (const auto& [buffer, bytes] : per_buffer) total += bytes * runs;
    return total;
  }

  TrafficCollector c_;
  std::vector<double> footprints_;
};

}  // namespace detail

LOOM_DECL CacheTraffic cache_traffic(const LoweredFunc& f, const CpuCacheInfo& caches, int threads) {
  detail::TrafficCollector collector;
  for (const FuncParam& p : f.params) {
    if (p.kind != FuncParam::Kind::Buffer) continue;
    const double elements = detail::constant_elements(p.buffer.shape);
    if (elements >= 0) collector.buffer_bytes[p.buffer.data.get()] = elements * p.buffer.dtype.bytes();
  }
  collector.visit_stmt(f.body);
  const detail::TrafficModel model(std::move(collector));
  CacheTraffic t;
  t.footprint_bytes = model.footprint_of_function();
  t.l1_fill_bytes = model.fill_bytes(static_cast<double>(caches.l1d_bytes));
  t.l2_fill_bytes = model.fill_bytes(static_cast<double>(caches.l2_bytes));
  t.l3_fill_bytes = model.fill_bytes(static_cast<double>(caches.l3_bytes) / std::max(1, threads));
  return t;
}

}  // namespace loom::tune

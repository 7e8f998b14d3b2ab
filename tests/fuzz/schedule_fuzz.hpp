// The differential schedule fuzzer's generator: random computations and random sequences of
// legal schedule primitives, each recorded as the C++ that reproduces it.
#pragma once

#include <loom/core.hpp>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace loom::fuzz {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(gen_) < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v.at(static_cast<size_t>(uniform(0, static_cast<int>(v.size()) - 1)));
  }

 private:
  std::mt19937_64 gen_;
};

/// A generated computation: its inputs, its output, the intermediate compute stage (if the
/// template has one), and the C++ that defines it.
struct Program {
  std::string kind;
  std::vector<Tensor> inputs;
  Tensor output;
  Tensor producer;
  std::string code;
  std::vector<int> tile;  // for tensorize programs: the intrinsic's tile (tensorize_fuzz.hpp)
};

/// One of six templates (elementwise, row reduction, matmul, 2-D convolution, a stencil
/// pipeline, a reduction over a producer), with sizes from 1 to 23 that rarely divide factors.
inline Program random_program(Rng& rng) {
  const int n = rng.uniform(1, 23), m = rng.uniform(1, 23), k = rng.uniform(1, 23);
  const std::string sizes = cat("int n = ", n, ", m = ", m, ", k = ", k, ";\n");
  Program p;
  switch (rng.uniform(0, 5)) {
    case 0: {
      p.kind = "elementwise";
      Tensor A = placeholder({n, m}, f32, "A"), B = placeholder({n, m}, f32, "B");
      p.output = compute(
          {n, m}, [&](Expr i, Expr j) { return A(i, j) * B(i, j) + A(i, j); }, "C");
      p.inputs = {A, B};
      p.code =
          sizes +
          "Tensor A = placeholder({n, m}, f32, \"A\"), B = placeholder({n, m}, f32, \"B\");\n"
          "Tensor C = compute({n, m}, [&](Expr i, Expr j) { return A(i, j) * B(i, j) + A(i, j); }, \"C\");\n";
      break;
    }
    case 1: {
      p.kind = "row_sum";
      Tensor A = placeholder({n, k}, f32, "A");
      IterVar r = reduce_axis(0, k, "r");
      p.output = compute(
          {n}, [&](Expr i) { return sum(A(i, r), {r}); }, "C");
      p.inputs = {A};
      p.code = sizes +
               "Tensor A = placeholder({n, k}, f32, \"A\");\n"
               "IterVar r = reduce_axis(0, k, \"r\");\n"
               "Tensor C = compute({n}, [&](Expr i) { return sum(A(i, r), {r}); }, \"C\");\n";
      break;
    }
    case 2: {
      p.kind = "matmul";
      Tensor A = placeholder({n, k}, f32, "A"), B = placeholder({k, m}, f32, "B");
      IterVar r = reduce_axis(0, k, "r");
      p.output = compute(
          {n, m}, [&](Expr i, Expr j) { return sum(A(i, r) * B(r, j), {r}); }, "C");
      p.inputs = {A, B};
      p.code =
          sizes +
          "Tensor A = placeholder({n, k}, f32, \"A\"), B = placeholder({k, m}, f32, \"B\");\n"
          "IterVar r = reduce_axis(0, k, \"r\");\n"
          "Tensor C = compute({n, m}, [&](Expr i, Expr j) { return sum(A(i, r) * B(r, j), {r}); }, \"C\");\n";
      break;
    }
    case 3: {
      p.kind = "conv2d";
      Tensor I = placeholder({n + 2, m + 2}, f32, "I"), W = placeholder({3, 3}, f32, "W");
      IterVar ry = reduce_axis(0, 3, "ry"), rx = reduce_axis(0, 3, "rx");
      p.output = compute(
          {n, m},
          [&](Expr y, Expr x) {
            return sum(I(y + ry, x + rx) * W(ry, rx), {ry, rx});
          },
          "C");
      p.inputs = {I, W};
      p.code = sizes +
               "Tensor I = placeholder({n + 2, m + 2}, f32, \"I\"), W = placeholder({3, 3}, f32, \"W\");\n"
               "IterVar ry = reduce_axis(0, 3, \"ry\"), rx = reduce_axis(0, 3, \"rx\");\n"
               "Tensor C = compute({n, m}, [&](Expr y, Expr x) { return sum(I(y + ry, x + rx) * W(ry, rx), "
               "{ry, rx}); }, \"C\");\n";
      break;
    }
    case 4: {
      p.kind = "stencil_pipeline";
      Tensor A = placeholder({n + 1, m}, f32, "A");
      Tensor P = compute(
          {n + 1, m}, [&](Expr i, Expr j) { return A(i, j) * 2.0f + 1.0f; }, "P");
      p.output = compute(
          {n, m}, [&](Expr i, Expr j) { return P(i, j) + P(i + 1, j) * A(i, j); }, "C");
      p.inputs = {A};
      p.producer = P;
      p.code =
          sizes +
          "Tensor A = placeholder({n + 1, m}, f32, \"A\");\n"
          "Tensor P = compute({n + 1, m}, [&](Expr i, Expr j) { return A(i, j) * 2.0f + 1.0f; }, \"P\");\n"
          "Tensor C = compute({n, m}, [&](Expr i, Expr j) { return P(i, j) + P(i + 1, j) * A(i, j); }, "
          "\"C\");\n";
      break;
    }
    default: {
      p.kind = "reduce_pipeline";
      Tensor A = placeholder({n, k}, f32, "A");
      Tensor P = compute(
          {n, k}, [&](Expr i, Expr j) { return A(i, j) * A(i, j); }, "P");
      IterVar r = reduce_axis(0, k, "r");
      p.output = compute(
          {n}, [&](Expr i) { return sum(P(i, r), {r}); }, "C");
      p.inputs = {A};
      p.producer = P;
      p.code = sizes +
               "Tensor A = placeholder({n, k}, f32, \"A\");\n"
               "Tensor P = compute({n, k}, [&](Expr i, Expr j) { return A(i, j) * A(i, j); }, \"P\");\n"
               "IterVar r = reduce_axis(0, k, \"r\");\n"
               "Tensor C = compute({n}, [&](Expr i) { return sum(P(i, r), {r}); }, \"C\");\n";
      break;
    }
  }
  return p;
}

/// Applies random legal primitives to a fresh schedule of a Program and writes each as C++ (a
/// line is written before its primitive runs, so a primitive that throws ends the reproducer).
class ScheduleBuilder {
 public:
  ScheduleBuilder(const Program& p, Rng& rng) : program_(p), rng_(rng), schedule_(create_schedule(p.output)) {
    name_tensor(p.output, "C");
    if (p.producer.defined()) name_tensor(p.producer, "P");
    code_ = "Schedule s = create_schedule(C);\n";
  }

  Schedule& schedule() { return schedule_; }
  const std::string& code() const { return code_; }

  /// A random sequence of legal primitives: dataflow rewrites first (a cache stage, rfactor),
  /// then loops, then the placement of each other stage at a loop of its consumer, then
  /// annotations.
  void randomize() {
    Tensor out = program_.output;
    Tensor cache;
    if (rng_.chance(0.2)) {
      emit("Tensor CL = s.cache_write(C, \"local\");");
      cache = schedule_.cache_write(out, "local");
      name_tensor(cache, "CL");
    } else if (rng_.chance(0.25)) {
      // Any tensor C reads directly: an input, or the producer stage.
      const Tensor in = rng_.pick(out.op()->input_tensors());
      emit(cat("Tensor AL = s.cache_read(", in.name(), ", \"local\", {C});"));
      cache = schedule_.cache_read(in, "local", {out});
      name_tensor(cache, "AL");
    }
    loop_steps(out);
    if (rng_.chance(0.2)) try_rfactor(out);
    if (cache.defined()) loop_steps(cache);  // before anything is computed at its loops
    if (program_.producer.defined()) {
      if (rng_.chance(0.3)) {
        emit("s[P].compute_inline();");
        schedule_[program_.producer].compute_inline();
      } else {
        loop_steps(program_.producer);
        place(program_.producer);
        annotate(program_.producer);
      }
    }
    if (cache.defined()) {
      if (cache.ndim() >= 2 && rng_.chance(0.4)) {
        // Pads the rows of the cache's storage: only the layout changes, never the result.
        const int factor = rng_.uniform(1, 8), offset = rng_.uniform(0, factor - 1);
        const std::string name = name_of(cache);
        emit(cat("s[", name, "].storage_align(", name, ".axis(0), ", factor, ", ", offset, ");"));
        schedule_[cache].storage_align(cache.axis(0), factor, offset);
      }
      place(cache);
      annotate(cache);
    }
    annotate(out);
  }

 protected:
  void emit(const std::string& line) { code_ += line + "\n"; }

  /// Gives a stage's tensor its name in the reproducer, and its root axes theirs.
  void name_tensor(const Tensor& t, const std::string& name) {
    stage_names_[t.op().get()] = name;
    const auto* c = static_cast<const ComputeOpNode*>(t.op().get());
    for (size_t i = 0; i < c->axis.size(); ++i) axis_names_[c->axis[i].get()] = cat(name, ".axis(", i, ")");
    for (size_t i = 0; i < c->reduce_axis.size(); ++i)
      axis_names_[c->reduce_axis[i].get()] = cat(name, ".reduce_axis(", i, ")");
  }

  std::string name_of(const Tensor& t) const { return stage_names_.at(t.op().get()); }

  std::string axis_name(const IterVar& iv) const {
    auto it = axis_names_.find(iv.get());
    return it == axis_names_.end() ? std::string("<unnamed axis>") : it->second;
  }

  std::string fresh(const std::string& base) { return cat(base, counter_++); }

  static bool is_reduce(const IterVar& iv) { return iv->kind == IterVarKind::CommReduce; }

  std::vector<IterVar> leaves(const Tensor& t) { return schedule_[t]->leaf_iter_vars; }

  /// The one stage that reads t (every template reads each intermediate from one stage).
  Tensor consumer_of(const Tensor& t) const {
    for (const auto& st : schedule_.stages()) {
      if (st->is_group || st->is_placeholder() || st->attach_type == AttachType::Inline) continue;
      for (const Tensor& in : st->op->input_tensors())
        if (in == t) return st->op->output(0);
    }
    return Tensor();
  }

  /// Leaves t at the root or computes it at a random loop of its consumer, data-parallel or
  /// reduce: its region there is inferred.
  void place(const Tensor& t) {
    Tensor consumer = consumer_of(t);
    if (!consumer.defined() || !stage_names_.count(consumer.op().get()) || rng_.chance(0.4)) return;
    std::vector<IterVar> leaf = leaves(consumer);
    if (leaf.empty()) return;
    IterVar at = rng_.pick(leaf);
    emit(cat("s[", name_of(t), "].compute_at(s[", name_of(consumer), "], ", axis_name(at), ");"));
    schedule_[t].compute_at(schedule_[consumer], at);
  }

  /// Splits, fuses and reorders the loops of one stage.
  void loop_steps(const Tensor& t) {
    Stage st = schedule_[t];
    const std::string stage = name_of(t);
    const int steps = rng_.uniform(0, 4);
    for (int step = 0; step < steps; ++step) {
      std::vector<IterVar> leaf = leaves(t);
      if (leaf.empty()) return;
      switch (rng_.uniform(0, 2)) {
        case 0: {  // split by factor or by nparts
          IterVar x = rng_.pick(leaf);
          const int f = rng_.uniform(1, 7);
          const bool by_nparts = rng_.chance(0.3);
          const std::string o = fresh("o"), i = fresh("i");
          emit(cat("auto [", o, ", ", i, "] = s[", stage, "].split(", axis_name(x), ", ",
                   by_nparts ? "NParts{" : "Factor{", f, "});"));
          auto [outer, inner] = by_nparts ? st.split(x, NParts{f}) : st.split(x, Factor{f});
          axis_names_[outer.get()] = o;
          axis_names_[inner.get()] = i;
          break;
        }
        case 1: {  // fuse two adjacent loops of the same kind
          if (leaf.size() < 2) break;
          const size_t at = static_cast<size_t>(rng_.uniform(0, static_cast<int>(leaf.size()) - 2));
          if (is_reduce(leaf[at]) != is_reduce(leaf[at + 1])) break;
          const std::string name = fresh("f");
          emit(cat("IterVar ", name, " = s[", stage, "].fuse(", axis_name(leaf[at]), ", ",
                   axis_name(leaf[at + 1]), ");"));
          axis_names_[st.fuse(leaf[at], leaf[at + 1]).get()] = name;
          break;
        }
        default: {  // reorder: a random permutation of the leaves
          if (leaf.size() < 2) break;
          std::vector<IterVar> order = leaf;
          for (size_t i = order.size() - 1; i > 0; --i)
            std::swap(order[i], order[static_cast<size_t>(rng_.uniform(0, static_cast<int>(i)))]);
          std::string line = cat("s[", stage, "].reorder({");
          for (size_t i = 0; i < order.size(); ++i) line += cat(i ? ", " : "", axis_name(order[i]));
          emit(line + "});");
          st.reorder(order);
          break;
        }
      }
    }
  }

  bool has_stage_attached(const IterVar& iv) const {
    for (const auto& st : schedule_.stages())
      if (st->attach_type == AttachType::Scope && st->attach_ivar.same_as(iv)) return true;
    return false;
  }

  /// vectorize the innermost loop when it is data-parallel (and no stage is computed inside it),
  /// unroll a loop, parallelize the outermost loop of a root stage when it is data-parallel.
  void annotate(const Tensor& t) {
    Stage st = schedule_[t];
    const std::string stage = name_of(t);
    std::vector<IterVar> leaf = leaves(t);
    if (leaf.empty()) return;
    if (rng_.chance(0.35) && !is_reduce(leaf.back()) && !has_stage_attached(leaf.back())) {
      emit(cat("s[", stage, "].vectorize(", axis_name(leaf.back()), ");"));
      st.vectorize(leaf.back());
      leaf.pop_back();
    }
    if (rng_.chance(0.25) && !leaf.empty()) {
      IterVar u = rng_.pick(leaf);
      emit(cat("s[", stage, "].unroll(", axis_name(u), ");"));
      st.unroll(u);
    }
    // A prefetch of something the stage reads, spread over the loops inside one of its loops.
    std::vector<Tensor> read;
    // The stage's current op (cache_read rewrites its readers); inputs only, which no later step
    // can move inside the stage's loops; named in the reproducing code.
    for (const Tensor& in : st->op->input_tensors())
      if (in.op()->kind == OpKind::Placeholder && stage_names_.count(in.op().get())) read.push_back(in);
    if (rng_.chance(0.2) && leaf.size() >= 2 && !read.empty()) {
      const int at = rng_.uniform(0, static_cast<int>(leaf.size()) - 2);
      const int spread = rng_.uniform(at + 1, static_cast<int>(leaf.size()) - 1);
      const Tensor& in = rng_.pick(read);
      emit(cat("s[", stage, "].prefetch(", name_of(in), ", ", axis_name(leaf[static_cast<size_t>(at)]),
               ", 1, ", axis_name(leaf[static_cast<size_t>(spread)]), ");"));
      st.prefetch(in, leaf[static_cast<size_t>(at)], 1, leaf[static_cast<size_t>(spread)]);
    }
    if (rng_.chance(0.3) && st->attach_type == AttachType::Root && !leaf.empty() &&
        !is_reduce(leaf.front()) && st->attr(leaf.front()) == nullptr) {
      emit(cat("s[", stage, "].parallel(", axis_name(leaf.front()), ");"));
      st.parallel(leaf.front());
    }
  }

  /// rfactor over a reduce loop of the output; the new stage C.rf joins the schedule.
  void try_rfactor(const Tensor& out) {
    std::vector<IterVar> reduce;
    for (const IterVar& iv : leaves(out))
      if (is_reduce(iv)) reduce.push_back(iv);
    if (reduce.empty()) return;
    IterVar r = rng_.pick(reduce);
    emit(cat("Tensor CR = s.rfactor(C, ", axis_name(r), ");"));
    Tensor rf = schedule_.rfactor(out, r);
    name_tensor(rf, "CR");
    loop_steps(rf);
    annotate(rf);
  }

  const Program& program_;
  Rng& rng_;
  Schedule schedule_;
  std::string code_;
  int counter_ = 0;
  std::unordered_map<const void*, std::string> stage_names_;
  std::unordered_map<const IterVarNode*, std::string> axis_names_;
};

}  // namespace loom::fuzz

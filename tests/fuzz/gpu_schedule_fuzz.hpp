// The differential fuzzer's GPU schedules: random blockIdx/threadIdx/vthread bindings, shared and
// local cache stages, cross-thread reductions (bound reduce loops, rfactor), each recorded as C++.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "schedule_fuzz.hpp"

namespace loom::fuzz {

/// Builds a legal GPU schedule of a Program, TVM style: the output's data-parallel loops become
/// blocks, (virtual) threads and per-thread serial loops; caches and the producer go inside the
/// kernel where a GPU would put them. Every thread tag of one kernel gets one extent.
class GpuScheduleBuilder : public ScheduleBuilder {
 public:
  using ScheduleBuilder::ScheduleBuilder;

  void randomize_gpu() {
    Tensor out = program_.output;
    const bool reduction = !static_cast<const ComputeOpNode*>(out.op().get())->reduce_axis.empty();
    // How the reduction is spread: serially per thread, over threadIdx.x (a bound reduce loop), or
    // over threadIdx.x after rfactor.
    const int mode = !reduction ? 0 : rng_.chance(0.5) ? 0 : rng_.chance(0.5) ? 1 : 2;
    std::vector<Tensor> shared_caches;
    Tensor local_read, local_write, rf;
    if (mode != 2) {  // (rfactor moves the reads into C.rf)
      for (const Tensor& in : out.op()->input_tensors()) {
        if (in.op()->kind != OpKind::Placeholder) continue;
        if (rng_.chance(0.4)) {
          const std::string name = cat(in.name(), "S");
          emit(cat("Tensor ", name, " = s.cache_read(", in.name(), ", \"shared\", {C});"));
          shared_caches.push_back(schedule_.cache_read(in, "shared", {out}));
          name_tensor(shared_caches.back(), name);
        } else if (mode == 0 && !local_read.defined() && rng_.chance(0.2)) {
          const std::string name = cat(in.name(), "L");
          emit(cat("Tensor ", name, " = s.cache_read(", in.name(), ", \"local\", {C});"));
          local_read = schedule_.cache_read(in, "local", {out});
          name_tensor(local_read, name);
        }
      }
      if (mode == 0 && rng_.chance(reduction ? 0.4 : 0.15)) {
        emit("Tensor CL = s.cache_write(C, \"local\");");
        local_write = schedule_.cache_write(out, "local");
        name_tensor(local_write, "CL");
      }
    }
    int rf_lanes = 1;
    IterVar ko;  // a reduce loop of C split before the threads are laid out (mode 0)
    if (mode == 0 && reduction && !local_write.defined() && rng_.chance(0.5)) {
      ko = split(out, first_reduce_leaf(out), rng_.uniform(1, 8), false).first;
    } else if (mode == 2) {
      rf_lanes = rng_.uniform(1, 48);
      auto [outer, inner] = split(out, first_reduce_leaf(out), rf_lanes, false);
      emit(cat("Tensor CR = s.rfactor(C, ", axis_name(inner), ");"));
      rf = schedule_.rfactor(out, inner);
      name_tensor(rf, "CR");
    }
    const bool inside = !shared_caches.empty() || local_read.defined() || local_write.defined() ||
                        program_.producer.defined();
    Launch k = layout_kernel(out, /*data_on_x=*/mode == 0, /*allow_vthread=*/mode == 0, !inside);
    if (mode == 1) {
      const int lanes = rng_.uniform(1, 64);
      auto [outer, inner] = split(out, first_reduce_leaf(out), lanes, false);
      k.tx = lanes;
      k.extents.push_back({"threadIdx.x", lanes});
      bind(out, inner, "threadIdx.x");
      move_to_end(out, inner);
    } else if (mode == 2) {
      IterVar r = first_reduce_leaf(out);  // the reduction over C.rf's factored axis
      k.tx = rf_lanes;
      k.extents.push_back({"threadIdx.x", rf_lanes});
      bind(out, r, "threadIdx.x");
      move_to_end(out, r);
      compute_at(rf, out, r);
      loop_steps(rf);
    }

    // Where block-shared stages go: the innermost block loop, or (TVM's tiled GEMM) a serial loop
    // inside the threads, over which the region is relaxed to the whole block.
    Tensor shared_parent = out;
    std::vector<IterVar> shared_points;
    if (k.block.defined()) shared_points.push_back(k.block);
    if (local_write.defined()) {
      compute_at(local_write, out, k.innermost_thread.defined() ? k.innermost_thread : k.block);
      IterVar r = first_reduce_leaf(local_write);
      if (r.defined() && rng_.chance(0.7)) {
        auto [outer, inner] = split(local_write, r, rng_.uniform(1, 8), false);
        std::vector<IterVar> order = leaves(local_write);
        order.erase(order.begin() + static_cast<std::ptrdiff_t>(index_of(order, outer)));
        order.insert(order.begin(), outer);
        reorder(local_write, order);
        shared_parent = local_write;
        shared_points = {outer};
      }
    } else if (ko.defined() && rng_.chance(0.5)) {
      shared_points.push_back(ko);
    } else if (rng_.chance(0.2)) {
      // Any loop inside the threads: the block still fills the tile together.
      std::vector<IterVar> inner = inside_threads(out);
      if (!inner.empty()) shared_points.push_back(rng_.pick(inner));
    }
    for (const Tensor& c : shared_caches) {
      if (shared_points.empty()) break;
      IterVar at = rng_.pick(shared_points);
      compute_at(c, shared_parent, at);
      if (!at.same_as(k.block) && rng_.chance(0.2)) {
        if (rng_.chance(0.5)) {
          emit(cat("s[", name_of(c), "].double_buffer();"));
          schedule_[c].double_buffer();
        } else {  // slots per stage, copies as cp.async where they can be
          const int stages = rng_.uniform(2, 4);
          emit(cat("s[", name_of(c), "].pipeline(", stages, ");"));
          schedule_[c].pipeline(stages);
        }
      }
      if (c.ndim() >= 2 && rng_.chance(0.3)) {
        const int factor = rng_.uniform(1, 8), offset = rng_.uniform(0, factor - 1);
        emit(cat("s[", name_of(c), "].storage_align(", name_of(c), ".axis(0), ", factor, ", ", offset, ");"));
        schedule_[c].storage_align(c.axis(0), factor, offset);
      }
      cooperative_fetch(c, k);
    }
    if (local_read.defined()) {
      // Inside the threads: a local buffer belongs to one thread.
      Tensor reader = local_write.defined() ? local_write : out;
      compute_at(local_read, reader, rng_.pick(inside_threads(reader)));
    }
    if (program_.producer.defined()) place_producer(k);
    for (const auto& st : schedule_.stages()) {
      if (st->is_placeholder() || st->attach_type == AttachType::Inline || !stage_names_.count(st->op.get()))
        continue;
      annotate_gpu(st->op->output(0));
    }
  }

 private:
  /// The output's kernel: its innermost block loop, its innermost thread loop and its extents.
  struct Launch {
    IterVar block, innermost_thread;
    int tx = 1, ty = 1;
    std::vector<std::pair<std::string, int64_t>> extents;  // blockIdx/threadIdx tag -> extent
  };

  bool bound(const Tensor& t, const IterVar& iv, const char* prefix = "") {
    const IterVarAttr* a = schedule_[t]->attr(iv);
    return a && a->bind_thread.defined() && a->bind_thread->thread_tag.rfind(prefix, 0) == 0;
  }

  static size_t index_of(const std::vector<IterVar>& v, const IterVar& iv) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].same_as(iv)) return i;
    return v.size();
  }

  IterVar first_reduce_leaf(const Tensor& t) {
    for (const IterVar& iv : leaves(t))
      if (is_reduce(iv)) return iv;
    return IterVar();
  }

  /// Gives a leaf that has no name in the reproducer (an axis made by rfactor) one.
  void name_leaf(const Tensor& t, const IterVar& iv) {
    if (axis_names_.count(iv.get())) return;
    std::vector<IterVar> leaf = leaves(t);
    const size_t at = index_of(leaf, iv);
    const std::string name = fresh("v");
    emit(cat("IterVar ", name, " = s[", name_of(t), "]->leaf_iter_vars[", at, "];"));
    axis_names_[iv.get()] = name;
  }

  std::pair<IterVar, IterVar> split(const Tensor& t, const IterVar& x, int f, bool by_nparts) {
    name_leaf(t, x);
    const std::string o = fresh("o"), i = fresh("i");
    emit(cat("auto [", o, ", ", i, "] = s[", name_of(t), "].split(", axis_name(x), ", ",
             by_nparts ? "NParts{" : "Factor{", f, "});"));
    auto [outer, inner] = by_nparts ? schedule_[t].split(x, NParts{f}) : schedule_[t].split(x, Factor{f});
    axis_names_[outer.get()] = o;
    axis_names_[inner.get()] = i;
    return {outer, inner};
  }

  IterVar fuse(const Tensor& t, const IterVar& a, const IterVar& b) {
    name_leaf(t, a);
    name_leaf(t, b);
    const std::string name = fresh("f");
    emit(cat("IterVar ", name, " = s[", name_of(t), "].fuse(", axis_name(a), ", ", axis_name(b), ");"));
    IterVar f = schedule_[t].fuse(a, b);
    axis_names_[f.get()] = name;
    return f;
  }

  void reorder(const Tensor& t, const std::vector<IterVar>& order) {
    std::string line = cat("s[", name_of(t), "].reorder({");
    for (size_t i = 0; i < order.size(); ++i) {
      name_leaf(t, order[i]);
      line += cat(i ? ", " : "", axis_name(order[i]));
    }
    emit(line + "});");
    schedule_[t].reorder(order);
  }

  void move_to_end(const Tensor& t, const IterVar& iv) {
    std::vector<IterVar> order = leaves(t);
    if (order.back().same_as(iv)) return;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(index_of(order, iv)));
    order.push_back(iv);
    reorder(t, order);
  }

  void bind(const Tensor& t, const IterVar& iv, const std::string& tag) {
    name_leaf(t, iv);
    emit(cat("s[", name_of(t), "].bind(", axis_name(iv), ", thread_axis(\"", tag, "\"));"));
    schedule_[t].bind(iv, thread_axis(tag));
  }

  void compute_at(const Tensor& t, const Tensor& parent, const IterVar& at) {
    name_leaf(parent, at);
    emit(cat("s[", name_of(t), "].compute_at(s[", name_of(parent), "], ", axis_name(at), ");"));
    schedule_[t].compute_at(schedule_[parent], at);
  }

  /// The loops of a stage that run inside its kernel's threads: all of them for a stage computed
  /// at another, the ones after the last threadIdx loop for a root stage.
  std::vector<IterVar> inside_threads(const Tensor& t) {
    Stage st = schedule_[t];
    std::vector<IterVar> leaf = leaves(t);
    if (st->attach_type == AttachType::Scope) return leaf;
    size_t first = 0;
    for (size_t i = 0; i < leaf.size(); ++i)
      if (bound(t, leaf[i], "threadIdx")) first = i + 1;
    if (first == 0) return {};
    return std::vector<IterVar>(leaf.begin() + static_cast<std::ptrdiff_t>(first), leaf.end());
  }

  /// Lays the data-parallel loops of a root stage out as blocks, optional virtual threads, threads
  /// and per-thread loops: [blockIdx.y, blockIdx.x, vthread, threadIdx.y, threadIdx.x, serial...].
  /// Without data_on_x the data loops use threadIdx.y only (threadIdx.x is for the reduction).
  Launch layout_kernel(const Tensor& t, bool data_on_x, bool allow_vthread, bool may_fuse) {
    std::vector<IterVar> data;
    for (const IterVar& iv : leaves(t))
      if (!is_reduce(iv)) data.push_back(iv);
    Launch k;
    if (data.empty()) return k;
    // A stage computed inside a fused loop would need a buffer whose size depends on where the
    // fused range crosses a row (Loom refuses that: per-thread arrays need a constant size).
    if (data.size() == 2 && (!data_on_x || (may_fuse && rng_.chance(0.3))))
      data = {fuse(t, data[0], data[1])};
    std::vector<IterVar> blocks, vthreads, threads, serial;
    for (size_t d = 0; d < data.size(); ++d) {
      const char* dim = data.size() == 2 ? (d == 0 ? "y" : "x") : (data_on_x ? "x" : "y");
      const int block = rng_.uniform(1, 24);
      auto [b, rest] = split(t, data[d], block, false);
      bind(t, b, cat("blockIdx.", dim));
      k.extents.push_back({cat("blockIdx.", dim), (extent_of(data[d]) + block - 1) / block});
      blocks.push_back(b);
      if (allow_vthread && rng_.chance(0.15)) {
        auto [v, r] = split(t, rest, rng_.uniform(1, 3), true);
        bind(t, v, cat("vthread.", dim));
        vthreads.push_back(v);
        rest = r;
      }
      const int n = rng_.uniform(1, std::string(dim) == "x" ? (rng_.chance(0.2) ? 64 : 32) : 16);
      IterVar th;
      if (rng_.chance(0.7)) {
        auto [o, i] = split(t, rest, n, true);
        th = o;
        serial.push_back(i);
      } else {
        auto [o, i] = split(t, rest, n, false);
        th = i;
        serial.push_back(o);
      }
      bind(t, th, cat("threadIdx.", dim));
      k.extents.push_back({cat("threadIdx.", dim), n});
      threads.push_back(th);
      (std::string(dim) == "x" ? k.tx : k.ty) = n;
    }
    for (const IterVar& iv : leaves(t))
      if (is_reduce(iv)) serial.push_back(iv);
    // The loops inside the threads may run in any order.
    for (size_t i = serial.size(); i > 1; --i)
      std::swap(serial[i - 1], serial[static_cast<size_t>(rng_.uniform(0, static_cast<int>(i) - 1))]);
    std::vector<IterVar> order = blocks;
    order.insert(order.end(), vthreads.begin(), vthreads.end());
    order.insert(order.end(), threads.begin(), threads.end());
    order.insert(order.end(), serial.begin(), serial.end());
    reorder(t, order);
    k.block = blocks.back();
    k.innermost_thread = threads.back();
    return k;
  }

  /// The block's threads copy a shared stage together: its loops fused, the innermost part bound
  /// to threadIdx.x and the next to threadIdx.y, with the kernel's extents.
  void cooperative_fetch(const Tensor& t, const Launch& k) {
    std::vector<IterVar> leaf = leaves(t);
    IterVar f = leaf.front();
    for (size_t i = 1; i < leaf.size(); ++i) f = fuse(t, f, leaf[i]);
    if (k.tx > 1) {
      auto [o, i] = split(t, f, k.tx, false);
      bind(t, i, "threadIdx.x");
      f = o;
    }
    if (k.ty > 1) {
      auto [o, i] = split(t, f, k.ty, false);
      bind(t, i, "threadIdx.y");
    }
  }

  /// The pipeline's producer: inlined, a kernel of its own, per thread in local memory, or per
  /// block in shared memory fetched by all its threads.
  void place_producer(const Launch& k) {
    Tensor p = program_.producer;
    Tensor consumer = consumer_of(p);
    const int choice = rng_.uniform(0, 3);
    if (choice == 0 || !consumer.defined() || !stage_names_.count(consumer.op().get())) {
      emit("s[P].compute_inline();");
      schedule_[p].compute_inline();
    } else if (choice == 1) {
      own_kernel(p, k);
    } else if (choice == 2 || consumer != program_.output || !k.block.defined()) {
      std::vector<IterVar> inner = inside_threads(consumer);
      if (inner.empty()) {
        own_kernel(p, k);
        return;
      }
      emit("s[P].set_scope(\"local\");");
      schedule_[p].set_scope("local");
      compute_at(p, consumer, rng_.pick(inner));
    } else {
      emit("s[P].set_scope(\"shared\");");
      schedule_[p].set_scope("shared");
      compute_at(p, consumer, k.block);
      cooperative_fetch(p, k);
    }
  }

  /// The extent of a root or fused data-parallel axis.
  int64_t extent_of(const IterVar& iv) {
    if (iv->dom.defined()) return *as_const_int(iv->dom.extent);
    int64_t e = 1;
    for (const IterVar& a : static_cast<const ComputeOpNode*>(schedule_[program_.output]->op.get())->axis)
      e *= *as_const_int(a->dom.extent);
    return e;
  }

  /// A stage in a kernel of its own, bound to tags of the output's kernel with their extents (Loom
  /// gives each thread tag one extent per lowered function, E-BIND-EXTENT).
  void own_kernel(const Tensor& t, const Launch& k) {
    std::vector<IterVar> leaf = leaves(t);
    IterVar f = leaf.front();
    for (size_t i = 1; i < leaf.size(); ++i) f = fuse(t, f, leaf[i]);
    std::vector<std::pair<std::string, int64_t>> blocks, threads;
    for (const auto& e : k.extents) (e.first.rfind("blockIdx", 0) == 0 ? blocks : threads).push_back(e);
    const auto& block = rng_.pick(blocks);
    auto [b, rest] = split(t, f, static_cast<int>(block.second), true);
    bind(t, b, block.first);
    const auto& thread = rng_.pick(threads);
    auto [th, inner] = split(t, rest, static_cast<int>(thread.second), true);
    bind(t, th, thread.first);
  }

  /// unroll and vectorize on loops that are neither bound nor hold another stage.
  void annotate_gpu(const Tensor& t) {
    Stage st = schedule_[t];
    std::vector<IterVar> free;
    for (const IterVar& iv : leaves(t))
      if (!bound(t, iv) && st->attr(iv) == nullptr) free.push_back(iv);
    if (free.empty()) return;
    if (rng_.chance(0.2)) {
      IterVar u = rng_.pick(free);
      name_leaf(t, u);
      emit(cat("s[", name_of(t), "].unroll(", axis_name(u), ");"));
      st.unroll(u);
    }
    IterVar last = leaves(t).back();
    if (rng_.chance(0.15) && !is_reduce(last) && !bound(t, last) && st->attr(last) == nullptr &&
        !has_stage_attached(last)) {
      name_leaf(t, last);
      emit(cat("s[", name_of(t), "].vectorize(", axis_name(last), ");"));
      st.vectorize(last);
    }
  }
};

}  // namespace loom::fuzz

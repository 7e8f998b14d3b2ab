// schedule_state(s): everything a Schedule holds, rendered as text, so that a test can check that
// a refused primitive left the schedule exactly as it was (compare the text before and after the
// call). Every field of ScheduleNode, StageNode and IterVarAttr is rendered, both by value and by
// identity (node addresses): a field replaced by an equal-looking new object counts as a change.
#pragma once

#include <loom/core.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace loom::test {

namespace schedule_state_detail {

// Drift guards: a field added to one of these nodes changes its size (almost always; a small
// field may fit in padding), which stops this build until the renderer below renders it and the
// mirror lists it.
struct StageNodeFields : Object {
  Operation op, origin_op;
  std::vector<IterVar> all_iter_vars, leaf_iter_vars;
  std::vector<IterVarRelation> relations;
  std::unordered_map<const IterVarNode*, IterVarAttr> iter_var_attrs;
  AttachType attach_type;
  IterVar attach_ivar;
  StageNode* attach_stage;
  StageNode* group;
  std::string scope;
  bool is_output;
  Expr store_predicate;
  bool double_buffer;
  std::vector<StorageAlign> storage_align;
  SwizzleLayout swizzle;
  const ScheduleNode* schedule;
  std::unordered_map<const IterVarNode*, IterVar> axis_alias;
  std::unordered_map<const IterVarNode*, std::string> retired;
  bool is_group;
  std::string group_name;
};
static_assert(sizeof(StageNode) == sizeof(StageNodeFields),
              "StageNode changed: render the new field in tests/support/schedule_state.hpp");
struct ScheduleNodeFields : Object {
  std::vector<Operation> outputs;
  std::vector<Ref<StageNode>> stages;
  std::unordered_map<const OperationNode*, StageNode*> stage_map;
  std::vector<Ref<StageNode>> groups;
};
static_assert(sizeof(ScheduleNode) == sizeof(ScheduleNodeFields),
              "ScheduleNode changed: render the new field in tests/support/schedule_state.hpp");
struct IterVarAttrFields {
  ForKind for_kind;
  IterVar bind_thread;
  std::vector<LoopAnnotation> pragmas;
  std::vector<std::pair<Tensor, Expr>> prefetch;
  TensorIntrin tensor_intrin;
};
static_assert(sizeof(IterVarAttr) == sizeof(IterVarAttrFields),
              "IterVarAttr changed: render the new field in tests/support/schedule_state.hpp");

inline std::string address(const void* p) {
  if (!p) return "null";
  std::ostringstream out;
  out << p;
  return out.str();
}

inline std::string expr(const Expr& e) { return e.defined() ? to_string(e) : "(none)"; }

/// A reference to an IterVar: its name and identity.
inline std::string ref(const IterVar& iv) {
  return iv.defined() ? cat(iv.name(), "@", address(iv.get())) : "(none)";
}

/// An IterVar with everything its node holds.
inline std::string full(const IterVar& iv) {
  if (!iv.defined()) return "(none)";
  std::string out = cat(ref(iv), " ", iter_var_kind_name(iv.kind()), " var@", address(iv.var().get()), " ",
                        iv.var().dtype().str());
  if (iv.var()->is_reduce_axis) out += " reduce-var";
  if (iv.dom().defined()) out += cat(" [", expr(iv.dom().min), ", +", expr(iv.dom().extent), ")");
  if (!iv->thread_tag.empty()) out += cat(" tag ", iv->thread_tag);
  return out;
}

inline std::string ref(const StageNode* s) { return s ? cat("'", s->name(), "'@", address(s)) : "null"; }

inline std::string op(const Operation& o) {
  if (!o) return "(none)";
  std::string out = cat(o->name, "@", address(o.get()), " ", op_kind_name(o->kind));
  if (o->kind == OpKind::Compute) {
    const auto* c = static_cast<const ComputeOpNode*>(o.get());
    out += " axes {";
    for (const IterVar& iv : c->axis) out += cat(" ", full(iv));
    out += " } reduce {";
    for (const IterVar& iv : c->reduce_axis) out += cat(" ", full(iv));
    out += " } body {";
    for (const Expr& b : c->body) out += cat(" ", expr(b));
    out += " }";
  }
  return out;
}

inline std::string relation(const IterVarRelation& rel) {
  if (const auto* s = std::get_if<SplitRelation>(&rel))
    return cat("split ", ref(s->parent), " -> ", ref(s->outer), ", ", ref(s->inner), " factor ",
               expr(s->factor), " nparts ", expr(s->nparts));
  if (const auto* f = std::get_if<FuseRelation>(&rel))
    return cat("fuse ", ref(f->outer), ", ", ref(f->inner), " -> ", ref(f->fused));
  if (const auto* r = std::get_if<RebaseRelation>(&rel))
    return cat("rebase ", ref(r->parent), " -> ", ref(r->rebased));
  return cat("singleton ", ref(std::get<SingletonRelation>(rel).iv));
}

inline std::string attr(const IterVarAttr& a) {
  std::string out = cat(for_kind_name(a.for_kind), " bind ", full(a.bind_thread));
  for (const LoopAnnotation& p : a.pragmas) out += cat(" pragma ", p.key, "=", expr(p.value));
  for (const auto& [tensor, offset, spread] : a.prefetch)
    out += cat(" prefetch ", tensor.name(), "@", address(tensor.op().get()), "#", tensor.value_index(),
               " by ", expr(offset), " spread ", full(spread));
  if (a.tensor_intrin) out += cat(" tensorize ", a.tensor_intrin->name, "@", address(a.tensor_intrin.get()));
  return out;
}

/// Unordered maps render sorted, so that equal contents render equal.
inline std::string sorted_lines(std::vector<std::string> lines, const std::string& indent) {
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& l : lines) out += cat(indent, l, "\n");
  return out;
}

inline std::string stage(const StageNode& s) {
  std::string out = cat("stage ", ref(&s), s.is_group ? cat(" group '", s.group_name, "'") : "", "\n");
  out += cat("  op ", op(s.op), "\n  origin_op ", op(s.origin_op), "\n");
  out += "  all_iter_vars\n";
  for (const IterVar& iv : s.all_iter_vars) out += cat("    ", full(iv), "\n");
  out += "  leaf_iter_vars";
  for (const IterVar& iv : s.leaf_iter_vars) out += cat(" ", ref(iv));
  out += "\n  relations\n";
  for (const IterVarRelation& rel : s.relations) out += cat("    ", relation(rel), "\n");
  std::vector<std::string> attrs, aliases, retired;
  for (const auto& [iv, a] : s.iter_var_attrs)
    attrs.push_back(cat(iv ? iv->var.name() : std::string("?"), "@", address(iv), ": ", attr(a)));
  for (const auto& [iv, to] : s.axis_alias)
    aliases.push_back(cat(iv ? iv->var.name() : std::string("?"), "@", address(iv), " -> ", ref(to)));
  for (const auto& [iv, why] : s.retired)
    retired.push_back(cat(iv ? iv->var.name() : std::string("?"), "@", address(iv), ": ", why));
  out += "  iter_var_attrs\n" + sorted_lines(attrs, "    ");
  out += "  axis_alias\n" + sorted_lines(aliases, "    ");
  out += "  retired\n" + sorted_lines(retired, "    ");
  out += cat("  attach ", attach_type_name(s.attach_type), " stage ", ref(s.attach_stage), " ivar ",
             ref(s.attach_ivar), "\n");
  out += cat("  group ", ref(s.group), "\n  scope '", s.scope, "' is_output ", s.is_output, " double_buffer ",
             s.double_buffer, "\n");
  out += cat("  store_predicate ", expr(s.store_predicate), "\n  storage_align");
  for (const StorageAlign& a : s.storage_align)
    out += cat(" (dim ", a.dim, " factor ", a.factor, " offset ", a.offset, ")");
  out += cat("\n  swizzle ", s.swizzle.defined() ? s.swizzle.str() : std::string("(none)"), " (",
             s.swizzle.bits, ",", s.swizzle.base, ",", s.swizzle.shift, ")\n");
  out += cat("  schedule ", address(s.schedule), "\n");
  return out;
}

}  // namespace schedule_state_detail

/// The complete state of `s`: its outputs, its stages in order, its groups, and its map from
/// operations to stages.
inline std::string schedule_state(const Schedule& s) {
  namespace d = schedule_state_detail;
  const ScheduleNode& node = *s.get();
  std::string out = cat("schedule@", d::address(&node), "\noutputs");
  for (const Operation& o : node.outputs) out += cat(" ", o->name, "@", d::address(o.get()));
  out += "\n";
  for (const Ref<StageNode>& st : node.stages) out += d::stage(*st);
  out += "groups\n";
  for (const Ref<StageNode>& g : node.groups) out += d::stage(*g);
  std::vector<std::string> map;
  for (const auto& [o, st] : node.stage_map) map.push_back(cat(d::address(o), " -> ", d::ref(st)));
  out += "stage_map\n" + d::sorted_lines(map, "  ");
  return out;
}

}  // namespace loom::test

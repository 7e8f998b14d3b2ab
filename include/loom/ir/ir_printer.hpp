// IRPrinter: prints expressions and statements as text shaped like TVM's
// `tvm.lower(..., simple_mode=True)`, so that the TVM schedule tutorials read the same.
// Distinct variables that share a name are told apart as i, i_1, i_2 (as TVM does).
// to_string() and operator<< (ir/printer.hpp) are the way to print; use the class itself to print
// several things with one naming of variables.
#pragma once

#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/reduce.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/ir/thread_allreduce.hpp"

namespace loom {

class IRPrinter {
 public:
  explicit IRPrinter(std::ostream& os) : os_(os) {}

  /// The printed name of a variable: its own name, suffixed when another variable took it.
  const std::string& name_of(const VarNode* var) {
    auto it = names_.find(var);
    if (it != names_.end()) return it->second;
    std::string name = var->name.empty() ? "v" : var->name;
    if (used_.count(name)) {
      int& counter = suffix_counter_[name];
      std::string candidate;
      do {
        candidate = name + "_" + std::to_string(++counter);
      } while (used_.count(candidate));
      name = candidate;
    }
    used_.insert(name);
    return names_.emplace(var, name).first->second;
  }
  const std::string& name_of(const Var& var) { return name_of(var.get()); }

  void print(const Expr& e) {
    if (!e.defined()) {
      os_ << "<undefined>";
      return;
    }
    switch (e.kind()) {
#define LOOM_DISPATCH(name, node) \
  case IRNodeKind::name: return print_node(static_cast<const node*>(e.get()));
      LOOM_EXPR_NODES(LOOM_DISPATCH)
#undef LOOM_DISPATCH
      default: break;
    }
  }

  void print(const Stmt& s, int indent) {
    if (!s.defined()) return;
    indent_ = indent;
    switch (s.kind()) {
#define LOOM_DISPATCH(name, node) \
  case IRNodeKind::name: print_node(static_cast<const node*>(s.get())); break;
      LOOM_STMT_NODES(LOOM_DISPATCH)
#undef LOOM_DISPATCH
      default: break;
    }
    indent_ = indent;
  }

  static std::string format_float(double v, DType t) {
    std::ostringstream s;
    s << std::setprecision(t.bits <= 32 ? 9 : 17) << v;
    std::string text = s.str();
    if (text == "inf") text = "inff";
    if (text == "-inf") text = "-inff";
    return text + (t.is_bfloat() ? "bf" : "f") + std::to_string(t.bits);
  }

  void print_range(const Range& r) {
    os_ << "range(min=";
    print(r.min);
    os_ << ", ext=";
    print(r.extent);
    os_ << ")";
  }

 private:
  std::ostream& os_;
  int indent_ = 0;
  std::unordered_map<const VarNode*, std::string> names_;
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> suffix_counter_;

  void do_indent() { os_ << std::string(static_cast<size_t>(indent_), ' '); }

  void print_node(const IntImmNode* op) {
    DType t = op->dtype;
    if (t.is_bool()) {
      os_ << (op->value ? "True" : "False");
    } else if (t == i32) {
      os_ << op->value;
    } else if (t.is_uint()) {
      os_ << static_cast<uint64_t>(op->value) << "u" << int(t.bits);
    } else {
      os_ << op->value << "i" << int(t.bits);
    }
  }
  void print_node(const FloatImmNode* op) { os_ << format_float(op->value, op->dtype); }
  void print_node(const StringImmNode* op) { os_ << '"' << op->value << '"'; }
  void print_node(const VarNode* op) { os_ << name_of(op); }

  template <typename Node>
  void infix(const Node* op, const char* sym) {
    os_ << "(";
    print(op->a);
    os_ << sym;
    print(op->b);
    os_ << ")";
  }
  template <typename Node>
  void prefix(const Node* op, const char* name) {
    os_ << name << "(";
    print(op->a);
    os_ << ", ";
    print(op->b);
    os_ << ")";
  }
  void print_node(const AddNode* op) { infix(op, " + "); }
  void print_node(const SubNode* op) { infix(op, " - "); }
  void print_node(const MulNode* op) { infix(op, "*"); }
  void print_node(const DivNode* op) { infix(op, " / "); }
  void print_node(const ModNode* op) { infix(op, " % "); }
  void print_node(const FloorDivNode* op) { prefix(op, "floordiv"); }
  void print_node(const FloorModNode* op) { prefix(op, "floormod"); }
  void print_node(const MinNode* op) { prefix(op, "min"); }
  void print_node(const MaxNode* op) { prefix(op, "max"); }
  void print_node(const EQNode* op) { infix(op, " == "); }
  void print_node(const NENode* op) { infix(op, " != "); }
  void print_node(const LTNode* op) { infix(op, " < "); }
  void print_node(const LENode* op) { infix(op, " <= "); }
  void print_node(const GTNode* op) { infix(op, " > "); }
  void print_node(const GENode* op) { infix(op, " >= "); }
  void print_node(const AndNode* op) { infix(op, " && "); }
  void print_node(const OrNode* op) { infix(op, " || "); }
  void print_node(const BitwiseAndNode* op) { infix(op, " & "); }
  void print_node(const BitwiseOrNode* op) { infix(op, " | "); }
  void print_node(const BitwiseXorNode* op) { infix(op, " ^ "); }
  void print_node(const ShiftLeftNode* op) { infix(op, " << "); }
  void print_node(const ShiftRightNode* op) { infix(op, " >> "); }
  void print_node(const NotNode* op) {
    os_ << "!";
    print(op->a);
  }
  void print_node(const SelectNode* op) {
    os_ << "select(";
    print(op->condition);
    os_ << ", ";
    print(op->true_value);
    os_ << ", ";
    print(op->false_value);
    os_ << ")";
  }
  void print_node(const CastNode* op) {
    os_ << "cast(" << op->dtype.str() << ", ";
    print(op->value);
    os_ << ")";
  }
  void print_node(const LoadNode* op) {
    os_ << name_of(op->buffer) << "[";
    print(op->index);
    os_ << "]";
    if (op->predicate.defined()) {
      os_ << " if ";
      print(op->predicate);
    }
  }
  void print_node(const RampNode* op) {
    os_ << "ramp(";
    print(op->base);
    os_ << ", ";
    print(op->stride);
    os_ << ", " << op->lanes << ")";
  }
  void print_node(const BroadcastNode* op) {
    os_ << "broadcast(";
    print(op->value);
    os_ << ", " << op->lanes << ")";
  }
  void print_node(const CallNode* op) {
    if (op->name == intrinsic::thread_allreduce) return print_allreduce(ThreadAllreduce::decode(op));
    os_ << op->name << "(";
    for (size_t i = 0; i < op->args.size(); ++i) {
      if (i) os_ << ", ";
      print(op->args[i]);
    }
    os_ << ")";
  }
  template <typename T>
  void print_list(const std::vector<T>& items) {
    os_ << "[";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) os_ << ", ";
      print(items[i]);
    }
    os_ << "]";
  }
  void print_allreduce(const ThreadAllreduce& r) {
    os_ << "thread_allreduce(combine=";
    print_list(r.combine);
    os_ << ", identity=";
    print_list(r.identity);
    os_ << ", values=";
    print_list(r.values);
    os_ << ", results=";
    print_list(r.results);
    os_ << ", threads=";
    print_list(r.threads);
    os_ << ")";
  }
  void print_node(const LetNode* op) {
    os_ << "(let " << name_of(op->var) << " = ";
    print(op->value);
    os_ << " in ";
    print(op->body);
    os_ << ")";
  }
  void print_node(const ReduceNode* op) {
    os_ << "reduce(" << op->combiner->name;
    if (op->combiner->size() > 1) os_ << "[" << op->value_index << "]";
    os_ << ", source=[";
    for (size_t i = 0; i < op->source.size(); ++i) {
      if (i) os_ << ", ";
      print(op->source[i]);
    }
    os_ << "], axis=[";
    for (size_t i = 0; i < op->axis.size(); ++i) {
      if (i) os_ << ", ";
      os_ << name_of(op->axis[i].var());
    }
    os_ << "]";
    if (op->condition.defined() && !is_true(op->condition)) {
      os_ << ", where=";
      print(op->condition);
    }
    os_ << ")";
  }
  void print_node(const ProducerLoadNode* op) {
    os_ << op->producer->producer_name() << "[";
    for (size_t i = 0; i < op->indices.size(); ++i) {
      if (i) os_ << ", ";
      print(op->indices[i]);
    }
    os_ << "]";
  }
  static bool is_true(const Expr& e) {
    const IntImmNode* imm = e.as<IntImmNode>();
    return imm && imm->dtype.is_bool() && imm->value;
  }

  // Statements -----------------------------------------------------------------------------

  void body(const Stmt& s) { print(s, indent_ + 2); }
  void block(const Stmt& s) {
    int saved = indent_;
    os_ << " {\n";
    body(s);
    indent_ = saved;
    do_indent();
    os_ << "}\n";
  }

  void print_node(const LetStmtNode* op) {
    do_indent();
    os_ << "let " << name_of(op->var) << ": " << op->var.dtype().str() << " = ";
    print(op->value);
    os_ << "\n";
    print(op->body, indent_);
  }
  void print_node(const AttrStmtNode* op) {
    do_indent();
    os_ << "attr [";
    print(op->node);
    os_ << "] \"" << op->key << "\" = ";
    print(op->value);
    block(op->body);
  }
  void print_node(const AssertStmtNode* op) {
    do_indent();
    os_ << "assert(";
    print(op->condition);
    os_ << ", \"" << op->message << "\")\n";
    print(op->body, indent_);
  }
  void print_node(const StoreNode* op) {
    do_indent();
    os_ << name_of(op->buffer) << "[";
    print(op->index);
    os_ << "] = ";
    print(op->value);
    if (op->predicate.defined()) {
      os_ << " if ";
      print(op->predicate);
    }
    os_ << "\n";
  }
  void print_node(const ProvideNode* op) {
    do_indent();
    os_ << op->producer->producer_name() << "[";
    for (size_t i = 0; i < op->indices.size(); ++i) {
      if (i) os_ << ", ";
      print(op->indices[i]);
    }
    os_ << "] = ";
    print(op->value);
    os_ << "\n";
  }
  void print_node(const AllocateNode* op) {
    do_indent();
    os_ << "allocate(" << name_of(op->buffer) << ": Pointer(" << op->scope << " " << op->dtype.str() << "), "
        << op->dtype.str() << ", [";
    for (size_t i = 0; i < op->extents.size(); ++i) {
      if (i) os_ << ", ";
      print(op->extents[i]);
    }
    os_ << "]), storage_scope = " << op->scope;
    block(op->body);
  }
  void print_node(const RealizeNode* op) {
    do_indent();
    os_ << "realize(" << op->producer->producer_name() << ", [";
    for (size_t i = 0; i < op->bounds.size(); ++i) {
      if (i) os_ << ", ";
      print(op->bounds[i].min);
      os_ << ":";
      print(op->bounds[i].extent);
    }
    os_ << "], \"" << op->scope << "\")";
    block(op->body);
  }
  void print_node(const ForNode* op) {
    do_indent();
    if (op->kind == ForKind::ThreadBinding) {
      os_ << "attr [IterVar(" << name_of(op->loop_var) << ": " << op->loop_var.dtype().str() << ", \""
          << op->thread_tag << "\")] \"thread_extent\" = ";
      print(op->extent);
      os_ << ";\n";
      print(op->body, indent_);
      return;
    }
    os_ << "for (" << name_of(op->loop_var) << ": " << op->loop_var.dtype().str() << ", ";
    print(op->min);
    os_ << ", ";
    print(op->extent);
    os_ << ")";
    if (op->kind != ForKind::Serial) os_ << " \"" << for_kind_name(op->kind) << "\"";
    for (const LoopAnnotation& a : op->annotations) {
      os_ << " \"" << a.key << "\"=";
      print(a.value);
    }
    block(op->body);
  }
  void print_node(const IfThenElseNode* op) {
    do_indent();
    os_ << "if (";
    print(op->condition);
    os_ << ")";
    int saved = indent_;
    os_ << " {\n";
    body(op->then_case);
    indent_ = saved;
    do_indent();
    if (op->else_case.defined()) {
      os_ << "} else {\n";
      body(op->else_case);
      indent_ = saved;
      do_indent();
    }
    os_ << "}\n";
  }
  void print_node(const SeqNode* op) {
    int saved = indent_;
    for (const Stmt& s : op->seq) print(s, saved);
  }
  void print_node(const EvaluateNode* op) {
    do_indent();
    print(op->value);
    os_ << "\n";
  }
  void print_node(const BarrierNode* op) {
    do_indent();
    os_ << "barrier(\"" << op->scope << "\")\n";
  }
  void print_node(const PrefetchNode* op) {
    do_indent();
    os_ << "prefetch(";
    print(op->location);
    os_ << ", " << op->read_write << ", " << op->locality << ")\n";
  }
};

}  // namespace loom

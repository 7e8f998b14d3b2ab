// Test helpers for the simplifier and analyzer: a reference evaluator of int32 expressions and
// statements written independently of Loom's passes, and a seeded generator of random ones.
#pragma once

#include <loom/ir/bitwise_op.hpp>
#include <loom/ir/op.hpp>
#include <loom/ir/stmt.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace loom_test {

using loom::Expr;
using loom::Var;

/// likely(c). loom::likely in ir/op.hpp reads c's dtype after moving c into the argument list
/// (unspecified order; GCC moves first and crashes), so the tests build the call themselves.
inline Expr likely_call(const Expr& c) {
  return loom::CallNode::make(c.dtype(), loom::intrinsic::likely, {c});
}

/// Evaluates integer expressions the way the hardware would for int32: + - * wrap at 32 bits,
/// Div/Mod truncate, floordiv/floormod round down. `large` is set when any intermediate value
/// leaves [-2^20, 2^20]: the generator throws such expressions away, so that the simplifier's
/// assumption that signed arithmetic does not overflow holds for what it is tested on.
class Evaluator {
 public:
  std::unordered_map<const loom::VarNode*, int64_t> env;
  bool large = false;

  int64_t operator()(const Expr& e) { return eval(e); }

 private:
  static int64_t wrap32(int64_t v) {
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
  }
  int64_t note(int64_t v) {
    if (v < -(int64_t{1} << 20) || v > (int64_t{1} << 20)) large = true;
    return v;
  }
  static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  static int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }
  static int64_t nonzero(int64_t b) {
    if (b == 0) throw std::runtime_error("division by zero in a test expression");
    return b;
  }

  int64_t eval(const Expr& e) {
    using namespace loom;
    if (const IntImmNode* imm = e.as<IntImmNode>()) return imm->value;
    if (const VarNode* v = e.as<VarNode>()) {
      auto it = env.find(v);
      if (it == env.end()) throw std::runtime_error("unbound variable " + v->name);
      return it->second;
    }
    if (const AddNode* op = e.as<AddNode>()) return note(wrap32(eval(op->a) + eval(op->b)));
    if (const SubNode* op = e.as<SubNode>()) return note(wrap32(eval(op->a) - eval(op->b)));
    if (const MulNode* op = e.as<MulNode>()) {
      int64_t a = eval(op->a), b = eval(op->b);
      return note(wrap32(static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b))));
    }
    if (const DivNode* op = e.as<DivNode>()) {
      int64_t a = eval(op->a), b = nonzero(eval(op->b));
      return a / b;
    }
    if (const ModNode* op = e.as<ModNode>()) {
      int64_t a = eval(op->a), b = nonzero(eval(op->b));
      return a % b;
    }
    if (const FloorDivNode* op = e.as<FloorDivNode>()) {
      int64_t a = eval(op->a), b = nonzero(eval(op->b));
      return floordiv(a, b);
    }
    if (const FloorModNode* op = e.as<FloorModNode>()) {
      int64_t a = eval(op->a), b = nonzero(eval(op->b));
      return floormod(a, b);
    }
    if (const MinNode* op = e.as<MinNode>()) return std::min(eval(op->a), eval(op->b));
    if (const MaxNode* op = e.as<MaxNode>()) return std::max(eval(op->a), eval(op->b));
    if (const EQNode* op = e.as<EQNode>()) return eval(op->a) == eval(op->b);
    if (const NENode* op = e.as<NENode>()) return eval(op->a) != eval(op->b);
    if (const LTNode* op = e.as<LTNode>()) return eval(op->a) < eval(op->b);
    if (const LENode* op = e.as<LENode>()) return eval(op->a) <= eval(op->b);
    if (const GTNode* op = e.as<GTNode>()) return eval(op->a) > eval(op->b);
    if (const GENode* op = e.as<GENode>()) return eval(op->a) >= eval(op->b);
    if (const AndNode* op = e.as<AndNode>()) {
      int64_t a = eval(op->a), b = eval(op->b);  // both sides: neither may divide by zero
      return a && b;
    }
    if (const OrNode* op = e.as<OrNode>()) {
      int64_t a = eval(op->a), b = eval(op->b);
      return a || b;
    }
    if (const NotNode* op = e.as<NotNode>()) return !eval(op->a);
    if (const SelectNode* op = e.as<SelectNode>()) {
      int64_t c = eval(op->condition), t = eval(op->true_value), f = eval(op->false_value);
      return c ? t : f;
    }
    if (const CallNode* op = e.as<CallNode>()) {
      if (op->name == intrinsic::likely) return eval(op->args[0]);
      if (op->name == intrinsic::if_then_else)
        return eval(op->args[0]) ? eval(op->args[1]) : eval(op->args[2]);
    }
    if (const LetNode* op = e.as<LetNode>()) {
      int64_t value = eval(op->value);
      auto saved = env.find(op->var.get()) == env.end() ? std::optional<int64_t>() : env[op->var.get()];
      env[op->var.get()] = value;
      int64_t r = eval(op->body);
      if (saved)
        env[op->var.get()] = *saved;
      else
        env.erase(op->var.get());
      return r;
    }
    // Bitwise operations on int32: shift amounts modulo 32, >> arithmetic, << wraps.
    if (const BitwiseAndNode* op = e.as<BitwiseAndNode>()) return eval(op->a) & eval(op->b);
    if (const BitwiseOrNode* op = e.as<BitwiseOrNode>()) return eval(op->a) | eval(op->b);
    if (const BitwiseXorNode* op = e.as<BitwiseXorNode>()) return eval(op->a) ^ eval(op->b);
    if (const ShiftLeftNode* op = e.as<ShiftLeftNode>()) {
      int64_t a = eval(op->a), b = eval(op->b);
      return note(wrap32(static_cast<int64_t>(static_cast<uint64_t>(a) << (b & 31))));
    }
    if (const ShiftRightNode* op = e.as<ShiftRightNode>()) {
      int64_t a = eval(op->a), b = eval(op->b);
      return wrap32(a) >> (b & 31);
    }
    throw std::runtime_error("test evaluator: unsupported node " + std::string(loom::kind_name(e.kind())));
  }
};

/// Random int32 expressions over given variables, with small constants; divisors are nonzero
/// constants or max(e, 1). Deterministic for a seed.
class ExprGenerator {
 public:
  ExprGenerator(uint32_t seed, std::vector<Var> vars) : rng_(seed), vars_(std::move(vars)) {}

  // Operands are generated into named locals, in order: C++ leaves the order in which function
  // arguments are evaluated unspecified, and a seed must give the same expressions everywhere.
  Expr int_expr(int depth) {
    using namespace loom;
    if (depth <= 0 || pick(5) == 0) return leaf();
    if (bitwise && pick(4) == 0) return bitwise_expr(depth);
    int choice = pick(16);
    if (choice == 13) {
      // (x*c + y + k) shapes, the index arithmetic of splits, with divisions by the same c; the
      // offset k often makes the dividend non-negative, where C division follows floor rules.
      Expr c(1 + pick(8));
      Expr x = int_expr(depth - 1);
      Expr y = int_expr(depth - 2);
      Expr e = x * c + y + constant(0, 24);
      switch (pick(4)) {
        case 0: return floordiv(e, c);
        case 1: return floormod(e, c);
        case 2: return truncdiv(e, c);
        default: return truncmod(e, c);
      }
    }
    if (choice == 14) {
      Var v("t" + std::to_string(let_count_++));
      Expr value = int_expr(depth - 1);
      vars_.push_back(v);
      Expr body = int_expr(depth - 1);
      vars_.pop_back();
      return LetNode::make(v, value, body);
    }
    if (choice == 11 || choice == 12) {
      Expr c = bool_expr(depth - 1);
      Expr t = int_expr(depth - 1);
      Expr f = int_expr(depth - 1);
      return choice == 11 ? select(c, t, f) : if_then_else(c, t, f);
    }
    Expr a = int_expr(depth - 1);
    Expr b;
    switch (choice) {
      case 3: b = constant(-4, 9); break;
      case 4: b = int_expr(depth - 2); break;
      case 5:
      case 6:
      case 7:
      case 8: b = divisor(); break;
      case 15: b = constant(-9, 9); break;
      default: b = int_expr(depth - 1); break;
    }
    switch (choice) {
      case 2: return a - b;
      case 3:
      case 4: return a * b;
      case 5: return floordiv(a, b);
      case 6: return floormod(a, b);
      case 7: return truncdiv(a, b);
      case 8: return truncmod(a, b);
      case 9: return loom::min(a, b);
      case 10: return loom::max(a, b);
      default: return a + b;
    }
  }

  Expr bool_expr(int depth) {
    using namespace loom;
    int choice = pick(depth <= 0 ? 6 : 10);
    if (choice < 6) {
      Expr a = int_expr(depth);
      Expr b = int_expr(depth);
      switch (choice) {
        case 0: return a < b;
        case 1: return a <= b;
        case 2: return a == b;
        case 3: return a != b;
        case 4: return a > b;
        default: return a >= b;
      }
    }
    Expr a = bool_expr(depth - 1);
    if (choice == 8) return !a;
    if (choice == 9) return likely_call(a);
    Expr b = bool_expr(depth - 1);
    return choice == 6 ? (a && b) : (a || b);
  }

  /// Also generate & | ^ << >> (off by default, so that the seeds of other tests keep their
  /// expressions).
  bool bitwise = false;

  Expr bitwise_expr(int depth) {
    using namespace loom;
    const int op = pick(5);
    Expr a = int_expr(depth - 1);
    Expr b;
    switch (pick(3)) {
      case 0: b = op >= 3 ? constant(0, 31) : constant(-9, 15); break;  // masks, amounts
      case 1: b = int_expr(depth - 2); break;
      default: b = int_expr(depth - 1); break;
    }
    switch (op) {
      case 0: return a & b;
      case 1: return a | b;
      case 2: return a ^ b;
      // Built directly: a computed amount may be any value (taken modulo 32), even a constant.
      case 3: return ShiftLeftNode::make(a, b);
      default: return ShiftRightNode::make(a, b);
    }
  }

  /// Variables that int_expr may use from now on (a loop variable while its body is generated).
  void push_var(const Var& v) { vars_.push_back(v); }
  void pop_var() { vars_.pop_back(); }

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  Expr constant(int lo, int hi) { return Expr(std::uniform_int_distribution<int>(lo, hi)(rng_)); }

 private:
  std::mt19937 rng_;
  std::vector<Var> vars_;
  int let_count_ = 0;

  Expr leaf() {
    if (pick(3) == 0) return constant(-9, 9);
    return vars_[static_cast<size_t>(pick(static_cast<int>(vars_.size())))];
  }
  Expr divisor() {
    int k = pick(10);
    if (k < 7) return constant(1, 9);
    if (k < 9) return constant(-9, -1);
    return loom::max(int_expr(1), Expr(1));
  }
};

/// Runs a statement made of For, IfThenElse, Seq, LetStmt, Store and Evaluate, recording every
/// store as (index, value) in order: two statements do the same thing when their traces match.
class StmtRunner {
 public:
  Evaluator eval;
  std::vector<std::pair<int64_t, int64_t>> trace;

  void run(const loom::Stmt& s) {
    using namespace loom;
    if (!s.defined()) return;
    if (const ForNode* op = s.as<ForNode>()) {
      int64_t min = eval(op->min), extent = eval(op->extent);
      for (int64_t v = min; v < min + extent; ++v) {
        eval.env[op->loop_var.get()] = v;
        run(op->body);
      }
      eval.env.erase(op->loop_var.get());
    } else if (const IfThenElseNode* op = s.as<IfThenElseNode>()) {
      if (eval(op->condition)) {
        run(op->then_case);
      } else {
        run(op->else_case);
      }
    } else if (const SeqNode* op = s.as<SeqNode>()) {
      for (const Stmt& child : op->seq) run(child);
    } else if (const LetStmtNode* op = s.as<LetStmtNode>()) {
      eval.env[op->var.get()] = eval(op->value);
      run(op->body);
      eval.env.erase(op->var.get());
    } else if (const StoreNode* op = s.as<StoreNode>()) {
      trace.push_back({eval(op->index), eval(op->value)});
    } else if (!s.as<EvaluateNode>()) {
      throw std::runtime_error("test runner: unsupported statement " +
                               std::string(loom::kind_name(s.kind())));
    }
  }
};

/// Random loop nests with guards, lets and stores into one int32 buffer, over `gen`'s variables.
class StmtGenerator {
 public:
  StmtGenerator(ExprGenerator& gen, Var buffer) : gen_(gen), buffer_(std::move(buffer)) {}

  loom::Stmt stmt(int depth) {
    using namespace loom;
    int choice = depth <= 0 ? 0 : gen_.pick(6);
    switch (choice) {
      case 1:
      case 2: {
        Var v("i" + std::to_string(count_++));
        Expr min = gen_.pick(2) ? Expr(0) : gen_.int_expr(1);
        Expr extent;
        switch (gen_.pick(4)) {
          case 0: extent = gen_.constant(0, 2); break;
          case 1: extent = gen_.constant(3, 5); break;
          default: extent = gen_.int_expr(1); break;  // symbolic, possibly <= 0
        }
        static constexpr ForKind kinds[] = {ForKind::Serial, ForKind::Serial, ForKind::Parallel,
                                            ForKind::Unrolled};
        ForKind kind = kinds[gen_.pick(4)];
        gen_.push_var(v);
        Stmt body = stmt(depth - 1);
        gen_.pop_var();
        return ForNode::make(v, min, extent, kind, body);
      }
      case 3: {
        Expr c = gen_.pick(2) ? likely_call(gen_.bool_expr(1)) : gen_.bool_expr(1);
        Stmt then_case = stmt(depth - 1);
        Stmt else_case = gen_.pick(2) ? stmt(depth - 1) : Stmt();
        return IfThenElseNode::make(c, then_case, else_case);
      }
      case 4: return SeqNode::make({stmt(depth - 1), stmt(depth - 1)});  // braces: left to right
      case 5: {
        Var v("l" + std::to_string(count_++));
        Expr value = gen_.int_expr(2);
        gen_.push_var(v);
        Stmt body = stmt(depth - 1);
        gen_.pop_var();
        return LetStmtNode::make(v, value, body);
      }
      default: {
        Expr value = gen_.int_expr(3);
        Expr index = gen_.int_expr(2);
        return StoreNode::make(buffer_, value, index);
      }
    }
  }

 private:
  ExprGenerator& gen_;
  Var buffer_;
  int count_ = 0;
};

}  // namespace loom_test

// Helpers for the lowering tests: count IR node kinds, capture the IR a pass sees, run lowered
// float32 functions on random data, and search printed IR.
#pragma once

#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace loom::lower_test {

/// How many nodes of each kind a statement holds.
class KindCounter : public IRVisitor {
 public:
  std::map<IRNodeKind, int> count;
  int operator[](IRNodeKind k) const {
    auto it = count.find(k);
    return it == count.end() ? 0 : it->second;
  }
  void visit_expr(const Expr& e) override {
    if (e.defined()) ++count[e.kind()];
    IRVisitor::visit_expr(e);
  }
  void visit_stmt(const Stmt& s) override {
    if (s.defined()) ++count[s.kind()];
    IRVisitor::visit_stmt(s);
  }
};

inline KindCounter count_kinds(const Stmt& s) {
  KindCounter c;
  c.visit_stmt(s);
  return c;
}

/// The IR after the schedule phase (before flattening): Realize/Provide/ProducerLoad.
inline std::string schedule_phase_text(const Schedule& s, const std::vector<LowerArg>& args) {
  std::string text;
  PassContext ctx;
  ctx.add_pass(PassPosition::AfterSchedule, "capture", [&text](Stmt body, const PassContext&) {
    text = to_string(body);
    return body;
  });
  lower(s, args, "capture", ctx);
  return text;
}

inline bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

inline Buffer<float> random_buffer(const std::vector<int64_t>& shape, uint32_t seed) {
  Buffer<float> b(shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = dist(rng);
  return b;
}

}  // namespace loom::lower_test

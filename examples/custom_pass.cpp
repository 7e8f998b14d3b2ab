// Extending Loom's lowering without editing Loom: two passes defined right here are inserted
// at phase boundaries through a PassContext. One instruments (counts loops and stores), the
// other rewrites (marks the outermost loop of each nest parallel). The result is checked.
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <loom/ir/mutator.hpp>
#include <loom/ir/visitor.hpp>

#include "example_util.hpp"

using namespace loom;

/// An analysis pass: counts loops and stores, leaves the IR as it is.
struct StoreCounter : IRVisitor {
  int loops = 0, stores = 0;
  using IRVisitor::visit;
  void visit(const ForNode* op) override {
    ++loops;
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    ++stores;
    IRVisitor::visit(op);
  }
};

/// A rewriting pass: the outermost loop of every loop nest becomes a parallel loop.
struct ParallelizeOutermost : IRMutator {
  int depth = 0;
  using IRMutator::visit;
  Stmt visit(const ForNode* op) override {
    ++depth;
    Stmt body = mutate(op->body);
    --depth;
    ForKind kind = depth == 0 && op->kind == ForKind::Serial ? ForKind::Parallel : op->kind;
    return ForNode::make(op->loop_var, op->min, op->extent, kind, body, op->thread_tag, op->annotations);
  }
};

int main() {
  const int n = 96;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return B(j, i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);

  StoreCounter counter;
  PassContext ctx;
  ctx.add_pass(PassPosition::AfterFlatten, "count_stores",
               [&counter](Stmt body, const PassContext&) {
                 counter.visit_stmt(body);
                 return body;
               })
      .add_pass(PassPosition::AfterLoops, "parallelize_outermost",
                [](Stmt body, const PassContext&) { return ParallelizeOutermost().mutate(body); });
  // Ask for the IR after every pass, as LOOM_DUMP_IR=dir would.
  std::filesystem::path dump = std::filesystem::temp_directory_path() / "loom_custom_pass_example";
  std::filesystem::remove_all(dump);
  ctx.dump_dir = dump.string();

  LoweredFunc f = lower(s, {A, C}, "transpose_scale", ctx);
  std::cout << f << "\n";
  std::cout << "count_stores saw " << counter.loops << " loops and " << counter.stores << " stores\n";
  std::cout << "IR dumps in " << (dump / "transpose_scale").string() << ":\n";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dump / "transpose_scale"))
    files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) std::cout << "  " << file << "\n";

  Buffer<float> a({n, n}), c({n, n});
  example::fill_random(a, 1);
  interpret(f, {a, c});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) example::expect_close(c(i, j), a(j, i) * 2.0f + 1.0f, "C[i, j]", 0);
  if (counter.stores != 2 || counter.loops != 4) {
    std::cout << "unexpected loop/store count\n";
    return 1;
  }
  std::cout << "ok\n";
}

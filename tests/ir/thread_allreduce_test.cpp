// ThreadAllreduce's encoding: decode gives back what encode wrote, and skips a thread loop of
// extent 1 that simplification has replaced by a constant (found by the GPU schedule fuzzer).
#include <loom/core.hpp>
#include <loom/ir/thread_allreduce.hpp>

#include <doctest/doctest.h>

using namespace loom;

namespace {

ThreadAllreduce sum_over(const std::vector<Var>& threads) {
  ThreadAllreduce r;
  Var x("x", f32), y("y", f32);
  r.lhs = {x};
  r.rhs = {y};
  r.combine = {x + y};
  r.identity = {Expr(0.0f)};
  r.values = {Expr(1.0f)};
  r.results = {Var("reduce_temp0", handle_type)};
  r.threads = threads;
  return r;
}

}  // namespace

TEST_CASE("thread_allreduce: decode inverts encode") {
  Var tx("tx"), ty("ty");
  Expr e = sum_over({tx, ty}).encode();
  ThreadAllreduce d = ThreadAllreduce::decode(e.as<CallNode>());
  REQUIRE(d.size() == 1);
  REQUIRE(d.threads.size() == 2);
  CHECK(d.threads[0].get() == tx.get());
  CHECK(d.threads[1].get() == ty.get());
}

TEST_CASE("thread_allreduce: a thread variable folded to a constant is not listed") {
  // A reduce loop bound to threadIdx.x with extent 1 is folded away; its variable becomes 0.
  Var tx("tx"), ty("ty");
  VarMap folded;
  folded[tx.get()] = Expr(0);
  Expr e = substitute(sum_over({tx, ty}).encode(), folded);
  ThreadAllreduce d = ThreadAllreduce::decode(e.as<CallNode>());
  REQUIRE(d.threads.size() == 1);
  CHECK(d.threads[0].get() == ty.get());
  CHECK(d.results.at(0).name() == "reduce_temp0");
}

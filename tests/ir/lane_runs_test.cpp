// lane_offsets and contiguous_runs (ir/lane_runs.hpp): which vector indices split into a shared base
// plus constant lane offsets, and which offsets are a few contiguous runs. The LLVM backend's use of
// them (loads and stores as runs) is checked against the interpreter in tests/jit/jit_ir_cases_test.cpp.
#include <loom/core.hpp>
#include <loom/ir/lane_runs.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using namespace loom;

namespace {

Expr splat(Expr e, int lanes) { return BroadcastNode::make(std::move(e), lanes); }
Expr lanes_ramp(int lanes) { return RampNode::make(Expr(0), Expr(1), lanes); }

/// The index of a packed panel's vector: B[(k + lane % 2) * 96 + j + lane / 2], 32 lanes.
Expr pair_index(const Var& k, const Var& j) {
  return splat(k * 96 + j, 32) + floormod(lanes_ramp(32), splat(Expr(2), 32)) * splat(Expr(96), 32) +
         floordiv(lanes_ramp(32), splat(Expr(2), 32));
}

}  // namespace

TEST_CASE("lane_offsets: a packed panel's interleave is a shared base plus constant offsets") {
  Var k("k"), j("j");
  auto f = lane_offsets(pair_index(k, j));
  REQUIRE(f.has_value());
  CHECK(f->base.dtype() == i32);
  REQUIRE(f->offsets.size() == 32);
  for (int l = 0; l < 32; ++l) {
    CAPTURE(l);
    CHECK(f->offsets[static_cast<size_t>(l)] == (l % 2) * 96 + l / 2);
  }
  auto runs = contiguous_runs(f->offsets, 8);
  REQUIRE(runs.has_value());
  CHECK(runs->length == 16);
  CHECK(runs->starts == std::vector<int64_t>{0, 96});
  // Lane 2i reads element i of the first run, lane 2i + 1 element i of the second (16 + i).
  for (int l = 0; l < 32; ++l) CHECK(runs->source[static_cast<size_t>(l)] == (l % 2) * 16 + l / 2);
  // And back: element q of the runs is read by lane 2 (q % 16) + q / 16.
  for (int q = 0; q < 32; ++q) CHECK(runs->lane_of[static_cast<size_t>(q)] == (q % 16) * 2 + q / 16);
}

TEST_CASE("lane_offsets: ramps with constant strides, products with constants, widening casts") {
  Var x("x");
  auto f = lane_offsets(cast(i64.with_lanes(4), RampNode::make(x * 4, Expr(3), 4) * splat(Expr(2), 4)));
  REQUIRE(f.has_value());
  CHECK(f->base.dtype() == i64);
  CHECK(f->offsets == std::vector<int64_t>{0, 6, 12, 18});
  // A difference, and a remainder whose base the divisor divides: (4x + lane) % 4 = lane.
  auto g = lane_offsets(floormod(RampNode::make(x * 4, Expr(1), 8), splat(Expr(4), 8)) -
                        RampNode::make(Expr(0), Expr(-1), 8));
  REQUIRE(g.has_value());
  CHECK(g->offsets == std::vector<int64_t>{0, 2, 4, 6, 4, 6, 8, 10});
  // A lane-invariant floordiv keeps its base whole.
  auto h = lane_offsets(floordiv(splat(x, 4), splat(Expr(3), 4)) + lanes_ramp(4));
  REQUIRE(h.has_value());
  CHECK(h->offsets == std::vector<int64_t>{0, 1, 2, 3});
}

TEST_CASE("lane_offsets: nothing where a lane's offset depends on a variable") {
  Var x("x"), y("y");
  // A stride that is a variable, a product of two lane-varying vectors, a division whose base is
  // not known to be a multiple of the divisor (x + lane) / 2, a narrowing cast.
  CHECK_FALSE(lane_offsets(RampNode::make(x, y, 4)).has_value());
  CHECK_FALSE(lane_offsets(lanes_ramp(4) * lanes_ramp(4)).has_value());
  CHECK_FALSE(lane_offsets(lanes_ramp(4) * splat(y, 4)).has_value());
  CHECK_FALSE(lane_offsets(floordiv(RampNode::make(x, Expr(1), 4), splat(Expr(2), 4))).has_value());
  CHECK_FALSE(lane_offsets(floordiv(lanes_ramp(4), splat(y, 4))).has_value());
  CHECK_FALSE(lane_offsets(cast(i16.with_lanes(4), lanes_ramp(4))).has_value());
  // floor((2x + lane) / 2) = x + lane / 2: the base is a multiple.
  auto f = lane_offsets(floordiv(RampNode::make(x * 2, Expr(1), 4), splat(Expr(2), 4)));
  REQUIRE(f.has_value());
  CHECK(f->offsets == std::vector<int64_t>{0, 0, 1, 1});
}

TEST_CASE("contiguous_runs: equal runs, a power of two of them, each element once") {
  // One run in a permuted order (a reversed vector).
  auto reversed = contiguous_runs({3, 2, 1, 0}, 8);
  REQUIRE(reversed.has_value());
  CHECK(reversed->length == 4);
  CHECK(reversed->starts == std::vector<int64_t>{0});
  CHECK(reversed->source == std::vector<int>{3, 2, 1, 0});
  // Runs of unequal maximal lengths split by their gcd: 0..1 and 10..15 are four runs of two.
  auto split = contiguous_runs({10, 11, 0, 1, 12, 13, 14, 15}, 8);
  REQUIRE(split.has_value());
  CHECK(split->length == 2);
  CHECK(split->starts == std::vector<int64_t>{0, 10, 12, 14});
  CHECK(split->source == std::vector<int>{2, 3, 0, 1, 4, 5, 6, 7});
  // Four interleaved rows of four bytes (an int8 panel's quads).
  std::vector<int64_t> quads;
  for (int l = 0; l < 16; ++l) quads.push_back((l % 4) * 100 + l / 4);
  auto q = contiguous_runs(quads, 8);
  REQUIRE(q.has_value());
  CHECK(q->starts == std::vector<int64_t>{0, 100, 200, 300});

  CHECK_FALSE(contiguous_runs({0, 0, 1, 1}, 8).has_value());            // an element read twice
  CHECK_FALSE(contiguous_runs({0, 3, 6, 9}, 8).has_value());            // runs of one element: a gather
  CHECK_FALSE(contiguous_runs({0, 1, 10, 11, 20, 21}, 8).has_value());  // three runs
  std::vector<int64_t> pairs;
  for (int l = 0; l < 32; ++l) pairs.push_back((l / 2) * 50 + l % 2);  // sixteen runs of two
  CHECK_FALSE(contiguous_runs(pairs, 8).has_value());
  CHECK(contiguous_runs(pairs, 16).has_value());
}

// The one rule for how wide a memory access is (ir/vector_access.hpp): the rule itself on IR, and
// that the PTX NVRTC makes of Loom's CUDA C accesses shared memory with exactly the widths the
// bank analysis and the simulator count (fp16 vectors, guarded vectors, swizzled and padded tiles).
#include <loom/ir/vector_access.hpp>
#include <loom/lib/bank_conflicts.hpp>
#include <loom/lib/bank_conflicts_cases.hpp>

#include <set>
#include <sstream>

#include "cuda_test_util.hpp"

using namespace loom;
using namespace loom::cuda_test;

namespace {

Expr vec_ramp(Expr base, int lanes) { return RampNode::make(std::move(base), 1, lanes); }
Expr vec_bcast(Expr value, int lanes) { return BroadcastNode::make(std::move(value), lanes); }

VectorAccess rule(DType element, int lanes, const Expr& index, const Expr& predicate = Expr()) {
  return vector_access(element.with_lanes(lanes), index, predicate);
}

/// The widths in bytes of the shared-memory loads (or stores) in `ptx`: ld.shared.v4.u32 is 16.
std::set<int> ptx_shared_widths(const std::string& ptx, bool stores) {
  std::set<int> widths;
  std::istringstream in(ptx);
  const std::string op = stores ? "st.shared." : "ld.shared.";
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(op);
    if (at == std::string::npos) continue;
    const std::string spec = line.substr(at + op.size(), line.find_first_of(" \t", at) - at - op.size());
    int lanes = 1;
    if (spec.rfind("v2.", 0) == 0) lanes = 2;
    if (spec.rfind("v4.", 0) == 0) lanes = 4;
    const int bits = std::stoi(spec.substr(spec.find_last_of("usbf") + 1));
    widths.insert(lanes * bits / 8);
  }
  return widths;
}

/// The widths the bank analysis (and the simulator: the same rule) counts for the shared loads
/// or stores of `f`.
std::set<int> counted_shared_widths(const LoweredFunc& f, bool stores) {
  const lib::BankTrace trace = lib::trace_bank_accesses(f);
  std::set<int> widths;
  for (const lib::BankTrace::Access& a : trace.accesses) {
    if (a.is_store != stores) continue;
    widths.insert(a.vector_bytes > 0 ? a.vector_bytes
                                     : trace.buffers[static_cast<size_t>(a.buffer)].dtype.bytes());
  }
  return widths;
}

}  // namespace

TEST_CASE("vector access rule: whole vectors where aligned, unguarded or guarded alike, else per lane") {
  Var x("x");
  SUBCASE("widths") {
    const VectorAccess f4 = rule(f32, 4, vec_ramp(x * 8, 4));
    CHECK(f4.vector);
    CHECK(f4.pieces == 1);
    CHECK(f4.bytes == 16);
    const VectorAccess h8 = rule(f16, 8, vec_ramp(x * 8, 8));
    CHECK((h8.vector && h8.pieces == 1 && h8.bytes == 16));
    const VectorAccess h2 = rule(f16, 2, vec_ramp(x * 2, 2));
    CHECK((h2.vector && h2.bytes == 4));
    const VectorAccess f8 = rule(f32, 8, vec_ramp(x * 8, 8));  // two 16-byte pieces
    CHECK((f8.vector && f8.pieces == 2 && f8.bytes == 16 && f8.lanes_per_piece == 4));
    const VectorAccess b4 = rule(i8, 4, vec_ramp(x << 2, 4));  // a shift proves the alignment too
    CHECK((b4.vector && b4.bytes == 4));
    // Flat indices in 64 bits of 32-bit loop variables (what lowering makes of a TE kernel's
    // index): widening keeps the multiple. Narrowing, or signed to unsigned, proves nothing.
    Var y("y");
    const Expr wide = cast(i64, x * 256) + cast(i64, y * 4);
    auto ramp64 = [](Expr base) { return RampNode::make(std::move(base), make_const(i64, 1), 4); };
    CHECK(rule(f32, 4, ramp64(wide)).vector);
    CHECK_FALSE(rule(f32, 4, ramp64(cast(i64, x * 256) + cast(i64, y * 2))).vector);
    Var big("big", i64), u("u", u32);
    CHECK_FALSE(is_multiple_of(cast(i32, big * 12), 3));  // 2^32 is no multiple of 3
    CHECK_FALSE(is_multiple_of(cast(u64, x * 12), 3));
    CHECK(is_multiple_of(cast(i64, u * 12), 3));
  }
  SUBCASE("per lane") {
    const VectorAccess unaligned = rule(f32, 4, vec_ramp(x, 4));
    CHECK_FALSE(unaligned.vector);
    CHECK(unaligned.pieces == 4);
    CHECK(unaligned.bytes == 4);
    CHECK_FALSE(rule(f32, 4, RampNode::make(x * 8, 2, 4)).vector);  // a gather
    CHECK_FALSE(rule(i8, 2, vec_ramp(x * 2, 2)).vector);            // 2 bytes: below a word
    CHECK_FALSE(rule(f32, 3, vec_ramp(x * 4, 3)).vector);
  }
  SUBCASE("guards") {
    const Expr r = vec_ramp(x * 4, 4);
    auto guarded = [&](const Expr& p) { return rule(f32, 4, r, p); };
    CHECK(guarded(r < vec_bcast(40, 4)).guarded);  // a vector is all in or all out
    CHECK(guarded(r < vec_bcast(40, 4)).vector);
    CHECK_FALSE(guarded(r < vec_bcast(41, 4)).vector);  // lanes 0 to 3 of x = 10 straddle 41
    CHECK(guarded(r <= vec_bcast(39, 4)).vector);
    CHECK_FALSE(guarded(r <= vec_bcast(40, 4)).vector);
    CHECK(guarded(vec_bcast(40, 4) > r).vector);
    CHECK(guarded(r >= vec_bcast(x * 8, 4)).vector);
    CHECK(guarded(vec_bcast(39, 4) < r).vector);  // r > 39: r >= 40
    CHECK(guarded(likely(vec_bcast(x < 7, 4) && r < vec_bcast(40, 4))).vector);
    CHECK_FALSE(guarded(vec_bcast(x < 7, 4) && r < vec_bcast(42, 4)).vector);
  }
}

TEST_CASE("vector access rule: loads read whole under uniform if_then_else guards, not in let bodies") {
  Var x("x"), buf("buf", handle_type), v("v", f32.with_lanes(4));
  const Expr load = LoadNode::make(f32.with_lanes(4), buf, vec_ramp(x * 4, 4));
  const Expr zero = vec_bcast(make_zero(f32), 4);
  std::vector<HoistedLoad> found = hoistable_loads({if_then_else(x < 10, load, zero)});
  REQUIRE(found.size() == 1);
  CHECK(found[0].guards.size() == 1);
  const Expr lanewise = vec_ramp(x * 4, 4) < vec_bcast(41, 4);
  CHECK(hoistable_loads({if_then_else(lanewise, load, zero)}).empty());
  CHECK(hoistable_loads({LetNode::make(v, zero, load + v)}).empty());
  CHECK(hoistable_loads({load + zero}).size() == 1);
}

TEST_CASE("vector access: the PTX's shared loads and stores have the widths the analysis counts") {
  if (!have_nvrtc()) return;
  struct Case {
    std::string what;
    lib::SharedTileCase c;
    std::function<void(lib::SharedTileCase&)> layout;
    std::set<int> loads, stores;  // what the rule gives, written out (checked against both sides)
  };
  auto swizzle = [](lib::SharedTileCase& c) { c.schedule[c.tile].swizzle(2, 3, 3); };
  auto pad = [](int64_t offset) {
    return [offset](lib::SharedTileCase& c) { c.schedule[c.tile].storage_align(c.tile.axis(0), 32, offset); };
  };
  std::vector<Case> cases = {
      // fp16 A tile: 128-bit stores of 8 halves, 32-bit fragment loads of 2 (under the row guard).
      {"mma tile", lib::mma_a_tile_case(200), nullptr, {4}, {16}},
      {"mma tile, swizzled", lib::mma_a_tile_case(200), swizzle, {4}, {16}},
      {"mma tile, padded by 8 halves", lib::mma_a_tile_case(200), pad(8), {4}, {16}},
      // Padding by one half breaks every vector's alignment: 2-byte accesses, lane by lane.
      {"mma tile, padded by 1 half", lib::mma_a_tile_case(200), pad(1), {2}, {2}},
      // float4 tiles guarded by n = 40 (whole vectors in or out) and n = 41 (straddling).
      {"float4 n=40", lib::float4_case(40), nullptr, {16}, {16}},
      {"float4 n=41", lib::float4_case(41), nullptr, {4}, {4}},
      {"transpose", lib::transpose_case(70), nullptr, {4}, {4}},
  };
  for (Case& k : cases) {
    CAPTURE(k.what);
    if (k.layout) k.layout(k.c);
    PassContext ctx;
    ctx.target = Target::cuda_sim("sm_80");
    const LoweredFunc f = lower(k.c.schedule, k.c.args(), k.c.name, ctx);
    const std::string ptx = runtime::cuda::nvrtc_compile(cuda::codegen_cuda(f).source, k.c.name, "sm_80").ptx;
    REQUIRE(!ptx.empty());
    CHECK(counted_shared_widths(f, false) == k.loads);
    CHECK(counted_shared_widths(f, true) == k.stores);
    CHECK(ptx_shared_widths(ptx, false) == k.loads);
    CHECK(ptx_shared_widths(ptx, true) == k.stores);
  }
}

// Shared-memory bank conflicts in the GPU simulator: the bank model on its own, then whole kernels
// with known counts: a 32x32 transpose (32-way with 32-float rows, none with 33), float2 and float4
// accesses in half- and quarter-warp phases, broadcasts, gathers and 8-byte scalars.
#include <loom/sim/simulator.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim_test_util.hpp"

using namespace loom;
using namespace loom::test;
using sim::LaneAccess;

namespace {

/// Lanes 0..count-1 accessing byte offset offset(lane).
template <typename Fn>
std::vector<LaneAccess> lanes(int count, Fn offset) {
  std::vector<LaneAccess> out;
  for (int l = 0; l < count; ++l) out.push_back({l, offset(l)});
  return out;
}

/// One block of 32 threads: a shared float buffer of `size` elements filled with sh[i] = i by
/// conflict-free stores and a barrier, then `read` (which may use tx and sh) stored to out.
LoweredFunc one_warp_kernel(const std::string& name, const Var& tx, const Var& sh, int size, Stmt read,
                            const BufferParam& out) {
  Var i("i");
  Stmt fill = loop(i, 0, size / 32, st(sh, cast(f32, i * 32 + tx), i * 32 + tx));
  Stmt body = allocate(sh, f32, size, "shared", seq({fill, syncthreads(), read}));
  return make_func(name, {param(out)}, bind(tx, "threadIdx.x", 32, body));
}

void check_stats(const SimBankStats& s, int64_t instructions, int64_t wavefronts, int64_t ideal) {
  CHECK(s.instructions == instructions);
  CHECK(s.wavefronts == wavefronts);
  CHECK(s.ideal_wavefronts == ideal);
  CHECK(s.conflicts() == wavefronts - ideal);
}

}  // namespace

TEST_CASE("sim bank model: distinct words per bank, phases by access width") {
  using sim::count_wavefronts;
  auto check = [](const std::vector<LaneAccess>& a, int width, int64_t total, int64_t ideal) {
    sim::Wavefronts w = count_wavefronts(a, width);
    CHECK(w.total == total);
    CHECK(w.ideal == ideal);
  };
  check(lanes(32, [](int l) { return 4 * l; }), 4, 1, 1);        // consecutive floats
  check(lanes(32, [](int l) { return 128 * l; }), 4, 32, 1);     // a column of a 32-float row
  check(lanes(32, [](int l) { return 132 * l; }), 4, 1, 1);      // ... of a 33-float row
  check(lanes(32, [](int) { return 40; }), 4, 1, 1);             // one word: a broadcast
  check(lanes(32, [](int l) { return 8 * l; }), 4, 2, 1);        // stride 2 words: 2-way
  check(lanes(32, [](int l) { return 4 * (l / 4); }), 4, 1, 1);  // groups share words
  check(lanes(16, [](int l) { return 128 * l; }), 4, 16, 1);     // half a warp, 16-way
  check(lanes(32, [](int l) { return 2 * l; }), 2, 1, 1);        // float16: 2 lanes per word
  check(lanes(32, [](int l) { return 8 * l; }), 8, 2, 2);        // float2: two half-warps
  check(lanes(32, [](int l) { return 16 * l; }), 8, 4, 2);       // float2 at stride 4 floats
  check(lanes(16, [](int l) { return 8 * l; }), 8, 1, 1);        // only the first half-warp
  check(lanes(32, [](int l) { return 16 * l; }), 16, 4, 4);      // float4: four quarter-warps
  check(lanes(32, [](int l) { return 32 * l; }), 16, 8, 4);      // float4 at stride 8 floats
  check(lanes(32, [](int) { return 0; }), 16, 4, 4);             // float4 broadcast
}

TEST_CASE(
    "sim: a 32x32 transpose through shared memory is 32-way conflicted with 32-float rows, not with 33") {
  const int n = 64, blocks = 4, warps = 32;
  for (int row : {32, 33}) {
    CAPTURE(row);
    Buffer<float> a({n, n}), b({n, n});
    fill_random(a, 21);
    SimReport report = simulate(transpose_func(n, row), {a, b});
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) REQUIRE(b(i, j) == a(j, i));
    const SimSharedBuffer& tile = report.buffer("tile");
    const int64_t instructions = blocks * warps;  // one load and one store per warp and block
    check_stats(tile.store, instructions, instructions, instructions);
    check_stats(tile.load, instructions, row == 32 ? 32 * instructions : instructions, instructions);
    const std::string text = report.to_string();
    CHECK(text.find("tile") != std::string::npos);
    CHECK(text.find("conflicts") != std::string::npos);
  }
}

TEST_CASE("sim: float2 loads are served in two half-warp phases") {
  BufferParam out = buffer_param("out", f32, {64});
  Var tx("tx"), sh("sh", handle_type);
  for (int stride : {2, 4}) {
    CAPTURE(stride);
    // out[2tx .. 2tx+1] = sh[stride*tx .. stride*tx+1], one 8-byte access per lane.
    Stmt read = store(out, ld(sh, f32, RampNode::make(tx * stride, 1, 2)), RampNode::make(tx * 2, 1, 2));
    Buffer<float> o({64});
    SimReport report = simulate(one_warp_kernel("float2", tx, sh, 256, read, out), {o});
    for (int t = 0; t < 32; ++t) {
      CHECK(o(2 * t) == static_cast<float>(stride * t));
      CHECK(o(2 * t + 1) == static_cast<float>(stride * t + 1));
    }
    check_stats(report.buffer("sh").store, 8, 8, 8);
    // Stride 2: each half-warp reads 32 consecutive words. Stride 4: lanes t and t+8 of a
    // half-warp meet in one bank at different words, 2-way.
    check_stats(report.buffer("sh").load, 1, stride == 2 ? 2 : 4, 2);
  }
}

TEST_CASE("sim: float4 stores and loads are served in four quarter-warp phases") {
  BufferParam out = buffer_param("out", f32, {128});
  Var tx("tx"), sh("sh", handle_type);
  for (int stride : {4, 8}) {
    CAPTURE(stride);
    Expr where = RampNode::make(tx * stride, 1, 4);
    Stmt body = seq({st(sh, cast(f32.with_lanes(4), where), where),
                     store(out, ld(sh, f32, where), RampNode::make(tx * 4, 1, 4))});
    LoweredFunc f = make_func("float4", {param(out)},
                              bind(tx, "threadIdx.x", 32, allocate(sh, f32, 256, "shared", body)));
    Buffer<float> o({128});
    SimReport report = simulate(f, {o});
    for (int t = 0; t < 32; ++t)
      for (int v = 0; v < 4; ++v) CHECK(o(4 * t + v) == static_cast<float>(stride * t + v));
    // Stride 8 floats: lanes t and t+4 of a quarter-warp share banks at different words.
    const int64_t wavefronts = stride == 4 ? 4 : 8;
    check_stats(report.buffer("sh").store, 1, wavefronts, 4);
    check_stats(report.buffer("sh").load, 1, wavefronts, 4);
    CHECK(report.races.empty());  // each thread reads back its own writes
    CHECK(report.uninitialized_reads.empty());
  }
}

TEST_CASE("sim: broadcasts, gathers and 8-byte scalars") {
  Var tx("tx"), sh("sh", handle_type);
  SUBCASE("every lane reads one word, pairs of lanes share words: conflict-free") {
    BufferParam out = buffer_param("out", f32, {32});
    Stmt read = store(out, ld(sh, f32, 0) + ld(sh, f32, tx / 2), tx);
    Buffer<float> o({32});
    SimReport report = simulate(one_warp_kernel("broadcast", tx, sh, 32, read, out), {o});
    for (int t = 0; t < 32; ++t) CHECK(o(t) == static_cast<float>(t / 2));
    check_stats(report.buffer("sh").load, 2, 2, 2);
  }
  SUBCASE("a scalar load broadcast into a vector is one access") {
    BufferParam out = buffer_param("out", f32, {64});
    Stmt read = store(out, BroadcastNode::make(ld(sh, f32, tx), 2), RampNode::make(tx * 2, 1, 2));
    Buffer<float> o({64});
    SimReport report = simulate(one_warp_kernel("splat", tx, sh, 32, read, out), {o});
    for (int t = 0; t < 64; ++t) CHECK(o(t) == static_cast<float>(t / 2));
    check_stats(report.buffer("sh").load, 1, 1, 1);
  }
  SUBCASE("a vector gather (stride 32) is one scalar instruction per element") {
    BufferParam out = buffer_param("out", f32, {64});
    Stmt read = store(out, ld(sh, f32, RampNode::make(tx, 32, 2)), RampNode::make(tx * 2, 1, 2));
    Buffer<float> o({64});
    SimReport report = simulate(one_warp_kernel("gather", tx, sh, 64, read, out), {o});
    for (int t = 0; t < 32; ++t) CHECK(o(2 * t + 1) == static_cast<float>(t + 32));
    check_stats(report.buffer("sh").load, 2, 2, 2);
  }
  SUBCASE("float64 elements take two half-warp phases") {
    BufferParam out = buffer_param("out", f64, {32});
    Stmt body = seq({st(sh, cast(f64, tx), tx), store(out, ld(sh, f64, tx), tx)});
    LoweredFunc f =
        make_func("double", {param(out)}, bind(tx, "threadIdx.x", 32, allocate(sh, f64, 32, "shared", body)));
    Buffer<double> o({32});
    SimReport report = simulate(f, {o});
    for (int t = 0; t < 32; ++t) CHECK(o(t) == t);
    check_stats(report.buffer("sh").store, 1, 2, 2);
    check_stats(report.buffer("sh").load, 1, 2, 2);
  }
}

TEST_CASE("sim: float16 elements, two per word: conflict-free, and neighbours' halves do not race") {
  BufferParam out = buffer_param("out", f16, {64});
  Var tx("tx"), sh("sh", handle_type);
  // Each thread writes its own half-word; after the barrier it reads its neighbour's.
  Stmt body =
      seq({st(sh, cast(f16, tx), tx), syncthreads(), store(out, ld(sh, f16, floormod(tx + 1, 64)), tx)});
  LoweredFunc f =
      make_func("half", {param(out)}, bind(tx, "threadIdx.x", 64, allocate(sh, f16, 64, "shared", body)));
  Buffer<half> o({64});
  SimReport report = simulate(f, {o});
  for (int t = 0; t < 64; ++t) CHECK(static_cast<float>(o(t)) == static_cast<float>((t + 1) % 64));
  CHECK(report.races.empty());
  check_stats(report.buffer("sh").store, 2, 2, 2);  // 32 lanes x 2 bytes = 16 words, per warp
  check_stats(report.buffer("sh").load, 2, 2, 2);
}

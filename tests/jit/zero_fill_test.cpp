// When the CPU code generator may skip zero-filling an allocation (codegen/written_before_read.hpp):
// only where the body overwrites every element before anything reads it. The analysis on hand-built
// loops (whole covers, and each way a cover can fall short), then kernels through the JIT: the
// fill's memset is gone from whole covers, kept for partial ones, and both match the interpreter.
#include <loom/codegen/written_before_read.hpp>
#include <loom/ir/amx_tile_product.hpp>
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "../runtime/interp_test_util.hpp"
#include "../support/jit_harness.hpp"

using namespace loom;
using namespace loom::test;

namespace {

Expr zero_fill_ramp(Expr base, int lanes) { return RampNode::make(std::move(base), Expr(1), lanes); }

/// allocate(tmp, f32, [elements]) { nest; out[i] = tmp[i] for i < elements }, as an AllocateNode.
bool whole(const Var& tmp, int64_t elements, const Stmt& nest) {
  Var i("i_read");
  Stmt read = loop(i, 0, Expr(static_cast<int>(elements)),
                   StoreNode::make(tmp, LoadNode::make(f32, tmp, i) + 1.0f, i));
  Stmt alloc =
      AllocateNode::make(tmp, f32, {Expr(static_cast<int>(elements))}, "global", SeqNode::make({nest, read}));
  return codegen::written_before_read(*alloc.as<AllocateNode>());
}

}  // namespace

TEST_CASE("zero fill: whole covers are proven") {
  Var tmp("tmp", handle_type), j("j"), k("k");
  const Expr v16 = BroadcastNode::make(Expr(2.0f), 16);
  // A vectorized row: tmp[ramp(16 j, 1, 16)] for j < 64 (a softmax row of exp values).
  CHECK(whole(tmp, 1024, loop(j, 0, 64, StoreNode::make(tmp, v16, zero_fill_ramp(j * 16, 16)))));
  // Two stores per iteration, side by side (a packed GEMM panel, unrolled).
  CHECK(whole(tmp, 1024,
              loop(j, 0, 32,
                   SeqNode::make({StoreNode::make(tmp, v16, zero_fill_ramp(j * 32, 16)),
                                  StoreNode::make(tmp, v16, zero_fill_ramp(j * 32 + 16, 16))}))));
  // Two loops, the outer one's step the inner one's whole length, scalar stores; a loop from 1.
  CHECK(whole(tmp, 96, loop(j, 0, 8, loop(k, 1, 12, StoreNode::make(tmp, Expr(1.0f), j * 12 + (k - 1))))));
  // The loops in either order; an extra loop that does not move the index rewrites the same elements.
  CHECK(whole(tmp, 96, loop(k, 0, 12, loop(j, 0, 8, StoreNode::make(tmp, Expr(1.0f), j * 12 + k)))));
  Var r("r");
  CHECK(whole(tmp, 96, loop(r, 0, 3, loop(k, 0, 96, StoreNode::make(tmp, Expr(1.0f), k)))));
  // Sequences of loops, each writing every fourth element (a packed GEMM panel of A: four rows
  // interleaved), so that only all of them together cover the buffer.
  std::vector<Stmt> rows;
  for (int row = 0; row < 4; ++row) {
    Var c("c" + std::to_string(row));
    rows.push_back(loop(c, 0, 10, StoreNode::make(tmp, Expr(1.0f), j * 40 + c * 4 + row)));
  }
  CHECK(whole(tmp, 120, loop(j, 0, 3, SeqNode::make(rows))));
  rows.pop_back();
  CHECK_FALSE(whole(tmp, 120, loop(j, 0, 3, SeqNode::make(rows))));
  // Statements before the nest that do not touch the buffer.
  BufferParam other = buffer_param("other", f32, {4});
  CHECK(whole(tmp, 64,
              SeqNode::make(
                  {store(other, Expr(3.0f), Expr(0)), loop(k, 0, 64, StoreNode::make(tmp, Expr(1.0f), k))})));
}

TEST_CASE("zero fill: an AMX tile product from zero writes its block of tiles") {
  // A 2 x 2 block of 16 x 16 float32 tiles into tmp (rows 32 elements apart, m-tiles 512), bfloat16
  // A and B elsewhere: the tiles' 16-element rows cover 1024 elements.
  Var tmp("tmp", handle_type), a("a", handle_type), b("b", handle_type), j("j");
  auto product = [&](Expr offset, int64_t row, bool accumulate, const Var& a_data) {
    AmxTileProduct p;
    p.m_tiles = p.n_tiles = 2;
    p.accumulate = accumulate;
    p.steps = Expr(3);
    p.c = AmxOperand{
        tmp, f32, std::move(offset), Expr(static_cast<int>(row)), Expr(static_cast<int>(16 * row)), Expr(0)};
    p.a = AmxOperand{a_data, bf16, Expr(0), Expr(96), Expr(1536), Expr(32)};
    p.b = AmxOperand{b, bf16, Expr(0), Expr(64), Expr(32), Expr(1024)};
    return p.make("zero fill test");
  };
  CHECK(whole(tmp, 1024, product(Expr(0), 32, false, a)));
  // Blocks side by side in a loop: offset 1024 j.
  CHECK(whole(tmp, 2048, loop(j, 0, 2, product(j * 1024, 32, false, a))));
  // Short of a cover: accumulating (tileloadd reads C first), rows 48 apart (gaps, and past the end
  // of 1024), one block of two, A read from the buffer itself.
  CHECK_FALSE(whole(tmp, 1024, product(Expr(0), 32, true, a)));
  CHECK_FALSE(whole(tmp, 1536, product(Expr(0), 48, false, a)));
  CHECK_FALSE(whole(tmp, 2048, product(Expr(0), 32, false, a)));
  CHECK_FALSE(whole(tmp, 1024, product(Expr(0), 32, false, tmp)));
}

TEST_CASE("zero fill: anything short of a proven whole cover keeps the fill") {
  Var tmp("tmp", handle_type), j("j"), k("k");
  const Expr v16 = BroadcastNode::make(Expr(2.0f), 16);
  // A gap between iterations (16 of every 32 elements), one element short, one past the end.
  CHECK_FALSE(whole(tmp, 1024, loop(j, 0, 32, StoreNode::make(tmp, v16, zero_fill_ramp(j * 32, 16)))));
  CHECK_FALSE(whole(tmp, 96, loop(k, 0, 95, StoreNode::make(tmp, Expr(1.0f), k))));
  CHECK_FALSE(whole(tmp, 96, loop(k, 0, 97, StoreNode::make(tmp, Expr(1.0f), k))));
  CHECK_FALSE(whole(tmp, 96, loop(k, 0, 96, StoreNode::make(tmp, Expr(1.0f), k + 1))));
  // Masked lanes; a guarded store; a stride; an index that is not affine in the loops.
  const Expr some = BroadcastNode::make(Expr(true), 16);
  CHECK_FALSE(whole(tmp, 1024, loop(j, 0, 64, StoreNode::make(tmp, v16, zero_fill_ramp(j * 16, 16), some))));
  CHECK_FALSE(
      whole(tmp, 64, loop(k, 0, 64, IfThenElseNode::make(k < 60, StoreNode::make(tmp, Expr(1.0f), k)))));
  CHECK_FALSE(whole(tmp, 64, loop(k, 0, 64, StoreNode::make(tmp, Expr(1.0f), floormod(k * 7, 64)))));
  CHECK_FALSE(whole(tmp, 1024, loop(j, 0, 64, StoreNode::make(tmp, v16, RampNode::make(j, Expr(64), 16)))));
  // The buffer read before the nest, or by the nest's own stores.
  BufferParam out = buffer_param("out", f32, {64});
  CHECK_FALSE(whole(tmp, 64,
                    SeqNode::make({store(out, LoadNode::make(f32, tmp, Expr(0)), Expr(0)),
                                   loop(k, 0, 64, StoreNode::make(tmp, Expr(1.0f), k))})));
  CHECK_FALSE(
      whole(tmp, 64, loop(k, 0, 64, StoreNode::make(tmp, LoadNode::make(f32, tmp, Expr(63 - k)), k))));
  // Two stores whose loop coefficients differ; a symbolic extent.
  CHECK_FALSE(whole(
      tmp, 64,
      loop(k, 0, 32,
           SeqNode::make({StoreNode::make(tmp, Expr(1.0f), k), StoreNode::make(tmp, Expr(1.0f), k * 2)}))));
  Var n("n");
  CHECK_FALSE(whole(tmp, 64, loop(k, 0, n, StoreNode::make(tmp, Expr(1.0f), k))));
  // Stores of another type than the buffer's (8-bit values write a quarter of a float's bytes).
  CHECK_FALSE(whole(tmp, 64, loop(k, 0, 64, StoreNode::make(tmp, cast(i8, k), k))));
  // A loop variable of a narrow type: its bounds would wrap in the generated code.
  Var k16("k16", i16);
  CHECK_FALSE(whole(
      tmp, 64,
      loop(k16, Expr(int16_t{0}), Expr(int16_t{64}), StoreNode::make(tmp, Expr(1.0f), cast(i32, k16)))));
  // The buffer's variable bound again inside the body (ill-formed): the read behind it would be missed.
  {
    Var i("i_rebound");
    BufferParam out = buffer_param("out", f32, {64});
    Stmt inner = AllocateNode::make(tmp, f32, {Expr(4)}, "global", StoreNode::make(tmp, Expr(1.0f), Expr(0)));
    Stmt body = SeqNode::make({loop(k, 0, 64, StoreNode::make(tmp, Expr(1.0f), k)), inner,
                               loop(i, 0, 64, store(out, LoadNode::make(f32, tmp, i), i))});
    Stmt alloc = AllocateNode::make(tmp, f32, {Expr(64)}, "global", body);
    CHECK_FALSE(codegen::written_before_read(*alloc.as<AllocateNode>()));
  }
  // Loops that run long without storing: the walk is not started beyond its budget, instead of
  // running 10^10 iterations (these checks would not finish otherwise).
  Var a("a"), b("b"), c("c");
  CHECK_FALSE(
      whole(tmp, 64,
            SeqNode::make(
                {loop(a, 0, 100000, loop(b, 0, 100000, loop(c, 0, 0, StoreNode::make(tmp, Expr(1.0f), c)))),
                 loop(k, 0, 64, StoreNode::make(tmp, Expr(1.0f), k))})));
  // A loop inside the tree that stores only to another buffer, 10^9 times: checked for reads of the
  // buffer, then left out of the walk (which would not finish otherwise).
  BufferParam other = buffer_param("other", f32, {1});
  CHECK(whole(tmp, 64,
              loop(k, 0, 64,
                   SeqNode::make({StoreNode::make(tmp, Expr(1.0f), k),
                                  loop(a, 0, 1000000000, store(other, Expr(1.0f), Expr(0)))}))));
  CHECK_FALSE(whole(tmp, 64,
                    loop(k, 0, 64,
                         SeqNode::make({StoreNode::make(tmp, Expr(1.0f), k),
                                        loop(a, 0, 1000000000,
                                             store(other, LoadNode::make(f32, tmp, Expr(0)), Expr(0)))}))));
  // A ramp whose lane count does not fit its type's 16 bits (ill-formed IR): not trusted.
  CHECK_FALSE(whole(
      tmp, 65600,
      StoreNode::make(tmp, BroadcastNode::make(Expr(1.0f), 64), RampNode::make(Expr(0), Expr(1), 65600))));
}

TEST_CASE("zero fill: through the JIT, whole covers skip the memset and both kinds match the interpreter") {
  // On the stack (small) and from loom_rt_alloc (beyond the stack limit). The allocation `tmp` of n
  // floats is filled by `fill`, then out[i] = tmp[read(i)]; the kernel is checked against the
  // interpreter and returned.
  auto fill_then_read = [](const char* name, int n, const std::function<Stmt(const Var&, const Var&)>& fill,
                           const std::function<Expr(const Var&)>& read, Buffer<float>& o) {
    BufferParam out = buffer_param("out", f32, {n});
    Var i("i"), tmp("tmp", handle_type);
    Stmt body = AllocateNode::make(
        tmp, f32, {n}, "global",
        SeqNode::make({fill(tmp, i), loop(i, 0, n, store(out, LoadNode::make(f32, tmp, read(i)), i))}));
    return check_jit_matches_interpreter(make_func(name, {param(out)}, body), o);
  };
  for (int n : {1024, 100000}) {
    CAPTURE(n);
    // Written whole, read back reversed: no fill.
    Buffer<float> o({n});
    Kernel whole_kernel = fill_then_read(
        "whole", n,
        [&](const Var& tmp, const Var& i) {
          return loop(i, 0, n, StoreNode::make(tmp, cast(f32, i) * Expr(0.5f), i));
        },
        [&](const Var& i) { return n - 1 - i; }, o);
    const std::string ir = whole_kernel.llvm_ir();
    CHECK(ir.find("llvm.memset") == std::string::npos);
    // loom_rt_alloc's last argument: whether to zero-fill.
    if (n > 1024) CHECK(ir.find("%alloc_extents, i32 0)") != std::string::npos);
    // Every other element written: the others must read as zeros, as in the interpreter.
    for (int64_t e = 0; e < n; ++e) o.at_flat(e) = -7.0f;
    Kernel half_kernel = fill_then_read(
        "half", n,
        [&](const Var& tmp, const Var& i) {
          return loop(i, 0, n / 2, StoreNode::make(tmp, cast(f32, i) + Expr(1.0f), i * 2));
        },
        [](const Var& i) { return Expr(i); }, o);
    half_kernel(o);
    for (int64_t e = 1; e < n; e += 2) REQUIRE(o.at_flat(e) == 0.0f);
    CHECK(o.at_flat(2) == 2.0f);
    if (n > 1024) CHECK(half_kernel.llvm_ir().find("%alloc_extents, i32 1)") != std::string::npos);
  }
}

TEST_CASE("zero fill: a kernel's large temporary reused from the workspace pool is zeroed again") {
  // 4 MiB temporaries come from runtime::WorkspacePool, which keeps a freed block for the next
  // allocation of its size. The first kernel leaves its block full of non-zero values; the second,
  // which writes only every other element, gets that block back and must still read zeros.
  if (!runtime::WorkspacePool::kMapsLargeBlocks) return;  // AddressSanitizer: no pool to reuse from
  runtime::WorkspacePool& pool = runtime::WorkspacePool::global();
  const size_t limit = pool.cache_limit();
  pool.release_cached();                   // so that the block the second kernel gets is the first one's
  pool.set_cache_limit(size_t{64} << 20);  // whatever LOOM_WORKSPACE_CACHE_MB says
  const int n = 1 << 20;
  BufferParam out = buffer_param("out", f32, {n});
  Var i("i"), tmp("tmp", handle_type);
  auto kernel = [&](const char* name, int step) {
    Stmt body = AllocateNode::make(
        tmp, f32, {n}, "global",
        SeqNode::make({loop(i, 0, n / step, StoreNode::make(tmp, cast(f32, i) + Expr(1.0f), i * step)),
                       loop(i, 0, n, store(out, LoadNode::make(f32, tmp, i), i))}));
    return build(make_func(name, {param(out)}, body), Target::cpu());
  };
  Kernel whole_kernel = kernel("whole_big", 1), half_kernel = kernel("half_big", 2);
  Buffer<float> o({n});
  whole_kernel(o);
  REQUIRE(o.at_flat(n - 1) == static_cast<float>(n));
  const runtime::WorkspacePool::Stats before = pool.stats();
  REQUIRE(before.cached_blocks == 1);
  half_kernel(o);
  const runtime::WorkspacePool::Stats after = pool.stats();
  CHECK(after.reuses == before.reuses + 1);  // the first kernel's block
  CHECK(after.maps == before.maps);
  for (int64_t e = 1; e < n; e += 2) REQUIRE(o.at_flat(e) == 0.0f);
  CHECK(o.at_flat(2) == 2.0f);
  pool.set_cache_limit(limit);
}

// One-warp kernels around the built-in tensor-core intrinsics (te/ptx_intrinsics.hpp), shared by
// the simulator tests (tests/cuda) and the GPU check (tests/device): C (16 x 8, f32) = A (16 x K)
// B (K x 8), computed twice into one accumulator, so C = 2 A B. The fragments are loaded either
// element by element with the PTX ISA's layout tables transcribed here, independently of
// te/ptx_fragments.hpp, or with ldmatrix from shared memory (tf32 too: 32-bit elements untransposed).
// Also a one-warp kernel of cvt.rna.tf32.f32 and the bit patterns it is checked on.
#pragma once

#include "cuda_test_util.hpp"

#include <loom/core.hpp>
#include <loom/te/ptx_intrinsics.hpp>

#include <type_traits>

namespace loom::cuda_test {

/// An element of a fragment as the PTX ISA's figures give it: row = rg * groupID + rt *
/// threadID_in_group + r0, col likewise (groupID = lane / 4, threadID_in_group = lane % 4).
struct LayoutEntry {
  int rg, rt, r0, cg, ct, c0;
};

// m16n8k16, 16-bit A (row-major): a0..a7.
inline const LayoutEntry kA16[8] = {{1, 0, 0, 0, 2, 0}, {1, 0, 0, 0, 2, 1}, {1, 0, 8, 0, 2, 0},
                                    {1, 0, 8, 0, 2, 1}, {1, 0, 0, 0, 2, 8}, {1, 0, 0, 0, 2, 9},
                                    {1, 0, 8, 0, 2, 8}, {1, 0, 8, 0, 2, 9}};
// m16n8k16 B (k x n): b0..b3.
inline const LayoutEntry kB16[4] = {
    {0, 2, 0, 1, 0, 0}, {0, 2, 1, 1, 0, 0}, {0, 2, 8, 1, 0, 0}, {0, 2, 9, 1, 0, 0}};
// m16n8k8 tf32 A: a0..a3, and B: b0, b1.
inline const LayoutEntry kA8[4] = {
    {1, 0, 0, 0, 1, 0}, {1, 0, 8, 0, 1, 0}, {1, 0, 0, 0, 1, 4}, {1, 0, 8, 0, 1, 4}};
inline const LayoutEntry kB8[2] = {{0, 1, 0, 1, 0, 0}, {0, 1, 4, 1, 0, 0}};
// C and D (16 x 8, f32): c0..c3.
inline const LayoutEntry kC[4] = {
    {1, 0, 0, 0, 2, 0}, {1, 0, 0, 0, 2, 1}, {1, 0, 8, 0, 2, 0}, {1, 0, 8, 0, 2, 1}};

enum class FragmentLoad {
  Scalar,       // element by element from global memory, with the tables above
  WrongLayout,  // the same with A's a2 and a4 swapped: the result must be wrong
  Ldmatrix,     // from shared memory: 16-bit types A with ldmatrix.x4, B with ldmatrix.x2.trans;
                // tf32 A with ldmatrix.x4 and B, staged transposed (n x k), with ldmatrix.x2
};

/// The kernel `mma_<dtype>`: parameters A (16 x K), B (K x 8), C (16 x 8) of `in`, `in`, f32.
inline LoweredFunc mma_kernel(DType in, FragmentLoad load) {
  const bool tf32 = in == f32;
  const int k = tf32 ? 8 : 16;
  const char* name = tf32 ? ptx::mma_tf32 : in == bf16 ? ptx::mma_bf16 : ptx::mma_f16;
  Var a("A", handle_type), b("B", handle_type), c("C", handle_type), tx("tx", i32), bx("bx", i32);
  Var af("a_frag", handle_type), bf("b_frag", handle_type), cf("c_frag", handle_type);
  Var as("A_shared", handle_type), bs("B_shared", handle_type);
  const Expr g = tx / 4, t = tx % 4;
  auto at = [&](const LayoutEntry& e, int cols) {
    return (g * e.rg + t * e.rt + e.r0) * cols + (g * e.cg + t * e.ct + e.c0);
  };
  const int a_elems = 16 * k / 32, b_elems = 8 * k / 32;
  std::vector<Stmt> body;
  std::vector<Stmt> copy_in;
  if (load == FragmentLoad::Ldmatrix && tf32) {
    // A (16 x 8 f32) as it is; B transposed, n x k, so that k is contiguous. Untransposed ldmatrix
    // moves 32-bit elements whole: lane l receives element (l / 4, l % 4) of each 8 x 4 matrix,
    // A's a0..a3 from its quarters (rows 0-7 and 8-15, columns 0-3 and 4-7) and B's b0, b1 from
    // its n x k columns 0-3 and 4-7.
    for (int j = 0; j < 4; ++j)
      copy_in.push_back(StoreNode::make(as, LoadNode::make(in, a, tx * 4 + j), tx * 4 + j));
    for (int j = 0; j < 2; ++j) {
      const Expr e = tx * 2 + j;  // element (e / 8, e % 8) of B (k x n)
      copy_in.push_back(StoreNode::make(bs, LoadNode::make(in, b, e), e % 8 * 8 + e / 8));
    }
    copy_in.push_back(BarrierNode::make(scope::shared));
    body.insert(body.end(), copy_in.begin(), copy_in.end());
    body.push_back(
        warp_intrinsic_call(ptx::ldmatrix(4, false),
                            {{af, in, Expr(0)}, {as, in, (tx % 8 + (tx / 8) % 2 * 8) * 8 + tx / 16 * 4}}));
    body.push_back(warp_intrinsic_call(ptx::ldmatrix(2, false),
                                       {{bf, in, Expr(0)}, {bs, in, tx % 8 * 8 + tx / 8 % 2 * 4}}));
  } else if (load == FragmentLoad::Ldmatrix) {
    for (int j = 0; j < 8; ++j)
      copy_in.push_back(StoreNode::make(as, LoadNode::make(in, a, tx * 8 + j), tx * 8 + j));
    for (int j = 0; j < 4; ++j)
      copy_in.push_back(StoreNode::make(bs, LoadNode::make(in, b, tx * 4 + j), tx * 4 + j));
    copy_in.push_back(BarrierNode::make(scope::shared));
    body.insert(body.end(), copy_in.begin(), copy_in.end());
    // Lane l addresses row l % 8 of matrix l / 8: A's matrices are its four 8x8 quarters in
    // the order of a0-a1, a2-a3, a4-a5, a6-a7; B's two are its k rows 0-7 and 8-15, transposed.
    body.push_back(
        warp_intrinsic_call(ptx::ldmatrix(4, false),
                            {{af, in, Expr(0)}, {as, in, (tx % 8 + (tx / 8) % 2 * 8) * 16 + tx / 16 * 8}}));
    body.push_back(warp_intrinsic_call(ptx::ldmatrix(2, true), {{bf, in, Expr(0)}, {bs, in, tx % 16 * 8}}));
  } else {
    for (int i = 0; i < a_elems; ++i) {
      LayoutEntry e = tf32 ? kA8[i] : kA16[i];
      if (load == FragmentLoad::WrongLayout && (i == 2 || i == 4)) e = kA16[6 - i];
      body.push_back(StoreNode::make(af, LoadNode::make(in, a, at(e, k)), Expr(i)));
    }
    for (int i = 0; i < b_elems; ++i)
      body.push_back(StoreNode::make(bf, LoadNode::make(in, b, at(tf32 ? kB8[i] : kB16[i], 8)), Expr(i)));
  }
  for (int i = 0; i < 4; ++i) body.push_back(StoreNode::make(cf, make_const(f32, 0.0), Expr(i)));
  for (int rep = 0; rep < 2; ++rep)
    body.push_back(warp_intrinsic_call(
        name, {{cf, f32, Expr(0)}, {af, in, Expr(0)}, {bf, in, Expr(0)}, {cf, f32, Expr(0)}}));
  for (int i = 0; i < 4; ++i)
    body.push_back(StoreNode::make(c, LoadNode::make(f32, cf, Expr(i)), at(kC[i], 8)));
  Stmt s = SeqNode::make(body);
  s = AllocateNode::make(cf, f32, {Expr(4)}, scope::local, s);
  s = AllocateNode::make(bf, in, {Expr(b_elems)}, scope::local, s);
  s = AllocateNode::make(af, in, {Expr(a_elems)}, scope::local, s);
  if (load == FragmentLoad::Ldmatrix) {
    s = AllocateNode::make(bs, in, {Expr(k * 8)}, scope::shared, s);
    s = AllocateNode::make(as, in, {Expr(16 * k)}, scope::shared, s);
  }
  s = ForNode::make(tx, 0, 32, ForKind::ThreadBinding, s, thread_tag::threadIdx_x);
  s = ForNode::make(bx, 0, 1, ForKind::ThreadBinding, s, thread_tag::blockIdx_x);
  LoweredFunc f;
  f.name = cat("mma_", in.str(), load == FragmentLoad::Ldmatrix ? "_ldmatrix" : "");
  auto param = [&](const char* pname, Var& data, DType dt, int rows, int cols) {
    FuncParam p;
    p.buffer = BufferParam{pname, data, dt, {Expr(rows), Expr(cols)}, {Expr(cols), Expr(1)}};
    f.params.push_back(p);
  };
  param("A", a, in, 16, k);
  param("B", b, in, k, 8);
  param("C", c, f32, 16, 8);
  f.body = s;
  return lower_from(std::move(f), Phase::Loops);
}

/// Small integers (exact in every input type and in any order of f32 additions), different per
/// element so that a misplaced element changes the result.
template <typename T>
void fill_small_integers(const Buffer<T>& x, int seed) {
  for (int64_t i = 0; i < x.num_elements(); ++i)
    x.at_flat(i) = static_cast<T>(static_cast<float>((i * 7 + seed * 13) % 9 - 4));
}

/// One f32 bit pattern and what cvt.rna.tf32.f32 makes of it.
struct Tf32RoundCase {
  uint32_t in, out;
};

/// Patterns at the rounding boundary: below half a tf32 unit, exactly half (a tie, positive and
/// negative), a carry into the exponent, the largest finite float (rounds to infinity), infinities
/// and NaNs (which only lose their 13 low bits, as ptxas's FSETP / IADD / LOP3 sequence leaves
/// them; signalling NaNs are left out, as the simulator's f32 loads quiet them), denormals, -0.
inline const std::vector<Tf32RoundCase>& tf32_round_cases() {
  static const std::vector<Tf32RoundCase> cases = {
      {0x3f800fffu, 0x3f800000u}, {0x3f801000u, 0x3f802000u}, {0xbf801000u, 0xbf802000u},
      {0x3f801001u, 0x3f802000u}, {0x3fffffffu, 0x40000000u}, {0x7f7fffffu, 0x7f800000u},
      {0x7f800000u, 0x7f800000u}, {0xff800000u, 0xff800000u}, {0x7fc00123u, 0x7fc00000u},
      {0xffc01fffu, 0xffc00000u}, {0x00000fffu, 0x00000000u}, {0x00001000u, 0x00002000u},
      {0x80001000u, 0x80002000u}, {0x80000000u, 0x80000000u}, {0xc0400fffu, 0xc0400000u},
      {0x3f802000u, 0x3f802000u}};
  return cases;
}

/// in (128 f32) -> out (128 f32) on one warp: each lane rounds its 4 values in place with one
/// ptx::cvt_rna_tf32(4).
inline LoweredFunc tf32_round_kernel() {
  Var tx("tx", i32), bx("bx", i32), in("in", handle_type), out("out", handle_type), x("x", handle_type);
  std::vector<Stmt> body;
  for (int i = 0; i < 4; ++i)
    body.push_back(StoreNode::make(x, LoadNode::make(f32, in, tx * 4 + i), Expr(i)));
  body.push_back(warp_intrinsic_call(ptx::cvt_rna_tf32(4), {{x, f32, Expr(0)}, {x, f32, Expr(0)}}));
  for (int i = 0; i < 4; ++i)
    body.push_back(StoreNode::make(out, LoadNode::make(f32, x, Expr(i)), tx * 4 + i));
  const Stmt s = AllocateNode::make(x, f32, {Expr(4)}, scope::local, SeqNode::make(body));
  return flat_kernel("round_tf32", bx, tx, 1, 32, s, {{in, f32, 128}, {out, f32, 128}});
}

/// The value the tensor core multiplies: an f32 input as tf32, its 13 low mantissa bits ignored
/// (truncated) or, with `round`, rounded to nearest first (cvt.rna.tf32.f32); a 16-bit input as
/// itself.
template <typename T>
double tensor_core_value(T x, bool round = false) {
  if constexpr (std::is_same_v<T, float>) {
    const uint32_t bits = float_bits(x);
    return static_cast<double>(bits_float(round ? ptx::detail::round_to_tf32(bits) : bits & 0xffffe000u));
  }
  return static_cast<double>(x);
}

/// 2 A B in double.
template <typename T>
void mma_reference(const Buffer<T>& a, const Buffer<T>& b, Buffer<float>& c) {
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      double s = 0;
      for (int64_t p = 0; p < a.shape()[1]; ++p)
        s += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
      c(i, j) = static_cast<float>(2 * s);
    }
}

}  // namespace loom::cuda_test

// The built-in warp intrinsics (te/warp_intrinsic.hpp) for NVIDIA tensor cores: mma.sync
// m16n8k16 with f16 or bf16 inputs and m16n8k8 with tf32 inputs (f32 accumulation, A row-major,
// B column-major in registers), and ldmatrix (x1, x2, x4, each with or without .trans; 16-bit data,
// or 32-bit data untransposed), cp.async with its groups, and cvt.rna.tf32.f32 (f32 rounded to
// tf32). Each is PTX inline assembly for the CUDA backend and an exact model for the simulator
// (the PTX ISA's fragment layouts, te/ptx_fragments.hpp, for mma and ldmatrix). Also the one place a call is
// checked and built.
#pragma once

#include <string>
#include <vector>

#include "loom/ir/half.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/te/ptx_fragments.hpp"
#include "loom/te/warp_intrinsic.hpp"

namespace loom::ptx {

/// The built-ins' names.
inline constexpr const char* mma_f16 = "ptx.mma.m16n8k16.row.col.f32.f16.f16.f32";
inline constexpr const char* mma_bf16 = "ptx.mma.m16n8k16.row.col.f32.bf16.bf16.f32";
inline constexpr const char* mma_tf32 = "ptx.mma.m16n8k8.row.col.f32.tf32.tf32.f32";
/// ldmatrix .m8n8 .b16 of `matrices` (1, 2 or 4) 8x8 matrices, transposed or not.
inline std::string ldmatrix(int matrices, bool trans) {
  return cat("ptx.ldmatrix.x", matrices, trans ? ".trans" : "");
}
/// cp.async of `bytes` (4, 8, 16) from global to shared memory, cached in L1 (.ca) or only in L2
/// (.cg, 16 bytes only); operands dst (shared), src (global), src_bytes (a value: bytes read
/// from src, the rest zero-filled; 0 reads nothing).
inline std::string cp_async(int bytes, bool cache_global) {
  return cat("ptx.cp.async.", cache_global ? "cg" : "ca", ".shared.global.", bytes);
}
inline const std::string cp_async_cg16 = cp_async(16, true);
/// Closes the lane's open group of cp.async copies; no operands.
inline constexpr const char* cp_async_commit = "ptx.cp.async.commit_group";
/// Waits until at most `pending` (0-7) of the lane's committed groups are in flight; no operands.
inline std::string cp_async_wait(int pending) { return cat("ptx.cp.async.wait_group.", pending); }
/// cvt.rna.tf32.f32 of `count` (1, 2 or 4) consecutive f32 values of a lane: operands dst and src
/// (local; the same, overlapping or apart: every source is read before any result is written),
/// each value rounded to tf32 (10 mantissa bits) to nearest, ties away from zero, its 13 low bits
/// zero. Per thread, not collective.
inline std::string cvt_rna_tf32(int count) { return cat("ptx.cvt.rna.tf32.f32.x", count); }

namespace detail {

/// "{%first, %first+1, ...}" for `count` registers.
inline std::string reg_list(int first, int count) {
  std::string s = "{";
  for (int i = 0; i < count; ++i) s += cat(i ? ", " : "", "%", first + i);
  return s + "}";
}
/// `constraint`(array[0]), ... for `count` elements.
inline std::string asm_operands(const std::string& constraint, const std::string& array, int count) {
  std::string s;
  for (int i = 0; i < count; ++i) s += cat(i ? ", " : "", "\"", constraint, "\"(", array, "[", i, "])");
  return s;
}
/// The 32-bit shared-window address of a generic pointer into shared memory. The compiler's own
/// conversion, not inline PTX: it sees through it, so addresses that differ by a constant share
/// one register plus an immediate offset (an asm cvta per operand cost a third of the GEMM's
/// main-loop instructions).
inline std::string shared_address(const std::string& pointer) {
  return cat("static_cast<unsigned>(__cvta_generic_to_shared(", pointer, "))");
}

/// The value of a 32-bit register's element as the tensor core reads it. The tensor core reads a
/// tf32 operand's sign, exponent and 10 high mantissa bits and ignores the 13 low bits; convert
/// with cvt.rna.tf32.f32 (ptx::cvt_rna_tf32) first to round instead.
inline double input_value(DType t, const WarpLanes& w, int lane, int operand, int i) {
  if (t.code == TypeCode::Float && t.bits == 32)
    return bits_float(w.read<uint32_t>(lane, operand, i) & 0xffffe000u);
  const uint16_t bits = w.read<uint16_t>(lane, operand, i);
  return t.code == TypeCode::BFloat ? bfloat16_bits_to_float(bits) : half_bits_to_float(bits);
}

/// mma.sync.aligned.m16n8kK.row.col.f32.T.T.f32 with operands d, a, b, c: D = A B + C. Each
/// product and the sum are exact in double, rounded to f32 once; a GPU adds in f32 in an order of
/// its own, so results agree to the f32 rounding of the sum, and exactly for small integers.
inline WarpIntrinsic mma(const char* name, DType in, int k) {
  const int a_elems = 16 * k / 32, b_elems = 8 * k / 32;  // elements per lane
  const int elem_bytes = in.bits / 8;
  const int a_regs = a_elems * elem_bytes / 4, b_regs = b_elems * elem_bytes / 4;  // 4 and 2
  WarpIntrinsic w;
  w.name = name;
  w.min_sm = 80;
  w.cycles = 8;  // 2048 (f16) or 1024 (tf32) multiply-adds on one tensor core of an SM quarter
  const std::vector<DType> in_types{in.code == TypeCode::Float && in.bits == 32 ? f32 : in};
  w.operands = {{"d", WarpOperandSpace::Local, false, true, 16, 4, {f32}},
                {"a", WarpOperandSpace::Local, true, false, a_elems * elem_bytes, 4, in_types},
                {"b", WarpOperandSpace::Local, true, false, b_elems * elem_bytes, 4, in_types},
                {"c", WarpOperandSpace::Local, true, false, 16, 4, {f32}}};
  const std::string ptx_name = "mma.sync.aligned." + std::string(name).substr(8);  // after "ptx.mma."
  w.cuda = [ptx_name, a_regs, b_regs](const std::vector<std::string>& p) {
    return cat("{\n  float* loom_d = ", p[0],
               ";\n  const unsigned* loom_a = reinterpret_cast<const unsigned*>(", p[1],
               ");\n  const unsigned* loom_b = reinterpret_cast<const unsigned*>(", p[2],
               ");\n  const float* loom_c = ", p[3], ";\n  asm volatile(\"", ptx_name, " ", reg_list(0, 4),
               ", ", reg_list(4, a_regs), ", ", reg_list(4 + a_regs, b_regs), ", ",
               reg_list(4 + a_regs + b_regs, 4), ";\\n\"\n      : ", asm_operands("=f", "loom_d", 4),
               "\n      : ", asm_operands("r", "loom_a", a_regs), ", ", asm_operands("r", "loom_b", b_regs),
               ", ", asm_operands("f", "loom_c", 4), ");\n}");
  };
  w.simulate = [in, k, a_elems, b_elems](const WarpLanes& lanes) {
    double a[16][16] = {}, b[16][8] = {}, c[16][8] = {};
    const bool tf32 = k == 8;
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < a_elems; ++i) {
        const FragmentCoord e = tf32 ? mma_m16n8k8_tf32_a(l, i) : mma_m16n8k16_a(l, i);
        a[e.row][e.col] = input_value(in, lanes, l, 1, i);
      }
      for (int i = 0; i < b_elems; ++i) {
        const FragmentCoord e = tf32 ? mma_m16n8k8_tf32_b(l, i) : mma_m16n8k16_b(l, i);
        b[e.row][e.col] = input_value(in, lanes, l, 2, i);
      }
      for (int i = 0; i < 4; ++i) {
        const FragmentCoord e = mma_m16n8_c(l, i);
        c[e.row][e.col] = lanes.read<float>(l, 3, i);
      }
    }
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 4; ++i) {
        const FragmentCoord e = mma_m16n8_c(l, i);
        double s = c[e.row][e.col];
        for (int p = 0; p < k; ++p) s += a[e.row][p] * b[p][e.col];
        lanes.write<float>(l, 0, i, static_cast<float>(s));
      }
  };
  return w;
}

/// ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16 with operands dst (N registers per lane) and
/// src (the 16-byte row that lane 8 * matrix + row addresses). Without .trans it also takes 32-bit
/// data (tf32 fragments): a 32-bit element is a pair of b16 that ldmatrix moves together, so lane
/// l receives element (l / 4, l % 4) of each 8 x 4 matrix. .trans would move the 16-bit halves of
/// different 32-bit elements, so it takes 16-bit data only.
inline WarpIntrinsic ldmatrix_op(int matrices, bool trans) {
  WarpIntrinsic w;
  w.name = ptx::ldmatrix(matrices, trans);
  w.min_sm = 75;
  w.cycles = 1;  // its shared wavefronts are charged by the bank model
  std::vector<DType> types{f16, bf16, i16, u16};
  if (!trans) types.insert(types.end(), {f32, i32, u32});
  const uint32_t address_lanes = matrices == 4 ? 0xffffffffu : (1u << (8 * matrices)) - 1;
  w.operands = {{"dst", WarpOperandSpace::Local, false, true, 4 * matrices, 4, types},
                {"src", WarpOperandSpace::Shared, true, false, 16, 16, types, address_lanes}};
  const std::string ptx_name =
      cat("ldmatrix.sync.aligned.m8n8.x", matrices, trans ? ".trans" : "", ".shared.b16");
  w.cuda = [ptx_name, matrices](const std::vector<std::string>& p) {
    return cat("{\n  unsigned* loom_d = reinterpret_cast<unsigned*>(", p[0],
               ");\n  const unsigned loom_s = ", shared_address(p[1]), ";\n  asm volatile(\"", ptx_name, " ",
               reg_list(0, matrices), ", [%", matrices,
               "];\\n\"\n      : ", asm_operands("=r", "loom_d", matrices),
               "\n      : \"r\"(loom_s) : \"memory\");\n}");
  };
  w.simulate = [matrices, trans](const WarpLanes& lanes) {
    uint16_t got[32][8];
    for (int j = 0; j < matrices; ++j)
      for (int l = 0; l < 32; ++l)
        for (int h = 0; h < 2; ++h) {
          const FragmentCoord e = ldmatrix_element(l, h, trans);
          got[l][2 * j + h] = lanes.read<uint16_t>(8 * j + e.row, 1, e.col);
        }
    for (int l = 0; l < 32; ++l)
      for (int i = 0; i < 2 * matrices; ++i) lanes.write<uint16_t>(l, 0, i, got[l][i]);
  };
  return w;
}

/// cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes: modelled by the simulator itself
/// (sim/async_copy.hpp), so its semantics function is never called.
inline WarpIntrinsic cp_async_op(int bytes, bool cache_global) {
  WarpIntrinsic w;
  w.name = ptx::cp_async(bytes, cache_global);
  w.min_sm = 80;
  w.collective = false;
  w.async = WarpAsyncRole::Copy;
  w.operands = {{"dst", WarpOperandSpace::Shared, false, true, bytes, bytes, {}},
                {"src", WarpOperandSpace::Global, true, false, bytes, bytes, {}, 0xffffffffu, false, 2},
                {"src_bytes", WarpOperandSpace::Local, false, false, 0, 1, {}, 0xffffffffu, true}};
  const std::string ptx_name = cat("cp.async.", cache_global ? "cg" : "ca", ".shared.global");
  w.cuda = [ptx_name, bytes](const std::vector<std::string>& p) {
    return cat("{\n  const unsigned loom_s = ", shared_address(p[0]), ";\n  asm volatile(\"", ptx_name,
               " [%0], [%1], ", bytes, ", %2;\\n\" :: \"r\"(loom_s), \"l\"(", p[1], "), \"r\"((unsigned)(",
               p[2], ")) : \"memory\");\n}");
  };
  w.simulate = [](const WarpLanes&) {};
  return w;
}

/// cp.async.commit_group and cp.async.wait_group N: per thread, no operands.
inline WarpIntrinsic cp_async_group_op(bool commit, int pending) {
  WarpIntrinsic w;
  w.name = commit ? std::string(ptx::cp_async_commit) : ptx::cp_async_wait(pending);
  w.min_sm = 80;
  w.collective = false;
  w.async = commit ? WarpAsyncRole::Commit : WarpAsyncRole::Wait;
  w.wait_groups = pending;
  const std::string text = commit ? "cp.async.commit_group;" : cat("cp.async.wait_group ", pending, ";");
  w.cuda = [text](const std::vector<std::string>&) {
    return cat("asm volatile(\"", text, "\\n\" ::: \"memory\");");
  };
  w.simulate = [](const WarpLanes&) {};
  return w;
}

/// The f32 bits of `bits` rounded to tf32 as cvt.rna.tf32.f32 rounds: to nearest, ties away from
/// zero (add half of the 13 dropped bits' unit, then drop them; a carry moves into the exponent, up
/// to infinity). Infinities and NaNs only lose their 13 low bits (a NaN whose payload is all in
/// them becomes an infinity), as ptxas 13.0 compiles it for sm_90 (FSETP |x| < inf, a predicated
/// IADD of 0x1000, a LOP3 with 0xffffe000).
inline uint32_t round_to_tf32(uint32_t bits) {
  const bool finite = (bits & 0x7f800000u) != 0x7f800000u;
  return (finite ? bits + 0x1000u : bits) & 0xffffe000u;
}

/// cvt.rna.tf32.f32 over `count` f32 values of each lane (ptx::cvt_rna_tf32).
inline WarpIntrinsic cvt_rna_tf32_op(int count) {
  WarpIntrinsic w;
  w.name = ptx::cvt_rna_tf32(count);
  w.min_sm = 80;
  w.collective = false;
  w.operands = {{"dst", WarpOperandSpace::Local, false, true, 4 * count, 4, {f32}},
                {"src", WarpOperandSpace::Local, true, false, 4 * count, 4, {f32}}};
  w.cuda = [count](const std::vector<std::string>& p) {
    // All sources into registers first, as the simulator reads them, so that dst may overlap src.
    std::string s = cat("{\n  float* loom_d = ", p[0], ";\n  const float* loom_s = ", p[1],
                        ";\n  unsigned loom_t[", count, "];\n");
    for (int i = 0; i < count; ++i)
      s += cat("  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(loom_t[", i, "]) : \"f\"(loom_s[", i, "]));\n");
    for (int i = 0; i < count; ++i) s += cat("  loom_d[", i, "] = __uint_as_float(loom_t[", i, "]);\n");
    return s + "}";
  };
  w.simulate = [count](const WarpLanes& lanes) {
    for (int l = 0; l < 32; ++l) {
      if (!lanes.at(l, 1)) continue;  // an inactive lane
      uint32_t v[4];
      for (int i = 0; i < count; ++i) v[i] = round_to_tf32(lanes.read<uint32_t>(l, 1, i));
      for (int i = 0; i < count; ++i) lanes.write<uint32_t>(l, 0, i, v[i]);
    }
  };
  return w;
}

inline const std::vector<WarpIntrinsic>& builtins() {
  static const std::vector<WarpIntrinsic> all = [] {
    std::vector<WarpIntrinsic> v{mma(mma_f16, f16, 16), mma(mma_bf16, bf16, 16), mma(mma_tf32, f32, 8)};
    for (int n : {1, 2, 4})
      for (bool trans : {false, true}) v.push_back(ldmatrix_op(n, trans));
    for (int bytes : {4, 8, 16}) v.push_back(cp_async_op(bytes, false));
    v.push_back(cp_async_op(16, true));
    v.push_back(cp_async_group_op(true, 0));
    for (int n = 0; n < 8; ++n) v.push_back(cp_async_group_op(false, n));
    for (int n : {1, 2, 4}) v.push_back(cvt_rna_tf32_op(n));
    return v;
  }();
  return all;
}

}  // namespace detail

}  // namespace loom::ptx

namespace loom {

/// The warp intrinsic named `name`: a built-in or one a user registered; null if none.
inline const WarpIntrinsic* find_warp_intrinsic(const std::string& name) {
  for (const WarpIntrinsic& w : ptx::detail::builtins())
    if (w.name == name) return &w;
  return WarpIntrinsicRegistry::global().find(name);
}

/// The statement that runs warp intrinsic `name` on `operands` (in its operand order). A collective
/// intrinsic (WarpIntrinsic::collective: mma, ldmatrix) must be executed by every lane of the warp
/// together, as PTX's .sync.aligned instructions require; a per-thread one (cp.async, cvt.rna.tf32)
/// by whichever lanes reach it.
inline Stmt warp_intrinsic_call(const std::string& name, const std::vector<WarpOperand>& operands) {
  const WarpIntrinsic* w = find_warp_intrinsic(name);
  if (!w) {
    std::string known;
    for (const WarpIntrinsic& b : ptx::detail::builtins()) known += cat(known.empty() ? "" : ", ", b.name);
    throw Error(cat("warp intrinsic '", name, "' is not known; the built-ins are ", known,
                    ", and others are added with WarpIntrinsicRegistry::global().add()"));
  }
  if (operands.size() != w->operands.size())
    throw Error(
        cat("warp intrinsic '", name, "' takes ", w->operands.size(), " operands, not ", operands.size()));
  std::vector<Expr> args{StringImmNode::make(name)};
  for (size_t i = 0; i < operands.size(); ++i) {
    const WarpOperand& o = operands[i];
    const WarpOperandSpec& spec = w->operands[i];
    if (spec.value) {
      if (!o.index.defined() || !o.index.dtype().is_integral() || o.index.dtype().is_vector())
        throw Error(cat("warp intrinsic '", name, "': operand ", spec.name, " is a scalar integer value"));
      args.push_back(o.index);
      continue;
    }
    if (!o.buffer.defined())
      throw Error(cat("warp intrinsic '", name, "': operand ", spec.name, " is an address: give its buffer"));
    bool allowed = spec.dtypes.empty();
    std::string types;
    for (DType t : spec.dtypes) {
      allowed = allowed || t == o.dtype;
      types += cat(types.empty() ? "" : " or ", t.str());
    }
    if (!allowed)
      throw Error(cat("warp intrinsic '", name, "': operand ", spec.name, " is an element of '",
                      o.buffer.name(), "' as ", o.dtype.str(), ", but it must be ", types));
    if (!o.index.defined() || !o.index.dtype().is_integral() || o.index.dtype().is_vector())
      throw Error(cat("warp intrinsic '", name, "': operand ", spec.name, " needs a scalar integer index"));
    args.push_back(
        CallNode::make(handle_type, intrinsic::address_of, {LoadNode::make(o.dtype, o.buffer, o.index)}));
  }
  return EvaluateNode::make(
      CallNode::make(i32, intrinsic::warp_intrinsic, std::move(args), CallKind::Intrinsic));
}

}  // namespace loom

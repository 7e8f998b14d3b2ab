// Tensor intrinsics for tensorize that run on NVIDIA tensor cores: a TE schedule keeps a warp's
// tiles of A, B and C in "local.fragment" buffers and tensorizes the loops that fill them (ldmatrix
// from shared memory), multiply them (mma.sync m16n8k16 for f16 and bf16, m16n8k8 for f32 inputs
// read as tf32) and store C. Each body is the warp intrinsics of te/ptx_intrinsics.hpp, so the
// simulator checks them exactly.
//
// A fragment buffer holds a warp's whole tile, 1/32 of it in each lane's registers (storage
// flattening divides its allocation by 32). Its logical layout is row-major over the tile, as
// for any buffer; the intrinsics map a tile of it to the lane's registers: the 16 x 8 (or 16 x 16)
// tile whose origin is (r, c) in a fragment of row length W is registers
// (r / rows * (W / cols) + c / cols) * (rows * cols / 32) onwards, in the PTX ISA's per-lane order.
// Every intrinsic that reads or writes a fragment uses this one mapping, so the tile an ldmatrix
// writes is the tile the mma reads.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/ptx_intrinsics.hpp"
#include "loom/te/reduction.hpp"
#include "loom/te/tensor_intrin.hpp"

namespace loom::ptx_tensor {

/// How the A operand is indexed in the TE compute, and so how its tiles lie in shared memory:
/// MK reads A[m, k] (k contiguous), KM reads A[k, m] (m contiguous: ldmatrix .trans).
enum class ALayout { MK, KM };

/// How the B operand is indexed in the TE compute, and so how its tiles lie in shared memory:
/// KN reads B[k, n] (n contiguous: ldmatrix .trans), NK reads B[n, k] (k contiguous).
enum class BLayout { KN, NK };

/// The lane of the thread in its warp (0-31), an i32 (CUDA's %laneid).
inline Expr lane() { return CallNode::make(i32, intrinsic::lane_id, {}); }

namespace detail {

/// Stride `d` of a fragment's window: a constant, since storage flattening refused a fragment of
/// any other size (E-LOWER-FRAGMENT-SIZE), and tensorize matched the window's two dimensions.
inline int64_t constant_stride(const BufferRegion& r, size_t d, const std::string& intrin) {
  const int64_t* s = r.strides.size() == 2 ? as_const_int(r.strides[d]) : nullptr;
  internal_check(s != nullptr, "tensor intrinsic '", intrin, "': fragment '", r.data.name(),
                 "' has no constant stride ", d);
  return *s;
}

inline void require_scope(const BufferRegion& r, bool fragment, const std::string& intrin, const char* what) {
  const bool is_fragment = r.scope == scope::fragment;
  if (fragment && !is_fragment)
    throw Error(
        cat("tensor intrinsic '", intrin, "': operand '", r.data.name(), "' (", what, ") is in scope '",
            r.scope.empty() ? scope::global : r.scope.c_str(), "', but the tensor core keeps it in ",
            "registers: make it a fragment (cache_read / cache_write with scope \"", scope::fragment, "\")"));
  if (!fragment && !is_shared_scope(r.scope))
    throw Error(
        cat("tensor intrinsic '", intrin, "': operand '", r.data.name(), "' (", what, ") is in scope '",
            r.scope.empty() ? scope::global : r.scope.c_str(),
            "', but ldmatrix reads shared memory: stage it with cache_read(tensor, \"shared\", ...)"));
}

/// Where in each lane's registers the tile at the region's origin starts (see the file comment).
inline Expr fragment_offset(const BufferRegion& r, int rows, int cols, const std::string& intrin,
                            const char* what) {
  require_scope(r, true, intrin, what);
  const int64_t row = constant_stride(r, 0, intrin);
  internal_check(constant_stride(r, 1, intrin) == 1, "fragment '", r.data.name(), "' with a column stride");
  if (row % cols != 0)
    throw Error(cat("tensor intrinsic '", intrin, "': fragment '", r.data.name(), "' (", what,
                    ") has rows of ", row, " elements, which is not a whole number of ", cols,
                    "-element tiles; compute it for a region whose width is a multiple of ", cols));
  const DType t = r.elem_offset.dtype();
  auto c = [&](int64_t v) { return make_int_const(t, v); };
  Expr r0 = floordiv(r.elem_offset, c(row)), c0 = floormod(r.elem_offset, c(row));
  return (floordiv(r0, c(rows)) * c(row / cols) + floordiv(c0, c(cols))) * c(rows * cols / 32);
}

/// Element (row, col) of a shared-memory window: the address a lane gives ldmatrix (which reads
/// 16-byte rows: `ldmatrix` true) or reads itself.
inline Expr shared_element(const BufferRegion& r, const Expr& row, const Expr& col, const std::string& intrin,
                           const char* what, bool ldmatrix = true) {
  require_scope(r, false, intrin, what);
  internal_check(r.strides.size() == 2 && is_one(r.strides[1]), "shared tile '", r.data.name(),
                 "' without contiguous rows");  // flattening lays every tile out row by row
  const int64_t* stride = as_const_int(r.strides[0]);
  const int64_t bytes = r.dtype.bytes();
  if (ldmatrix && (!stride || *stride * bytes % 16 != 0))
    throw Error(
        cat("tensor intrinsic '", intrin, "': the rows of '", r.data.name(), "' (", what, ") are ",
            stride ? cat(*stride * bytes, " bytes") : to_string(r.strides[0]) + " elements",
            " apart, but ldmatrix reads 16-byte rows at 16-byte aligned addresses; make the row "
            "stride a multiple of 16 bytes (storage_align(axis, factor, offset) with factor and offset "
            "multiples of ",
            16 / bytes, " elements)"));
  const DType t = r.elem_offset.dtype();
  return r.elem_offset + cast(t, row) * r.strides[0] + cast(t, col);
}

/// Intrinsics are declared once per configuration (the registry keeps them for the process).
inline TensorIntrin cached(const std::string& key, const std::function<TensorIntrin()>& make) {
  static std::mutex mutex;
  static std::map<std::string, TensorIntrin> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make()).first;
  return it->second;
}

inline void check_input(DType in, const char* who) {
  if (in != f16 && in != bf16 && in != f32)
    throw Error(cat("ptx_tensor::", who, ": inputs of type ", in.str(),
                    " are not supported; the tensor-core intrinsics take f16 or bf16 (mma m16n8k16) or f32 "
                    "(read as tf32, mma m16n8k8)"));
}

inline const char* mma_name(DType in) {
  return in == f16 ? ptx::mma_f16 : in == bf16 ? ptx::mma_bf16 : ptx::mma_tf32;
}

inline const char* layout_name(ALayout a) { return a == ALayout::MK ? "mk" : "km"; }
inline const char* layout_name(BLayout b) { return b == BLayout::KN ? "kn" : "nk"; }

}  // namespace detail

/// The k extent of one mma for inputs of type `in`: 16 (f16, bf16) or 8 (f32 as tf32).
inline int k_slice(DType in) { return in.bits == 32 ? 8 : 16; }

/// A tile of A from shared memory into a fragment, 16 rows of C by k_slice(in): A[m, k] by
/// ldmatrix.x4, lane l giving row l % 16, column (l / 16) k_slice / 2 (16-bit data, or 32-bit data
/// moved whole for tf32); A[k, m] (a k_slice x 16 tile) by ldmatrix.x4.trans, lane l giving row
/// k = l % 8 + 8 (l / 16), column m = 8 (l / 8 % 2), or for tf32, which ldmatrix cannot transpose,
/// by four 32-bit loads per lane. Tensorize the copy stage cache_read(A_shared, "local.fragment",
/// ...) at those loops.
inline TensorIntrin load_a(DType in, ALayout layout = ALayout::MK) {
  detail::check_input(in, "load_a");
  const std::string name = cat("ptx_tensor.load_a.", detail::layout_name(layout), ".", in.str());
  return detail::cached(name, [&] {
    const bool mk = layout == ALayout::MK;
    const int ks = k_slice(in), rows = mk ? 16 : ks, cols = mk ? ks : 16;
    Tensor a = placeholder({rows, cols}, in, "a");
    Tensor out = compute(
        {rows, cols}, [&](Expr r, Expr c) { return a(r, c); }, "a_fragment");
    return decl_tensor_intrin(
        out,
        [in, name, mk, ks, rows, cols](const std::vector<BufferRegion>& ins,
                                       const std::vector<BufferRegion>& outs) {
          Expr l = lane();
          Expr dst = detail::fragment_offset(outs[0], rows, cols, name, "the A fragment");
          if (!mk &&
              in == f32) {  // a0..a3 = A[g, t], A[g + 8, t], A[g, t + 4], A[g + 8, t + 4], stored [k][m]
            std::vector<Stmt> s;
            for (int e = 0; e < 4; ++e) {
              Expr at = detail::shared_element(ins[0], l % 4 + e / 2 * 4, l / 4 + e % 2 * 8, name,
                                               "the A tile", false);
              s.push_back(StoreNode::make(outs[0].data, LoadNode::make(f32, ins[0].data, at), dst + e));
            }
            return SeqNode::make(s);
          }
          Expr src =
              mk ? detail::shared_element(ins[0], l % 16, l / 16 * (ks / 2), name, "the A tile")
                 : detail::shared_element(ins[0], l % 8 + l / 16 * 8, l / 8 % 2 * 8, name, "the A tile");
          return warp_intrinsic_call(ptx::ldmatrix(4, !mk),
                                     {{outs[0].data, in, dst}, {ins[0].data, in, src}});
        },
        name);
  });
}

/// A tile of B from shared memory into a fragment, `width` (8 or 16) columns of C wide, k_slice(in)
/// deep: B[k, n] (k down the rows) or B[n, k]. 16-bit B[k, n] is loaded by ldmatrix .trans, lane l
/// giving row k = l % 16, column 8 (l / 16); B[n, k] by ldmatrix, lane l giving row
/// n = l % 8 + 8 (l / 16), column (l / 8 % 2) k_slice / 2; .x2 for one 16 x 8 tile of the mma, .x4
/// for two side by side, which halves the ldmatrix instructions. f32 B[k, n] cannot be transposed
/// by ldmatrix: each lane reads its elements with 32-bit shared loads. A B[n, k] fragment loaded 16
/// wide must be one k slice deep, so that its two tiles are adjacent in the registers.
inline TensorIntrin load_b(DType in, BLayout layout, int width = 8) {
  detail::check_input(in, "load_b");
  if (width != 8 && width != 16)
    throw Error(cat("ptx_tensor::load_b: width = ", width,
                    " must be 8 (one 16 x 8 tile of the mma, ldmatrix.x2) or 16 (two, ldmatrix.x4)"));
  const std::string name = cat("ptx_tensor.load_b.", detail::layout_name(layout), ".w", width, ".", in.str());
  return detail::cached(name, [&] {
    const bool kn = layout == BLayout::KN;
    const int ks = k_slice(in), rows = kn ? ks : width, cols = kn ? width : ks;
    Tensor b = placeholder({rows, cols}, in, "b");
    Tensor out = compute(
        {rows, cols}, [&](Expr r, Expr c) { return b(r, c); }, "b_fragment");
    return decl_tensor_intrin(
        out,
        [in, name, kn, width, ks](const std::vector<BufferRegion>& ins,
                                  const std::vector<BufferRegion>& outs) {
          Expr l = lane();
          // The first mma tile's registers; a second one follows it directly.
          Expr dst = kn ? detail::fragment_offset(outs[0], ks, 8, name, "the B fragment")
                        : detail::fragment_offset(outs[0], 8, ks, name, "the B fragment");
          if (!kn && width == 16 && detail::constant_stride(outs[0], 0, name) != ks)
            throw Error(cat("tensor intrinsic '", name, "': fragment '", outs[0].data.name(),
                            "' (the B fragment, B[n, k]) has rows of more than ", ks,
                            " elements of k, so the two 8 x ", ks,
                            " tiles one ldmatrix.x4 loads are not adjacent in its registers; compute the "
                            "fragment per k slice, or load it 8 wide"));
          if (kn && in == f32) {  // b0 = B[t, g], b1 = B[t + 4, g] of each 8 x 8 tile (g = l / 4, t = l % 4)
            std::vector<Stmt> s;
            for (int tile = 0; tile < width / 8; ++tile)
              for (int e = 0; e < 2; ++e) {
                Expr at = detail::shared_element(ins[0], l % 4 + e * 4, l / 4 + tile * 8, name, "the B tile",
                                                 false);
                s.push_back(StoreNode::make(outs[0].data, LoadNode::make(f32, ins[0].data, at),
                                            dst + (tile * 2 + e)));
              }
            return SeqNode::make(s);
          }
          Expr src = kn ? detail::shared_element(ins[0], l % 16, l / 16 * 8, name, "the B tile")
                        : detail::shared_element(ins[0], l % 8 + l / 16 * 8, l / 8 % 2 * (ks / 2), name,
                                                 "the B tile");
          return warp_intrinsic_call(ptx::ldmatrix(width / 4, kn),
                                     {{outs[0].data, in, dst}, {ins[0].data, in, src}});
        },
        name);
  });
}

/// C (16 x 8, f32) += A (16 x k_slice as A[m, k], or k_slice x 16 as A[k, m]) B (k_slice x 8 as
/// B[k, n], or 8 x k_slice as B[n, k]) on the tensor cores: mma.sync m16n8k16 (f16, bf16) or m16n8k8 (f32
/// read as tf32: the tensor core ignores the 13 low mantissa bits) with f32 accumulation; all three in
/// fragments. Its compute is sum(cast(f32, A[i, k]) * cast(f32, B[k, j])) over k (A[k, i] for KM, B[j, k] for
/// NK; without the casts for f32), which is how the TE compute must be written. With the reduction split
/// around it (k outer), reduce_init zeroes the C fragment and reduce_update accumulates.
inline TensorIntrin mma(DType in, BLayout layout, ALayout a_layout = ALayout::MK) {
  detail::check_input(in, "mma");
  const std::string name =
      cat("ptx_tensor.mma.", detail::layout_name(a_layout), ".", detail::layout_name(layout), ".", in.str());
  return detail::cached(name, [&] {
    const bool kn = layout == BLayout::KN, mk = a_layout == ALayout::MK;
    const int ks = k_slice(in), b_rows = kn ? ks : 8, b_cols = kn ? 8 : ks, a_rows = mk ? 16 : ks,
              a_cols = mk ? ks : 16;
    Tensor a = placeholder({a_rows, a_cols}, in, "a");
    Tensor b = placeholder({b_rows, b_cols}, in, "b");
    IterVar k = reduce_axis(0, ks, "k");
    auto widen = [&](Expr x) { return in == f32 ? x : cast(f32, x); };
    Tensor c = compute(
        {16, 8},
        [&](Expr i, Expr j) {
          return sum(widen(mk ? a(i, k) : a(k, i)) * widen(kn ? b(k, j) : b(j, k)), {k});
        },
        "c");
    auto zero = [name](const BufferRegion& cf) {
      Expr off = detail::fragment_offset(cf, 16, 8, name, "the C fragment");
      std::vector<Stmt> s;
      for (int e = 0; e < 4; ++e) s.push_back(StoreNode::make(cf.data, make_const(f32, 0.0), off + e));
      return SeqNode::make(s);
    };
    auto update = [in, name, a_rows, a_cols, b_rows, b_cols](const std::vector<BufferRegion>& ins,
                                                             const std::vector<BufferRegion>& outs) {
      Expr coff = detail::fragment_offset(outs[0], 16, 8, name, "the C fragment");
      Expr aoff = detail::fragment_offset(ins[0], a_rows, a_cols, name, "the A fragment");
      Expr boff = detail::fragment_offset(ins[1], b_rows, b_cols, name, "the B fragment");
      return warp_intrinsic_call(detail::mma_name(in), {{outs[0].data, f32, coff},
                                                        {ins[0].data, in, aoff},
                                                        {ins[1].data, in, boff},
                                                        {outs[0].data, f32, coff}});
    };
    return decl_tensor_intrin(
        c,
        [zero, update](const std::vector<BufferRegion>& ins, const std::vector<BufferRegion>& outs) {
          return SeqNode::make({zero(outs[0]), update(ins, outs)});
        },
        name,
        [zero](const std::vector<BufferRegion>&, const std::vector<BufferRegion>& outs) {
          return zero(outs[0]);
        },
        update);
  });
}

/// A 16 x 8 f32 tile of C from its fragment to memory of any scope (global, shared), converted to
/// `out`: lane l writes rows l / 4 and l / 4 + 8, columns 2 (l % 4) and 2 (l % 4) + 1, the C
/// fragment's layout. Tensorize the stage that reads the fragment (the stage cache_write(C,
/// "local.fragment") was called on) at its 16 x 8 loops.
inline TensorIntrin store_c(DType out = f32) {
  const std::string name = cat("ptx_tensor.store_c.", out.str());
  return detail::cached(name, [&] {
    Tensor cf = placeholder({16, 8}, f32, "c_fragment");
    Tensor c = compute(
        {16, 8}, [&](Expr i, Expr j) { return out == f32 ? cf(i, j) : cast(out, cf(i, j)); }, "c");
    return decl_tensor_intrin(
        c,
        [name](const std::vector<BufferRegion>& ins, const std::vector<BufferRegion>& outs) {
          const BufferRegion &frag = ins[0], &dst = outs[0];
          Expr off = detail::fragment_offset(frag, 16, 8, name, "the C fragment");
          Expr l = lane(), g = l / 4, t = l % 4;
          std::vector<Stmt> s;
          for (int e = 0; e < 4; ++e)
            s.push_back(dst.store({g + e / 2 * 8, t * 2 + e % 2}, LoadNode::make(f32, frag.data, off + e)));
          return SeqNode::make(s);
        },
        name);
  });
}

}  // namespace loom::ptx_tensor

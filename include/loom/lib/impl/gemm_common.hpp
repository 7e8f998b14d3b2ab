// The helpers lib::gemm's data-parallel (lib/impl/gemm.hpp) and Stream-K (lib/impl/gemm_streamk.hpp)
// schedules share.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gemm.hpp");

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "loom/ir/amx_tile_product.hpp"
#include "loom/lib/gemm.hpp"
#include "loom/te/compute.hpp"
#include "loom/te/x86_dot_intrinsics.hpp"

namespace loom::lib {

namespace detail {

/// The storage shape of an r x c matrix (plus a leading batch dimension when batched).
inline std::vector<Expr> matrix_shape(int64_t batch, int64_t rows, int64_t cols) {
  // 32-bit extents (check_problem bounds them): the loop variables and the packed panels' indices
  // then share one type, which keeps the simplifier's job (and the guards it removes) simple.
  std::vector<Expr> shape;
  if (batch > 0) shape.push_back(Expr(static_cast<int>(batch)));
  shape.push_back(Expr(static_cast<int>(rows)));
  shape.push_back(Expr(static_cast<int>(cols)));
  return shape;
}

/// The element types lib::gemm computes with: float32 or float64 throughout, bfloat16 x bfloat16 ->
/// float32, and 8-bit integers (int8 or uint8 each) -> int32.
inline void check_types(const GemmProblem& p) {
  const DType a = p.a_type(), b = p.b_type(), c = p.c_type();
  const bool byte_a = a == i8 || a == u8, byte_b = b == i8 || b == u8;
  const bool ok = ((a == f32 || a == f64) && b == a && c == a) || (a == bf16 && b == bf16 && c == f32) ||
                  (byte_a && byte_b && c == i32);
  if (!ok)
    throw Error(cat("lib::gemm: element types A ", a.str(), ", B ", b.str(), ", C ", c.str(),
                    " are not supported; use float32 or float64 for all three, bfloat16 A and B with a "
                    "float32 C, or int8/uint8 A and B with an int32 C"));
}

/// What dot = amx needs: AMX's types, and a register tile of whole 16 x 16 tiles that the tile
/// registers hold.
inline void check_amx_config(const GemmProblem& p, const GemmConfig& cfg) {
  const DType a = p.a_type(), b = p.b_type();
  const bool bytes = (a == i8 || a == u8) && (b == i8 || b == u8);
  if (!(a == bf16 && b == bf16) && !bytes)
    throw Error(cat("lib::gemm: dot = amx multiplies bfloat16 or 8-bit integers, but A is ", a.str(),
                    " and B ", b.str(), "; use DotInstruction::MultiplyAdd"));
  if (cfg.mr % 16 != 0 || cfg.nr % 16 != 0 ||
      AmxTileProduct::registers_used(static_cast<int>(cfg.mr / 16), static_cast<int>(cfg.nr / 16)) >
          AmxTileProduct::kTileRegisters)
    throw Error(
        cat("lib::gemm: dot = amx computes the register tile as 16 x 16 AMX tiles that its 8 tile "
            "registers hold: mr and nr multiples of 16 (mr = nr = 32 is 2 x 2 tiles; 16 x 96 and 96 x "
            "16 also fit), got mr = ",
            cfg.mr, " and nr = ", cfg.nr));
}

/// The 512-bit dot instruction this CPU has for A and B's element types (MultiplyAdd: none):
/// vdpbf16ps for bfloat16, vpdpbusd for bytes of any signedness (same-signed ones through B's
/// flipped copy, gemm.hpp).
inline DotInstruction vector_dot_for(DType a, DType b, const CpuCacheInfo& cpu) {
  if (a == bf16 && b == bf16 && cpu.bf16_dot) return DotInstruction::Vdpbf16ps;
  if ((a == i8 || a == u8) && (b == i8 || b == u8) && cpu.int8_dot) return DotInstruction::Vpdpbusd;
  return DotInstruction::MultiplyAdd;
}

/// A dot instruction in `cfg` needs the input types it multiplies and a register tile of whole
/// 16-lane vectors (AMX: of whole tiles, check_amx_config).
inline void check_dot_config(const GemmProblem& p, const GemmConfig& cfg) {
  if (cfg.dot == DotInstruction::MultiplyAdd) return;
  const DType a = p.a_type(), b = p.b_type();
  const char* name = dot_instruction_name(cfg.dot);
  if (cfg.dot == DotInstruction::Amx) check_amx_config(p, cfg);
  if (cfg.dot == DotInstruction::Vdpbf16ps && !(a == bf16 && b == bf16))
    throw Error(cat("lib::gemm: dot = vdpbf16ps multiplies bfloat16, but A is ", a.str(), " and B ", b.str(),
                    "; use DotInstruction::MultiplyAdd"));
  if (cfg.dot == DotInstruction::Vpdpbusd && !((a == i8 || a == u8) && (b == i8 || b == u8)))
    throw Error(cat("lib::gemm: dot = vpdpbusd multiplies 8-bit integers, but A is ", a.str(), " and B ",
                    b.str(), "; use DotInstruction::MultiplyAdd"));
  if (cfg.dot != DotInstruction::Amx && (cfg.lanes != x86::kDotLanes || cfg.nr % x86::kDotLanes != 0))
    throw Error(cat("lib::gemm: dot = ", name, " updates ", x86::kDotLanes,
                    "-lane vectors: it needs lanes = ", x86::kDotLanes, " and nr a multiple of ",
                    x86::kDotLanes, ", got lanes = ", cfg.lanes, " and nr = ", cfg.nr));
  if (cfg.decomposition == Decomposition::StreamK)
    throw Error(cat("lib::gemm: dot = ", name,
                    " is built for the data-parallel decomposition only; use Decomposition::DataParallel"));
}

inline void check_problem(const GemmProblem& p) {
  auto positive = [](int64_t v, const char* name) {
    if (v < 1)
      throw Error(
          cat("lib::gemm: ", name, " = ", v, " must be at least 1 (C is m x n, k the inner dimension)"));
  };
  positive(p.m, "m");
  positive(p.n, "n");
  positive(p.k, "k");
  if (p.batch < 0)
    throw Error(cat("lib::gemm: batch = ", p.batch, " must be 0 (not batched) or a batch count"));
  check_types(p);
  // Flat indices are 32-bit; padding adds at most a tile (< 1024) to each dimension.
  const int64_t limit = (int64_t{1} << 31) - 1, nb = std::max<int64_t>(p.batch, 1);
  auto padded = [](int64_t v) { return v + 1024; };
  if (p.m > limit / 2 || p.n > limit / 2 || p.k > limit / 2 || padded(p.m) * padded(p.k) > limit / nb ||
      padded(p.k) * padded(p.n) > limit / nb || padded(p.m) * padded(p.n) > limit / nb)
    throw Error(cat("lib::gemm: ", nb, " x ", p.m, " x ", p.n, " x ", p.k,
                    " has an operand of 2^31 elements or more, beyond the 32-bit indices of the schedule; "
                    "split the product into smaller ones"));
}

/// The epilogue's inputs must be placeholders (arguments of the kernel); the Stream-K schedule has
/// no epilogue stage.
inline void check_epilogue(const GemmProblem& p, bool stream_k) {
  if (p.epilogue.empty()) {
    if (!p.epilogue.inputs.empty())
      throw Error(cat("lib::gemm: the epilogue '", p.epilogue.name, "' has ", p.epilogue.inputs.size(),
                      " input tensors but no apply function; set GemmEpilogue::apply"));
    return;
  }
  for (const Tensor& t : p.epilogue.inputs)
    if (!t.defined() || t.op()->kind != OpKind::Placeholder)
      throw Error(cat("lib::gemm: the epilogue '", p.epilogue.name, "' input '",
                      t.defined() ? t.name() : "(undefined)",
                      "' is not a placeholder; its inputs are the kernel's arguments: compute the tensor "
                      "beforehand and pass it as a placeholder"));
  if (stream_k)
    throw Error(cat("lib::gemm: the epilogue '", p.epilogue.name,
                    "' needs the data-parallel decomposition; the Stream-K schedule has no epilogue stage "
                    "yet (set config.decomposition = Decomposition::DataParallel)"));
}

/// The epilogue of `p` applied to the product `value` at C's `index`; it must give C's type.
inline Expr apply_epilogue(const GemmProblem& p, const Expr& value, const std::vector<Expr>& index) {
  const Expr result = p.epilogue.apply(value, index);
  if (result.dtype() != p.c_type())
    throw Error(cat("lib::gemm: the epilogue '", p.epilogue.name, "' gives ", result.dtype().str(),
                    " but C is ", p.c_type().str(), "; cast its result with cast(", p.c_type().str(),
                    ", ...)"));
  return result;
}

/// Prepends the batch index (when batched) to a matrix index.
inline std::vector<Expr> at(const std::vector<Expr>& batch, Expr r, Expr c) {
  std::vector<Expr> idx = batch;
  idx.push_back(std::move(r));
  idx.push_back(std::move(c));
  return idx;
}

inline Expr all_of(const std::vector<Expr>& conditions) {
  Expr result;
  for (const Expr& c : conditions) result = result.defined() ? (result && c) : c;
  return result;
}

/// A packed panel's element `value` at row or column `rc` and depth `k` of a matrix with `extent`
/// rows or columns and `K` deep, padded to `padded_extent` and `padded_k`: zero in the padding, each
/// dimension tested only where it is padded (so the micro-kernel's panels need no guard).
inline Expr zero_padded(Expr value, const Expr& rc, int64_t extent, int64_t padded_extent, const Expr& k,
                        int64_t K, int64_t padded_k) {
  std::vector<Expr> inside;
  if (padded_extent != extent) inside.push_back(rc < static_cast<int>(extent));
  if (padded_k != K) inside.push_back(k < static_cast<int>(K));
  if (inside.empty()) return value;
  const DType t = value.dtype();
  return if_then_else(all_of(inside), std::move(value), make_const(t, 0));
}

/// The copy of a panel packed group-innermost (packed[...][column][place in group] = B[k-group + place,
/// column]), `elements` = columns x places per k-group. A row-major B gives each place's columns
/// from one of `group` rows: vectors of 64 bytes across (column, place), which the code generator
/// reads as `group` contiguous runs, one per row, and interleaves (ir/lane_runs.hpp), where a scalar
/// copy moved one element at a time. Interleaved runs, 64 x 4096 x 4096 bfloat16 on Zen 5: one core
/// 5.77 -> 5.50 ms, two 3.78 -> 3.25 ms; the copy matters more beside AMX's faster product. A
/// transposed B holds a column's group side by side: copied a group at a time.
inline void interleave_groups(Stage& packed, const IterVar& column, const IterVar& place, int64_t elements,
                              DType element, bool transposed) {
  const int lanes = static_cast<int>(64 / element.bytes());
  if (transposed || elements % lanes != 0) {
    packed.unroll(place);
    return;
  }
  IterVar both = packed.fuse(column, place);
  auto [outer, inner] = packed.split(both, lanes);
  packed.unroll(outer);
  packed.vectorize(inner);
}

/// How a GEMM schedule writes C (both the vector and the AMX paths).
struct CWrite {
  bool separate;    ///< C is a stage of its own, not the accumulation itself
  bool tile_store;  ///< ... whose loops carry the nest, each register tile (or block of AMX tiles)
                    ///< computed inside them and stored once (K in one block)
  bool stream;      ///< C's stores stream (pragma "nontemporal_stores")
};

/// C is a stage of its own where it must be (`needs_own_stage`: an epilogue, padded rows or
/// columns, a correction) or to stream its stores with K in one block: streaming needs one store of
/// each element's final value, which accumulating straight into C, updated at every block of K, is
/// not. With K in one block that stage stores each tile (no m x n temporary, no second pass); with K
/// in several blocks the tiles stay in memory between them and C is a pass of its own.
inline CWrite c_write(bool needs_own_stage, bool one_k_block, bool stream) {
  const bool separate = needs_own_stage || (stream && one_k_block);
  return CWrite{separate, separate && one_k_block, stream && separate};
}

/// Marks the outermost of `loops` (outermost first, each with its trip count) that runs more than
/// once with pragma "nontemporal_stores": its stores stream, and the fence that orders them follows
/// it (in each thread, where the threads share it). A loop of one iteration is dropped, and its
/// pragma with it: false when every loop runs once (nothing streams; C is one tile).
inline bool stream_stores_under(Stage& stage, const std::vector<std::pair<IterVar, int64_t>>& loops) {
  for (const auto& [loop, count] : loops)
    if (count > 1) {
      stage.pragma(loop, "nontemporal_stores");
      return true;
    }
  return false;
}

}  // namespace detail

}  // namespace loom::lib

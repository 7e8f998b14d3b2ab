// Which lane of a warp holds which matrix element in the register fragments of PTX's warp-wide
// matrix instructions (PTX ISA, "Matrix fragments for mma.m16n8k16" and "mma.m16n8k8", and
// ldmatrix). The simulator's mma and ldmatrix read and write registers through these tables, and
// the tests check them against scalar references; one table per operand, written once.
#pragma once

namespace loom::ptx {

/// A matrix element: row and column.
struct FragmentCoord {
  int row = 0, col = 0;
};

/// Lanes are grouped by four: the PTX ISA's groupID (lane / 4) and threadID_in_group (lane % 4).
inline int group_of(int lane) { return lane >> 2; }
inline int thread_in_group(int lane) { return lane & 3; }

/// mma.m16n8k16 with 16-bit inputs (.f16, .bf16), A row-major 16x16: lane `lane` holds eight
/// elements a0..a7 in four 32-bit registers (two per register, a0 in the low half).
inline FragmentCoord mma_m16n8k16_a(int lane, int i) {
  return {group_of(lane) + ((i & 2) ? 8 : 0), thread_in_group(lane) * 2 + (i & 1) + ((i & 4) ? 8 : 0)};
}
/// ... B 16x8 (k x n, "col"): four elements b0..b3 in two registers.
inline FragmentCoord mma_m16n8k16_b(int lane, int i) {
  return {thread_in_group(lane) * 2 + (i & 1) + ((i & 2) ? 8 : 0), group_of(lane)};
}
/// C and D, 16x8, for every mma.m16n8kK: four f32 elements c0..c3.
inline FragmentCoord mma_m16n8_c(int lane, int i) {
  return {group_of(lane) + ((i & 2) ? 8 : 0), thread_in_group(lane) * 2 + (i & 1)};
}
/// mma.m16n8k8 with .tf32 inputs, A 16x8: four 32-bit elements a0..a3.
inline FragmentCoord mma_m16n8k8_tf32_a(int lane, int i) {
  return {group_of(lane) + ((i & 1) ? 8 : 0), thread_in_group(lane) + ((i & 2) ? 4 : 0)};
}
/// ... B 8x8 (k x n): two elements b0, b1.
inline FragmentCoord mma_m16n8k8_tf32_b(int lane, int i) {
  return {thread_in_group(lane) + ((i & 1) ? 4 : 0), group_of(lane)};
}

/// ldmatrix .m8n8 .b16: the element of an 8x8 matrix that lane `lane` receives as half `half`
/// (0 low, 1 high) of its register for that matrix; the rows' addresses come from lanes
/// 8 * matrix + row. With .trans, the lane receives the transposed matrix's element.
inline FragmentCoord ldmatrix_element(int lane, int half, bool trans) {
  const FragmentCoord plain{lane >> 2, (lane & 3) * 2 + half};
  return trans ? FragmentCoord{plain.col, plain.row} : plain;
}

}  // namespace loom::ptx

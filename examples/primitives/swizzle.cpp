// swizzle(bits, base, shift): lays out a shared-memory buffer with CuTe's Swizzle<B, M, S> on its
// flat element offsets: bits [M, M+B) of every offset are XORed with bits [M+S, M+S+B). Like
// storage_align padding, it spreads accesses that would all hit one bank over the 32 banks, but
// without the extra memory. It applies only to a buffer the schedule allocates in shared memory
// (cache_read(..., "shared") or set_scope("shared")), whose rows hold a whole number of blocks
// of 2^(M+B) elements, and not together with storage_align on the same buffer.
//
// Here: a transpose through a 32 x 32 float tile on the GPU simulator (Target::cuda_sim()). The
// threads store the tile along its rows and read it down its columns, so the 32 lanes of a warp
// read 32 words 32 floats apart, all in one bank: 32-way conflicts. Swizzle<5, 0, 5> puts
// element (r, c) at r*32 + (c ^ r), so a row and a column both cover the 32 banks.
#include <iostream>
#include <utility>

#include <loom/loom.hpp>

#include "../example_util.hpp"

using namespace loom;

struct Built {
  Kernel before, after;
};

// B = A^T (n x n): one 32 x 32 block of threads per 32 x 32 tile; the block copies its tile of A
// into A.shared (thread (ty, tx) copies element (ty, tx)), then thread (ty, tx) writes
// B(by*32 + ty, bx*32 + tx) = A.shared(tx, ty).
static Built build_transpose(int n) {
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(j, i); }, "B");

  Schedule s = create_schedule(B);
  Tensor AS = s.cache_read(A, "shared", {B});
  auto [by, bx, ty, tx] = s[B].tile(B.axis(0), B.axis(1), 32, 32);
  s[B].bind(by, thread_axis("blockIdx.y"));
  s[B].bind(bx, thread_axis("blockIdx.x"));
  s[B].bind(ty, thread_axis("threadIdx.y"));
  s[B].bind(tx, thread_axis("threadIdx.x"));
  s[AS].compute_at(s[B], bx);
  s[AS].bind(AS.axis(0), thread_axis("threadIdx.y"));
  s[AS].bind(AS.axis(1), thread_axis("threadIdx.x"));
  Built out;
  out.before = build(s, {A, B}, Target::cuda_sim(), "transpose");
  s[AS].swizzle(5, 0, 5);
  out.after = build(s, {A, B}, Target::cuda_sim(), "transpose");
  return out;
}

// Runs both kernels on random data, checks them against a plain loop and returns the
// simulator's reports (launches, bank conflicts per shared buffer, races) of the two runs.
static std::pair<SimReport, SimReport> check(const Built& k, int n) {
  Buffer<float> a({n, n}), b_before({n, n}), b_after({n, n}), expected({n, n});
  example::fill_random(a, 1);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) expected(i, j) = a(j, i);
  k.before(a, b_before);
  k.after(a, b_after);
  example::expect_all_close(b_before, expected, "B before swizzle", 0.0);
  example::expect_all_close(b_after, expected, "B after swizzle", 0.0);
  std::pair<SimReport, SimReport> reports{k.before.sim_report(), k.after.sim_report()};
  const SimSharedBuffer &before = reports.first.buffer("A.shared"),
                        &after = reports.second.buffer("A.shared");
  if (before.load.conflicts() == 0 || after.load.conflicts() != 0 || after.store.conflicts() != 0) {
    std::cout << "unexpected bank conflicts in A.shared: " << before.load.conflicts()
              << " load conflicts without the swizzle, " << after.load.conflicts() << " load and "
              << after.store.conflicts() << " store conflicts with it\n";
    std::exit(1);
  }
  return reports;
}

int main() {
  Built f = build_transpose(64);
  std::cout << f.before.lowered() << "\n";
  example::print_cutting_line();
  std::cout << f.after.lowered() << std::endl;  // flushed: the checks below may throw
  auto [before, after] = check(f, 64);
  std::cout << "\nThe simulator without the swizzle:\n"
            << before.to_string() << "\nThe simulator with Swizzle<5,0,5>:\n"
            << after.to_string() << "\n";

  // 70 is not a multiple of 32: the last blocks copy and write partial tiles.
  auto [ragged_before, ragged_after] = check(build_transpose(70), 70);
  std::cout << "With n = 70, not a multiple of the tile: load conflicts in A.shared "
            << ragged_before.buffer("A.shared").load.conflicts() << " without the swizzle, "
            << ragged_after.buffer("A.shared").load.conflicts() << " with it\n";
  std::cout << "ok\n";
}

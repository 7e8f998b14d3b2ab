// Known schedule bugs, each the smallest reproducer, skipped so that CI stays green.
// Remove doctest::skip() from a case once its bug is fixed (and move it to the matching test file).
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "../support/interpret_checked.hpp"
#include "schedule_test_util.hpp"

using namespace loom;
using namespace loom::test;

// Expected: B computed at C's blockIdx loop (so in shared memory) with none of its own loops bound
// to threads is either rejected when lowering ("every thread of the block would compute all of
// B: bind one of its loops to threadIdx.x"), or lowered so that it runs correctly (TVM lowers it
// to every thread computing the same values, which is benign on GPUs).
// Actual: lower() accepts it and puts a barrier inside B's serial loop; running it throws
// "shared-memory data races: ... write/write race on B[0] ... thread (0, 0, 0) wrote it, then
// thread (1, 0, 0) wrote it", and advises "Put a barrier between the write and the other threads'
// accesses (or let the lowering insert one)" -- advice that cannot fix it, since the lowering
// already inserted barriers and every thread writes every element.
TEST_CASE("known bug: an unbound shared producer lowers, then fails at run time with misleading advice" *
          doctest::skip()) {
  const int n = 12;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return B(i, j) + B(i, n - 1 - j); }, "C");
  Schedule s = create_schedule(C);
  s[C].bind(C.axis(0), thread_axis("blockIdx.x"));
  s[C].bind(C.axis(1), thread_axis("threadIdx.x"));
  s[B].compute_at(s[C], C.axis(0));
  LoweredFunc f;
  try {
    f = lower(s, {A, C}, "unbound_shared");
  } catch (const loom::Error& e) {
    CHECK(std::string(e.what()).find("threadIdx") != std::string::npos);  // rejected with the fix
    return;
  }
  check_against_default(s, {A}, {C});
}

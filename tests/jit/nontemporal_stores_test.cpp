// pragma(axis, "nontemporal_stores") in the LLVM code generator: the loop's vector stores to
// parameters become streaming stores where the address is aligned to the vector and every lane is
// active (an ordinary store otherwise: x86's streaming stores fault at a misaligned address and
// write every lane), stores to the function's own temporaries and to buffers the loop also reads
// stay ordinary, and a store fence follows the loop (in each thread for a parallel one). Results are compared
// with the plain loop on aligned and misaligned outputs and on sizes the vector does not divide.
#include <loom/backend/build.hpp>
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../support/text_count.hpp"

using namespace loom;

namespace {

/// C = A * 2 + 1 over n elements in vectors of 16, the vector loop's outer loop marked (or not),
/// and parallel where asked.
Kernel scaled_copy(int64_t n, bool marked, bool parallel) {
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [xo, xi] = s[C].split(C.axis(0), 16);
  s[C].vectorize(xi);
  if (parallel) s[C].parallel(xo);
  if (marked) s[C].pragma(xo, "nontemporal_stores");
  return build(s, {A, C}, Target::cpu(), marked ? "streamed" : "cached");
}

/// Runs `k` (built for n) on n elements with C starting `offset` floats past a 64-byte boundary; every
/// element (and none past the end) must be A * 2 + 1.
void check_scaled_copy(Kernel& k, int64_t n, int64_t offset) {
  CAPTURE(n);
  CAPTURE(offset);
  Buffer<float> a({n});
  for (int64_t i = 0; i < n; ++i) a.at_flat(i) = static_cast<float>(i % 97) - 40.0f;
  Buffer<float> storage({n + 32});
  storage.fill(-7.0f);
  k(a, BufferView(storage.data() + offset, f32, {n}));
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += storage.at_flat(offset + i) != a.at_flat(i) * 2.0f + 1.0f;
  for (int64_t i = 0; i < offset; ++i) wrong += storage.at_flat(i) != -7.0f;
  for (int64_t i = offset + n; i < n + 32; ++i) wrong += storage.at_flat(i) != -7.0f;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("nontemporal_stores: whole vectors stream where aligned, and the loop is fenced") {
  for (int64_t n : {int64_t{4096}, int64_t{1000}, int64_t{17}}) {
    CAPTURE(n);
    Kernel streamed = scaled_copy(n, true, false), cached = scaled_copy(n, false, false);
    // The streaming store (and its ordinary twin for a misaligned address), then the fence. Where
    // 16 does not divide n, every vector is a masked store (the split's guard): it streams where all
    // its lanes are active, and the last, partial one is a masked ordinary store.
    CHECK(test::count_of(streamed.llvm_ir(), "!nontemporal") >= 1);
    CHECK(test::count_of(streamed.assembly(), "movnt") >= 1);
    CHECK(test::count_of(streamed.assembly(), "sfence") == 1);
    CHECK(test::count_of(cached.assembly(), "movnt") == 0);
    CHECK(test::count_of(cached.assembly(), "sfence") == 0);
    // Aligned and misaligned outputs.
    for (int64_t offset : {int64_t{0}, int64_t{1}, int64_t{4}, int64_t{16}})
      check_scaled_copy(streamed, n, offset);
  }
}

TEST_CASE("nontemporal_stores: a parallel loop fences in each thread's share") {
  for (int64_t n : {int64_t{100000}, int64_t{48}}) {
    Kernel streamed = scaled_copy(n, true, true);
    CHECK(test::count_of(streamed.assembly(), "movnt") >= 1);
    CHECK(test::count_of(streamed.assembly(), "sfence") >= 1);
    for (int64_t offset : {int64_t{0}, int64_t{3}}) check_scaled_copy(streamed, n, offset);
  }
}

TEST_CASE("nontemporal_stores: the function's own temporaries are stored as usual") {
  // T, a row of m elements made at each row of C (128 KB: a heap temporary, which LLVM cannot
  // remove), is written in whole vectors inside the marked loop; C's stores are single elements.
  // Nothing streams: T is the function's own memory, read right after.
  const int64_t n = 3, m = 32768;
  Tensor A = placeholder({n, m}, f32, "A");
  Tensor T = compute(
      {n, m}, [&](Expr i, Expr j) { return A(i, j) * 3.0f; }, "T");
  IterVar j = reduce_axis(0, m, "j");
  Tensor C = compute(
      {n}, [&](Expr i) { return sum(T(i, j), {j}); }, "C");
  Schedule s = create_schedule(C);
  s[C].pragma(C.axis(0), "nontemporal_stores");
  s[T].compute_at(s[C], C.axis(0));
  auto [to, ti] = s[T].split(T.axis(1), 16);
  s[T].vectorize(ti);
  (void)to;
  Kernel k = build(s, {A, C}, Target::cpu(), "with_temporary");
  CHECK(test::count_of(k.assembly(), "movnt") == 0);
  CHECK(test::count_of(k.assembly(), "sfence") == 1);  // the marked loop is still fenced
  Buffer<float> a({n, m}), c({n});
  for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = static_cast<float>(i % 7);
  k(a, c);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    double expected = 0;
    for (int64_t jj = 0; jj < m; ++jj) expected += a.at_flat(i * m + jj) * 3.0;
    wrong += std::abs(c.at_flat(i) - expected) > 1e-3 * expected;
  }
  CHECK(wrong == 0);
}

TEST_CASE("nontemporal_stores: a buffer the loop also reads is stored as usual") {
  // C += A B with k outside the row's vectors: each row of C is read and written at every k.
  // Streamed, each store would leave the caches and be read straight back (66 times slower in review).
  const int64_t n = 128;
  Tensor A = placeholder({n, n}, f32, "A"), B = placeholder({n, n}, f32, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].reorder({C.axis(0), k, jo, ji});
  s[C].vectorize(ji);
  s[C].pragma(C.axis(0), "nontemporal_stores");
  Kernel kernel = build(s, {A, B, C}, Target::cpu(), "in_place");
  CHECK(test::count_of(kernel.assembly(), "movnt") == 0);
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  for (int64_t i = 0; i < n * n; ++i) {
    a.at_flat(i) = static_cast<float>(i % 5) - 2.0f;
    b.at_flat(i) = static_cast<float>(i % 3) - 1.0f;
  }
  kernel(a, b, c);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float expected = 0;
      for (int64_t kk = 0; kk < n; ++kk) expected += a.at_flat(i * n + kk) * b.at_flat(kk * n + j);
      wrong += c.at_flat(i * n + j) != expected;
    }
  CHECK(wrong == 0);
}

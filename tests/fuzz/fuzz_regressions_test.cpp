// Bugs the differential fuzzer found and that are fixed, each as the smallest schedule that showed
// it, run end to end (GPU simulator) against the plain reduction.
#include <loom/loom.hpp>

#include <doctest/doctest.h>

#include <cmath>

namespace {

/// Row sums of a 16 x 18 matrix with the reduction spread over threadIdx.x loops of extent 1:
/// through rfactor, or with the reduce loop bound directly.
void check_row_sum_over_one_lane(bool use_rfactor) {
  using namespace loom;
  const int n = 16, k = 18;
  Tensor A = placeholder({n, k}, f32, "A");
  IterVar r = reduce_axis(0, k, "r");
  Tensor C = compute(
      {n}, [&](Expr i) { return sum(A(i, r), {r}); }, "C");
  Schedule s = create_schedule(C);
  auto [ro, ri] = s[C].split(r, Factor{1});
  Tensor CR;
  if (use_rfactor) CR = s.rfactor(C, ri);
  auto [bo, rest] = s[C].split(C.axis(0), Factor{5});
  s[C].bind(bo, thread_axis("blockIdx.x"));
  auto [ty, inner] = s[C].split(rest, NParts{3});
  s[C].bind(ty, thread_axis("threadIdx.y"));
  IterVar lane = use_rfactor ? s[C]->leaf_iter_vars.back() : ri;
  s[C].bind(lane, thread_axis("threadIdx.x"));
  if (use_rfactor) s[CR].compute_at(s[C], lane);
  Kernel f = build(s, {A, C}, Target::cuda_sim(), "one_lane");
  Buffer<float> a({n, k}), c({n});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j) a(i, j) = static_cast<float>((i * 7 + j * 3) % 11) - 5.0f;
  f(a, c);
  for (int i = 0; i < n; ++i) {
    float want = 0.0f;
    for (int j = 0; j < k; ++j) want += a(i, j);
    CHECK(std::abs(c(i) - want) <= 1e-4f * (1.0f + std::abs(want)));
  }
}

}  // namespace

TEST_CASE("fuzz regression: a cross-thread reduction over one thread (rfactor by 1, bound to threadIdx.x)") {
  // Was: "thread_allreduce reduces over '', which is not the variable of an enclosing loop bound
  // to threadIdx", or a crash in the CUDA codegen: the extent-1 thread loop was folded away and
  // ThreadAllreduce::decode read its replacement constant as a variable.
  check_row_sum_over_one_lane(true);
}

TEST_CASE("fuzz regression: a reduce loop of extent 1 bound to threadIdx.x") {
  check_row_sum_over_one_lane(false);
}

TEST_CASE("fuzz regression: thread-sync insertion on five nested loops after a shared copy") {
  // Was: std::bad_alloc in lower(). insert_thread_sync visited each serial loop body twice and
  // appended both passes' pending shared accesses to the enclosing state without removing
  // duplicates, so the list grew double-exponentially with the loop depth (fixed in the rewrite
  // of lower/thread_sync.hpp).
  using namespace loom;
  Tensor A = placeholder({32}, f32, "A");
  Tensor B = compute(
      {32}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  Tensor AS = s.cache_read(A, "shared", {B});
  auto [block, rest] = s[B].split(B.axis(0), Factor{32});
  s[B].bind(block, thread_axis("blockIdx.x"));
  for (int f : {16, 8, 4, 2}) rest = s[B].split(rest, Factor{f}).second;
  s[AS].compute_at(s[B], block);
  Kernel k = build(s, {A, B}, Target::cuda_sim(), "deep");
  Buffer<float> a({32}), b({32});
  for (int i = 0; i < 32; ++i) a(i) = static_cast<float>(i);
  k(a, b);
  for (int i = 0; i < 32; ++i) CHECK(b(i) == static_cast<float>(i) + 1.0f);
}

TEST_CASE("fuzz regression: a local stage computed in a fused, then split loop (seed 939043)") {
  // Was: "CUDA codegen ...: the size of local buffer 'P' is cast(int64, ...floordiv(...)...), not a
  // constant". P's region varies with the split of a fused loop; its per-thread array now gets the
  // largest size the loop ranges allow (28 elements here), and the kernel gives the row sums of
  // squares on the simulator.
  using namespace loom;
  const int n = 11, k = 21;
  Tensor A = placeholder({n, k}, f32, "A");
  Tensor P = compute(
      {n, k}, [&](Expr i, Expr j) { return A(i, j) * A(i, j); }, "P");
  IterVar r = reduce_axis(0, k, "r");
  Tensor C = compute(
      {n}, [&](Expr i) { return sum(P(i, r), {r}); }, "C");
  Schedule s = create_schedule(C);
  auto [o0, i1] = s[C].split(C.reduce_axis(0), Factor{5});
  (void)o0;
  Tensor CR = s.rfactor(C, i1);
  auto [o2, i3] = s[C].split(C.axis(0), Factor{5});
  s[C].bind(o2, thread_axis("blockIdx.y"));
  auto [o4, i5] = s[C].split(i3, NParts{13});
  s[C].bind(o4, thread_axis("threadIdx.y"));
  IterVar v6 = s[C]->leaf_iter_vars[3];
  s[C].reorder({o2, o4, i5, v6});
  s[C].bind(v6, thread_axis("threadIdx.x"));
  s[CR].compute_at(s[C], v6);
  auto [o7, i8] = s[CR].split(CR.axis(0), Factor{4});
  IterVar f9 = s[CR].fuse(o7, i8);
  s[CR].reorder({f9, CR.axis(1), CR.reduce_axis(0)});
  auto [o10, i11] = s[CR].split(f9, NParts{3});
  (void)i11;
  s[P].set_scope("local");
  s[P].compute_at(s[CR], o10);
  Kernel f = build(s, {A, C}, Target::cuda_sim(), "varying_local");
  CHECK(f.source().find("float P[28];") != std::string::npos);
  Buffer<float> a({n, k}), c({n});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j) a(i, j) = static_cast<float>((i * 5 + j * 3) % 7) - 3.0f;
  f(a, c);
  for (int i = 0; i < n; ++i) {
    float want = 0.0f;
    for (int j = 0; j < k; ++j) want += a(i, j) * a(i, j);
    CHECK(std::abs(c(i) - want) <= 1e-4f * (1.0f + std::abs(want)));
  }
}

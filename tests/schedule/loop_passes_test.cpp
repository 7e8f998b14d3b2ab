// The loop transformations the lowering carries out for schedule annotations: vectorize (with
// predicated lanes for uneven splits), unroll, prefetch, double_buffer and tensorize.
#include "../support/matmul_program.hpp"
#include "check_schedule.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("vectorize turns a loop into ramps, predicating lanes past an uneven split") {
  Tensor A = placeholder({37, 45}, f32, "A");
  Tensor B = placeholder({37, 45}, f32, "B");
  Tensor C = compute(
      {37, 45}, [&](Expr i, Expr j) { return A(i, j) * B(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].vectorize(ji);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "ramp("));
  CHECK(contains(f.to_string(), " if "));  // the predicate on the last, partial vector
}

TEST_CASE("vectorize of a reduction's data-parallel loop") {
  Tensor A = placeholder({19, 21}, f32, "A");
  Tensor B = placeholder({21, 24}, f32, "B");
  IterVar k = reduce_axis(0, 21, "k");
  Tensor C = compute(
      {19, 24}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].reorder({C.axis(0), jo, k, ji});
  s[C].vectorize(ji);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "ramp("));
}

TEST_CASE("unroll copies the body once per iteration") {
  Tensor A = placeholder({10, 6}, f32, "A");
  Tensor C = compute(
      {10, 6}, [&](Expr i, Expr j) { return A(i, j) + 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[C].split(C.axis(0), 4);
  s[C].unroll(ii);
  LoweredFunc f = check_against_default(s, {A}, {C});
  CHECK(contains(f.to_string(), "for (j_3: int32, 0, 6)"));
}

TEST_CASE("prefetch and double_buffer do not change results") {
  const auto [A, B, C, k] = matmul_program(33, 27, 50);
  Schedule s = create_schedule(C);
  Tensor AL = s.cache_read(A, "local", {C});
  auto [ko, ki] = s[C].split(k, 8);
  s[AL].compute_at(s[C], ko);
  s[AL].double_buffer();
  s[C].prefetch(B, ko, 1);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  std::string text = f.to_string();
  CHECK(contains(text, "prefetch(B["));
  CHECK(contains(text, "allocate(A.local: Pointer(local float32), float32, [16])"));  // two halves of 8
  CHECK(contains(text, "floormod((k.outer + 1), 2)"));
}

TEST_CASE("prefetch spread over inner loops: the next block's copy, a line at a time") {
  // C = A B with B's rows copied a block of 16 columns at a time (a stage attached at jo): while
  // block jo computes, its k loop prefetches the rows that block jo + 1's copy reads.
  const auto [A, B, C, k] = matmul_program(9, 45, 70);
  Schedule s = create_schedule(C);
  Tensor BC = s.cache_read(B, "global", {C});
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].reorder({jo, C.axis(0), k, ji});
  s[BC].compute_at(s[C], jo);
  s[C].prefetch(B, jo, 1, k);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  const std::string text = f.to_string();
  // 70 rows of 16 floats, two lines each (a row of B starts anywhere in a line), over 9 x 70
  // iterations of (i, k): one every 4 iterations, the first 140 such.
  CHECK(contains(text, "floormod(((i*70) + k), 4) == 0"));
  CHECK(contains(text, "prefetch(B["));
  // The column of the block after the last is clamped into B.
  CHECK(contains(text, ", 44)"));

  // Fewer iterations than lines: several lines per iteration, in a loop.
  Schedule s2 = create_schedule(C);
  Tensor BC2 = s2.cache_read(B, "global", {C});
  auto [jo2, ji2] = s2[C].split(C.axis(1), 16);
  auto [ko2, ki2] = s2[C].split(k, 32);
  s2[C].reorder({jo2, ko2, C.axis(0), ki2, ji2});
  s2[BC2].compute_at(s2[C], jo2);
  s2[C].prefetch(B, jo2, 1, ko2);  // 140 lines over the 3 iterations of ko: 47 each
  LoweredFunc f2 = check_against_default(s2, {A, B}, {C});
  CHECK(contains(f2.to_string(), "for (prefetch.B.line: int32, 0, 47)"));
}

TEST_CASE("prefetch spread: a region reaching before the tensor is clipped, so its last row is not missed") {
  // S reads row i - 1 (where i >= 1) and row i of X: the rows ahead are -1 .. 9 before clipping. Capped
  // at X's 10 rows without clipping, the lines would start at row -1 and miss row 9.
  Tensor X = placeholder({4, 10, 32}, f32, "X");
  Tensor S = compute(
      {4, 10, 32},
      [&](Expr b, Expr i, Expr j) { return if_then_else(i >= 1, X(b, i - 1, j), 0.0f) + X(b, i, j); }, "S");
  Schedule s = create_schedule(S);
  s[S].prefetch(X, S.axis(0), 1, S.axis(1));  // 10 rows of 2 lines over the 10 iterations of i
  LoweredFunc f = check_against_default(s, {X}, {S});
  const std::string text = f.to_string();
  CHECK(contains(text, "for (prefetch.X.line: int32, 0, 2)"));
  CHECK(contains(text, "prefetch(X[(((min((i + 1), 3)*320) + (j*32)) + (prefetch.X.line*16))]"));
}

TEST_CASE("prefetch spread: mistakes name the stage and axis, and change nothing") {
  const auto [A, B, C, k] = matmul_program(9, 45, 70);
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].vectorize(ji);
  CHECK_THROWS_WITH_AS(s[C].prefetch(B, k, 1, jo),
                       doctest::Contains("axis 'j.outer' of stage 'C' is not inside axis 'k'"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[C].prefetch(B, jo, 1, ji),
                       doctest::Contains("axis 'j.inner' of stage 'C' is vectorized"), ScheduleError);
  // A tensor the stage's result does not depend on: its own, or an unrelated one, with either form.
  Tensor D = placeholder({70, 45}, f32, "D");
  CHECK_THROWS_WITH_AS(s[C].prefetch(D, C.axis(0), 1, k),
                       doctest::Contains("prefetch at axis 'i' of stage 'C': the stage does not read 'D', "
                                         "directly or through the stages it reads"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[C].prefetch(C, C.axis(0), 1), doctest::Contains("the stage does not read 'C'"),
                       ScheduleError);
  CHECK(lower(s, {A, B, C}, "unchanged").to_string().find("prefetch") == std::string::npos);

  // Loops changed after the request: a vector down to the spread axis, the axis split, the spread
  // axis moved outside it. Before, each dropped the prefetch without a word.
  Schedule vectorized = create_schedule(C);
  auto [vo, vi] = vectorized[C].split(C.axis(1), 16);
  vectorized[C].prefetch(B, C.axis(0), 1, k);
  vectorized[C].vectorize(vi);
  CHECK_THROWS_WITH_AS(
      lower(vectorized, {A, B, C}, "f"),
      doctest::Contains("prefetch of 'B' at axis 'i' of stage 'C': axis 'j.inner', from it down "
                        "to the spread axis 'k', is vectorized"),
      ScheduleError);
  Schedule split = create_schedule(C);
  split[C].prefetch(B, C.axis(0), 1, k);
  split[C].split(C.axis(0), 4);
  CHECK_THROWS_WITH_AS(
      lower(split, {A, B, C}, "f"),
      doctest::Contains("prefetch of 'B' at axis 'i' of stage 'C': the axis is no longer one "
                        "of the stage's loops"),
      ScheduleError);
  Schedule reordered = create_schedule(C);
  reordered[C].prefetch(B, C.axis(0), 1, k);
  reordered[C].reorder({k, C.axis(0), C.axis(1)});
  CHECK_THROWS_WITH_AS(lower(reordered, {A, B, C}, "f"),
                       doctest::Contains("the spread axis 'k' is no longer a loop inside it"), ScheduleError);
  // Indices that depend on data: no region to spread.
  Tensor Idx = placeholder({9}, i32, "Idx");
  Tensor G = compute(
      {9}, [&, B = B, k = k](Expr i) { return sum(B(k, Idx(i)), {k}); }, "G");
  Schedule gather = create_schedule(G);
  gather[G].prefetch(B, G.axis(0), 1, k);
  CHECK_THROWS_WITH_AS(
      lower(gather, {B, Idx, G}, "f"),
      doctest::Contains("prefetch of 'B' at axis 'i' of stage 'G': the region of 'B' read ahead "
                        "has no bound before the kernel runs"),
      ScheduleError);
}

TEST_CASE("prefetch of a tensor computed at a loop of the stage is refused; of one inlined since, dropped") {
  Tensor A = placeholder({3, 5}, f32, "A");
  Tensor P = compute(
      {3, 5}, [&](Expr i, Expr j) { return A(i, j) * A(i, j); }, "P");
  IterVar r = reduce_axis(0, 5, "r");
  Tensor C = compute(
      {3}, [&](Expr i) { return sum(P(i, r), {r}); }, "C");
  for (bool spread : {false, true}) {
    CAPTURE(spread);
    Schedule s = create_schedule(C);
    s[P].compute_at(s[C], C.reduce_axis(0));
    if (spread)
      s[C].prefetch(P, C.axis(0), 1, C.reduce_axis(0));
    else
      s[C].prefetch(P, C.axis(0), 1);
    // Before, the unspread prefetch ended in an internal error ("no storage for tensor 'P'").
    CHECK_THROWS_WITH_AS(
        lower(s, {A, C}, "f"),
        doctest::Contains("prefetch of 'P' at axis 'i' of stage 'C': 'P' is computed at loop 'r' of this "
                          "stage (compute_at)"),
        ScheduleError);
    Schedule t = create_schedule(C);
    if (spread)
      t[C].prefetch(P, C.axis(0), 1, C.reduce_axis(0));
    else
      t[C].prefetch(P, C.axis(0), 1);
    t[P].compute_inline();  // C now reads A: nothing reads P
    LoweredFunc f = check_against_default(t, {A}, {C});
    CHECK(f.to_string().find("prefetch") == std::string::npos);
  }
}

TEST_CASE("prefetch: the reads of a stage attached inside the axis count, with or without a spread") {
  // AC copies the 4 rows of A of a block of C's rows for each block of columns jo, inside io: while
  // block io computes, its jo loop prefetches the rows the copies of block io + 1 read. Before, only
  // stages attached at io itself were searched, and this was refused as reading nothing.
  const auto [A, B, C, k] = matmul_program(9, 45, 70);
  Schedule s = create_schedule(C);
  Tensor AC = s.cache_read(A, "global", {C});
  auto [io, ii] = s[C].split(C.axis(0), 4);
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].reorder({io, jo, ii, k, ji});
  s[AC].compute_at(s[C], jo);
  s[C].prefetch(A, io, 1, jo);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  // 4 whole rows of 70 floats, one run of 280: 19 lines however it starts (not 6 per row, 24), over
  // the 3 iterations of jo: 7 each.
  CHECK(contains(f.to_string(), "for (prefetch.A.line: int32, 0, 7)"));

  // Without a spread the prefetch follows the stage's reads into a copy made after the request
  // (cache_read), attached inside the axis; before, it was dropped without a word.
  Schedule t = create_schedule(C);
  auto [to, ti] = t[C].split(C.axis(0), 4);
  t[C].prefetch(A, to, 1);
  Tensor AT = t.cache_read(A, "global", {C});
  t[AT].compute_at(t[C], ti);
  LoweredFunc g = check_against_default(t, {A, B}, {C});
  CHECK(contains(g.to_string(), "prefetch(A["));
  // A prefetch of what only the copy reads may also be asked for after the copy is made.
  Schedule after = create_schedule(C);
  Tensor AA = after.cache_read(A, "global", {C});
  after[AA].compute_at(after[C], C.axis(0));
  after[C].prefetch(A, C.axis(0), 1);
  CHECK(contains(check_against_default(after, {A, B}, {C}).to_string(), "prefetch(A["));
  // Found when lowering: a copy stored outside the stage's loops leaves the stage reading nothing of
  // A.
  Schedule u = create_schedule(C);
  u[C].prefetch(A, C.axis(0), 1);
  u.cache_read(A, "global", {C});
  CHECK_THROWS_WITH_AS(lower(u, {A, B, C}, "f"),
                       doctest::Contains("prefetch of 'A' at axis 'i' of stage 'C': neither the stage nor a "
                                         "stage attached at or inside that axis reads 'A' (a cache_read "
                                         "after the request, for one, moves the stage's reads into "
                                         "the copy)"),
                       ScheduleError);
}

TEST_CASE("prefetch: a stage attached inside an attached stage is searched too") {
  // P scales the 4 rows of A that block (io, jo) of C reads, at jo; AP copies each row of A for P,
  // at P's row loop. C reads neither A nor the copy: only AP, attached inside P, reads A. Before,
  // stages attached inside attached stages were not searched, and this was refused as reading
  // nothing.
  Tensor A = placeholder({9, 70}, f32, "A");
  Tensor B = placeholder({70, 45}, f32, "B");
  Tensor P = compute(
      {9, 70}, [&](Expr i, Expr k) { return A(i, k) * 2.0f; }, "P");
  IterVar k = reduce_axis(0, 70, "k");
  Tensor C = compute(
      {9, 45}, [&](Expr i, Expr j) { return sum(P(i, k) * B(k, j), {k}); }, "C");
  for (bool spread : {true, false}) {
    CAPTURE(spread);
    Schedule s = create_schedule(C);
    auto [io, ii] = s[C].split(C.axis(0), 4);
    auto [jo, ji] = s[C].split(C.axis(1), 16);
    s[C].reorder({io, jo, ii, k, ji});
    s[P].compute_at(s[C], jo);
    Tensor AP = s.cache_read(A, "global", {P});
    s[AP].compute_at(s[P], P.axis(0));
    if (spread)
      s[C].prefetch(A, io, 1, jo);
    else
      s[C].prefetch(A, io, 1);
    const std::string text = check_against_default(s, {A, B}, {C}).to_string();
    // The 4 whole rows of block io + 1, one run of 280 floats: 19 lines however it starts, 7 in each
    // of the 3 iterations of jo.
    CHECK(contains(text, spread ? "for (prefetch.A.line: int32, 0, 7)" : "for (prefetch.A.0: int32, 0, 19)"));
    CHECK(contains(text, "prefetch(A[min(((("));
  }
}

TEST_CASE("prefetch: an attached stage's reduce axis may depend on its data axes (a triangular sum)") {
  // P's row prefix sums, computed at C's jo: P's reduce axis r runs to its column c. Before, r's range
  // was taken over the loops outside P only, so c stayed in the region, and lowering refused the
  // kernel as using a variable that is not an argument. Two variants failed the same way after the
  // first fix: P's column axis split (r's range is then in P's loops), and a suffix sum with a copy of
  // A made at P's reduce loop (whose extent depends on the column).
  Tensor A = placeholder({9, 70}, f32, "A");
  Tensor B = placeholder({70, 45}, f32, "B");
  IterVar k = reduce_axis(0, 70, "k");
  enum Variant { kPrefix, kPrefixSplit, kSuffixCopied };
  for (Variant variant : {kPrefix, kPrefixSplit, kSuffixCopied}) {
    CAPTURE(variant);
    IterVar r;
    Tensor P = compute(
        {9, 70},
        [&](Expr i, Expr c) {
          r = variant == kSuffixCopied ? reduce_axis(c, Expr(70) - c, "r") : reduce_axis(0, c + 1, "r");
          return sum(A(i, r), {r});
        },
        "P");
    Tensor C = compute(
        {9, 45}, [&](Expr i, Expr j) { return sum(P(i, k) * B(k, j), {k}); }, "C");
    Schedule s = create_schedule(C);
    auto [io, ii] = s[C].split(C.axis(0), 4);
    auto [jo, ji] = s[C].split(C.axis(1), 16);
    s[C].reorder({io, jo, ii, k, ji});
    s[P].compute_at(s[C], jo);
    if (variant == kPrefixSplit) s[P].split(P.axis(1), 8);
    if (variant == kSuffixCopied) {
      Tensor AP = s.cache_read(A, "global", {P});
      s[AP].compute_at(s[P], r);
    }
    s[C].prefetch(A, io, 1);
    const std::string text = check_against_default(s, {A, B}, {C}).to_string();
    CHECK(contains(text, "prefetch(A["));
    // The 4 rows of block io + 1, whole: one run of 280 floats, 19 lines however it starts.
    if (variant == kPrefix) CHECK(contains(text, "for (prefetch.A.0: int32, 0, 19)"));
  }
}

TEST_CASE("prefetch: reads through indices from data are left out of the region, the others kept") {
  // C scales row i of A by the element G picks from it by Idx, G computed at C's row loop. The row is
  // prefetched; G's read has no bound before the kernel runs. Before, the unspread prefetch was
  // dropped whole, the row included, and the spread one refused.
  Tensor A = placeholder({9, 70}, f32, "A");
  Tensor Idx = placeholder({9}, i32, "Idx");
  Tensor G = compute(
      {9}, [&](Expr i) { return A(i, Idx(i)); }, "G");
  IterVar k = reduce_axis(0, 70, "k");
  Tensor C = compute(
      {9}, [&](Expr i) { return sum(A(i, k) * G(i), {k}); }, "C");
  for (bool spread : {false, true}) {
    CAPTURE(spread);
    Schedule s = create_schedule(C);
    s[G].compute_at(s[C], C.axis(0));
    if (spread)
      s[C].prefetch(A, C.axis(0), 1, k);
    else
      s[C].prefetch(A, C.axis(0), 1);
    const std::string text = lower(s, {A, Idx, C}, "f").to_string();
    // Row i + 1 of A, whole: 70 floats, 6 lines however it starts.
    CHECK(contains(text, spread ? "prefetch(A[" : "for (prefetch.A.0: int32, 0, 6)"));
  }
  // Read only through data, a spread has nothing to spread.
  Tensor H = compute(
      {9}, [&](Expr i) { return G(i) * 2.0f; }, "H");
  Schedule t = create_schedule(H);
  auto [ho, hi] = t[H].split(H.axis(0), 3);
  t[G].compute_at(t[H], hi);
  t[H].prefetch(A, ho, 1, hi);
  CHECK_THROWS_WITH_AS(lower(t, {A, Idx, H}, "f"),
                       doctest::Contains("prefetch of 'A' at axis 'i.outer' of stage 'H': the region of 'A' "
                                         "read ahead has no bound before the kernel runs"),
                       ScheduleError);
}

TEST_CASE("cache_write and rfactor refuse a stage with prefetch requests, and change nothing") {
  // Both move the stage's reads into a new stage; the requests would stay behind on one that reads
  // nothing they name. Before, a request on a reduce axis was erased without a word.
  const auto [A, B, C, k] = matmul_program(9, 45, 70);
  Schedule s = create_schedule(C);
  s[C].prefetch(B, k, 1);
  const std::string before = lower(s, {A, B, C}, "f").to_string();
  CHECK_THROWS_WITH_AS(s.cache_write(C, "local"),
                       doctest::Contains("cache_write of 'C': stage 'C' has a prefetch of 'B' at axis 'k', "
                                         "and its reads move into the cache stage; request the prefetch "
                                         "there, after this call"),
                       ScheduleError);
  CHECK(lower(s, {A, B, C}, "f").to_string() == before);

  Schedule r = create_schedule(C);
  auto [ko, ki] = r[C].split(k, 8);
  r[C].prefetch(A, ko, 1);
  const std::string split = lower(r, {A, B, C}, "f").to_string();
  CHECK_THROWS_WITH_AS(r.rfactor(C, ki),
                       doctest::Contains("rfactor of 'C': stage 'C' has a prefetch of 'A' at axis 'k.outer', "
                                         "and its reads move into the factored stage 'C.rf'"),
                       ScheduleError);
  CHECK(lower(r, {A, B, C}, "f").to_string() == split);
}

TEST_CASE("prefetch of a computed tensor counts a line more per row: its buffer's pitch may be padded") {
  // P is stored whole with its rows padded to 40 floats (storage_align): a row of 32 then starts
  // anywhere in a line and touches up to 3 lines, not the 2 of an input whose pitch is 32.
  Tensor A = placeholder({6, 32}, f32, "A");
  Tensor P = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "P");
  Tensor C = compute(
      {6, 32}, [&](Expr i, Expr j) { return P(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  s[P].storage_align(P.axis(0), 40, 0);
  s[C].prefetch(P, C.axis(0), 1);
  LoweredFunc f = check_against_default(s, {A}, {C});
  CHECK(contains(f.to_string(), "for (prefetch.P.1: int32, 0, 3)"));
  // An input's whole rows of 32 floats, 32 apart, start on lines.
  Tensor D = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) + 1.0f; }, "D");
  Schedule t = create_schedule(D);
  t[D].prefetch(A, D.axis(0), 1);
  CHECK(contains(check_against_default(t, {A}, {D}).to_string(), "for (prefetch.A.0: int32, 0, 2)"));
}

TEST_CASE("prefetch: whole rows of an input are one run, its lines counted across the rows") {
  // Blocks of 16 rows of 5 floats: a run of 80 floats, which starts on a line (A's data does, and
  // 80 floats are 5 lines), so 5 lines, where row by row it was 16 (one per row). A block of 3 of the
  // 5 columns is no run: a line per row.
  Tensor A = placeholder({64, 5}, f32, "A");
  Tensor C = compute(
      {64, 5}, [&](Expr i, Expr j) { return A(i, j) * 3.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[C].split(C.axis(0), 16);
  s[C].prefetch(A, io, 1);
  const std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "for (prefetch.A.0: int32, 0, 5)"));
  CHECK(contains(text, "prefetch(A[min((((i.outer*80) + (prefetch.A.0*16)) + 80), 319)]"));

  Tensor D = compute(
      {64, 3}, [&](Expr i, Expr j) { return A(i, j) * 3.0f; }, "D");
  Schedule t = create_schedule(D);
  auto [to, ti] = t[D].split(D.axis(0), 16);
  t[D].prefetch(A, to, 1);
  CHECK(contains(check_against_default(t, {A}, {D}).to_string(), "for (prefetch.A.0: int32, 0, 16)"));
}

namespace {
TensorIntrin vector_add_intrin(int width) {
  Tensor x = placeholder({width}, f32, "x");
  Tensor y = placeholder({width}, f32, "y");
  Tensor z = compute(
      {width}, [&](Expr i) { return x(i) + y(i); }, "z");
  return decl_tensor_intrin(
      z,
      [width](const std::vector<BufferRegion>& in, const std::vector<BufferRegion>& out) {
        Var i("lane");
        return ForNode::make(i, 0, width, ForKind::Serial,
                             out[0].store({i}, in[0].load({i}) + in[1].load({i})));
      },
      "vadd" + std::to_string(width));
}
}  // namespace

TEST_CASE("tensorize replaces a matching loop nest by the intrinsic's code") {
  Tensor A = placeholder({6, 32}, f32, "A");
  Tensor B = placeholder({6, 32}, f32, "B");
  Tensor C = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].tensorize(ji, vector_add_intrin(8));
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "for (lane: int32, 0, 8)"));
}

TEST_CASE("tensorize reports what differs") {
  Tensor A = placeholder({6, 32}, f32, "A");
  Tensor B = placeholder({6, 32}, f32, "B");
  Tensor C = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) - B(i, j); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].tensorize(ji, vector_add_intrin(8));
  CHECK_THROWS_WITH_AS(lower(s, {A, B, C}, "f"),
                       doctest::Contains("they first differ at '(x[j.inner] - y[j.inner])'"), ScheduleError);
  Schedule s2 = create_schedule(C);
  auto [jo2, ji2] = s2[C].split(C.axis(1), 4);
  s2[C].tensorize(ji2, vector_add_intrin(8));
  CHECK_THROWS_WITH_AS(lower(s2, {A, B, C}, "f"), doctest::Contains("data-parallel [j.inner: 4]"),
                       ScheduleError);
}

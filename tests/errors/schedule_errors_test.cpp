// Schedule mistakes end in a loom::ScheduleError that names the primitive, the stage and the
// axis, says what happened to a stale handle, and lists the legal choices where there are some.
#include <loom/core.hpp>
#include <loom/sim/interpreter.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>
#include "../support/interpret_checked.hpp"
#include "../support/schedule_state.hpp"
#include "errors_test_util.hpp"

using namespace loom;
using namespace loom::test;
using doctest::Contains;

TEST_CASE("errors: splitting an axis that was already split names the axes that replaced it") {
  Graph g;
  Schedule s = create_schedule(g.D);
  IterVar i = g.D.axis(0);
  s[g.D].split(i, 4);
  CHECK_THROWS_WITH_AS(
      s[g.D].split(i, 2),
      Contains("split: axis 'i' of stage 'D' was already split into 'i.outer' and 'i.inner'; use "
               "those instead (the loops of 'D' are now: i.outer, i.inner, j)"),
      loom::ScheduleError);
  // Any primitive given the stale handle says the same.
  CHECK_THROWS_WITH_AS(s[g.D].parallel(i),
                       Contains("parallel: axis 'i' of stage 'D' was already split into 'i.outer'"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].reorder({g.D.axis(1), i}),
                       Contains("reorder: axis 'i' of stage 'D' was already split"), loom::ScheduleError);
  CHECK_THROWS_WITH_AS(
      s[g.C].compute_at(s[g.D], i),
      Contains("compute_at: axis 'i' of stage 'D' was already split into 'i.outer' and 'i.inner'"),
      loom::ScheduleError);
}

TEST_CASE("errors: using an axis after it was fused names the fused axis") {
  Graph g;
  Schedule s = create_schedule(g.D);
  s[g.D].fuse(g.D.axis(0), g.D.axis(1));
  // catalog: E-AXIS-STALE-FUSE
  CHECK_THROWS_WITH_AS(
      s[g.D].split(g.D.axis(0), 2),
      Contains("split: axis 'i' of stage 'D' was already fused with 'j' into 'i.j.fused'; use "
               "'i.j.fused' instead (the loops of 'D' are now: i.j.fused)"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(
      s[g.D].vectorize(g.D.axis(1)),
      Contains("vectorize: axis 'j' of stage 'D' was already fused with 'i' into 'i.j.fused'"),
      loom::ScheduleError);
}

TEST_CASE("errors: an axis of another stage is named as such, with this stage's loops") {
  Graph g;
  Schedule s = create_schedule(g.D);
  // catalog: E-AXIS-OTHER-STAGE
  CHECK_THROWS_WITH_AS(
      s[g.D].split(g.B.axis(0), 2),
      Contains("split: axis 'i' belongs to stage 'B', not to stage 'D'; the loops of 'D' are: i, j"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].unroll(g.C.axis(1)),
                       Contains("unroll: axis 'j' belongs to stage 'C', not to stage 'D'"),
                       loom::ScheduleError);
  // The user's reduce_axis handle: C holds a copy of it, and is named as its owner.
  CHECK_THROWS_WITH_AS(
      s[g.D].split(g.k, 2),
      Contains("split: axis 'k' belongs to stage 'C', not to stage 'D'; the loops of 'D' are: i, j"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].compute_at(s[g.D], g.k), Contains("axis 'k' belongs to stage 'C'"),
                       loom::ScheduleError);
  // An axis created by a primitive on another schedule of the same graph.
  Schedule other = create_schedule(g.D);
  auto [o, in] = other[g.D].split(g.D.axis(0), 3);
  // catalog: E-AXIS-OTHER-SCHEDULE
  CHECK_THROWS_WITH_AS(
      s[g.D].split(o, 2),
      Contains("split: axis 'i.outer' is not an axis of stage 'D' in this schedule (was it created by "
               "a primitive on another schedule?); the loops of 'D' are: i, j"),
      loom::ScheduleError);
  // catalog: E-AXIS-THREAD
  CHECK_THROWS_WITH_AS(
      s[g.D].split(thread_axis("threadIdx.x"), 2),
      Contains("split: 'threadIdx.x' is a thread axis, not a loop of stage 'D'; pass one of its loops: i, j"),
      loom::ScheduleError);
}

TEST_CASE("errors: fusing axes that are not adjacent, out of order, or of different kinds") {
  Graph g;
  Schedule s = create_schedule(g.C);
  auto [io, ii] = s[g.C].split(g.C.axis(0), 4);
  // catalog: E-FUSE-NOT-ADJACENT
  CHECK_THROWS_WITH_AS(
      s[g.C].fuse(io, g.C.axis(1)),
      Contains("fuse: axes 'i.outer' and 'j' of stage 'C' are not adjacent (loop order: i.outer, "
               "i.inner, j, k); reorder them so that 'j' directly follows 'i.outer' before fusing"),
      loom::ScheduleError);
  // catalog: E-FUSE-ORDER
  CHECK_THROWS_WITH_AS(
      s[g.C].fuse(ii, io),
      Contains("fuse: in stage 'C', 'i.outer' is outside 'i.inner'; pass the outer loop first: "
               "fuse(i.outer, i.inner)"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].fuse(ii, ii),
                       Contains("fuse: stage 'C' was asked to fuse axis 'i.inner' with itself"),
                       loom::ScheduleError);
  // catalog: E-FUSE-KIND
  CHECK_THROWS_WITH_AS(
      s[g.C].fuse(g.C.axis(1), g.k),
      Contains("fuse: stage 'C' cannot fuse the data-parallel axis 'j' with the reduce axis 'k'; fuse "
               "data-parallel axes with each other and reduce axes with each other"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].reorder({g.C.axis(1), ii, g.C.axis(1)}),
                       Contains("reorder: axis 'j' of stage 'C' is listed twice"), loom::ScheduleError);
}

TEST_CASE("errors: vectorizing or parallelizing a reduce axis") {
  Graph g;
  Schedule s = create_schedule(g.C);
  const char* message =
      "vectorize: axis 'k' of stage 'C' is a reduction axis; vectorizing it would make the lanes race on one "
      "accumulator. Vectorize a data-parallel axis, or rfactor the reduction first";
  // catalog: E-VECTORIZE-REDUCE
  CHECK_THROWS_WITH_AS(s[g.C].vectorize(g.k), Contains(message), loom::ScheduleError);
  auto [ko, ki] = s[g.C].split(g.k, 4);
  CHECK_THROWS_WITH_AS(s[g.C].vectorize(ki),
                       Contains("vectorize: axis 'k.inner' of stage 'C' is a reduction axis"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.C].pragma(ki, "vectorize"), Contains("is a reduction axis"), loom::ScheduleError);
  CHECK_THROWS_WITH_AS(
      s[g.C].parallel(ko),
      Contains("parallel: axis 'k.outer' of stage 'C' is a reduction axis; parallel iterations would "
               "race on one accumulator"),
      loom::ScheduleError);
}

TEST_CASE("errors: compute_at a loop that does not enclose the consumer lists the legal locations") {
  Graph g;
  Schedule s = create_schedule(g.D);
  auto [xo, yo, xi, yi] = s[g.D].tile(g.D.axis(0), g.D.axis(1), 4, 4);
  // B is read by C only; C runs at the root, so no loop of D encloses C.
  // catalog: E-COMPUTE-AT-ILLEGAL
  CHECK_THROWS_WITH_AS(
      s[g.B].compute_at(s[g.D], xo),
      Contains("compute_at: stage 'B' cannot be computed at loop 'i.outer' of stage 'D': that loop "
               "does not enclose every use of 'B' (it is read by C). Legal locations for 'B' are: C.k, "
               "C.j, C.i, or the root (compute_root())"),
      loom::ScheduleError);
  // Once C is inside D's tile, D's enclosing loops become legal for B too.
  s[g.C].compute_at(s[g.D], yo);
  CHECK_THROWS_WITH_AS(
      s[g.B].compute_at(s[g.D], xi),
      Contains("Legal locations for 'B' are: C.k, C.j, C.i, D.j.outer, D.i.outer, or the root "
               "(compute_root())"),
      loom::ScheduleError);
  CHECK_NOTHROW(s[g.B].compute_at(s[g.D], yo));
  // A producer read by two stages: only loops enclosing both are legal.
  Tensor E = compute(
      {Graph::n, Graph::n}, [&](Expr i, Expr j) { return g.B(i, j) + g.D(i, j); }, "E");
  Schedule t = create_schedule(E);
  CHECK_THROWS_WITH_AS(
      t[g.B].compute_at(t[g.C], g.C.axis(0)),
      Contains("(it is read by C, E). Legal locations for 'B' are: the root only (compute_root())"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(t[g.B].compute_at(t[g.B], g.B.axis(0)),
                       Contains("compute_at: stage 'B' cannot be computed inside its own loops"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(t[g.A].compute_at(t[E], E.axis(0)),
                       Contains("compute_at: 'A' is a placeholder (an input); it is not computed"),
                       loom::ScheduleError);
}

TEST_CASE("errors: compute_at inside a stage that the stage feeds names the cycle") {
  Graph g;
  Schedule s = create_schedule(g.D);
  const std::string fresh = schedule_state(s);
  // catalog: E-COMPUTE-AT-CYCLE
  CHECK_THROWS_WITH_AS(
      s[g.C].compute_at(s[g.B], g.B.axis(0)),
      Contains("compute_at: stage 'C' cannot be computed at loop 'i' of stage 'B': 'C' reads 'B', so 'B' "
               "is computed first and 'C' inside its loops would be a cycle. Compute the producer inside "
               "its consumer instead (s[B].compute_at(s[C], axis)), or place 'C' at one of: D.j, D.i, or "
               "the root (compute_root())"),
      loom::ScheduleError);
  // Through an intermediate stage: D reads C, which reads B.
  CHECK_THROWS_WITH_AS(s[g.D].compute_at(s[g.B], g.B.axis(1)),
                       Contains("'D' reads 'B' (through 'B' -> 'C' -> 'D'), so 'B' is computed first"),
                       loom::ScheduleError);
  CHECK(schedule_state(s) == fresh);
}

TEST_CASE("errors: a compute_at made stale by a later split or inline is reported by lower()") {
  Graph g;
  {
    Schedule s = create_schedule(g.D);
    s[g.C].compute_at(s[g.D], g.D.axis(1));
    s[g.D].split(g.D.axis(1), 4);
    // catalog: E-COMPUTE-AT-STALE
    CHECK_THROWS_WITH_AS(
        lower(s, {g.A, g.D}, "stale"),
        Contains("compute_at: stage 'C' is computed at loop 'j' of stage 'D', but that loop was "
                 "already split into 'j.outer' and 'j.inner'; use those instead; call compute_at again "
                 "with one of the loops of 'D': i, j.outer, j.inner"),
        loom::ScheduleError);
  }
  {
    Tensor E = compute(
        {Graph::n, Graph::n}, [&](Expr i, Expr j) { return g.B(i, j) * 3.0f; }, "E");
    Tensor F = compute(
        {Graph::n, Graph::n}, [&](Expr i, Expr j) { return E(i, j) + 1.0f; }, "F");
    Schedule s = create_schedule(F);
    s[g.B].compute_at(s[E], E.axis(0));
    s[E].compute_inline();  // B's loop disappears with E
    CHECK_THROWS_WITH_AS(
        lower(s, {g.A, F}, "inlined_parent"),
        Contains("compute_at: stage 'B' is computed at loop 'i' of stage 'E', which no longer "
                 "encloses every use of it; legal locations are: F.j, F.i, or the root (compute_root())"),
        loom::ScheduleError);
  }
}

TEST_CASE(
    "errors: compute_inline of a reduction, of an output, of an input, and of a stage an extern reads") {
  Graph g;
  Schedule s = create_schedule(g.D);
  // catalog: E-INLINE-REDUCTION
  CHECK_THROWS_WITH_AS(
      s[g.C].compute_inline(),
      Contains("compute_inline: stage 'C' is a reduction, which cannot be inlined into its consumers; "
               "use compute_at to compute it inside a consumer's loop instead"),
      loom::ScheduleError);
  // catalog: E-INLINE-OUTPUT
  CHECK_THROWS_WITH_AS(
      s[g.D].compute_inline(),
      Contains("compute_inline: stage 'D' is an output of the schedule; outputs must be stored, not inlined"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.A].compute_inline(),
                       Contains("compute_inline: 'A' is a placeholder (an input); it is not computed"),
                       loom::ScheduleError);

  Tensor E = extern_compute(
      {Graph::n, Graph::n}, f32, {g.B}, [](auto&, auto&) {}, "ext");
  Schedule t = create_schedule(E);
  t[g.B].compute_inline();
  // catalog: E-INLINE-INTO-EXTERN
  CHECK_THROWS_WITH_AS(
      lower(t, {g.A, E}, "inline_into_extern"),
      Contains("compute_inline: stage 'B' is read by extern stage 'ext', which needs it stored in "
               "memory; keep 'B' computed (compute_root or compute_at)"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(t[E].compute_inline(), Contains("compute_inline: stage 'ext' is"),
                       loom::ScheduleError);
}

TEST_CASE("errors: a stage of another schedule passed to compute_at, and a tensor not in the schedule") {
  Graph g;
  Schedule s = create_schedule(g.D);
  Schedule other = create_schedule(g.D);
  // catalog: E-COMPUTE-AT-OTHER-SCHEDULE
  CHECK_THROWS_WITH_AS(
      s[g.C].compute_at(other[g.D], g.D.axis(0)),
      Contains("compute_at: stage 'D' belongs to another schedule than stage 'C'; use the stages of one "
               "schedule (s[D] of the same s)"),
      loom::ScheduleError);
  Schedule small = create_schedule(g.B);
  // catalog: E-SCHED-NOT-IN-SCHEDULE
  CHECK_THROWS_WITH_AS(
      small[g.D],
      Contains("'D' is not part of this schedule; its stages are: A, B. Create the schedule from the "
               "outputs that depend on it"),
      loom::ScheduleError);
}

TEST_CASE("errors: bind with a non-thread axis, a tag bound twice, and bind mixed with annotations") {
  Graph g;
  Schedule s = create_schedule(g.D);
  const char* message =
      "bind: axis 'i' of stage 'D' must be bound to a thread axis made by thread_axis(\"threadIdx.x\") (or "
      "blockIdx.*, "
      "vthread)";
  // catalog: E-BIND-NOT-THREAD
  CHECK_THROWS_WITH_AS(s[g.D].bind(g.D.axis(0), g.D.axis(1)), Contains(message), loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].bind(g.D.axis(0), g.k), Contains(message), loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].bind(g.D.axis(0), IterVar()), Contains(message), loom::ScheduleError);

  s[g.D].bind(g.D.axis(0), thread_axis("threadIdx.x"));
  // catalog: E-BIND-TWICE
  CHECK_THROWS_WITH_AS(
      s[g.D].bind(g.D.axis(1), thread_axis("threadIdx.x")),
      Contains("bind: stage 'D' already binds another loop to 'threadIdx.x'; each thread tag can be "
               "bound once per stage"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(
      s[g.D].vectorize(g.D.axis(0)),
      Contains("vectorize: axis 'i' of stage 'D' is bound to 'threadIdx.x'; a bound loop cannot also be "
               "vectorized"),
      loom::ScheduleError);
  s[g.D].parallel(g.D.axis(1));
  // catalog: E-BIND-ANNOTATED
  CHECK_THROWS_WITH_AS(
      s[g.D].bind(g.D.axis(1), thread_axis("blockIdx.x")),
      Contains("bind: axis 'j' of stage 'D' is already parallel; a loop is either bound to a thread or "
               "annotated, not both"),
      loom::ScheduleError);
}

TEST_CASE("errors: split factors and nparts that are zero or negative, and an empty pragma key") {
  Graph g;
  Schedule s = create_schedule(g.D);
  CHECK_THROWS_WITH_AS(s[g.D].split(g.D.axis(1), 0),
                       Contains("split: the factor for axis 'j' of stage 'D' must be positive, got 0"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].split(g.D.axis(1), -3),
                       Contains("split: the factor for axis 'j' of stage 'D' must be positive, got -3"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].split(g.D.axis(0), NParts{0}),
                       Contains("split: the nparts for axis 'i' of stage 'D' must be positive, got 0"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].split(g.D.axis(0), NParts{-1}), Contains("must be positive, got -1"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].split(g.D.axis(0), Expr(2.0f)),
                       Contains("split: the factor for axis 'i' of stage 'D' must be a scalar integer"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[g.D].pragma(g.D.axis(0), ""), Contains("pragma: stage 'D': the pragma key is empty"),
                       loom::ScheduleError);
  // Nothing was changed by the failed calls.
  CHECK(s[g.D]->leaf_iter_vars.size() == 2);
}

TEST_CASE("errors: a schedule of no outputs, and scan stages whose placement is fixed") {
  // catalog: E-SCHED-EMPTY
  CHECK_THROWS_WITH_AS(create_schedule(std::vector<Tensor>{}),
                       Contains("create_schedule: give at least one output tensor"), loom::ScheduleError);
  const int m = 5, n = 4;
  Tensor X = placeholder({m, n}, f32, "X");
  Tensor state = placeholder({m, n}, f32, "state");
  Tensor init = compute(
      {1, n}, [&](Expr, Expr i) { return X(0, i); }, "init");
  Tensor update = compute(
      {m, n}, [&](Expr t, Expr i) { return state(t - 1, i) + X(t, i); }, "update");
  Tensor res = scan(init, update, state, {X}, "cum");
  Schedule s = create_schedule(res);
  CHECK_THROWS_WITH_AS(
      s[update].compute_root(),
      Contains("compute_root: stage 'update' is the update of scan 'cum' and is computed by it; its "
               "placement cannot change"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[init].compute_inline(), Contains("stage 'init' is the init of scan 'cum'"),
                       loom::ScheduleError);
}

TEST_CASE("errors: parallel or vectorize of a scan's time axis, which is ordered") {
  // cum[t] = cum[t - 1] + X[t]: step t reads the row step t - 1 wrote, so the time loop must stay
  // serial (vectorized, every step would read the old rows: 1 2 1 1 1 instead of 1 2 3 4 5).
  const int m = 5, n = 4;
  Tensor X = placeholder({m, n}, f32, "X");
  Tensor state = placeholder({m, n}, f32, "state");
  Tensor init = compute(
      {1, n}, [&](Expr, Expr i) { return X(0, i); }, "init");
  Tensor update = compute(
      {m, n}, [&](Expr t, Expr i) { return state(t - 1, i) + X(t, i); }, "update");
  Tensor res = scan(init, update, state, {X}, "cum");
  Schedule s = create_schedule(res);
  IterVar time = s[res]->leaf_iter_vars.at(0);
  // catalog: E-SPLIT-SCAN-TIME
  CHECK_THROWS_WITH_AS(
      s[res].parallel(time),
      Contains("parallel: axis 'cum.idx' of stage 'cum' is the ordered time axis of a scan: "
               "each step reads what the previous step wrote, so its iterations cannot run "
               "at once. Parallelize a data-parallel axis of the scan's update stage instead"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(
      s[res].vectorize(time),
      Contains("vectorize: axis 'cum.idx' of stage 'cum' is the ordered time axis of a scan"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(s[res].pragma(time, "vectorize"), Contains("is the ordered time axis of a scan"),
                       loom::ScheduleError);
  // Nor can it be split: the update stage is computed once per step of that very loop.
  CHECK_THROWS_WITH_AS(
      s[res].split(time, 2),
      Contains("split: axis 'cum.idx' of stage 'cum' is the time axis of a scan, whose update "
               "is computed once per step of it; it cannot be split"),
      loom::ScheduleError);

  // What the message advises works: the update's row loop runs in parallel.
  s[update].parallel(update.axis(1));
  LoweredFunc f = lower(s, {X, res}, "cum");
  CHECK(to_string(f.body).find("\"parallel\"") != std::string::npos);
  Buffer<float> x({m, n}), out({m, n});
  x.fill(1.0f);
  out.fill(0.0f);
  test::interpret_checked(f, {x, out});
  for (int t = 0; t < m; ++t)
    for (int i = 0; i < n; ++i) CHECK(out(t, i) == static_cast<float>(t + 1));
}

namespace {

/// Interprets the schedule `t` of g.D and the unscheduled one on the same data (element e is
/// (e * mul) % mod - mod / 2) and checks every value is equal.
void check_d_matches_reference(const Schedule& t, const Graph& g, int mul, int mod) {
  Buffer<float> a({Graph::n, Graph::n}), got({Graph::n, Graph::n}), reference({Graph::n, Graph::n});
  for (int64_t e = 0; e < a.num_elements(); ++e) a.at_flat(e) = static_cast<float>((e * mul) % mod - mod / 2);
  interpret(lower(t, {g.A, g.D}, "scheduled"), {a, got});
  interpret(lower(create_schedule(g.D), {g.A, g.D}, "reference"), {a, reference});
  for (int64_t e = 0; e < a.num_elements(); ++e) CHECK(got.at_flat(e) == reference.at_flat(e));
}

}  // namespace

TEST_CASE("errors: a refused tile names tile and leaves the stage as it was") {
  // Before, tile(i, j, 4, -4) split i and then threw about j, so a retry found i "already split".
  Graph g;
  Schedule s = create_schedule(g.D);
  IterVar i = g.D.axis(0), j = g.D.axis(1);
  CHECK_THROWS_WITH_AS(s[g.D].tile(i, j, 4, -4),
                       Contains("tile: the factor for axis 'j' of stage 'D' must be positive, got -4"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(
      s[g.D].tile(i, i, 4, 4),
      Contains("tile: stage 'D' was asked to tile axis 'i' with itself; pass two different axes"),
      loom::ScheduleError);
  s[g.D].parallel(j);
  CHECK_THROWS_WITH_AS(
      s[g.D].tile(i, j, 4, 4),
      Contains("tile: axis 'j' of stage 'D' is already marked parallel, which its split parts "
               "would not inherit; tile it first, then annotate the outer or inner part"),
      loom::ScheduleError);
  CHECK(s[g.D]->leaf_iter_vars.size() == 2);  // i and j, neither split
  CHECK(s[g.D]->relations.empty());
  // The same schedule takes the corrected call, and computes the right values.
  Schedule t = create_schedule(g.D);
  CHECK_THROWS_AS(t[g.D].tile(i, j, 4, -4), loom::ScheduleError);
  auto [io, jo, ii, ji] = t[g.D].tile(i, j, 5, 7);  // factors that do not divide n = 12
  CHECK(t[g.D]->leaf_iter_vars.size() == 4);
  CHECK(io.name() == "i.outer");
  CHECK(ji.name() == "j.inner");
  check_d_matches_reference(t, g, 37, 11);
}

TEST_CASE("errors: a refused fuse of a list fuses none of its axes") {
  // Before, fuse({...}) fused pair by pair and stopped at the first bad axis, leaving the first
  // axes fused, and its message named the half-fused loop ('i.j.fused').
  Graph g;
  Schedule s = create_schedule(g.C);
  IterVar i = g.C.axis(0), j = g.C.axis(1);
  const std::string fresh = schedule_state(s);
  CHECK_THROWS_WITH_AS(
      s[g.C].fuse({i, j, g.k}),
      Contains("fuse: stage 'C' cannot fuse the data-parallel axis 'j' with the reduce axis 'k'; fuse "
               "data-parallel axes with each other and reduce axes with each other"),
      loom::ScheduleError);
  CHECK(schedule_state(s) == fresh);
  CHECK(s[g.C].fuse({i, j}).name() == "i.j.fused");

  Schedule t = create_schedule(g.D);
  auto [io, ii] = t[g.D].split(g.D.axis(0), 4);
  auto [jo, ji] = t[g.D].split(g.D.axis(1), 5);
  const std::string split = schedule_state(t);
  // catalog: E-FUSE-DUPLICATE
  CHECK_THROWS_WITH_AS(
      t[g.D].fuse({io, ii, io}),
      Contains("fuse: axis 'i.outer' of stage 'D' is listed twice; list each loop once, outermost first"),
      loom::ScheduleError);
  CHECK(schedule_state(t) == split);
  CHECK_THROWS_WITH_AS(
      t[g.D].fuse({io, ii, ji}),
      Contains("fuse: axes 'i.inner' and 'j.inner' of stage 'D' are not adjacent (loop order: "
               "i.outer, i.inner, j.outer, j.inner); reorder them so that 'j.inner' directly "
               "follows 'i.inner' before fusing"),
      loom::ScheduleError);
  CHECK(schedule_state(t) == split);
  CHECK_THROWS_WITH_AS(t[g.D].fuse({ji, jo}),
                       Contains("fuse: in stage 'D', 'j.outer' is outside 'j.inner'; pass the outer loop "
                                "first: fuse(j.outer, j.inner)"),
                       loom::ScheduleError);
  CHECK(schedule_state(t) == split);
  // The same schedule takes the corrected call, and computes the right values.
  IterVar all = t[g.D].fuse({io, ii, jo, ji});
  CHECK(all.name() == "i.outer.i.inner.fused.j.outer.fused.j.inner.fused");
  CHECK(t[g.D]->leaf_iter_vars.size() == 1);
  check_d_matches_reference(t, g, 29, 13);
}

TEST_CASE("errors: a refused bind leaves no attribute entry on the loop") {
  // Before, bind created the loop's attribute entry before it found the thread tag taken, so the
  // loop looked annotated afterwards (attr(j) != nullptr).
  Graph g;
  Schedule s = create_schedule(g.D);
  IterVar i = g.D.axis(0), j = g.D.axis(1);
  s[g.D].bind(i, thread_axis("threadIdx.x"));
  const std::string bound = schedule_state(s);
  CHECK_THROWS_WITH_AS(
      s[g.D].bind(j, thread_axis("threadIdx.x")),
      Contains("bind: stage 'D' already binds another loop to 'threadIdx.x'; each thread tag "
               "can be bound once per stage"),
      loom::ScheduleError);
  CHECK(s[g.D]->attr(j) == nullptr);
  CHECK(schedule_state(s) == bound);
  s[g.D].bind(j, thread_axis("threadIdx.y"));
  REQUIRE(s[g.D]->attr(j) != nullptr);
  CHECK(s[g.D]->attr(j)->bind_thread->thread_tag == "threadIdx.y");
}

TEST_CASE("errors: a group has no loops or buffer of its own") {
  // Before, the loop and storage primitives read the group's operation, which it does not have
  // (a crash), or set fields that nothing reads (set_scope, double_buffer, fuse({})).
  Graph g;
  Schedule s = create_schedule(g.D);
  Stage group = s.create_group({g.C}, {g.A});
  REQUIRE(group.name() == "group(C,B)");
  const std::string grouped = schedule_state(s);
  // catalog: E-GROUP-NO-LOOPS
  CHECK_THROWS_WITH_AS(
      group.split(g.C.axis(0), 4),
      Contains("split: 'group(C,B)' is a group (create_group), which has no loops or buffer of "
               "its own; apply split to its member stages, or place the whole group with "
               "compute_at"),
      loom::ScheduleError);
  CHECK_THROWS_WITH_AS(group.fuse(std::vector<IterVar>{}), Contains("fuse: 'group(C,B)' is a group"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(group.set_scope("shared"), Contains("set_scope: 'group(C,B)' is a group"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(group.storage_align(g.C.axis(0), 4, 1),
                       Contains("storage_align: 'group(C,B)' is a group"), loom::ScheduleError);
  CHECK_THROWS_WITH_AS(group.swizzle(3, 0, 3), Contains("swizzle: 'group(C,B)' is a group"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(group.double_buffer(), Contains("double_buffer: 'group(C,B)' is a group"),
                       loom::ScheduleError);
  CHECK_THROWS_WITH_AS(group.set_store_predicate(Expr(true)),
                       Contains("set_store_predicate: 'group(C,B)' is a group"), loom::ScheduleError);
  CHECK_THROWS_WITH_AS(
      s[g.B].compute_at(group, g.C.axis(0)),
      Contains("compute_at: stage 'B' cannot be computed at 'group(C,B)', a group, which has no "
               "loops of its own; compute it at a loop of one of the group's member stages"),
      loom::ScheduleError);
  CHECK(schedule_state(s) == grouped);
  // What a group is for still works: placing its members together, with the right values.
  group.compute_at(s[g.D], g.D.axis(0));
  Buffer<float> a({Graph::n, Graph::n}), placed({Graph::n, Graph::n}), reference({Graph::n, Graph::n});
  for (int64_t e = 0; e < a.num_elements(); ++e) a.at_flat(e) = static_cast<float>((e * 17) % 7) - 3.0f;
  interpret(lower(s, {g.A, g.D}, "grouped"), {a, placed});
  interpret(lower(create_schedule(g.D), {g.A, g.D}, "reference"), {a, reference});
  for (int64_t e = 0; e < a.num_elements(); ++e) CHECK(placed.at_flat(e) == reference.at_flat(e));
}

TEST_CASE("errors: splitting a loop that is already bound or annotated") {
  // The split parts would not inherit the annotation, which would be dropped without a word.
  const int n = 64;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  s[C].bind(C.axis(0), thread_axis("threadIdx.x"));
  CHECK_THROWS_WITH_AS(s[C].split(C.axis(0), 16),
                       Contains("split: axis 'i' of stage 'C' is already bound to 'threadIdx.x', which its "
                                "split parts would not inherit; split it first, then annotate the outer or "
                                "inner part"),
                       loom::ScheduleError);
  Schedule t = create_schedule(C);
  t[C].parallel(C.axis(0));
  CHECK_THROWS_WITH_AS(t[C].split(C.axis(0), NParts{4}),
                       Contains("split: axis 'i' of stage 'C' is already marked parallel"),
                       loom::ScheduleError);
  CHECK(t[C]->leaf_iter_vars.size() == 1);  // the failed split changed nothing
  Schedule u = create_schedule(C);
  u[C].unroll(C.axis(0));
  CHECK_THROWS_WITH_AS(u[C].split(C.axis(0), 8), Contains("is already marked unroll"), loom::ScheduleError);
}

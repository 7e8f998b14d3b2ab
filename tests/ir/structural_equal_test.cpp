// Tests of structural equality and hashing (ir/structural_equal.hpp, ir/structural_hash.hpp): the
// kernel-cache key must match rebuilt IR whatever its variable names, and nothing else.
#include <loom/ir/bitwise_op.hpp>
#include <loom/ir/op.hpp>
#include <loom/ir/structural_equal.hpp>
#include <loom/ir/structural_hash.hpp>
#include <loom/ir/visitor.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

using namespace loom;

namespace {

// A minimal TE tensor: the IR only sees producers through this interface.
class TestProducer : public ProducerNode {
 public:
  TestProducer(std::string name, DType dtype, std::vector<Expr> shape)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)) {}
  const std::string& producer_name() const override { return name_; }
  DType producer_dtype() const override { return dtype_; }
  const std::vector<Expr>& producer_shape() const override { return shape_; }

 private:
  std::string name_;
  DType dtype_;
  std::vector<Expr> shape_;
};

Producer make_producer(std::string name, DType dtype, std::vector<Expr> shape) {
  return Producer(make_ref<TestProducer>(std::move(name), dtype, std::move(shape)));
}

bool hash_equal(const Stmt& a, const Stmt& b) { return structural_hash(a) == structural_hash(b); }

// A small matmul-like nest over free sizes n, m and buffers A, B, C, built from fresh variables
// each call. The knobs each change one thing.
struct NestOptions {
  std::string suffix = "";  // appended to every variable name: names must not matter
  int64_t unroll_factor = 4;
  bool m_extent_is_n = false;  // the inner extent reuses the free variable n instead of m
  bool swap_ij_in_store = false;
  DType acc_dtype = f32;
  ForKind outer_kind = ForKind::Parallel;
  std::string scope = "local";
};

Stmt matmul_nest(const NestOptions& o) {
  Var n("n" + o.suffix), m("m" + o.suffix);
  Var a("A" + o.suffix, handle_type), b("B" + o.suffix, handle_type), c("C" + o.suffix, handle_type);
  Var acc("acc" + o.suffix, handle_type);
  Var i("i" + o.suffix), j("j" + o.suffix), k("k" + o.suffix);
  Expr m_extent = o.m_extent_is_n ? Expr(n) : Expr(m);
  Expr zero = make_zero(o.acc_dtype);
  Stmt init = StoreNode::make(acc, zero, j);
  Expr product = LoadNode::make(f32, a, i * m_extent + k) * LoadNode::make(f32, b, k * m_extent + j);
  Stmt update = StoreNode::make(acc, LoadNode::make(o.acc_dtype, acc, j) + cast(o.acc_dtype, product), j);
  Stmt k_loop = ForNode::make(k, 0, m_extent, ForKind::Unrolled, update, "",
                              {LoopAnnotation{"pragma_auto_unroll_max_step", Expr(o.unroll_factor)}});
  Stmt j_loop = ForNode::make(j, 0, m_extent, ForKind::Serial, SeqNode::make({init, k_loop}));
  Expr out_index = o.swap_ij_in_store ? j * m_extent + i : i * m_extent + j;
  Stmt write_back =
      ForNode::make(j, 0, m_extent, ForKind::Vectorized,
                    StoreNode::make(c, cast(f32, LoadNode::make(o.acc_dtype, acc, j)), out_index));
  Stmt body = AllocateNode::make(acc, o.acc_dtype, {m_extent}, o.scope, SeqNode::make({j_loop, write_back}));
  return ForNode::make(i, 0, n, o.outer_kind, body);
}

// One IR that holds every node kind, and one knob per thing that must tell two IRs apart.
enum Tweak {
  kBase,
  kIntValue,
  kIntDType,
  kNegativeZero,
  kStringValue,
  kCallName,
  kCallKind,
  kForKind,
  kThreadTag,
  kAnnotationValue,
  kAnnotationKey,
  kAllocScope,
  kAllocDType,
  kAllocExtent,
  kBarrierScope,
  kAttrKey,
  kAssertMessage,
  kPrefetchLocality,
  kVectorLanes,
  kBroadcastValue,
  kReducerName,
  kReducerIdentity,
  kReducerCombiner,
  kReduceAxisExtent,
  kIterVarKind,
  kReduceValueIndex,
  kProducerName,
  kProducerShape,
  kRealizeScope,
  kRealizeBound,
  kFreeVarDType,
  kSwapOperands,
  kSwapLoopVars,
  kOpKind,
  kLoadPredicate,
  kElseCase,
  kCastType,
  kSeqOrder,
  kLetBody,
  kSharedFreeVar,
  kBitwiseKind,
  kTweakCount,
};

Stmt zoo(int tweak, const std::string& s) {
  auto t = [&](Tweak which) { return tweak == which; };
  Var n("n" + s), m("m" + s), scale("scale" + s, t(kFreeVarDType) ? f64 : f32);
  Var a("A" + s, handle_type), out("out" + s, handle_type), buf("buf" + s, handle_type);
  Var i("i" + s), j("j" + s), u("u" + s), lv("lv" + s), lv2("lv2" + s);
  Expr inner_extent = t(kSharedFreeVar) ? Expr(n) : Expr(m);

  Producer p = make_producer(t(kProducerName) ? "Q" : "P", f32, {n, t(kProducerShape) ? Expr(m) : Expr(n)});
  Var x0("x0" + s, f32), x1("x1" + s, f32), y0("y0" + s, f32), y1("y1" + s, f32);
  CommReducer combiner(make_ref<CommReducerNode>(
      std::vector<Var>{x0, x1}, std::vector<Var>{y0, y1},
      std::vector<Expr>{x0 + y0, t(kReducerCombiner) ? x1 + y1 : x1 * y1},
      std::vector<Expr>{make_zero(f32), FloatImmNode::make(f32, t(kReducerIdentity) ? 2.0 : 1.0)},
      t(kReducerName) ? "sum_prod2" : "sum_prod"));
  IterVar k(Range(0, t(kReduceAxisExtent) ? 8 : 16), Var("k" + s),
            t(kIterVarKind) ? IterVarKind::Ordered : IterVarKind::CommReduce);
  Expr reduce =
      ReduceNode::make(combiner, {ProducerLoadNode::make(p, {i, k}), ProducerLoadNode::make(p, {k, i})}, {k},
                       i < n, t(kReduceValueIndex) ? 1 : 0);

  Expr index = t(kSwapLoopVars) ? j * n + i : (t(kSwapOperands) ? j + i * n : i * n + j);
  Expr ints = loom::min(index - 1, loom::max(i / (j % 7 + 1), t(kOpKind) ? floordiv(j, 4) : floormod(j, 4))) +
              floordiv(i, 4);
  Expr conds = ((i == j) || (i != j)) && (!(i < j) || (i <= j) || (i > j) || (i >= j));
  Expr load = LoadNode::make(f32, a, index, t(kLoadPredicate) ? Expr(j < m) : Expr());
  Expr call = CallNode::make(f32, t(kCallName) ? "log" : "exp", {load},
                             t(kCallKind) ? CallKind::Extern : CallKind::PureIntrinsic);
  Expr zero = FloatImmNode::make(f32, t(kNegativeZero) ? -0.0 : 0.0);
  Expr value = select(conds, call, zero + CastNode::make(f32, ints));
  int lanes = t(kVectorLanes) ? 8 : 4;
  Expr vec = BroadcastNode::make(FloatImmNode::make(f32, t(kBroadcastValue) ? 2.0 : 1.0), lanes);

  Stmt scalar_store = StoreNode::make(out, value, index);
  Stmt vector_store = StoreNode::make(out, vec, RampNode::make(i * n, 1, lanes));
  Stmt seq = t(kSeqOrder) ? SeqNode::make({vector_store, scalar_store})
                          : SeqNode::make({scalar_store, vector_store});
  Stmt with_buf = AllocateNode::make(buf, t(kAllocDType) ? f16 : f32, {t(kAllocExtent) ? 32 : 16},
                                     t(kAllocScope) ? "local" : "shared",
                                     SeqNode::make({StoreNode::make(buf, LoadNode::make(f32, a, j), j),
                                                    BarrierNode::make(t(kBarrierScope) ? "global" : "shared"),
                                                    StoreNode::make(out, LoadNode::make(f32, buf, j), j)}));
  Stmt evaluates = SeqNode::make({
      EvaluateNode::make(StringImmNode::make(t(kStringValue) ? "world" : "hello")),
      EvaluateNode::make(CastNode::make(t(kCastType) ? i64 : i16,
                                        IntImmNode::make(t(kIntDType) ? i64 : i32, t(kIntValue) ? 7 : 5))),
      EvaluateNode::make(LetNode::make(lv, i * 2, t(kLetBody) ? lv + i : lv + lv)),
      EvaluateNode::make(((i & j) | (t(kBitwiseKind) ? (i | j) : (i ^ j))) + ((i << 2) >> j)),
      EvaluateNode::make(reduce),
      EvaluateNode::make(scale),
      PrefetchNode::make(load, 0, t(kPrefetchLocality) ? 1 : 3),
  });
  Stmt guarded = IfThenElseNode::make(i < n, seq, t(kElseCase) ? EvaluateNode::make(0) : Stmt());
  Stmt body = SeqNode::make({guarded, with_buf, evaluates});
  Stmt j_loop = ForNode::make(j, 0, inner_extent, ForKind::ThreadBinding, body,
                              t(kThreadTag) ? "threadIdx.y" : "threadIdx.x");
  Stmt u_loop = ForNode::make(
      u, 0, 4, ForKind::Unrolled, EvaluateNode::make(u), "",
      {LoopAnnotation{t(kAnnotationKey) ? "pragma_b" : "pragma_a", Expr(t(kAnnotationValue) ? 2 : 1)}});
  Stmt i_body = SeqNode::make({j_loop, u_loop});
  Stmt i_loop = ForNode::make(i, 0, n, t(kForKind) ? ForKind::Serial : ForKind::Parallel, i_body);
  Stmt realize = RealizeNode::make(
      p, {Range(0, n), Range(0, t(kRealizeBound) ? Expr(m) : Expr(n))}, t(kRealizeScope) ? "local" : "global",
      SeqNode::make({ProvideNode::make(p, {n - 1, n - 1}, FloatImmNode::make(f32, 0.5)), i_loop}));
  Stmt attr =
      AttrStmtNode::make(t(kAttrKey) ? "pragma_y" : "pragma_x", StringImmNode::make("all"), 1, realize);
  Stmt asserted =
      AssertStmtNode::make(n > 0, t(kAssertMessage) ? "n must be > 0" : "n must be positive", attr);
  return LetStmtNode::make(lv2, n * m, SeqNode::make({asserted, EvaluateNode::make(lv2 + 1)}));
}

// Records the kind of every expression and statement a walk reaches.
class KindCollector : public IRVisitor {
 public:
  std::set<IRNodeKind> kinds;
  void visit_expr(const Expr& e) override {
    if (e.defined()) kinds.insert(e.kind());
    IRVisitor::visit_expr(e);
  }
  void visit_stmt(const Stmt& s) override {
    if (s.defined()) kinds.insert(s.kind());
    IRVisitor::visit_stmt(s);
  }
};

}  // namespace

TEST_CASE("structural_equal: independently built identical loop nests are equal and hash equal") {
  Stmt a = matmul_nest({.suffix = ""});
  Stmt b = matmul_nest({.suffix = ""});          // same names, fresh Var objects
  Stmt c = matmul_nest({.suffix = "_renamed"});  // other names
  REQUIRE_FALSE(a.same_as(b));
  CHECK(structural_equal(a, b));
  CHECK(structural_equal(a, c));
  CHECK(structural_equal(c, a));
  CHECK(structural_hash(a) == structural_hash(b));
  CHECK(structural_hash(a) == structural_hash(c));
  CHECK(structural_equal(a, a));
  CHECK(StructuralEqual()(a, c));
  CHECK(StructuralHash()(a) == StructuralHash()(c));
}

TEST_CASE("structural_equal: changing one thing in a loop nest makes it unequal and hash differently") {
  Stmt base = matmul_nest({});
  std::vector<std::pair<const char*, NestOptions>> changes = {
      {"a constant", {.unroll_factor = 8}},
      {"an extent", {.m_extent_is_n = true}},
      {"swapped loop variables", {.swap_ij_in_store = true}},
      {"a dtype", {.acc_dtype = f64}},
      {"a ForKind", {.outer_kind = ForKind::Serial}},
      {"a scope", {.scope = "shared"}},
  };
  for (const auto& change : changes) {
    const std::string what = change.first;  // not a structured binding: Clang 14's CAPTURE rejects those
    const NestOptions& options = change.second;
    CAPTURE(what);
    Stmt changed = matmul_nest(options);
    CHECK_FALSE(structural_equal(base, changed));
    CHECK_FALSE(structural_equal(changed, base));
    CHECK_FALSE(hash_equal(base, changed));
    CHECK(structural_equal(changed, matmul_nest(options)));  // and the changed nest equals itself rebuilt
  }
}

TEST_CASE("structural_equal: variables match by position, bijectively, never by name") {
  Var x("x"), y("y"), x_again("x");
  SUBCASE("one free variable used twice is not two free variables") {
    CHECK_FALSE(structural_equal(x + x, x + y));
    CHECK_FALSE(structural_equal(x + y, x + x));  // the reverse map must be consistent too
    CHECK(structural_hash(x + x) != structural_hash(x + y));
    CHECK(structural_equal(x + y, y + x));  // x<->y is a consistent renaming
    CHECK(structural_hash(x + y) == structural_hash(y + x));
  }
  SUBCASE("two variables that share a name are still two variables") {
    CHECK_FALSE(structural_equal(x + x, x + x_again));
    CHECK(structural_equal(x + x_again, x + y));
  }
  SUBCASE("a variable's dtype matters") {
    CHECK_FALSE(structural_equal(Var("x", i32), Var("x", i64)));
    CHECK(structural_hash(Var("x", i32)) != structural_hash(Var("x", i64)));
  }
  SUBCASE("a bound variable does not match a free one") {
    Var i("i"), j("j"), buf("buf", handle_type);
    Stmt bound = ForNode::make(i, 0, 8, ForKind::Serial, StoreNode::make(buf, 0, i));
    Stmt free = ForNode::make(i, 0, 8, ForKind::Serial, StoreNode::make(buf, 0, j));
    CHECK_FALSE(structural_equal(bound, free));
    CHECK_FALSE(hash_equal(bound, free));
  }
  SUBCASE("let-bound variables compare by binding site") {
    Var v("v"), w("w");
    CHECK(structural_equal(LetNode::make(v, 1, v + 1), LetNode::make(w, 1, w + 1)));
    CHECK(structural_hash(LetNode::make(v, 1, v + 1)) == structural_hash(LetNode::make(w, 1, w + 1)));
    CHECK_FALSE(structural_equal(LetNode::make(v, 1, v + 1), LetNode::make(w, 1, x + 1)));
  }
}

TEST_CASE("structural_equal: float constants compare by bit pattern") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(structural_equal(FloatImmNode::make(f32, nan), FloatImmNode::make(f32, nan)));
  CHECK(structural_hash(FloatImmNode::make(f32, nan)) == structural_hash(FloatImmNode::make(f32, nan)));
  CHECK_FALSE(structural_equal(FloatImmNode::make(f32, 0.0), FloatImmNode::make(f32, -0.0)));
  CHECK(structural_hash(FloatImmNode::make(f32, 0.0)) != structural_hash(FloatImmNode::make(f32, -0.0)));
  CHECK_FALSE(structural_equal(FloatImmNode::make(f32, 1.0), FloatImmNode::make(f64, 1.0)));
  CHECK_FALSE(structural_equal(IntImmNode::make(i32, 1), FloatImmNode::make(f32, 1.0)));
}

TEST_CASE("structural_equal: every node kind, and every field that must differ") {
  // The zoo must reach every node kind, or a field of a forgotten node would go untested.
  KindCollector collector;
  collector.visit_stmt(zoo(kBase, ""));
#define LOOM_CHECK_KIND(name, node) \
  CHECK_MESSAGE(collector.kinds.count(IRNodeKind::name), #name " not in the zoo");
  LOOM_EXPR_NODES(LOOM_CHECK_KIND)
  LOOM_STMT_NODES(LOOM_CHECK_KIND)
#undef LOOM_CHECK_KIND

  Stmt base = zoo(kBase, "_a");
  std::set<uint64_t> hashes;
  for (int tweak = kBase; tweak < kTweakCount; ++tweak) {
    CAPTURE(tweak);
    Stmt a = zoo(tweak, "_a"), b = zoo(tweak, "_b");
    CHECK(structural_equal(a, b));
    CHECK(hash_equal(a, b));
    if (tweak != kBase) {
      CHECK_FALSE(structural_equal(base, a));
      CHECK_FALSE(structural_equal(a, base));
    }
    hashes.insert(structural_hash(a));
  }
  CHECK(hashes.size() == static_cast<size_t>(kTweakCount));  // all distinct
}

TEST_CASE("structural_equal: producers compare by name, dtype and shape") {
  Var n("n"), i("i");
  auto load = [&](const char* name, DType t, Expr extent) {
    return ProducerLoadNode::make(make_producer(name, t, {extent}), {i});
  };
  CHECK(structural_equal(load("A", f32, n), load("A", f32, n)));
  CHECK(structural_hash(load("A", f32, n)) == structural_hash(load("A", f32, n)));
  CHECK(structural_equal(load("A", f32, n), load("A", f32, Var("m"))));  // a renamed free size
  CHECK_FALSE(structural_equal(load("A", f32, n), load("B", f32, n)));
  CHECK_FALSE(structural_equal(load("A", f32, n), load("A", f16, n)));
  CHECK_FALSE(structural_equal(load("A", f32, n), load("A", f32, 16)));
  CHECK(structural_hash(load("A", f32, n)) != structural_hash(load("B", f32, n)));
}

TEST_CASE("structural_equal: one mapping across several roots (parameters, then body)") {
  auto make = [](bool swap_params) {
    Var a("A", handle_type), n("n"), i("i");
    Stmt body = ForNode::make(i, 0, n, ForKind::Serial, StoreNode::make(a, 0.0f, i));
    std::vector<Expr> params = swap_params ? std::vector<Expr>{n, a} : std::vector<Expr>{a, n};
    return std::make_pair(params, body);
  };
  auto [params_a, body_a] = make(false);
  auto [params_b, body_b] = make(false);
  auto [params_c, body_c] = make(true);

  StructuralEqualChecker same;
  CHECK(same.equal(params_a, params_b));
  CHECK(same.equal(body_a, body_b));
  CHECK(StructuralHasher().add(params_a).add(body_a).value() ==
        StructuralHasher().add(params_b).add(body_b).value());

  // Bodies alone are equal, but not under parameters passed in another order.
  CHECK(structural_equal(body_a, body_c));
  StructuralEqualChecker swapped;
  CHECK_FALSE(swapped.equal(params_a, params_c));
  CHECK_FALSE(swapped.equal(body_a, body_c));  // a failed checker stays failed
  CHECK(StructuralHasher().add(params_a).add(body_a).value() !=
        StructuralHasher().add(params_c).add(body_c).value());
}

TEST_CASE("structural_equal: shared subtrees are walked once") {
  // 2^80 paths from the root to x: only a walk that remembers shared nodes finishes.
  auto tower = [](const Var& x, int leaf) {
    Expr e = x + leaf;
    for (int level = 0; level < 80; ++level) e = e * e;
    return e;
  };
  Var x("x"), y("y");
  CHECK(structural_equal(tower(x, 1), tower(y, 1)));
  CHECK(structural_hash(tower(x, 1)) == structural_hash(tower(y, 1)));
  CHECK_FALSE(structural_equal(tower(x, 1), tower(y, 2)));
  CHECK(structural_hash(tower(x, 1)) != structural_hash(tower(y, 2)));
}

TEST_CASE("structural_equal: functors key an unordered_map on IR") {
  std::unordered_map<Stmt, int, StructuralHash, StructuralEqual> cache;
  cache.emplace(matmul_nest({}), 1);
  cache.emplace(matmul_nest({.scope = "shared"}), 2);
  CHECK(cache.size() == 2);
  CHECK(cache.at(matmul_nest({.suffix = "_again"})) == 1);
  CHECK(cache.at(matmul_nest({.suffix = "_again", .scope = "shared"})) == 2);
  CHECK(cache.count(matmul_nest({.outer_kind = ForKind::Serial})) == 0);
}

TEST_CASE("structural_hash: the mixing functions are the published ones") {
  // FNV-1a 64 test vectors, and splitmix64's first output for seed 0.
  static_assert(detail::shash::fnv1a("") == 0xcbf29ce484222325ULL);
  static_assert(detail::shash::fnv1a("a") == 0xaf63dc4c8601ec8cULL);
  static_assert(detail::shash::mix(0x9e3779b97f4a7c15ULL) == 0xe220a8397b1dcdafULL);
  CHECK(detail::shash::combine(1, 2) != detail::shash::combine(2, 1));
}

// The hash keys the on-disk kernel cache, read by other processes and other builds: these
// literals change only when the hash function or a field list changes on purpose. Then update
// them, and say so in the change, since every cached kernel on disk is invalidated.
TEST_CASE("structural_hash: golden values") {
  Var x("x");
  Expr e = x * 2 + 1;
  CHECK(structural_hash(e) == 0x69d3b96f3644ace2ULL);
  CHECK(structural_hash(Var("renamed") * 2 + 1) == structural_hash(e));

  Var i("i"), buf("buf", handle_type);
  Stmt loop = ForNode::make(i, 0, 16, ForKind::Vectorized, StoreNode::make(buf, cast(f32, i) * 0.5f, i));
  CHECK(structural_hash(loop) == 0x6aacfe732f258b4aULL);
}

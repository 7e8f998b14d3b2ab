// inject_virtual_thread: virtual-thread loops become interleaved copies of the code that depends on
// them, with everything else (shared loads, loops of all threads) emitted once; local buffers get
// one copy per virtual thread. Checked on the printed IR and against the reference results.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "../cuda/cuda_test_util.hpp"
#include "../runtime/interp_test_util.hpp"
#include "../support/count_stmts.hpp"
#include "../support/interpret_checked.hpp"
#include "lower_test_util.hpp"

using namespace loom;
using namespace loom::lower_test;

namespace {

/// Loops bound to a virtual-thread tag left in `s`.
int vthread_loops(const Stmt& s) {
  return test::count_stmts(s, [](const Stmt& st) {
    const auto* loop = st.as<ForNode>();
    return loop && loop->kind == ForKind::ThreadBinding && is_virtual_thread_tag(loop->thread_tag);
  });
}

/// Stores into the buffer called `name`, and loops whose variable is called `loop`, in `s`.
int stores_into(const Stmt& s, const std::string& name) {
  return test::count_stmts(s, [&](const Stmt& st) {
    const auto* store = st.as<StoreNode>();
    return store && store->buffer.name() == name;
  });
}

int loops_named(const Stmt& s, const std::string& loop) {
  return test::count_stmts(s, [&](const Stmt& st) {
    const auto* f = st.as<ForNode>();
    return f && f->loop_var.name() == loop;
  });
}

/// B = A * A + 1 (m x n) through a local cache, over vthread.y (2) x vthread.x (3) on the CPU.
struct LocalVthreads {
  Tensor A, B;
  Schedule s;
};

LocalVthreads local_vthreads(int m, int n, int vy_parts, int vx_parts) {
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * A(i, j) + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  Tensor BL = s.cache_write(B, "local");
  auto [vy, yi] = s[B].split(B.axis(0), NParts{vy_parts});
  auto [vx, xi] = s[B].split(B.axis(1), NParts{vx_parts});
  s[B].reorder({vy, vx, yi, xi});
  s[B].bind(vy, thread_axis("vthread.y"));
  s[B].bind(vx, thread_axis("vthread.x"));
  s[BL].compute_at(s[B], vx);
  return {A, B, s};
}

}  // namespace

TEST_CASE("inject_virtual_thread: the vthread GEMM loads its shared tiles once and keeps 4 accumulators") {
  const int n = 64;
  cuda_test::Case g = cuda_test::vthread_gemm(n);
  LoweredFunc f = lower(g.s, g.args, g.name);
  const std::string text = f.to_string();
  MESSAGE(text);
  CHECK(vthread_loops(f.body) == 0);
  CHECK(!contains(text, "IterVar(vthread"));
  // The tile loads and the reduction loop are the same for all 2x2 virtual threads: emitted once.
  CHECK(stores_into(f.body, "A.shared") == 1);
  CHECK(stores_into(f.body, "B.shared") == 1);
  CHECK(loops_named(f.body, "k.outer") == 1);
  // The 4x4 accumulator of each virtual thread lives side by side: 4 x 16 elements, initialised,
  // updated and written back once per virtual thread.
  CHECK(contains(text, "allocate(C.local: Pointer(local float32), float32, [64]), storage_scope = local"));
  CHECK(stores_into(f.body, "C.local") == 8);
  CHECK(stores_into(f.body, "C") == 4);
  for (const char* offset : {"+ 16)]", "+ 32)]", "+ 48)]"}) CHECK(contains(text, offset));
  // Each virtual thread reads its own rows of A.shared (vthread.y) and columns of B.shared (vthread.x).
  CHECK(contains(text, "A.shared[((((threadIdx.y*32) + (i.c*8)) + k.inner) + 128)]"));
  CHECK(contains(text, "B.shared[((((k.inner*32) + (threadIdx.x*4)) + j.c) + 16)]"));
}

TEST_CASE("inject_virtual_thread: dynamic shared tiles are the block's too: loaded once, not copied") {
  cuda_test::Case g = cuda_test::vthread_gemm(64, "shared.dyn");
  LoweredFunc f = lower(g.s, g.args, g.name);
  CHECK(vthread_loops(f.body) == 0);
  // Taken for a thread's own buffer, each tile would get one copy per virtual thread (4 x 256
  // elements) and four loads.
  CHECK(stores_into(f.body, "A.shared.dyn") == 1);
  CHECK(stores_into(f.body, "B.shared.dyn") == 1);
  const int one_tile = test::count_stmts(f.body, [](const Stmt& st) {
    const auto* a = st.as<AllocateNode>();
    if (!a || a->buffer.name() != "A.shared.dyn") return false;
    int64_t elements = 1;
    for (const Expr& e : a->extents) elements *= as_const_int(e) ? *as_const_int(e) : -1;
    return elements == 32 * 8;
  });
  CHECK(one_tile == 1);
  Buffer<float> a = random_buffer({64, 64}, 5), b = random_buffer({64, 64}, 6), c({64, 64});
  test::interpret_checked(f, {a, b, c});
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      double acc = 0;
      for (int k = 0; k < 64; ++k) acc += static_cast<double>(a(i, k)) * b(k, j);
      REQUIRE(std::abs(c(i, j) - acc) <= 1e-4 * (1 + std::abs(acc)));
    }
}

TEST_CASE("inject_virtual_thread: the vthread GEMM gives the reference result on the interpreter") {
  for (int n : {64, 45}) {  // 45: neither the 32-wide block tile nor the 8-deep k tile divides it
    CAPTURE(n);
    cuda_test::Case g = cuda_test::vthread_gemm(n);
    LoweredFunc f = lower(g.s, g.args, g.name);
    CHECK(vthread_loops(f.body) == 0);
    Buffer<float> a = random_buffer({n, n}, 3), b = random_buffer({n, n}, 4), c({n, n});
    test::interpret_checked(f, {a, b, c});
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int k = 0; k < n; ++k) acc += static_cast<double>(a(i, k)) * b(k, j);
        REQUIRE(std::abs(c(i, j) - acc) <= 1e-4 * (1 + std::abs(acc)));
      }
  }
}

TEST_CASE("inject_virtual_thread: nested vthreads expand a local buffer written per virtual thread") {
  const int m = 13, n = 10;  // split into 2 x 3 virtual threads of 7 x 4 elements, with a guard
  LocalVthreads c = local_vthreads(m, n, 2, 3);
  LoweredFunc f = lower(c.s, {c.A, c.B}, "local_vthreads");
  const std::string text = f.to_string();
  MESSAGE(text);
  CHECK(vthread_loops(f.body) == 0);
  CHECK(!contains(text, "IterVar(vthread"));
  // 7 x 4 elements per virtual thread, 6 virtual threads side by side; every copy stores its own.
  CHECK(contains(text, "allocate(B.local: Pointer(local float32), float32, [168]), storage_scope = local"));
  CHECK(stores_into(f.body, "B.local") == 6);
  CHECK(stores_into(f.body, "B") == 6);
  Buffer<float> a = random_buffer({m, n}, 5), b({m, n});
  test::interpret_checked(f, {a, b});  // the CPU JIT runs it too: no GPU thread is bound
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) REQUIRE(b(i, j) == a(i, j) * a(i, j) + 1.0f);
}

TEST_CASE("inject_virtual_thread: a virtual-thread count known only at run time stays a serial loop") {
  Var n("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 3.0f; }, "B");
  Schedule s = create_schedule(B);
  Tensor BL = s.cache_write(B, "local");
  auto [v, in] = s[B].split(B.axis(0), 4);  // ceil(n / 4) virtual threads
  s[B].bind(v, thread_axis("vthread"));
  s[BL].compute_at(s[B], v);
  LoweredFunc f = lower(s, {A, B}, "symbolic_vthread");
  const std::string text = f.to_string();
  MESSAGE(text);
  CHECK(vthread_loops(f.body) == 0);
  CHECK(loops_named(f.body, "vthread") == 1);
  CHECK(contains(text, "for (vthread: int32, 0, floordiv((n + 3), 4))"));
  for (int size : {1, 4, 13}) {
    CAPTURE(size);
    Buffer<float> a = random_buffer({size}, 6), b({size});
    test::interpret_checked(f, {a, b});
    for (int i = 0; i < size; ++i) REQUIRE(b(i) == a(i) * 3.0f);
  }
}

TEST_CASE("inject_virtual_thread: hand-written IR keeps its results; large copies become a serial loop") {
  using namespace loom::test;
  const int vthreads = 3, tile = 4, big = 200;
  BufferParam in = buffer_param("in", f32, {big}), out = buffer_param("out", f32, {vthreads * tile});
  BufferParam wide = buffer_param("wide", f32, {vthreads * big}), once = buffer_param("once", f32, {1});
  Var v("v"), i("i"), j("j");
  Var tmp("tmp", handle_type);
  // Per virtual thread: tmp[i] = 10 v + i + in[i]; out[v * 4 + i] = 2 tmp[i]. The same for all:
  // once[0] = in[0] * 2. Guarded by v < 2, a straight line of 200 stores: too large to copy 3 times.
  std::vector<Stmt> wide_stores;
  for (int k = 0; k < big; ++k)
    wide_stores.push_back(store(wide, load(in, k) + static_cast<float>(k), v * big + k));
  Stmt body = SeqNode::make({
      store(once, load(in, 0) * 2.0f, 0),
      AllocateNode::make(
          tmp, f32, {tile}, "local",
          SeqNode::make({loop(i, 0, tile, StoreNode::make(tmp, cast(f32, v * 10 + i) + load(in, i), i)),
                         loop(j, 0, tile, store(out, LoadNode::make(f32, tmp, j) * 2.0f, v * tile + j))})),
      IfThenElseNode::make(v < 2, SeqNode::make(wide_stores)),
  });
  Stmt original = ForNode::make(v, 0, vthreads, ForKind::ThreadBinding, body, "vthread");
  Stmt injected = inject_virtual_thread(original);
  const std::string text = to_string(injected);
  MESSAGE(text);
  CHECK(vthread_loops(injected) == 0);
  CHECK(stores_into(injected, "once") == 1);
  CHECK(stores_into(injected, "out") == vthreads);
  CHECK(stores_into(injected, "tmp") == vthreads);
  CHECK(contains(text, cat("allocate(tmp: Pointer(local float32), float32, [", vthreads * tile, "])")));
  CHECK(loops_named(injected, "v") == 1);  // the guarded straight line: a serial loop over v
  CHECK(stores_into(injected, "wide") == big);
  CHECK(contains(text, "for (v: int32, 0, 3)"));

  Buffer<float> a = random_buffer({big}, 7);
  Buffer<float> out_ref({vthreads * tile}), wide_ref({vthreads * big}), once_ref({1});
  Buffer<float> out_new({vthreads * tile}), wide_new({vthreads * big}), once_new({1});
  for (Buffer<float>* b : {&out_ref, &wide_ref, &once_ref, &out_new, &wide_new, &once_new}) b->fill(0.0f);
  std::vector<FuncParam> params{param(in), param(out), param(wide), param(once)};
  test::interpret_checked(make_func("ref", params, original), {a, out_ref, wide_ref, once_ref});
  test::interpret_checked(make_func("injected", params, injected), {a, out_new, wide_new, once_new});
  for (int k = 0; k < vthreads * tile; ++k) REQUIRE(out_new.at_flat(k) == out_ref.at_flat(k));
  for (int k = 0; k < vthreads * big; ++k) REQUIRE(wide_new.at_flat(k) == wide_ref.at_flat(k));
  CHECK(once_new.at_flat(0) == once_ref.at_flat(0));
  CHECK(wide_new.at_flat(2 * big) == 0.0f);  // virtual thread 2 is outside the guard
  CHECK(out_ref.at_flat(2 * tile + 1) == 2.0f * (21.0f + a.at_flat(1)));
}

TEST_CASE("inject_virtual_thread: a local buffer handed to a call as a pointer keeps the loop serial") {
  using namespace loom::test;
  BufferParam out = buffer_param("out", f32, {8});
  Var v("v"), tmp("tmp", handle_type);
  // fill(tmp, v) writes tmp where the pass cannot see it: per-thread copies could not be addressed.
  Stmt body = AllocateNode::make(
      tmp, f32, {4}, "local",
      SeqNode::make({EvaluateNode::make(CallNode::make(i32, "fill", {tmp, v}, CallKind::Extern)),
                     store(out, LoadNode::make(f32, tmp, 0), v)}));
  Stmt injected = inject_virtual_thread(ForNode::make(v, 0, 2, ForKind::ThreadBinding, body, "vthread.x"));
  MESSAGE(to_string(injected));
  CHECK(vthread_loops(injected) == 0);
  const auto* loop = injected.as<ForNode>();
  REQUIRE(loop);
  CHECK(loop->kind == ForKind::Serial);
  CHECK(loop->body.same_as(body));
}

TEST_CASE(
    "inject_virtual_thread: an rfactor'ed reduction over 3 vthreads, partial sums in a global temporary") {
  const int n = 11, m = 29;  // 29 = 3 virtual threads of 10 (the last one guarded)
  Tensor A = placeholder({n, m}, f32, "A");
  IterVar k = reduce_axis(0, m, "k");
  Tensor B = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  auto [kv, ki] = s[B].split(B.reduce_axis(0), NParts{3});
  Tensor BF = s.rfactor(B, kv);  // BF[kv, i]: one partial sum per virtual thread
  s[BF].bind(BF.axis(0), thread_axis("vthread"));
  LoweredFunc f = lower(s, {A, B}, "vthread_rfactor");
  const std::string text = f.to_string();
  MESSAGE(text);
  CHECK(vthread_loops(f.body) == 0);
  CHECK(stores_into(f.body, "B.rf") == 6);  // init and update, once per virtual thread
  Buffer<float> a = random_buffer({n, m}, 8), b({n});
  test::interpret_checked(f, {a, b});
  for (int i = 0; i < n; ++i) {
    double acc = 0;
    for (int j = 0; j < m; ++j) acc += a(i, j);
    REQUIRE(std::abs(b(i) - acc) <= 1e-5 * (1 + std::abs(acc)));
  }
}

// tensorize(axis, intrinsic): replaces the loop nest under `axis` by a tensor intrinsic, after
// checking that the nest computes what the intrinsic says it computes (here a 16 x 64 gemv).
//
// Two bodies for the same intrinsic: the tutorial's call to an extern C function
// gemv_update(c, a, b, m, l, stride) (registered with register_extern_c), and the same gemv
// written as inline IR. Both are run and checked.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

// The C routine the tutorial's intrinsic calls: c[i] = sum_k a[k] * b[i * stride + k].
extern "C" int gemv_update(float* c, const float* a, const float* b, int m, int l, int stride) {
  for (int i = 0; i < m; ++i) {
    float sum = 0.0f;
    for (int k = 0; k < l; ++k) sum += a[k] * b[i * stride + k];
    c[i] = sum;
  }
  return 0;
}

// c[i] = sum_k a[k] * b[i, k], for an m x l block of b. `extern_call` picks the body: the
// tutorial's call to gemv_update, or the same loops written as IR.
static TensorIntrin intrin_gemv(int m, int l, bool extern_call) {
  Tensor a = placeholder({l}, f32, "a");
  Tensor b = placeholder({m, l}, f32, "b");
  IterVar k = reduce_axis(0, l, "k");
  Tensor c = compute(
      {m}, [&](Expr i) { return sum(a(k) * b(i, k), {k}); }, "c");
  if (extern_call)
    return decl_tensor_intrin(
        c,
        [m, l](const std::vector<BufferRegion>& ins, const std::vector<BufferRegion>& outs) {
          const BufferRegion &aa = ins[0], &bb = ins[1], &cc = outs[0];
          return EvaluateNode::make(call_extern(
              i32, "gemv_update", {cc.access_ptr(), aa.access_ptr(), bb.access_ptr(), m, l, bb.strides[0]}));
        },
        "gemv_update");
  return decl_tensor_intrin(
      c,
      [m, l](const std::vector<BufferRegion>& ins, const std::vector<BufferRegion>& outs) {
        const BufferRegion &aa = ins[0], &bb = ins[1], &cc = outs[0];
        Var i("i"), kk("k");
        Stmt update = cc.store({i}, cc.load({i}) + aa.load({kk}) * bb.load({i, kk}));
        Stmt row = SeqNode::make({cc.store({i}, 0.0f), ForNode::make(kk, 0, l, ForKind::Serial, update)});
        return ForNode::make(i, 0, m, ForKind::Serial, row);
      },
      "gemv");
}

struct Lowered {
  LoweredFunc before, after, after_extern;
};

static Lowered build(int N, int M, int L) {
  Tensor A = placeholder({N, L}, f32, "A");
  Tensor B = placeholder({M, L}, f32, "B");
  IterVar k = reduce_axis(0, L, "k");
  Tensor C = compute(
      {N, M}, [&](Expr i, Expr j) { return sum(A(i, k) * B(j, k), {k}); }, "C");

  const int factor = 16;
  Schedule s = create_schedule(C);
  IterVar x = C.axis(0), y = C.axis(1), z = C.reduce_axis(0);
  auto [yo, yi] = s[C].split(y, factor);
  s[C].reorder({x, yo, yi, z});
  Lowered out;
  out.before = lower(s, {A, B, C}, "main");
  Schedule s_extern = s.copy();
  s[C].tensorize(yi, intrin_gemv(factor, L, false));
  out.after = lower(s, {A, B, C}, "main");
  s_extern[C].tensorize(yi, intrin_gemv(factor, L, true));
  out.after_extern = lower(s_extern, {A, B, C}, "main");
  return out;
}

static void check(const Lowered& f, int N, int M, int L) {
  Buffer<float> a({N, L}), b({M, L}), c_before({N, M}), c_after({N, M}), c_extern({N, M});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  interpret(f.before, {a, b, c_before});
  interpret(f.after, {a, b, c_after});
  interpret(f.after_extern, {a, b, c_extern});
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < M; ++j) {
      float expected = 0.0f;
      for (int k = 0; k < L; ++k) expected += a(i, k) * b(j, k);
      example::expect_close(c_before(i, j), expected, "C[i, j] before tensorize");
    }
  example::expect_all_close(c_after, c_before, "C[i, j] after tensorize");
  example::expect_all_close(c_extern, c_before, "C[i, j] after tensorize with gemv_update");
}

int main() {
  register_extern_c("gemv_update", &gemv_update);
  const int N = 1024, M = 512, L = 64;
  Lowered f = build(N, M, L);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << "\n";
  std::cout << "With the tutorial's extern gemv_update:\n" << f.after_extern << std::endl;
  // 32M multiply-adds take a few seconds on the interpreter: check a smaller C with the same
  // schedule. (The intrinsic covers exactly 16 columns, so M stays a multiple of 16.)
  check(build(37, 64, L), 37, 64, L);
  std::cout << "ok\n";
}

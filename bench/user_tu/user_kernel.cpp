// The fixed user file that bench/user_tu_compile.sh compiles: a new user's first kernel (y = 2x + 1,
// split and vectorized, JIT-compiled for this CPU and called) and one library GEMM, built and called.
#include <loom/lib/gemm.hpp>
#include <loom/loom.hpp>

using namespace loom;

int main() {
  Tensor A = placeholder({1024}, f32, "A");
  Tensor B = compute({1024}, [&](Expr i) { return A(i) * 2.0f + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 16);
  s[B].vectorize(xi);
  Kernel f = build(s, {A, B}, Target::cpu());
  Buffer<float> a({1024}), b({1024});
  f(a, b);

  lib::Gemm g = lib::gemm({.m = 64, .n = 64, .k = 64});
  Kernel gemm = build(g.schedule, g.args(), Target::cpu());
  Buffer<float> x({64, 64}), y({64, 64}), z({64, 64});
  gemm(x, y, z);
  return b.data()[0] == 1.0f ? 0 : 1;
}

// A consumer of Loom: defines, lowers and interprets a small kernel (and, with the LLVM backend,
// builds and calls it), to show that the headers and the CMake targets work from an installed or
// embedded Loom, in separate compilation (loom::loom, loom::jit) and header-only (loom::headers).
#ifdef LOOM_CONSUMER_JIT
#include <loom/loom.hpp>
#else
#include <loom/core.hpp>
#endif

#include <iostream>

int main() {
  using namespace loom;
  std::cout << "loom " << loom::version() << "\n";
  Var i("i");
  Expr e = i * 2 + 1;
  std::cout << e << "\n";

  Tensor A = placeholder({10}, f32, "A");
  Tensor B = compute(
      {10}, [&](Expr x) { return A(x) * 2.0f + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 4);
  (void)xo;
  (void)xi;
  LoweredFunc f = lower(s, {A, B}, "double_plus_one");
  Buffer<float> a({10}), b({10});
  for (int k = 0; k < 10; ++k) a.data()[k] = static_cast<float>(k);
  interpret(f, {a, b});
  if (b.data()[9] != 19.0f) {
    std::cout << "interpret: B[9] = " << b.data()[9] << ", expected 19\n";
    return 1;
  }
#ifdef LOOM_CONSUMER_JIT
  Buffer<float> c({10});
  build(s, {A, B}, Target::cpu())(a, c);
  if (c.data()[9] != 19.0f) {
    std::cout << "build: B[9] = " << c.data()[9] << ", expected 19\n";
    return 1;
  }
  std::cout << "jit ok\n";
#endif
  std::cout << "ok\n";
  return 0;
}

// compute_inline(): removes a stage by substituting its expression into every consumer, so
// its buffer and loop nest disappear (here the zero padding of a convolution's input).
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

struct Lowered {
  LoweredFunc before, after;
};

static const int kernel = 3, pad = 2;

static Lowered build(int n) {
  const int m = (n - kernel + 2 * pad) + 1;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor W = placeholder({kernel, kernel}, f32, "W");
  Tensor Apad = compute({n + 2 * pad, n + 2 * pad},
                        [&](Expr yy, Expr xx) {
                          return if_then_else(all(yy >= pad, yy < pad + n, xx >= pad, xx < pad + n),
                                              A(yy - pad, xx - pad), 0.0f);
                        },
                        "Apad", "", {"yy", "xx"});
  IterVar ry = reduce_axis(0, kernel, "ry"), rx = reduce_axis(0, kernel, "rx");
  Tensor B = compute({m, m},
                     [&](Expr yy, Expr xx) {
                       return sum(Apad(yy + ry, xx + rx) * W(ry, rx), {ry, rx});
                     },
                     "B", "", {"yy", "xx"});

  Schedule s = create_schedule(B);
  Lowered out;
  out.before = lower(s, {A, W, B}, "main");
  s[Apad].compute_inline();
  out.after = lower(s, {A, W, B}, "main");
  return out;
}

static void check(const Lowered& f, int n) {
  const int m = (n - kernel + 2 * pad) + 1;
  Buffer<float> a({n, n}), w({kernel, kernel}), b_before({m, m}), b_after({m, m});
  example::fill_random(a, 1);
  example::fill_random(w, 2);
  interpret(f.before, {a, w, b_before});
  interpret(f.after, {a, w, b_after});
  for (int y = 0; y < m; ++y)
    for (int x = 0; x < m; ++x) {
      float expected = 0.0f;
      for (int dy = 0; dy < kernel; ++dy)
        for (int dx = 0; dx < kernel; ++dx) {
          int sy = y + dy - pad, sx = x + dx - pad;
          float v = (sy >= 0 && sy < n && sx >= 0 && sx < n) ? a(sy, sx) : 0.0f;
          expected += v * w(dy, dx);
        }
      example::expect_close(b_before(y, x), expected, "B[yy, xx] before compute_inline");
    }
  example::expect_all_close(b_after, b_before, "B[yy, xx] after compute_inline");
}

int main() {
  const int n = 1024;
  Lowered f = build(n);
  std::cout << f.before << "\n";
  example::print_cutting_line();
  std::cout << f.after << std::endl;  // flushed: the checks below may throw
  check(f, n);
  std::cout << "ok\n";
}

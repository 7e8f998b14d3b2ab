// The tutorial's 3x3 convolution over an input zero-padded by 2, the padding built with
// if_then_else; then the padding stage inlined. Both are checked against plain C++.
#include <iostream>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int n = 64, kernel = 3, pad = 2;
  const int m = n - kernel + 2 * pad + 1;
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

  Buffer<float> a({n, n}), w({kernel, kernel});
  example::fill_random(a, 1);
  example::fill_random(w, 2);
  auto check = [&](const LoweredFunc& f) {
    Buffer<float> b({m, m});
    interpret(f, {a, w, b});
    for (int y = 0; y < m; ++y)
      for (int x = 0; x < m; ++x) {
        float expected = 0.0f;
        for (int dy = 0; dy < kernel; ++dy)
          for (int dx = 0; dx < kernel; ++dx) {
            int sy = y + dy - pad, sx = x + dx - pad;
            float v = (sy >= 0 && sy < n && sx >= 0 && sx < n) ? a(sy, sx) : 0.0f;
            expected += v * w(dy, dx);
          }
        example::expect_close(b(y, x), expected, "B[yy, xx]");
      }
  };

  Schedule s = create_schedule(B);
  LoweredFunc padded = lower(s, {A, W, B}, "conv2d");
  std::cout << padded << "\n";
  check(padded);

  s[Apad].compute_inline();
  LoweredFunc inlined = lower(s, {A, W, B}, "conv2d_inline");
  std::cout << inlined << "\n";
  check(inlined);
  std::cout << "ok\n";
}

// pipeline(stages): gives a buffer filled at the start of every iteration of a loop `stages`
// slots, and fills the slot of iteration k + stages - 1 while iteration k reads its own, so that
// stages - 1 copies are in flight. On a GPU the copies from global to shared memory become
// cp.async (4 bytes per float here; 16 for vectorized copies), one commit group per iteration,
// and each iteration first waits for its own group (cp.async.wait_group stages - 2) and passes a
// barrier. Copies cp.async cannot make (2-byte elements, computed values) stay plain stores.
//
// Here: a shared-memory GEMM (lib::gpu_tiled_gemm's schedule, 16 x 16 tiles of A and B per step
// of k.outer) with both tiles in 3 stages, on the GPU simulator, which runs cp.async as the
// hardware does (the data lands at the wait) and reports a read of bytes still in flight.
#include <iostream>

#include <loom/lib/gpu_tiled_gemm.hpp>
#include <loom/loom.hpp>

#include "../example_util.hpp"

using namespace loom;

int main() {
  const int n = 72;  // 4.5 tiles of 16: the last tiles' copies are guarded
  lib::TiledGemm g = lib::gpu_tiled_gemm(n, 16);
  for (const auto& stage : g.schedule.stages())
    if (stage->scope == "shared") Stage(stage.get()).pipeline(3);
  std::cout << lower(g.schedule, {g.A, g.B, g.C}, "gemm") << std::endl;

  Kernel k = build(g.schedule, {g.A, g.B, g.C}, Target::cuda_sim(), "gemm");
  Buffer<float> a({n, n}), b({n, n}), c({n, n}), expected({n, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  k(a, b, c);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < n; ++p) sum += static_cast<double>(a(i, p)) * b(p, j);
      expected(i, j) = static_cast<float>(sum);
    }
  example::expect_all_close(c, expected, "C after pipeline(3)");
  const SimReport report = k.sim_report();
  std::cout << "simulated: " << report.races.size() << " races, " << report.launches.back().simulated_cycles
            << " model cycles\nok\n";
}

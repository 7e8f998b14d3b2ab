// Target::cuda_sim() kernels give the reference results on the GPU simulator with the CPU
// kernel's argument checks; Target::cuda() without a driver says so; launch limits are checked
// when the kernel is built, naming the kernel, the axis and the limit.
#include "cuda_test_util.hpp"

#include "../support/count_stmts.hpp"

#include <cmath>

using namespace loom;
using namespace loom::cuda_test;

namespace {

template <typename T>
void check_gemm(const Buffer<T>& a, const Buffer<T>& b, const Buffer<T>& c, int n, double tolerance) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int k = 0; k < n; ++k) acc += static_cast<double>(a(i, k)) * static_cast<double>(b(k, j));
      REQUIRE(std::abs(static_cast<double>(c(i, j)) - acc) <= tolerance * (1 + std::abs(acc)));
    }
}

}  // namespace

TEST_CASE("cuda_sim: the tiled GEMM gives the reference result, conflict- and race-free") {
  const int n = 64;
  Case g = tiled_gemm(n);
  Kernel f = build(g.s, g.args, Target::cuda_sim(), g.name);
  CHECK(f.source().find("__global__") != std::string::npos);
  CHECK(f.target().str() == "cuda_sim -arch=sm_80");
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  fill(a, 1);
  fill(b, 2);
  f(a, b, c);
  check_gemm(a, b, c, n, 1e-5);
  SimReport r = f.sim_report();
  MESSAGE(r.to_string());
  CHECK(r.races.empty());
  REQUIRE(r.launches.size() == 1);
  CHECK(r.launches[0].block == SimDim3{16, 16, 1});
  CHECK(r.buffer("A.shared").load.conflicts() == 0);
}

TEST_CASE("cuda_sim: the tiled GEMM of f16 inputs accumulates in f32") {
  const int n = 64;
  lib::TiledGemm g = lib::gpu_tiled_gemm(n, 16, f16);
  CHECK(g.C.dtype() == f32);
  Kernel f = build(g.schedule, {g.A, g.B, g.C}, Target::cuda_sim(), "gemm_f16");
  CHECK(f.source().find("float C_local") != std::string::npos);
  Buffer<half> a({n, n}), b({n, n});
  Buffer<float> c({n, n});
  fill(a, 5);
  fill(b, 6);
  f(a, b, c);
  // The f32 sum of the exact products of the f16 values.
  double worst = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double expected = 0;
      for (int k = 0; k < n; ++k)
        expected += static_cast<double>(static_cast<float>(a(i, k))) * static_cast<float>(b(k, j));
      worst = std::max(worst, std::fabs(c(i, j) - expected));
    }
  CHECK(worst < 1e-4);  // an f16 accumulator would be off by about 1e-2 here
}

TEST_CASE("cuda_sim: the vthread GEMM gives the reference result") {
  const int n = 64;
  Case g = vthread_gemm(n);
  Kernel f = build(g.s, g.args, Target::cuda_sim(), g.name);
  MESSAGE(f.source());
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  fill(a, 3);
  fill(b, 4);
  f(a, b, c);
  check_gemm(a, b, c, n, 1e-5);
  CHECK(f.sim_report().launches.at(0).block == SimDim3{4, 4, 1});
}

TEST_CASE("cuda_sim: row sums through a cross-thread reduction, sizes that do not divide") {
  for (auto [n, m, lanes, rows] : {std::array<int, 4>{100, 50, 16, 32}, {8, 1000, 128, 4}, {8, 100, 24, 4}}) {
    CAPTURE(lanes);
    Case c = row_sum(n, m, lanes, rows);
    Kernel f = build(c.s, c.args, Target::cuda_sim(), c.name);
    Buffer<float> a({n, m}), b({n});
    fill(a, 5);
    f(a, b);
    for (int i = 0; i < n; ++i) {
      double acc = 0;
      for (int k = 0; k < m; ++k) acc += a(i, k);
      REQUIRE(std::abs(b(i) - acc) <= 1e-4 * (1 + std::abs(acc)));
    }
  }
}

TEST_CASE("cuda_sim: f16 elementwise with a symbolic size") {
  Case c = elementwise(-1, f16);
  Kernel f = build(c.s, c.args, Target::cuda_sim(), c.name);
  const int n = 300;
  Buffer<half> a({n}), b({n});
  fill(a, 6);
  f(a, b);
  for (int i = 0; i < n; ++i)
    CHECK(static_cast<float>(b(i)) == static_cast<float>(half(static_cast<float>(a(i)) * 2.0f + 1.0f)));
  CHECK(f.sim_report().launches.at(0).grid.x == 3);
}

TEST_CASE("cuda_sim: arguments are checked as for the CPU") {
  Case c = elementwise(256);
  Kernel f = build(c.s, c.args, Target::cuda_sim(), c.name);
  Buffer<float> a({256}), wrong({128});
  Buffer<double> wrong_type({256});
  CHECK_THROWS_AS(f(a, wrong), ArgumentError);
  CHECK_THROWS_AS(f(a, wrong_type), ArgumentError);
  CHECK_THROWS_WITH_AS(f.sim_report(), doctest::Contains("called at least once"), Error);
  CHECK_THROWS_WITH_AS(f.llvm_ir(), doctest::Contains("see source() and ptx()"), Error);
}

TEST_CASE("cuda: without a driver or GPU, building or calling says so and points to cuda_sim") {
  if (runtime::cuda::driver_available()) {
    MESSAGE("a CUDA driver and GPU are present: " << runtime::cuda::driver().arch());
    return;
  }
  Case c = elementwise(256);
  // No architecture named: the device's is needed.
  CHECK_THROWS_WITH_AS(build(c.s, c.args, Target::cuda(), c.name), doctest::Contains("Target::cuda_sim()"),
                       Error);
  if (!have_nvrtc()) {
    CHECK_THROWS_WITH_AS(build(c.s, c.args, Target::cuda("sm_80"), c.name),
                         doctest::Contains("Target::cuda_sim()"), Error);
    return;
  }
  // A named architecture compiles (source and PTX can be inspected), but cannot run here.
  Kernel f = build(c.s, c.args, Target::cuda("sm_80"), c.name);
  CHECK(f.ptx().find(".entry elementwise_kernel0") != std::string::npos);
  CHECK(f.target_description().find("cuda -arch=sm_80 (NVRTC") == 0);
  Buffer<float> a({256}), b({256});
  CHECK_THROWS_WITH_AS(f(a, b), doctest::Contains("no CUDA driver"), Error);
  CHECK_THROWS_WITH_AS(f(a, b), doctest::Contains("build for Target::cuda_sim()"), Error);
}

TEST_CASE("cuda: launch limits are checked at build time, naming kernel, axis and limit") {
  SUBCASE("more than 1024 threads per block") {
    Tensor A = placeholder({4096}, f32, "A");
    Tensor B = compute(
        {4096}, [&](Expr i) { return A(i); }, "B");
    Schedule s = create_schedule(B);
    auto [xo, xi] = s[B].split(B.axis(0), 2048);
    s[B].bind(xo, thread_axis("blockIdx.x"));
    s[B].bind(xi, thread_axis("threadIdx.x"));
    CHECK_THROWS_WITH_AS(
        build(s, {A, B}, Target::cuda_sim(), "wide"),
        doctest::Contains("kernel wide_kernel0 has threadIdx.x = 2048 (stage 'B'), more than the 1024 "
                          "threads CUDA allows along x"),
        Error);
  }
  SUBCASE("2048 threads over two dimensions") {
    Tensor A = placeholder({64, 64}, f32, "A");
    Tensor B = compute(
        {64, 64}, [&](Expr i, Expr j) { return A(i, j); }, "B");
    Schedule s = create_schedule(B);
    auto [yo, yi] = s[B].split(B.axis(0), 32);
    s[B].bind(yo, thread_axis("blockIdx.x"));
    s[B].bind(yi, thread_axis("threadIdx.y"));
    s[B].bind(B.axis(1), thread_axis("threadIdx.x"));
    CHECK_THROWS_WITH_AS(
        build(s, {A, B}, Target::cuda_sim(), "square"),
        doctest::Contains("has 2048 threads per block (threadIdx.x = 64 (stage 'B'), threadIdx.y = 32 "
                          "(stage 'B')), more than the 1024 CUDA allows"),
        Error);
  }
  SUBCASE("a grid dimension over its limit") {
    Tensor A = placeholder({70000, 2}, f32, "A");
    Tensor B = compute(
        {70000, 2}, [&](Expr i, Expr j) { return A(i, j); }, "B");
    Schedule s = create_schedule(B);
    s[B].bind(B.axis(0), thread_axis("blockIdx.y"));
    s[B].bind(B.axis(1), thread_axis("threadIdx.x"));
    CHECK_THROWS_WITH_AS(
        build(s, {A, B}, Target::cuda_sim(), "tall"),
        doctest::Contains("has blockIdx.y = 70000 (stage 'B'), more than the 65535 blocks CUDA allows "
                          "along y; bind the larger axis to blockIdx.x"),
        Error);
  }
  SUBCASE("shared memory over the architecture's limit") {
    Case g = tiled_gemm(256, 16);
    // 2 tiles of 16x16 floats = 2 KB: fine everywhere; a 4 KB limit stands for a smaller device.
    cuda::CudaModule m = cuda::codegen_cuda(lower(g.s, g.args, "gemm"));
    cuda::ArchLimits tiny = cuda::arch_limits("sm_80");
    tiny.max_static_shared = 1024;
    CHECK_THROWS_WITH_AS(
        cuda::validate_module(m, tiny, "build 'gemm'"),
        doctest::Contains("uses 2048 bytes of static shared memory per block for A.shared (1024 bytes), "
                          "B.shared (1024 bytes), more than the 1024 bytes"),
        Error);
  }
}

TEST_CASE("cuda: shared memory per block by architecture, and when a launch must opt in to more") {
  // The CUDA C Programming Guide's table: sm_80 163 KB, sm_86/89 99 KB, sm_90/100 227 KB, and the
  // GeForce/workstation Blackwell parts (sm_120, sm_121) 99 KB.
  CHECK(cuda::arch_limits("sm_80").max_dynamic_shared == 163 * 1024);
  CHECK(cuda::arch_limits("sm_86").max_dynamic_shared == 99 * 1024);
  CHECK(cuda::arch_limits("sm_89").max_dynamic_shared == 99 * 1024);
  CHECK(cuda::arch_limits("sm_90").max_dynamic_shared == 227 * 1024);
  CHECK(cuda::arch_limits("sm_100").max_dynamic_shared == 227 * 1024);
  CHECK(cuda::arch_limits("sm_120").max_dynamic_shared == 99 * 1024);
  CHECK(cuda::arch_limits("sm_121").max_dynamic_shared == 99 * 1024);
  // 48 KB of static and dynamic memory together need no opt-in; beyond, the launch declares its
  // dynamic bytes, even when they alone stay under 48 KB.
  CHECK(cuda::dynamic_shared_optin(0, 48 * 1024) == -1);
  CHECK(cuda::dynamic_shared_optin(16 * 1024, 32 * 1024) == -1);
  CHECK(cuda::dynamic_shared_optin(0, 48 * 1024 + 16) == 48 * 1024 + 16);
  CHECK(cuda::dynamic_shared_optin(32 * 1024, 32 * 1024) == 32 * 1024);
}

namespace {

/// Row sums of a 64 x 32 matrix: 32 lanes (threadIdx.x) reduce a row with warp shuffles, 4 rows
/// at a time (threadIdx.y), 4 such steps per block in a serial loop that refills A.shared. The
/// refill is spread over the threads differently (thread (y, x) copies element 4x + y), so a warp
/// reads rows that other warps wrote.
Case refilled_row_sum() {
  Tensor A = placeholder({64, 32}, f32, "A");
  IterVar k = reduce_axis(0, 32, "k");
  Tensor B = compute(
      {64}, [&](Expr i) { return sum(A(i, k), {k}); }, "B");
  Schedule s = create_schedule(B);
  Tensor AS = s.cache_read(A, "shared", {B});
  auto [xo, xi] = s[B].split(B.axis(0), 4);
  auto [block, step] = s[B].split(xo, 4);
  s[B].reorder({block, step, xi, B.reduce_axis(0)});
  s[B].bind(block, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.y"));
  s[B].bind(B.reduce_axis(0), thread_axis("threadIdx.x"));
  s[AS].compute_at(s[B], step);
  auto [copy_x, copy_y] = s[AS].split(s[AS].fuse(AS.axis(0), AS.axis(1)), 4);
  s[AS].bind(copy_x, thread_axis("threadIdx.x"));
  s[AS].bind(copy_y, thread_axis("threadIdx.y"));
  return {s, {A, B}, "refilled_row_sum"};
}

}  // namespace

TEST_CASE("cuda_sim: a warp-shuffle allreduce is not a barrier; the next refill of a shared tile waits") {
  // Each step stores A.shared, reads it in the cross-thread reduction (warp shuffles: no
  // __syncthreads), then the next step stores A.shared again: one warp may overwrite rows another
  // warp is still reading unless a barrier separates the reduction from the next refill.
  Case c = refilled_row_sum();
  LoweredFunc f = lower(c.s, c.args, c.name);
  MESSAGE(f);
  cuda::CudaModule m = cuda::codegen_cuda(f);
  CHECK(m.source.find("__shfl_down_sync") != std::string::npos);
  // Per step: a barrier between the refill and the reduction's reads, and one between those reads
  // and the next refill.
  CHECK(count_barriers(f.body) == 2);
  Buffer<float> a({64, 32}), b({64});
  fill(a, 7);
  SimReport report = simulate(f, {a, b});
  CHECK(report.races.empty());
  for (int i = 0; i < 64; ++i) {
    double expected = 0;
    for (int j = 0; j < 32; ++j) expected += a(i, j);
    CHECK(b(i) == doctest::Approx(expected).epsilon(1e-5));
  }
  // Without the second barrier (what the lowering placed when it counted every allreduce as a
  // barrier), the simulator reports the race: it no longer takes warp shuffles for a barrier.
  struct DropFirstBarrierOfLoop : IRMutator {
    bool dropped = false;
    using IRMutator::visit;
    Stmt visit(const SeqNode* op) override {
      std::vector<Stmt> out;
      for (const Stmt& s : op->seq) {
        if (!dropped && s.as<BarrierNode>() && out.empty()) {
          dropped = true;
          continue;
        }
        out.push_back(mutate(s));
      }
      return SeqNode::make(out);
    }
  } drop;
  LoweredFunc racy = f;
  racy.body = drop.mutate(f.body);
  REQUIRE(drop.dropped);
  CHECK(count_barriers(racy.body) == 1);
  SimOptions options;
  options.races_are_errors = false;
  SimReport racy_report = simulate(racy, {a, b}, options);
  CHECK(!racy_report.races.empty());
}

// The host side of a CUDA module: global scratch buffers between kernels, launches in program
// order with dimensions evaluated from the call's sizes, and limits checked at launch when only
// then known. Runs through recording callbacks, so no GPU is needed.
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// B = A * 2 in one kernel, C = B + 1 in another: B is a global buffer the host allocates.
Case two_stages(Expr n) {
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  for (const Tensor& t : {B, C}) {
    auto [xo, xi] = s[t].split(t.axis(0), 64);
    s[t].bind(xo, thread_axis("blockIdx.x"));
    s[t].bind(xi, thread_axis("threadIdx.x"));
  }
  return {s, {A, C}, "two"};
}

struct Launch {
  size_t kernel;
  runtime::cuda::LaunchDims dims;
  std::vector<uint64_t> buffers;
  std::vector<uint64_t> scalars;  // each scalar's bytes in its C type
};

}  // namespace

TEST_CASE("cuda host program: a global intermediate is allocated, both kernels launch in order") {
  Var n("n");
  Case c = two_stages(n);
  LoweredFunc f = lower(c.s, c.args, c.name);
  cuda::CudaModule m = cuda::codegen_cuda(f);
  MESSAGE(m.source);
  REQUIRE(m.kernels.size() == 2);
  CHECK(m.kernels[0].kernel.name == "two_kernel0");
  CHECK(m.kernels[1].kernel.name == "two_kernel1");

  runtime::cuda::HostEnv env;
  env.ints[n.get()] = 1000;
  env.buffers[f.params[0].buffer.data.get()] = 0x1000;  // A
  env.buffers[f.params[1].buffer.data.get()] = 0x2000;  // C
  std::vector<Launch> launches;
  std::vector<std::pair<int64_t, std::string>> allocations;
  int frees = 0;
  std::string events;  // l: launch, s: synchronize, f: free
  runtime::cuda::HostOps ops;
  ops.allocate = [&](int64_t bytes, const std::string& name) {
    allocations.push_back({bytes, name});
    return uint64_t{0x9000};
  };
  ops.free = [&](uint64_t) {
    ++frees;
    events += 'f';
  };
  ops.synchronize = [&] { events += 's'; };
  ops.launch = [&](size_t k, const runtime::cuda::LaunchDims& d, const std::vector<uint64_t>& b,
                   const std::vector<uint64_t>& i) {
    launches.push_back({k, d, b, i});
    events += 'l';
  };
  runtime::cuda::run_host_program(m, m.host, env, ops, cuda::arch_limits("sm_80"));
  REQUIRE(allocations.size() == 1);
  CHECK(allocations[0].first == 1024 * 4);  // B is computed over whole 64-element splits
  CHECK(allocations[0].second == "B");
  CHECK(frees == 1);
  // B is freed only once the kernels that use it have finished (launches are asynchronous).
  CHECK(events == "llsf");
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].kernel == 0);
  CHECK(launches[1].kernel == 1);
  CHECK(launches[0].dims.grid[0] == 16);  // ceil(1000 / 64)
  CHECK(launches[0].dims.block[0] == 64);
  CHECK(launches[0].buffers == std::vector<uint64_t>{0x1000, 0x9000});  // reads A, writes B
  CHECK(launches[1].buffers ==
        std::vector<uint64_t>{0x2000, 0x9000});  // writes C (a parameter first), reads B
  CHECK(launches[0].scalars == std::vector<uint64_t>{1000});
}

TEST_CASE("cuda host program: a launch only known at run time is checked then") {
  Var n("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i); }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), NParts{4});  // n / 4 threads per block
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.x"));
  LoweredFunc f = lower(s, {A, B}, "nparts");
  cuda::CudaModule m = cuda::codegen_cuda(f);
  CHECK(m.kernels.at(0).threads_per_block == -1);
  CHECK(m.source.find("__launch_bounds__") == std::string::npos);  // unknown at build time
  runtime::cuda::HostEnv env;
  env.ints[n.get()] = 8192;
  env.buffers[f.params[0].buffer.data.get()] = 1;
  env.buffers[f.params[1].buffer.data.get()] = 2;
  runtime::cuda::HostOps ops;
  ops.allocate = [](int64_t, const std::string&) { return uint64_t{0}; };
  ops.free = [](uint64_t) {};
  ops.launch = [](size_t, const runtime::cuda::LaunchDims&, const std::vector<uint64_t>&,
                  const std::vector<uint64_t>&) {};
  CHECK_THROWS_WITH_AS(
      runtime::cuda::run_host_program(m, m.host, env, ops, cuda::arch_limits("sm_80")),
      doctest::Contains("launch of kernel nparts_kernel0: kernel nparts_kernel0 has threadIdx.x = "), Error);
  env.ints[n.get()] = 4096;
  CHECK_NOTHROW(runtime::cuda::run_host_program(m, m.host, env, ops, cuda::arch_limits("sm_80")));
}

TEST_CASE("cuda host program: float scalar arguments launch as the bytes of their C types") {
  Var alpha("alpha", f32), beta("beta", f64), h("h", f16), n("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * alpha + cast(f32, beta) + cast(f32, Expr(h)); }, "B");
  Schedule s = create_schedule(B);
  auto [xo, xi] = s[B].split(B.axis(0), 64);
  s[B].bind(xo, thread_axis("blockIdx.x"));
  s[B].bind(xi, thread_axis("threadIdx.x"));
  LoweredFunc f = lower(s, {A, beta, B, alpha, n, h}, "scaled");
  cuda::CudaModule m = cuda::codegen_cuda(f);
  MESSAGE(m.source);
  CHECK(m.source.find("float alpha") != std::string::npos);
  CHECK(m.source.find("double beta") != std::string::npos);
  CHECK(m.source.find("__half h") != std::string::npos);
  if (have_nvrtc())
    CHECK(
        runtime::cuda::nvrtc_compile(m.source, "scaled", "sm_80", false).ptx.find(".entry scaled_kernel0") !=
        std::string::npos);

  runtime::cuda::HostEnv env;
  env.ints[n.get()] = 100;
  env.floats[alpha.get()] = 0.1;    // float(0.1) = 0x3dcccccd
  env.floats[beta.get()] = 0.1;     // double 0.1 = 0x3fb999999999999a
  env.floats[h.get()] = 1.0 / 3.0;  // __half 0.333251953125 = 0x3555
  env.buffers[f.params[0].buffer.data.get()] = 0x1000;
  env.buffers[f.params[2].buffer.data.get()] = 0x2000;
  std::vector<Launch> launches;
  runtime::cuda::HostOps ops;
  ops.allocate = [](int64_t, const std::string&) { return uint64_t{0}; };
  ops.free = [](uint64_t) {};
  ops.launch = [&](size_t k, const runtime::cuda::LaunchDims& d, const std::vector<uint64_t>& b,
                   const std::vector<uint64_t>& scalars) {
    launches.push_back({k, d, b, scalars});
  };
  runtime::cuda::run_host_program(m, m.host, env, ops, cuda::arch_limits("sm_80"));
  REQUIRE(launches.size() == 1);
  // The kernel's scalar parameters, in its declaration order, each as the bytes of its C type.
  std::vector<uint64_t> want;
  for (const cuda::KernelParam& p : m.kernels[0].kernel.params) {
    if (p.is_buffer) continue;
    if (p.var.same_as(alpha)) want.push_back(0x3dcccccd);
    if (p.var.same_as(beta)) want.push_back(0x3fb999999999999a);
    if (p.var.same_as(h)) want.push_back(0x3555);
    if (p.var.same_as(n)) want.push_back(100);
  }
  CHECK(want.size() == 4);
  CHECK(launches[0].scalars == want);
}

TEST_CASE("cuda_sim: two kernels with a global intermediate give the reference result") {
  Case c = two_stages(Expr(1000));
  Kernel f = build(c.s, c.args, Target::cuda_sim(), c.name);
  Buffer<float> a({1000}), out({1000});
  fill(a, 9);
  f(a, out);
  for (int i = 0; i < 1000; ++i) REQUIRE(out(i) == a(i) * 2.0f + 1.0f);
  CHECK(f.sim_report().launches.size() == 2);
}

TEST_CASE("cuda_sim: a 32x32 transpose through shared memory: 32-way conflicts, none with a 33-wide row") {
  for (int pad : {0, 1}) {
    CAPTURE(pad);
    const int n = 32;
    Tensor A = placeholder({n, n}, f32, "A");
    Tensor B = compute(
        {n, n}, [&](Expr i, Expr j) { return A(j, i); }, "B");
    Schedule s = create_schedule(B);
    Tensor AS = s.cache_read(A, "shared", {B});
    // One block of 32x32 threads; the block stages all of A in shared memory first.
    auto [bo, ty] = s[B].split(B.axis(0), 32);
    s[B].bind(bo, thread_axis("blockIdx.x"));
    s[B].bind(ty, thread_axis("threadIdx.y"));
    s[B].bind(B.axis(1), thread_axis("threadIdx.x"));
    s[AS].compute_at(s[B], bo);
    s[AS].bind(AS.axis(0), thread_axis("threadIdx.y"));
    s[AS].bind(AS.axis(1), thread_axis("threadIdx.x"));
    if (pad) s[AS].storage_align(AS.axis(0), 32, 1);
    Kernel f = build(s, {A, B}, Target::cuda_sim(), "transpose");
    Buffer<float> a({n, n}), b({n, n});
    fill(a, 10);
    f(a, b);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) REQUIRE(b(i, j) == a(j, i));
    SimReport r = f.sim_report();
    MESSAGE(f.source() << r.to_string());
    const SimSharedBuffer& sb = r.buffer("A.shared");
    CHECK(sb.store.conflicts() == 0);
    if (pad) {
      CHECK(sb.load.conflicts() == 0);
    } else {
      CHECK(sb.load.wavefronts == 32 * sb.load.instructions);
    }
  }
}

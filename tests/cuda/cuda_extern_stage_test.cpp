// Extern stages between CUDA kernels: a C++ function runs on the host between two kernels, on the
// simulator and through the host program (with a fake device memory standing in for the Driver
// API's copies), and copies exactly the memory its views reach.
#include "cuda_test_util.hpp"

#include <loom/backend/cuda/host_program.hpp>
#include <loom/codegen/cuda/codegen_cuda.hpp>

#include <cstring>
#include <map>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// B = 2 * A on the GPU, P = prefix sum of B by a C++ function on the host, C = P + A on the GPU.
struct PrefixPipeline {
  Case c;
  int* calls;
};

PrefixPipeline prefix_pipeline(Expr n, int* calls) {
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Tensor P = extern_compute(
      {n}, f32, {B},
      [calls](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        ++*calls;
        const float* b = static_cast<const float*>(in[0].data);
        float* p = static_cast<float*>(out[0].data);
        float acc = 0.0f;
        for (int64_t i = 0; i < in[0].shape[0]; ++i)
          p[i * out[0].strides[0]] = acc += b[i * in[0].strides[0]];
      },
      "prefix");
  Tensor C = compute(
      {n}, [&](Expr i) { return P(i) + A(i); }, "C");
  Schedule s = create_schedule(C);
  for (const Tensor& t : {B, C}) {
    auto [xo, xi] = s[t].split(t.axis(0), 64);
    s[t].bind(xo, thread_axis("blockIdx.x"));
    s[t].bind(xi, thread_axis("threadIdx.x"));
  }
  return {{s, {A, C}, "prefix_pipeline"}, calls};
}

std::vector<float> prefix_reference(const Buffer<float>& a, int n) {
  std::vector<float> c(static_cast<size_t>(n));
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) c[static_cast<size_t>(i)] = (acc += a(i) * 2.0f) + a(i);
  return c;
}

/// Device memory for tests: byte addresses from 0x10000 into one host array.
struct FakeDevice {
  static constexpr uint64_t kBase = 0x10000;
  std::vector<std::byte> memory = std::vector<std::byte>(1 << 20);
  uint64_t next = kBase;
  int64_t copied_to_host = 0, copied_to_device = 0;

  uint64_t allocate(int64_t bytes) {
    const uint64_t address = next;
    next += static_cast<uint64_t>((bytes + 255) / 256 * 256);
    REQUIRE(next - kBase <= memory.size());
    return address;
  }
  std::byte* at(uint64_t address) {
    REQUIRE(address >= kBase);
    return memory.data() + (address - kBase);
  }
  runtime::cuda::DeviceCopies copies() {
    runtime::cuda::DeviceCopies c;
    c.to_host = [this](void* host, uint64_t device, size_t bytes) {
      std::memcpy(host, at(device), bytes);
      copied_to_host += static_cast<int64_t>(bytes);
    };
    c.to_device = [this](uint64_t device, const void* host, size_t bytes) {
      std::memcpy(at(device), host, bytes);
      copied_to_device += static_cast<int64_t>(bytes);
    };
    return c;
  }
};

}  // namespace

TEST_CASE("cuda_sim: an extern stage runs on the host between two kernels") {
  const int n = 1000;  // not a multiple of the 64 threads per block
  int calls = 0;
  PrefixPipeline p = prefix_pipeline(Expr(n), &calls);
  Kernel k = build(p.c.s, p.c.args, Target::cuda_sim(), p.c.name);
  Buffer<float> a({n}), c({n});
  fill(a, 21);
  k(a, c);
  CHECK(calls == 1);
  const std::vector<float> expected = prefix_reference(a, n);
  for (int i = 0; i < n; ++i)
    REQUIRE(c(i) == doctest::Approx(expected[static_cast<size_t>(i)]).epsilon(1e-5));
  CHECK(k.sim_report().launches.size() == 2);

  // The kernels on either side compile with NVRTC.
  if (have_nvrtc()) {
    CHECK(k.source().find("prefix_pipeline_kernel1") != std::string::npos);
    CHECK_FALSE(runtime::cuda::nvrtc_compile(k.source(), p.c.name, "sm_80").ptx.empty());
  }
}

TEST_CASE("cuda host program: an extern stage between launches copies its buffers to the host and back") {
  // The Driver API path without a GPU: the host program's launches only record themselves, device
  // memory is a FakeDevice, and the extern stage runs on copies taken from it.
  Var n("n");
  int calls = 0;
  PrefixPipeline p = prefix_pipeline(n, &calls);
  LoweredFunc f = lower(p.c.s, p.c.args, p.c.name);
  cuda::CudaModule m = cuda::codegen_cuda(f);
  REQUIRE(m.kernels.size() == 2);

  const int size = 300;
  FakeDevice device;
  runtime::cuda::HostEnv env;
  env.ints[n.get()] = size;
  env.buffers[f.params[0].buffer.data.get()] = device.allocate(size * 4);  // A
  env.buffers[f.params[1].buffer.data.get()] = device.allocate(size * 4);  // C
  std::vector<std::string> events;
  std::map<std::string, uint64_t> scratch;
  runtime::cuda::HostOps ops;
  ops.allocate = [&](int64_t bytes, const std::string& name) {
    scratch[name] = device.allocate(bytes);
    return scratch[name];
  };
  ops.free = [](uint64_t) {};
  ops.launch = [&](size_t kernel, const runtime::cuda::LaunchDims&, const std::vector<uint64_t>&,
                   const std::vector<uint64_t>&) {
    events.push_back(cat("launch ", kernel));
    if (kernel == 0) {  // stands in for B = 2 * A: B[i] = i
      float* b = reinterpret_cast<float*>(device.at(scratch.at("B")));
      for (int i = 0; i < size; ++i) b[i] = static_cast<float>(i);
    }
  };
  ops.extern_stage = [&](int64_t id, const std::vector<runtime::cuda::DeviceBufferView>& in,
                         const std::vector<runtime::cuda::DeviceBufferView>& out) {
    events.push_back("extern");
    REQUIRE(in.size() == 1);
    REQUIRE(out.size() == 1);
    CHECK(in[0].address == scratch.at("B"));
    CHECK(out[0].address == scratch.at("prefix"));  // the extern stage's output is named after it
    CHECK(in[0].shape == std::vector<int64_t>{size});
    CHECK(out[0].strides == std::vector<int64_t>{1});
    runtime::cuda::run_extern_stage_on_host(id, in, out, device.copies());
  };
  runtime::cuda::run_host_program(m, m.host, env, ops, cuda::arch_limits("sm_80"));
  CHECK(events == std::vector<std::string>{"launch 0", "extern", "launch 1"});
  CHECK(calls == 1);
  const float* prefix = reinterpret_cast<const float*>(device.at(scratch.at("prefix")));
  for (int i = 0; i < size; ++i) REQUIRE(prefix[i] == static_cast<float>(i * (i + 1) / 2));
  CHECK(device.copied_to_host == 2 * size * 4);  // B, and P (the function may write part of it)
  CHECK(device.copied_to_device == size * 4);    // P only
}

TEST_CASE("cuda host program: an extern stage's copies cover exactly what its strided views reach") {
  // A 3x4 view with a row stride of 10 starting at element 5 of its buffer (address of element 0
  // given): the copies span elements 5..(5 + 2*10 + 3) = 5..28, and the function sees the view.
  FakeDevice device;
  const uint64_t buffer = device.allocate(64 * 4);
  int32_t* memory = reinterpret_cast<int32_t*>(device.at(buffer));
  for (int i = 0; i < 64; ++i) memory[i] = i;
  const int64_t id = ExternRegistry::global().add(
      [](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        const int32_t* x = static_cast<const int32_t*>(in[0].data);
        int32_t* y = static_cast<int32_t*>(out[0].data);
        for (int r = 0; r < 3; ++r)
          for (int col = 0; col < 4; ++col) y[r * out[0].strides[0] + col] = -x[r * in[0].strides[0] + col];
      },
      "negate_rows");
  runtime::cuda::DeviceBufferView view;
  view.address = buffer + 5 * 4;
  view.dtype = i32;
  view.shape = {3, 4};
  view.strides = {10, 1};
  runtime::cuda::run_extern_stage_on_host(id, {view}, {view}, device.copies());
  CHECK(device.copied_to_host == 2 * 24 * 4);
  CHECK(device.copied_to_device == 24 * 4);
  for (int i = 0; i < 64; ++i) {
    const int rel = i - 5;
    const bool in_view = rel >= 0 && rel < 30 && rel % 10 < 4;
    CAPTURE(i);
    CHECK(memory[i] == (in_view ? -i : i));
  }
}

// Arguments in CUDA device memory (kDLCUDA DLTensors) used in place, through the stand-in libcuda
// (device memory is host memory there, and kernels are logged, not run): a kernel whose code reads
// a buffer 16 bytes at a time refuses a pointer that is not 16-byte aligned before anything
// reaches the driver, and launches with an aligned one; a kernel with scalar accesses needs only
// the element's alignment.
#include <dlpack/dlpack.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <loom/backend/cuda/driver.hpp>
#include <loom/backend/cuda/nvrtc.hpp>
#include <loom/loom.hpp>

#include "fake_cuda_log.hpp"

using namespace loom;
using namespace loom::fake_cuda;

namespace {

/// B = A + 1 over n elements, 64 threads per block; `lanes` > 1 vectorizes the inner loop.
Kernel add_one(int64_t n, int lanes) {
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Schedule s = create_schedule(B);
  auto [outer, inner] = s[B].split(B.axis(0), 64 * lanes);
  s[B].bind(outer, thread_axis("blockIdx.x"));
  if (lanes > 1) {
    auto [tx, v] = s[B].split(inner, lanes);
    s[B].bind(tx, thread_axis("threadIdx.x"));
    s[B].vectorize(v);
  } else {
    s[B].bind(inner, thread_axis("threadIdx.x"));
  }
  return build(s, {A, B}, Target::cuda("sm_80"), lanes > 1 ? "add_one_v4" : "add_one");
}

DLTensor device_tensor(float* data, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCUDA, 0};
  t.ndim = 1;
  t.shape = shape.data();
  t.dtype = DLDataType{kDLFloat, 32, 1};
  return t;
}

}  // namespace

TEST_CASE("CUDA memory used in place: a vector kernel refuses a pointer its accesses cannot use") {
  if (!runtime::cuda::nvrtc()) {
    MESSAGE("NVRTC not available (" << runtime::cuda::nvrtc_unavailable_reason() << "); not tested");
    return;
  }
  REQUIRE(runtime::cuda::driver_available());  // the fake one
  const int64_t n = 1024;
  Kernel vec = add_one(n, 4), scalar = add_one(n, 1);
  REQUIRE(vec.source().find("float4") != std::string::npos);
  alignas(64) static float memory[2 * 1024 + 64];
  std::vector<int64_t> shape{n};
  DLTensor aligned = device_tensor(memory, shape), out = device_tensor(memory + 1040, shape);
  DLTensor odd = device_tensor(memory + 1, shape);  // 4 bytes past a 16-byte boundary
  take_log();

  vec(&aligned, &out);
  CHECK(has(take_log(), "launch add_one_v4_kernel0"));

  CHECK_THROWS_WITH_AS(
      vec(&odd, &out),
      doctest::Contains("argument 'A' of kernel 'add_one_v4' is CUDA device memory at address"),
      ArgumentError);
  CHECK_THROWS_WITH_AS(
      vec(&odd, &out),
      doctest::Contains("which is not aligned to 16 bytes, and the kernel's code accesses it 16 "
                        "bytes at a time (vector loads/stores or cp.async) from a 16-byte aligned "
                        "element 0: pass a tensor whose data (with its byte_offset) is 16-byte "
                        "aligned, as cuMemAlloc's is, or host memory (Loom then copies it)"),
      ArgumentError);
  CHECK(take_log().empty());  // refused before any driver call
  // The output too, and a byte_offset counts.
  DLTensor shifted = out;
  shifted.byte_offset = 8;
  CHECK_THROWS_WITH_AS(vec(&aligned, &shifted), doctest::Contains("argument 'B' of kernel 'add_one_v4'"),
                       ArgumentError);
  // Host memory at the same odd offset is copied to aligned device memory: fine.
  BufferView host_odd(memory + 1, {n});
  Buffer<float> host_out({n});
  vec(host_odd, host_out);
  CHECK(has(take_log(), "launch add_one_v4_kernel0"));
  // A scalar kernel needs only a float's alignment.
  scalar(&odd, &out);
  CHECK(has(take_log(), "launch add_one_kernel0"));
}

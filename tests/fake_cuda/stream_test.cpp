// Calls of Target::cuda() kernels through a stand-in libcuda (tests/fake_cuda/fake_libcuda.cpp,
// loaded through LOOM_CUDA_DRIVER_PATH, which ctest sets): no GPU runs anything, but the log of
// driver calls shows where a call's copies, launches, events and waits went. On the default stream
// a call copies synchronously and waits for the context; after Kernel::set_cuda_stream(s) every
// copy, launch and event is queued on s and only s is waited for, after the copies back.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <loom/backend/cuda/driver.hpp>
#include <loom/backend/cuda/nvrtc.hpp>
#include <loom/loom.hpp>

#include "fake_cuda_log.hpp"

using namespace loom;
using namespace loom::fake_cuda;

namespace {

/// B = 2 A over 1000 elements, 8 blocks of 128 threads.
Schedule scale_schedule(const Tensor& A, const Tensor& B) {
  Schedule s = create_schedule(B);
  auto [bx, tx] = s[B].split(B.axis(0), 128);
  s[B].bind(bx, thread_axis("blockIdx.x"));
  s[B].bind(tx, thread_axis("threadIdx.x"));
  (void)A;
  return s;
}

}  // namespace

TEST_CASE("CUDA streams: a call's copies, launches, events and wait go to the kernel's stream") {
  if (!runtime::cuda::nvrtc()) {
    MESSAGE("NVRTC not available (" << runtime::cuda::nvrtc_unavailable_reason() << "); not tested");
    return;
  }
  REQUIRE(runtime::cuda::driver_available());  // the fake one
  Tensor A = placeholder({1000}, f32, "A");
  Tensor B = compute(
      {1000}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Kernel k = build(scale_schedule(A, B), {A, B}, Target::cuda("sm_80"), "scale");
  Buffer<float> a({1000}), b({1000});
  for (int i = 0; i < 1000; ++i) a(i) = static_cast<float>(i);
  take_log();

  SUBCASE("the default stream: synchronous copies, the context waited for") {
    k(a, b);
    const std::string log = take_log();
    CAPTURE(log);
    CHECK(has(log, "copy_to_device\n"));
    CHECK(has(log, "launch scale_kernel0 stream=0\n"));
    CHECK(has(log, "ctx_synchronize\n"));
    CHECK(has(log, "copy_to_host\n"));
    CHECK_FALSE(has(log, "stream_synchronize"));
  }
  SUBCASE("a user's stream: everything queued on it, only it waited for, after the copies back") {
    void* const stream = reinterpret_cast<void*>(uintptr_t{4096});
    k.set_cuda_stream(stream);
    k(a, b);
    const std::string log = take_log();
    CAPTURE(log);
    CHECK(has(log, "copy_to_device stream=4096\n"));
    CHECK(has(log, "event stream=4096\n"));
    CHECK(has(log, "launch scale_kernel0 stream=4096\n"));
    CHECK(has(log, "copy_to_host stream=4096\n"));
    CHECK_FALSE(has(log, "ctx_synchronize"));
    CHECK_FALSE(has(log, "stream=0"));
    // The call returns only after waiting for the stream behind its last copy back.
    const size_t last_copy = log.rfind("copy_to_host stream=4096");
    const size_t last_wait = log.rfind("stream_synchronize stream=4096");
    REQUIRE(last_wait != std::string::npos);
    CHECK(last_wait > last_copy);
    CHECK(log.substr(last_wait) == "stream_synchronize stream=4096\n");
    CHECK(k.last_device_ms() == doctest::Approx(0.25));  // the fake's event time

    // Copies of the kernel share the stream; nullptr goes back to the default stream.
    Kernel copy = k;
    copy(a, b);
    CHECK(has(take_log(), "launch scale_kernel0 stream=4096\n"));
    k.set_cuda_stream(nullptr);
    k(a, b);
    const std::string back = take_log();
    CHECK(has(back, "launch scale_kernel0 stream=0\n"));
    CHECK(has(back, "ctx_synchronize\n"));
  }
}

TEST_CASE("CUDA streams: set_cuda_stream on a simulator kernel is refused, naming the target") {
  Tensor A = placeholder({1000}, f32, "A");
  Tensor B = compute(
      {1000}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Kernel k = build(scale_schedule(A, B), {A, B}, Target::cuda_sim(), "scale");
  int stream = 0;
  CHECK_THROWS_WITH_AS(
      k.set_cuda_stream(&stream),
      doctest::Contains("set_cuda_stream() is for kernels built for Target::cuda(); this one is "
                        "built for cuda_sim"),
      Error);
  Buffer<float> a({1000}), b({1000});
  a.fill(1.0f);
  k(a, b);  // unchanged by the refused call
  CHECK(b(999) == 2.0f);
}

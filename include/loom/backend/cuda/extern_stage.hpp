// An extern stage between CUDA kernels: the host program stops, copies the buffers the user's C++
// function reads and writes from device memory, calls the function on the host copies, and copies
// what it wrote back. The extern function never sees a device pointer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "loom/runtime/buffer.hpp"
#include "loom/support/error.hpp"
#include "loom/te/extern_registry.hpp"

namespace loom::runtime::cuda {

/// One buffer of an extern stage in device memory: the address of its element 0, element type,
/// shape and strides (elements), evaluated by the host program.
struct DeviceBufferView {
  uint64_t address = 0;
  DType dtype;
  std::vector<int64_t> shape, strides;
  std::string name;
};

/// Copies between device and host memory (the Driver API's cuMemcpyDtoH/HtoD, or a test's fake).
struct DeviceCopies {
  std::function<void(void* host, uint64_t device, size_t bytes)> to_host;
  std::function<void(uint64_t device, const void* host, size_t bytes)> to_device;
};

namespace detail {

/// The elements [first, last] a view reaches from its element 0; empty when an extent is <= 0.
struct ViewSpan {
  int64_t first = 0, last = -1;
  bool empty() const { return last < first; }
};

inline ViewSpan span_of(const DeviceBufferView& v) {
  ViewSpan s{0, 0};
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] <= 0) return ViewSpan{};
    const int64_t reach = (v.shape[d] - 1) * v.strides[d];
    (reach < 0 ? s.first : s.last) += reach;
  }
  return s;
}

}  // namespace detail

/// Calls extern function `function_id` on host copies of its device buffers: every input and
/// output is copied to the host (an output too: the function may write only part of it), and every
/// output is copied back. The caller has waited for the kernels before it.
inline void run_extern_stage_on_host(int64_t function_id, const std::vector<DeviceBufferView>& inputs,
                                     const std::vector<DeviceBufferView>& outputs,
                                     const DeviceCopies& copies) {
  struct HostCopy {
    std::vector<std::byte> bytes;
    uint64_t device = 0;  // address of the copied range
    BufferView view;
  };
  auto copy_in = [&](const DeviceBufferView& v) {
    HostCopy c;
    const detail::ViewSpan span = detail::span_of(v);
    const int64_t size = v.dtype.bytes();
    const int64_t elements = span.empty() ? 0 : span.last - span.first + 1;
    c.bytes.resize(static_cast<size_t>(std::max<int64_t>(elements, 1) * size));
    c.device = v.address + static_cast<uint64_t>(span.first * size);
    if (elements > 0) copies.to_host(c.bytes.data(), c.device, static_cast<size_t>(elements * size));
    // The function indexes from element 0, which is -span.first elements into the copy.
    c.view = BufferView(c.bytes.data() - span.first * size, v.dtype, v.shape, v.strides);
    return c;
  };
  std::vector<HostCopy> in, out;
  for (const DeviceBufferView& v : inputs) in.push_back(copy_in(v));
  for (const DeviceBufferView& v : outputs) out.push_back(copy_in(v));
  std::vector<BufferView> in_views, out_views;
  for (const HostCopy& c : in) in_views.push_back(c.view);
  for (const HostCopy& c : out) out_views.push_back(c.view);
  (*ExternRegistry::global().function(function_id))(in_views, out_views);
  for (size_t i = 0; i < out.size(); ++i) {
    const detail::ViewSpan span = detail::span_of(outputs[i]);
    if (span.empty()) continue;
    const int64_t bytes = (span.last - span.first + 1) * outputs[i].dtype.bytes();
    copies.to_device(out[i].device, out[i].bytes.data(), static_cast<size_t>(bytes));
  }
}

}  // namespace loom::runtime::cuda

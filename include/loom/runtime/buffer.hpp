// Host memory for kernel arguments: BufferView (a non-owning typed view with shape and
// strides in elements) and Buffer<T> (owning, 64-byte aligned, row-major by default).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

// DLPack (Debian: libdlpack-dev) is optional: with it, a DLTensor* is a kernel argument.
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#define LOOM_HAS_DLPACK 1
#endif

#include "loom/ir/dtype.hpp"
#include "loom/ir/half.hpp"
#include "loom/runtime/workspace_pool.hpp"
#include "loom/support/error.hpp"

namespace loom {

/// The DType of C++ element type T: dtype_of<float>::value is f32. Defined for float, double, half,
/// bfloat16, the fixed-width integers and bool; other types do not compile.
template <typename T>
struct dtype_of;
/// float elements are float32.
template <>
struct dtype_of<float> {
  static constexpr DType value = f32;  ///< The DType of T.
};
/// double elements are float64.
template <>
struct dtype_of<double> {
  static constexpr DType value = f64;  ///< The DType of T.
};
/// half elements are float16.
template <>
struct dtype_of<half> {
  static constexpr DType value = f16;  ///< The DType of T.
};
/// bfloat16 elements are bfloat16.
template <>
struct dtype_of<bfloat16> {
  static constexpr DType value = bf16;  ///< The DType of T.
};
/// int8_t elements are int8.
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = i8;  ///< The DType of T.
};
/// int16_t elements are int16.
template <>
struct dtype_of<int16_t> {
  static constexpr DType value = i16;  ///< The DType of T.
};
/// int32_t elements are int32.
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = i32;  ///< The DType of T.
};
/// int64_t elements are int64.
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = i64;  ///< The DType of T.
};
/// uint8_t elements are uint8.
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = u8;  ///< The DType of T.
};
/// uint16_t elements are uint16.
template <>
struct dtype_of<uint16_t> {
  static constexpr DType value = u16;  ///< The DType of T.
};
/// uint32_t elements are uint32.
template <>
struct dtype_of<uint32_t> {
  static constexpr DType value = u32;  ///< The DType of T.
};
/// uint64_t elements are uint64.
template <>
struct dtype_of<uint64_t> {
  static constexpr DType value = u64;  ///< The DType of T.
};
/// bool elements are bool (uint1, stored in a byte).
template <>
struct dtype_of<bool> {
  static constexpr DType value = boolean;  ///< The DType of T.
};

/// Row-major strides (in elements) for a shape.
inline std::vector<int64_t> compact_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

/// A typed view of memory someone else owns. Strides are in elements.
struct BufferView {
  /// The first element (not owned).
  void* data = nullptr;
  /// The element type.
  DType dtype = f32;
  /// The extents, outermost first.
  std::vector<int64_t> shape;
  /// The distance between neighbours in each dimension, in elements (row-major when built without).
  std::vector<int64_t> strides;

  BufferView() = default;
  /// A view of `d` holding elements of type `t` with `s` and strides `st` (row-major when empty).
  BufferView(void* d, DType t, std::vector<int64_t> s, std::vector<int64_t> st = {})
      : data(d), dtype(t), shape(std::move(s)), strides(std::move(st)) {
    if (strides.empty()) strides = compact_strides(shape);
  }
  /// A view of `d`, its dtype from T (dtype_of<T>).
  template <typename T>
  BufferView(T* d, std::vector<int64_t> s, std::vector<int64_t> st = {})
      : BufferView(static_cast<void*>(d), dtype_of<T>::value, std::move(s), std::move(st)) {}

  /// The number of elements, the product of the shape (padding not counted).
  int64_t num_elements() const {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  }
  /// The number of dimensions.
  int rank() const { return static_cast<int>(shape.size()); }
};

/// An owning buffer of T, 64-byte aligned so vector code can assume alignment. Its memory comes from
/// runtime::WorkspacePool: from 2 MiB up, huge pages are requested and a freed block is reused.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  /// A zero-initialised row-major buffer of `shape`.
  explicit Buffer(std::vector<int64_t> shape) : shape_(std::move(shape)), strides_(compact_strides(shape_)) {
    allocate(num_elements());
  }
  /// Buffer<float> b{64, 128}: the shape as a braced list.
  Buffer(std::initializer_list<int64_t> shape) : Buffer(std::vector<int64_t>(shape)) {}
  /// A buffer with explicit strides (in elements), e.g. padded rows.
  Buffer(std::vector<int64_t> shape, std::vector<int64_t> strides)
      : shape_(std::move(shape)), strides_(std::move(strides)) {
    int64_t span = 1;
    for (size_t i = 0; i < shape_.size(); ++i) span += (shape_[i] - 1) * strides_[i];
    allocate(shape_.empty() ? 1 : span);
  }

  /// The elements, the shape and strides (in elements), the extent of dimension `i` (std::out_of_range
  /// if there is none), the rank, and the element count (padding not counted).
  /// @{
  T* data() const { return storage_.get(); }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i)); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const {
    return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<int64_t>());
  }
  /// @}

  /// The element at one index per dimension (b(i, j)), through the strides; no bounds check.
  template <typename... Idx>
  T& operator()(Idx... idx) const {
    int64_t indices[] = {static_cast<int64_t>(idx)...};
    int64_t offset = 0;
    for (size_t i = 0; i < sizeof...(Idx); ++i) offset += indices[i] * strides_[i];
    return storage_.get()[offset];
  }
  /// The i-th element of the allocation, strides ignored (padding included).
  T& at_flat(int64_t i) const { return storage_.get()[i]; }

  /// A BufferView of the same memory, to pass where a kernel argument or view is expected; the view
  /// does not keep the buffer alive.
  /// @{
  BufferView view() const {
    return BufferView(static_cast<void*>(data()), dtype_of<T>::value, shape_, strides_);
  }
  operator BufferView() const { return view(); }
  /// @}

  /// Sets every element (including padding) to value.
  void fill(T value) {
    for (int64_t i = 0; i < allocated_; ++i) storage_.get()[i] = value;
  }

 private:
  struct AlignedDelete {  // back to the pool (large blocks are kept for the next Buffer or kernel)
    void operator()(T* p) const { runtime::WorkspacePool::global().free(p); }
  };
  void allocate(int64_t n) {
    allocated_ = n < 1 ? 1 : n;
    size_t bytes = 0;
    if (__builtin_mul_overflow(sizeof(T), static_cast<size_t>(allocated_), &bytes)) throw std::bad_alloc();
    T* p = static_cast<T*>(runtime::WorkspacePool::global().allocate(bytes, false));
    if (!p) throw std::bad_alloc();
    for (int64_t i = 0; i < allocated_; ++i) new (p + i) T();
    storage_ = std::shared_ptr<T>(p, AlignedDelete());
  }

  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::shared_ptr<T> storage_;
  int64_t allocated_ = 0;
};

/// Where an argument's memory lives, in DLPack's device codes (kDLCPU = 1, kDLCUDA = 2, ...).
struct ArgDevice {
  int type = 1;  ///< kDLCPU: host memory
  /// The device index, for device memory.
  int id = 0;
  /// Host memory the CPU can read and write: CPU, CUDA pinned host memory, CUDA managed memory.
  bool host_accessible() const { return type == 1 || type == 3 || type == 13; }
};

/// One argument of a kernel call: a buffer or a scalar.
struct KernelArg {
  /// Which of the fields holds the argument's value.
  enum class Kind { Buffer, Int, Float };
  /// Which of the value members is set.
  Kind kind = Kind::Buffer;
  /// The memory, for Kind::Buffer.
  BufferView buffer;
  /// The value, for Kind::Int.
  int64_t int_value = 0;
  /// The value, for Kind::Float.
  double float_value = 0.0;
  /// Where the buffer's memory lives (host memory unless it came from a DLTensor on a device).
  ArgDevice device;
  /// Why the argument cannot be used ("" when it can): a conversion found a problem that the call
  /// reports with the parameter's name (e.g. a DLTensor of an unsupported dtype).
  std::string invalid;

  /// A buffer argument (a BufferView or a Buffer<T>, whose memory must outlive the call), or an integer
  /// scalar.
  /// @{
  KernelArg(const BufferView& b) : kind(Kind::Buffer), buffer(b) {}
  template <typename T>
  KernelArg(const Buffer<T>& b) : kind(Kind::Buffer), buffer(b.view()) {}
  KernelArg(int v) : kind(Kind::Int), int_value(v) {}
  KernelArg(int64_t v) : kind(Kind::Int), int_value(v) {}
  /// @}
  /// Any other integer type (unsigned, size_t, long long, ...) as an integer scalar.
  template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, int> &&
           !std::is_same_v<T, int64_t>) KernelArg(T v)
      : kind(Kind::Int), int_value(static_cast<int64_t>(v)) {}
  /// A floating-point scalar argument, converted to the parameter's type.
  /// @{
  KernelArg(double v) : kind(Kind::Float), float_value(v) {}
  KernelArg(float v) : kind(Kind::Float), float_value(v) {}
  /// @}

#ifdef LOOM_HAS_DLPACK
  /// A DLPack tensor: its data (plus byte_offset), dtype, shape and strides (compact when null).
  KernelArg(const DLTensor* t) : kind(Kind::Buffer) {
    if (!t) {
      invalid = "is a null DLTensor pointer";
      return;
    }
    device = ArgDevice{static_cast<int>(t->device.device_type), t->device.device_id};
    constexpr uint8_t kDLBoolCode = 6;  // kDLBool from DLPack 0.8 on; Debian 12 ships 0.6
    const DLDataType d = t->dtype;
    DType dtype;
    if (d.lanes != 1) {
      invalid = cat("is a DLTensor with ", d.lanes, "-lane elements; pass one element per lane (lanes = 1)");
    } else if (d.code == kDLBoolCode && d.bits == 8) {
      dtype = boolean;
    } else if ((d.code == kDLInt || d.code == kDLUInt) &&
               (d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64)) {
      dtype = DType(d.code == kDLInt ? TypeCode::Int : TypeCode::UInt, d.bits);
    } else if (d.code == kDLFloat && (d.bits == 16 || d.bits == 32 || d.bits == 64)) {
      dtype = DType(TypeCode::Float, d.bits);
    } else if (d.code == kDLBfloat && d.bits == 16) {
      dtype = bf16;
    } else {
      invalid = cat("is a DLTensor of DLPack dtype code ", static_cast<int>(d.code), " with ",
                    static_cast<int>(d.bits),
                    " bits, which Loom does not support (int/uint 8-64, float 16-64, bfloat16, bool)");
    }
    if (t->ndim < 0 || (t->ndim > 0 && !t->shape)) invalid = "is a DLTensor without a valid shape";
    if (!invalid.empty()) return;
    std::vector<int64_t> shape(t->shape, t->shape + t->ndim);
    std::vector<int64_t> strides =
        t->strides ? std::vector<int64_t>(t->strides, t->strides + t->ndim) : std::vector<int64_t>();
    void* data = t->data ? static_cast<void*>(static_cast<char*>(t->data) + t->byte_offset) : nullptr;
    buffer = BufferView(data, dtype, std::move(shape), std::move(strides));
  }
  /// The same, for a non-const pointer.
  KernelArg(DLTensor* t) : KernelArg(static_cast<const DLTensor*>(t)) {}
#endif
};

}  // namespace loom

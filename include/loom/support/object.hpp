// Intrusive reference counting shared by every IR, TE and schedule node.
// Nodes are immutable after construction (IR) or owned by one schedule (stages), so a plain
// atomic count is enough; Ref<T> is the smart handle.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

namespace loom {

class Object {
 public:
  Object() = default;
  Object(const Object&) : ref_count_(0) {}
  Object& operator=(const Object&) { return *this; }
  virtual ~Object() = default;

  void inc_ref() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  void dec_ref() const {
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  mutable std::atomic<int> ref_count_{0};
};

/// A counted pointer to an Object subclass. Null when default-constructed.
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}
  explicit Ref(T* ptr) : ptr_(ptr) {
    if (ptr_) ptr_->inc_ref();
  }
  Ref(const Ref& other) : ptr_(other.ptr_) {
    if (ptr_) ptr_->inc_ref();
  }
  Ref(Ref&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  Ref(const Ref<U>& other) : ptr_(other.get()) {
    if (ptr_) ptr_->inc_ref();
  }
  ~Ref() {
    if (ptr_) ptr_->dec_ref();
  }
  Ref& operator=(Ref other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }

  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  bool same_as(const Ref& other) const { return ptr_ == other.ptr_; }
  friend bool operator==(const Ref& a, const Ref& b) { return a.ptr_ == b.ptr_; }
  friend bool operator!=(const Ref& a, const Ref& b) { return a.ptr_ != b.ptr_; }
  friend bool operator<(const Ref& a, const Ref& b) { return std::less<T*>()(a.ptr_, b.ptr_); }

 private:
  T* ptr_ = nullptr;
};

template <typename T, typename... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

/// Hash of a handle by node identity, for unordered maps keyed on nodes.
struct RefHash {
  template <typename H>
  std::size_t operator()(const H& handle) const {
    return std::hash<const void*>()(static_cast<const void*>(handle.get()));
  }
};

}  // namespace loom

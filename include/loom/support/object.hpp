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

/// The base class of every node: an intrusive, atomic reference count that Ref<T> maintains.
/// Derive from it and hold nodes through Ref (make_ref<T>(...)); a node deletes itself with its last Ref.
class Object {
 public:
  Object() = default;
  /// A copy starts with no references of its own.
  Object(const Object&) : ref_count_(0) {}
  /// Assignment leaves the reference count alone.
  Object& operator=(const Object&) { return *this; }
  virtual ~Object() = default;

  /// Reference counting, called by Ref; dec_ref() deletes the object when the count drops to zero.
  /// @{
  void inc_ref() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  void dec_ref() const {
    if (ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  /// @}

 private:
  mutable std::atomic<int> ref_count_{0};
};

/// A counted pointer to an Object subclass. Null when default-constructed.
template <typename T>
class Ref {
 public:
  Ref() = default;
  /// A null Ref.
  Ref(std::nullptr_t) {}
  /// Takes a reference to `ptr` (may be null); the object is deleted with its last Ref.
  explicit Ref(T* ptr) : ptr_(ptr) {
    if (ptr_) ptr_->inc_ref();
  }
  /// Another reference to the same object.
  Ref(const Ref& other) : ptr_(other.ptr_) {
    if (ptr_) ptr_->inc_ref();
  }
  /// Takes over `other`'s reference, leaving it null.
  Ref(Ref&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  /// A Ref to a base class from a Ref to a derived one.
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  Ref(const Ref<U>& other) : ptr_(other.get()) {
    if (ptr_) ptr_->inc_ref();
  }
  /// Drops the reference.
  ~Ref() {
    if (ptr_) ptr_->dec_ref();
  }
  /// Copy or move assignment (copy-and-swap).
  Ref& operator=(Ref other) noexcept {
    std::swap(ptr_, other.ptr_);
    return *this;
  }

  /// The object (null when the Ref is), and whether there is one.
  /// @{
  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }
  T& operator*() const { return *ptr_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  /// @}
  /// True when both refer to the same object (or both are null).
  bool same_as(const Ref& other) const { return ptr_ == other.ptr_; }
  /// Identity comparisons and an address order, for sorted containers.
  /// @{
  friend bool operator==(const Ref& a, const Ref& b) { return a.ptr_ == b.ptr_; }
  friend bool operator!=(const Ref& a, const Ref& b) { return a.ptr_ != b.ptr_; }
  friend bool operator<(const Ref& a, const Ref& b) { return std::less<T*>()(a.ptr_, b.ptr_); }
  /// @}

 private:
  T* ptr_ = nullptr;
};

/// A new T constructed from `args`, held by a Ref: the way to create nodes.
template <typename T, typename... Args>
Ref<T> make_ref(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

/// Hash of a handle by node identity, for unordered maps keyed on nodes.
struct RefHash {
  /// The address of the handle's node, hashed.
  template <typename H>
  std::size_t operator()(const H& handle) const {
    return std::hash<const void*>()(static_cast<const void*>(handle.get()));
  }
};

}  // namespace loom

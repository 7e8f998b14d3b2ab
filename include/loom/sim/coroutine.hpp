// A stackful coroutine on POSIX ucontext: the GPU simulator runs each warp of a block as one, so a
// warp can stop at a barrier, let the other warps of its block catch up, and resume where it was;
// and each block of a kernel that waits on grid flags, so a block can stop at a wait. A block's
// warps are then coroutines inside a coroutine: a warp that yields its block suspends it whole.
#pragma once

#include <sys/mman.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <utility>

#include "loom/support/error.hpp"

namespace loom::sim {

/// Thrown inside a suspended coroutine that is being abandoned, so that its stack unwinds and
/// runs its destructors before the stack is reused. Deliberately not a std::exception.
struct CoroutineCancelled {};

class Coroutine {
 public:
  /// The stack is reserved, not committed: only the pages a warp touches cost memory. A guard
  /// below it is made inaccessible, so an overflow faults instead of corrupting the heap. The
  /// guard is 64 KiB, a multiple of every page size, so no <unistd.h> (and its `sync`, `read`,
  /// `link` in the global namespace) is needed to ask for the page size.
  explicit Coroutine(size_t stack_bytes = size_t{1} << 20) {
    mapped_bytes_ = (stack_bytes + kGuardBytes - 1) / kGuardBytes * kGuardBytes + kGuardBytes;
    void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      throw Error(cat("the GPU simulator could not reserve ", mapped_bytes_, " bytes for a warp's stack"));
    mapping_ = static_cast<std::byte*>(p);
    mprotect(mapping_, kGuardBytes, PROT_NONE);
  }
  ~Coroutine() {
    cancel();
    munmap(mapping_, mapped_bytes_);
  }
  Coroutine(const Coroutine&) = delete;
  Coroutine& operator=(const Coroutine&) = delete;

  /// Makes the next resume() run `body` from its start. A suspended body is cancelled first.
  void start(std::function<void()> body) {
    cancel();
    body_ = std::move(body);
    getcontext(&context_);
    context_.uc_stack.ss_sp = mapping_ + kGuardBytes;
    context_.uc_stack.ss_size = mapped_bytes_ - kGuardBytes;
    context_.uc_link = &caller_;  // where entry() goes when it returns
    const uintptr_t self = reinterpret_cast<uintptr_t>(this);
    // makecontext passes int arguments only: the pointer travels in two halves.
    makecontext(&context_, reinterpret_cast<void (*)()>(&Coroutine::entry), 2,
                static_cast<unsigned>(self >> 32), static_cast<unsigned>(self & 0xFFFFFFFFu));
    started_ = true;
    finished_ = false;
    cancelled_ = false;
  }

  /// Runs the body until it yields or returns; true when it has returned. An exception that
  /// escaped the body is rethrown here, on the caller's stack. So is the cancellation of an
  /// enclosing coroutine that was suspended inside this one's body: it unwinds that one too.
  bool resume() {
    internal_check(suspended(), "resume of a coroutine that is not suspended");
    swapcontext(&caller_, &context_);
    if (finished_ && error_) std::rethrow_exception(std::exchange(error_, nullptr));
    if (finished_ && std::exchange(cancelled_, false)) throw CoroutineCancelled{};
    return finished_;
  }

  /// From inside the body: back to the resume() that entered it.
  void yield() {
    swapcontext(&context_, &caller_);
    if (cancelling_) throw CoroutineCancelled{};
  }

  bool suspended() const { return started_ && !finished_; }

  /// Unwinds a suspended body (its yield() throws CoroutineCancelled) so it holds nothing.
  void cancel() {
    if (!suspended()) return;
    cancelling_ = true;
    while (!finished_) swapcontext(&caller_, &context_);
    cancelling_ = false;
    cancelled_ = false;
    error_ = nullptr;
  }

 private:
  static void entry(unsigned high, unsigned low) {
    auto* self = reinterpret_cast<Coroutine*>((static_cast<uintptr_t>(high) << 32) | low);
    try {
      self->body_();
    } catch (const CoroutineCancelled&) {
      self->cancelled_ = !self->cancelling_;  // an enclosing coroutine's cancellation: pass it on
    } catch (...) {
      self->error_ = std::current_exception();
    }
    self->finished_ = true;
  }

  static constexpr size_t kGuardBytes = size_t{64} << 10;

  std::byte* mapping_ = nullptr;
  size_t mapped_bytes_ = 0;
  ucontext_t context_{}, caller_{};
  std::function<void()> body_;
  std::exception_ptr error_;
  bool started_ = false, finished_ = false, cancelling_ = false, cancelled_ = false;
};

}  // namespace loom::sim

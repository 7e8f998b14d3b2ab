// One shared buffer of one simulated block (or the planned memory several buffers share): its
// memory, filled with poison when fresh, and a shadow word per element that says who last wrote
// and read it, for races and uninitialized reads. Two accesses are ordered when a block barrier
// lies between them, or a __syncwarp when both threads are lanes of one warp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "loom/runtime/sim_report.hpp"
#include "loom/sim/bank_model.hpp"

namespace loom::sim {

/// Who accesses an element, and when: the thread (linear in the block), the block's barrier
/// interval (the stretches between the block's barriers, numbered from 1) and its warp's
/// __syncwarp epoch (the stretches between that warp's __syncwarp calls, from 1).
struct SharedAccessor {
  int32_t thread = -1;
  uint32_t interval = 0;
  uint32_t warp_epoch = 0;

  int32_t warp() const { return thread / kWarpSize; }
  /// Whether this earlier access (in the current interval) is ordered before `now`'s access: the
  /// same thread, or a lane of the same warp with a __syncwarp since.
  bool ordered_before(const SharedAccessor& now) const {
    return thread == now.thread || (warp() == now.warp() && warp_epoch < now.warp_epoch);
  }
};

/// What the shadow remembers of one element. Interval 0 means "never in this block".
struct ElementShadow {
  SharedAccessor writer;        // the last write
  SharedAccessor reader;        // a read in the last read interval
  SharedAccessor other_reader;  // a second reader in it, unordered with the first (thread -1: none)
  int32_t owner = -1;           // the buffer the last write was to (buffers may share memory)
};

/// A finding of one access: an uninitialized read, or a race with `other` (a thread of the block).
struct ShadowFinding {
  enum Kind : uint8_t { None, Uninitialized, ReadWriteRace, WriteWriteRace };
  Kind kind = None;
  int32_t other = -1;
};

class SharedMemory {
 public:
  /// Makes this the fresh memory of a new allocation of `bytes` bytes of `element_bytes`-byte
  /// elements: poison in every word and an empty shadow. Reuses the old storage when it fits.
  void reset(int64_t bytes, int element_bytes) {
    const size_t words = static_cast<size_t>((bytes + 3) / 4);
    if (words * 4 > capacity_) {
      storage_.reset(static_cast<std::byte*>(::operator new (words * 4, std::align_val_t{128})));
      capacity_ = words * 4;
    }
    const uint32_t poison = SimReport::kSharedPoisonWord;
    for (size_t w = 0; w < words; ++w) std::memcpy(storage_.get() + 4 * w, &poison, 4);
    bytes_ = bytes;
    element_bytes_ = element_bytes;
    element_shift_ = __builtin_ctz(static_cast<unsigned>(element_bytes));  // element sizes are powers of 2
    shadow_.assign(static_cast<size_t>(bytes / element_bytes), ElementShadow{});
    live_ = true;
  }
  void release() { live_ = false; }

  bool live() const { return live_; }
  std::byte* data() const { return storage_.get(); }
  int64_t bytes() const { return bytes_; }
  int element_bytes() const { return element_bytes_; }

  /// The elements that bytes [offset, offset + size) touch.
  int64_t first_element(int64_t offset) const { return offset >> element_shift_; }
  int64_t last_element(int64_t offset, int size) const { return (offset + size - 1) >> element_shift_; }

  /// `now` reads element e of buffer `buffer`. Another thread's write in the same interval, not
  /// ordered before by a __syncwarp of their warp, is a race; a thread re-reading its own write is
  /// not; what another buffer wrote into the same bytes is uninitialized for this one.
  ShadowFinding read(int64_t e, const SharedAccessor& now, int32_t buffer) {
    ElementShadow& s = shadow_[static_cast<size_t>(e)];
    ShadowFinding f;
    if (s.writer.interval == 0 || s.owner != buffer) {
      f = {ShadowFinding::Uninitialized, -1};
    } else if (s.writer.interval == now.interval && !s.writer.ordered_before(now)) {
      f = {ShadowFinding::ReadWriteRace, s.writer.thread};
    }
    // Keep two unordered readers, so that a write by one of them still finds the other. A reader
    // ordered before this read (its own thread, or its warp after a __syncwarp) is ordered before
    // whatever this thread does next, so this read stands for both.
    if (s.reader.interval != now.interval || s.reader.ordered_before(now)) {
      s.reader = now;
    } else if (s.other_reader.interval != now.interval || s.other_reader.ordered_before(now)) {
      s.other_reader = now;
    }
    return f;
  }

  /// `now` writes element e: a race with another thread's write or read in the same interval that
  /// is not ordered before it (a read before the write is a race too: its value depends on the
  /// warps' order).
  ShadowFinding write(int64_t e, const SharedAccessor& now, int32_t buffer) {
    ElementShadow& s = shadow_[static_cast<size_t>(e)];
    ShadowFinding f;
    auto unordered = [&](const SharedAccessor& a) {
      return a.interval == now.interval && !a.ordered_before(now);
    };
    if (unordered(s.writer)) {
      f = {ShadowFinding::WriteWriteRace, s.writer.thread};
    } else if (unordered(s.reader)) {
      f = {ShadowFinding::ReadWriteRace, s.reader.thread};
    } else if (unordered(s.other_reader)) {
      f = {ShadowFinding::ReadWriteRace, s.other_reader.thread};
    }
    s.writer = now;
    s.owner = buffer;
    return f;
  }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete (p, std::align_val_t{128}); }
  };
  std::unique_ptr<std::byte, AlignedDelete> storage_;
  size_t capacity_ = 0;
  int64_t bytes_ = 0;
  int element_bytes_ = 4, element_shift_ = 2;
  std::vector<ElementShadow> shadow_;
  bool live_ = false;
};

}  // namespace loom::sim

// One shared buffer of one simulated block (or the planned memory several buffers share): its
// memory, filled with poison when fresh, and a shadow word per element that says who last wrote
// and read it, for races and uninitialized reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "loom/runtime/sim_report.hpp"

namespace loom::sim {

/// What the shadow remembers of one element. Intervals number the stretches between the
/// block's barriers from 1, so 0 means "never in this block".
struct ElementShadow {
  uint32_t write_interval = 0;
  uint32_t read_interval = 0;
  int32_t writer = -1;        // linear thread index in the block
  int32_t reader = -1;        // a reader in read_interval
  int32_t other_reader = -1;  // a second, different reader in read_interval (or -1)
  int32_t owner = -1;         // the buffer the last write was to (buffers may share memory)
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

  /// Thread `thread` reads element e of buffer `buffer` in barrier interval `interval`. Another
  /// thread's write in the same interval is a race; a thread re-reading its own write is not;
  /// what another buffer wrote into the same bytes is uninitialized for this one.
  ShadowFinding read(int64_t e, int32_t thread, uint32_t interval, int32_t buffer) {
    ElementShadow& s = shadow_[static_cast<size_t>(e)];
    ShadowFinding f;
    if (s.write_interval == 0 || s.owner != buffer) {
      f = {ShadowFinding::Uninitialized, -1};
    } else if (s.write_interval == interval && s.writer != thread) {
      f = {ShadowFinding::ReadWriteRace, s.writer};
    }
    if (s.read_interval != interval) {
      s.read_interval = interval;
      s.reader = thread;
      s.other_reader = -1;
    } else if (s.reader != thread && s.other_reader < 0) {
      s.other_reader = thread;
    }
    return f;
  }

  /// Thread `thread` writes element e: a race with another thread's write or read in the same
  /// interval (a read before the write is a race too: its value depends on the warps' order).
  ShadowFinding write(int64_t e, int32_t thread, uint32_t interval, int32_t buffer) {
    ElementShadow& s = shadow_[static_cast<size_t>(e)];
    ShadowFinding f;
    if (s.write_interval == interval && s.writer != thread) {
      f = {ShadowFinding::WriteWriteRace, s.writer};
    } else if (s.read_interval == interval) {
      const int32_t other = s.reader != thread ? s.reader : s.other_reader;
      if (other >= 0) f = {ShadowFinding::ReadWriteRace, other};
    }
    s.write_interval = interval;
    s.writer = thread;
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

// Data races on global memory in the GPU simulator: a shadow per element of every global buffer a
// kernel writes (who last wrote it, who read it since), and the happens-before order CUDA gives one
// launch's threads: program order in a thread, barriers in a block, and between blocks only grid
// flags (a signal after a barrier publishes the block's earlier accesses; a wait acquires them,
// for the waiter at once and for its block's other threads after their next barrier). Block order,
// SM placement and the simulator's sequential execution order nothing. Every launch starts with an
// empty shadow: a kernel boundary orders everything before it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/interp/frame.hpp"
#include "loom/sim/kernel_info.hpp"
#include "loom/sim/session.hpp"

namespace loom::sim {

/// One global access: its block (linear index + 1; 0: no access), the block's barrier interval
/// at the time (BlockState::interval) and the thread (linear in the block).
struct GlobalEvent {
  uint32_t block = 0;
  uint32_t interval = 0;
  int32_t thread = 0;
};

/// What the shadow remembers of one element in the current launch: its last write and up to two
/// reads since (all-zero bytes: never accessed, so the shadow can come from calloc).
struct GlobalElementShadow {
  GlobalEvent write, reader, other_reader;
};

/// The accesses of other blocks that are ordered before some point of a thread: per block, the
/// highest barrier interval up to which all its threads' accesses are (thread -1), or up to which
/// one thread's are (a signaller's own accesses in the interval of its signal). Sparse: only the
/// blocks a chain of flags reached, so a grid of thousands of blocks costs nothing per block.
class Knowledge {
 public:
  struct Entry {
    uint32_t block;  // linear + 1, as GlobalEvent
    int32_t thread;  // -1: every thread of the block
    uint32_t upto;   // accesses in intervals <= upto
  };

  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }

  bool covers(const GlobalEvent& e) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), std::pair{e.block, -1}, before);
    for (; it != entries_.end() && it->block == e.block; ++it)
      if ((it->thread < 0 || it->thread == e.thread) && it->upto >= e.interval) return true;
    return false;
  }

  void add(uint32_t block, int32_t thread, uint32_t upto) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), std::pair{block, thread}, before);
    if (it != entries_.end() && it->block == block && it->thread == thread) {
      it->upto = std::max(it->upto, upto);
    } else {
      entries_.insert(it, Entry{block, thread, upto});
    }
  }

  void merge(const Knowledge& other) {
    if (other.entries_.empty()) return;
    if (entries_.empty()) {
      entries_ = other.entries_;
      return;
    }
    std::vector<Entry> out;
    out.reserve(entries_.size() + other.entries_.size());
    auto a = entries_.cbegin(), b = other.entries_.cbegin();
    while (a != entries_.cend() || b != other.entries_.cend()) {
      Entry next;
      if (b == other.entries_.cend() || (a != entries_.cend() && key(*a) < key(*b))) {
        next = *a++;
      } else if (a == entries_.cend() || key(*b) < key(*a)) {
        next = *b++;
      } else {
        next = Entry{a->block, a->thread, std::max(a->upto, b->upto)};
        ++a;
        ++b;
      }
      out.push_back(next);
    }
    entries_ = std::move(out);
  }

 private:
  static std::pair<uint32_t, int32_t> key(const Entry& e) { return {e.block, e.thread}; }
  static bool before(const Entry& e, const std::pair<uint32_t, int32_t>& k) { return key(e) < k; }
  std::vector<Entry> entries_;  // sorted by (block, thread)
};

/// The global-race state of one launch: the shadows of the kernel's written buffers (their
/// addresses taken from the host frame at launch) and what each grid flag's last signal published.
class GlobalRaces {
 public:
  GlobalRaces(const KernelInfo& kernel, const interp::Frame& host, Session& session, SimDim3 grid,
              SimDim3 block)
      : kernel_(kernel), session_(session), grid_(grid), block_(block) {
    for (const TrackedGlobal& t : kernel.tracked_globals) {
      const interp::BufferSlot& slot = host.buffers[t.slot];
      Range r;
      r.info = &t;
      r.data = slot.data;
      r.begin = slot.data + slot.begin_byte;
      r.bytes = slot.end_byte - slot.begin_byte;
      r.shift = __builtin_ctz(static_cast<unsigned>(t.granule));
      // Two parameters bound to the same memory (or a buffer and its alias) share one shadow.
      for (const Range& o : ranges_)
        if (o.begin == r.begin && o.bytes == r.bytes && o.shift == r.shift) r.shadow = o.shadow;
      if (!r.shadow && r.data && r.bytes > 0) {
        // calloc: the pages of a large buffer that the launch never touches are never touched.
        const size_t elements = static_cast<size_t>(((r.bytes - 1) >> r.shift) + 1);
        r.shadow = static_cast<GlobalElementShadow*>(std::calloc(elements, sizeof(GlobalElementShadow)));
        if (!r.shadow) throw std::bad_alloc();
        r.owner = true;
      }
      ranges_.push_back(r);
    }
  }
  ~GlobalRaces() {
    for (const Range& r : ranges_)
      if (r.owner) std::free(r.shadow);
  }
  GlobalRaces(const GlobalRaces&) = delete;
  GlobalRaces& operator=(const GlobalRaces&) = delete;

  int64_t races_found() const { return races_found_; }

  /// The shadow element that byte address `address` of tracked buffer `tracked` falls in, or
  /// null outside it (the access itself was bounds-checked already).
  struct Place {
    GlobalElementShadow* first = nullptr;
    int64_t first_element = 0, count = 0;
  };
  Place place(int tracked, uintptr_t address, int bytes) const {
    const Range& r = ranges_[static_cast<size_t>(tracked)];
    const int64_t offset = static_cast<int64_t>(address - reinterpret_cast<uintptr_t>(r.begin));
    if (!r.shadow || offset < 0 || offset + bytes > r.bytes) return {};
    const int64_t first = offset >> r.shift, last = (offset + bytes - 1) >> r.shift;
    return Place{r.shadow + first, first, last - first + 1};
  }

  /// What a signal of `flag` with `value` published; a wait that sees that value acquires it. A
  /// flag whose value was set otherwise (before the launch, or by an ordinary store) publishes nothing.
  void publish(const std::byte* flag, int32_t value, Knowledge known) {
    published_[flag] = Publication{value, std::move(known)};
  }
  const Knowledge* published(const std::byte* flag, int32_t value) const {
    auto it = published_.find(flag);
    return it == published_.end() || it->second.value != value ? nullptr : &it->second.known;
  }

  /// Out of line: most accesses find nothing.
  [[gnu::noinline, gnu::cold]] void report(int tracked, int64_t shadow_element, const GlobalEvent& first,
                                           const GlobalEvent& second, bool write_write, bool second_wrote) {
    ++races_found_;
    const Range& r = ranges_[static_cast<size_t>(tracked)];
    const int64_t byte_offset = (r.begin - r.data) + (shadow_element << r.shift);
    const int64_t granule = int64_t{1} << r.shift;
    const int64_t element =
        byte_offset >= 0 ? byte_offset / granule : -((-byte_offset + granule - 1) / granule);
    session_.add_global_race(r.info->name, kernel_.name, element, byte_offset,
                             write_write ? SimRaceKind::WriteWrite : SimRaceKind::ReadWrite, thread(first),
                             thread(second), second_wrote);
  }

 private:
  SimThread thread(const GlobalEvent& e) const {
    const int64_t b = e.block - 1, t = e.thread;
    return SimThread{SimDim3{b % grid_.x, b / grid_.x % grid_.y, b / (grid_.x * grid_.y)},
                     SimDim3{t % block_.x, t / block_.x % block_.y, t / (block_.x * block_.y)}};
  }

  struct Range {
    const TrackedGlobal* info = nullptr;
    const std::byte* data = nullptr;   // element 0 (reports count from it)
    const std::byte* begin = nullptr;  // the first accessible byte (the shadow's element 0)
    int64_t bytes = 0;
    int shift = 0;  // log2 of the shadow's granule
    GlobalElementShadow* shadow = nullptr;
    bool owner = false;
  };
  struct Publication {
    int32_t value = 0;
    Knowledge known;
  };

  const KernelInfo& kernel_;
  Session& session_;
  const SimDim3 grid_, block_;
  std::vector<Range> ranges_;  // by KernelInfo::tracked_globals index
  std::unordered_map<const std::byte*, Publication> published_;
  int64_t races_found_ = 0;
};

/// One running block's side of the check: what its threads have acquired through grid-flag waits
/// (the block as a whole, and per waiting thread until the block's next barrier), and the checks
/// of its threads' accesses against the shadow.
class GlobalRaceBlock {
 public:
  /// `interval`: the block's BlockState::interval, which its barriers advance.
  GlobalRaceBlock(GlobalRaces& launch, const uint32_t& interval) : launch_(launch), interval_(interval) {}

  void begin(int64_t linear_block) {
    block_ = static_cast<uint32_t>(linear_block + 1);
    known_.clear();
    pending_.clear();
  }

  /// Thread `thread` accesses `bytes` bytes at `address` of tracked buffer `tracked`.
  void access(int tracked, uintptr_t address, int bytes, int32_t thread, bool is_write) {
    const GlobalRaces::Place p = launch_.place(tracked, address, bytes);
    const GlobalEvent now{block_, interval_, thread};
    for (int64_t i = 0; i < p.count; ++i) {
      GlobalElementShadow& s = p.first[i];
      if (is_write) {
        write(tracked, p.first_element + i, s, now);
      } else {
        read(tracked, p.first_element + i, s, now);
      }
    }
  }

  /// loom.flag_signal by `thread`: after its fence, everything ordered before the signal is visible
  /// to whoever acquires the flag's new value: the block's accesses before its latest barrier, the
  /// signaller's own accesses since, and what the block (or the signaller) had acquired itself.
  void signal(const std::byte* flag, int32_t value, int32_t thread) {
    settle();
    Knowledge published = known_;
    for (const Pending& p : pending_)
      if (p.thread == thread) published.merge(p.known);
    if (interval_ > 1) published.add(block_, -1, interval_ - 1);
    published.add(block_, thread, interval_);
    launch_.publish(flag, value, std::move(published));
  }

  /// loom.flag_wait by `thread` that saw `value`: the thread acquires what the signal published;
  /// its block's other threads do once they pass the block's next barrier.
  void wait(const std::byte* flag, int32_t value, int32_t thread) {
    const Knowledge* published = launch_.published(flag, value);
    if (!published) return;
    settle();
    for (Pending& p : pending_) {
      if (p.thread == thread) {
        p.known.merge(*published);
        return;
      }
    }
    pending_.push_back(Pending{thread, interval_, *published});
  }

 private:
  struct Pending {
    int32_t thread;
    uint32_t interval;  // the waiter's interval: a later one means a barrier has passed since
    Knowledge known;
  };

  /// Whether access `e` happens before the current access of `thread` (in the block's current
  /// interval): the same thread, or the same block before a barrier, or acquired through flags.
  bool ordered(const GlobalEvent& e, int32_t thread) {
    if (e.block == block_ && (e.thread == thread || e.interval < interval_)) return true;
    if (known_.empty() && pending_.empty()) return false;
    settle();
    if (known_.covers(e)) return true;
    for (const Pending& p : pending_)
      if (p.thread == thread && p.known.covers(e)) return true;
    return false;
  }

  /// A wait's knowledge becomes the whole block's once a barrier follows it.
  void settle() {
    if (pending_.empty()) return;
    auto keep = pending_.begin();
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->interval < interval_) {
        known_.merge(it->known);
      } else {
        if (keep != it) *keep = std::move(*it);
        ++keep;
      }
    }
    pending_.erase(keep, pending_.end());
  }

  void write(int tracked, int64_t element, GlobalElementShadow& s, const GlobalEvent& now) {
    if (s.write.block && !ordered(s.write, now.thread)) {
      launch_.report(tracked, element, s.write, now, true, true);
    } else {
      for (const GlobalEvent* r : {&s.reader, &s.other_reader}) {
        if (r->block && !ordered(*r, now.thread)) {
          launch_.report(tracked, element, *r, now, false, true);
          break;
        }
      }
    }
    s.write = now;
    s.reader = s.other_reader = GlobalEvent{};
  }

  /// A read races with an unordered write. Of the reads since the write, the shadow keeps two: a
  /// new one replaces a kept one ordered before it (a later write ordered after the new read is
  /// after both); a third unordered reader is not kept, so its race with a later write may be missed.
  void read(int tracked, int64_t element, GlobalElementShadow& s, const GlobalEvent& now) {
    if (s.write.block && !ordered(s.write, now.thread))
      launch_.report(tracked, element, s.write, now, false, false);
    auto same = [&](const GlobalEvent& r) { return r.block == now.block && r.thread == now.thread; };
    if (same(s.reader)) {
      s.reader = now;
    } else if (same(s.other_reader)) {
      s.other_reader = now;
    } else if (!s.reader.block || ordered(s.reader, now.thread)) {
      s.reader = now;
    } else if (!s.other_reader.block || ordered(s.other_reader, now.thread)) {
      s.other_reader = now;
    }
  }

  GlobalRaces& launch_;
  const uint32_t& interval_;
  uint32_t block_ = 0;
  Knowledge known_;
  std::vector<Pending> pending_;
};

}  // namespace loom::sim

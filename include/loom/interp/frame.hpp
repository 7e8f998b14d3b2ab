// The interpreter's run-time state: one Frame per run with a slot for every variable (resolved at
// compile time) and for every buffer, plus the checked memory access every Load and Store uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "loom/ir/printer.hpp"
#include "loom/support/error.hpp"

// The GPU simulator's per-thread and per-run state, which simulated threads carry in their frame;
// opaque to the interpreter.
namespace loom::sim {
struct LaneContext;
class Session;
}  // namespace loom::sim

namespace loom::interp {

/// The memory bound to a buffer variable: a parameter's data or an Allocate's fresh memory.
/// Accessible bytes are [begin_byte, end_byte) relative to `data` (element 0); a parameter with
/// negative strides has begin_byte < 0.
struct BufferSlot {
  std::byte* data = nullptr;
  int64_t begin_byte = 0;
  int64_t end_byte = 0;
};

/// Variables live in flat arrays, integral ones (and bools) as int64, floats as double; the
/// compiler gives every binding its own slot index, so evaluation never looks a name up.
struct Frame {
  int64_t* ints = nullptr;
  double* floats = nullptr;
  BufferSlot* buffers = nullptr;
  /// In the frame of a simulated GPU thread: which lane of which warp it is (see sim/warp.hpp).
  sim::LaneContext* lane = nullptr;
  /// The GPU simulation of this run: set when the program has kernel regions (sim/session.hpp).
  sim::Session* session = nullptr;

  template <typename V>
  V* slots() {
    if constexpr (std::is_same_v<V, double>) {
      return floats;
    } else {
      return ints;
    }
  }
};

/// The sizes of a program's frame, known once the whole program is compiled; a GPU launch gives
/// every simulated thread a frame of this size.
struct FrameLayout {
  int num_ints = 0, num_floats = 0, num_buffers = 0;
};

/// What an access error names: the buffer and the IR text of the access.
struct AccessSite {
  std::string buffer_name;
  Expr index;  // the flat index expression, printed in the message
  bool is_store = false;
};

[[noreturn]] inline void throw_out_of_bounds(const AccessSite& site, DType element, int64_t index,
                                             const BufferSlot& slot) {
  const int64_t size = element.bytes();
  const int64_t begin = slot.begin_byte / size, end = slot.end_byte / size;
  std::string valid =
      end > begin ? cat("valid indices are ", begin, " to ", end - 1) : "it holds no elements";
  throw Error(cat("out-of-bounds ", site.is_store ? "store to" : "load from", " buffer '", site.buffer_name,
                  "': index ", index, " is outside its extent of ", end - begin, " ", element.str(),
                  " elements (", valid, "), at ", site.buffer_name, "[", to_string(site.index),
                  "]. The interpreter checks every access: this is a bug in the lowering or in a "
                  "schedule that reaches outside the buffer"));
}

/// The address of element `index` of a buffer seen as elements of `Raw`, after checking that
/// all its bytes lie inside the slot's memory.
template <typename Raw>
inline std::byte* checked_address(const BufferSlot& slot, int64_t index, const AccessSite& site,
                                  DType element) {
  constexpr int64_t size = sizeof(Raw);
  int64_t offset = 0;
  if (__builtin_mul_overflow(index, size, &offset) || offset < slot.begin_byte ||
      offset > slot.end_byte - size)
    throw_out_of_bounds(site, element, index, slot);
  return slot.data + offset;
}

template <typename Codec>
inline typename Codec::Value load_element(const BufferSlot& slot, int64_t index, const AccessSite& site,
                                          DType element) {
  typename Codec::Raw raw;
  // memcpy: the memory may be any type underneath (an extern stage's output, a reused allocation).
  std::memcpy(&raw, checked_address<typename Codec::Raw>(slot, index, site, element), sizeof(raw));
  return Codec::decode(raw);
}

template <typename Codec>
inline void store_element(const BufferSlot& slot, int64_t index, typename Codec::Value value,
                          const AccessSite& site, DType element) {
  typename Codec::Raw raw = Codec::encode(value);
  std::memcpy(checked_address<typename Codec::Raw>(slot, index, site, element), &raw, sizeof(raw));
}

}  // namespace loom::interp

// The process-wide table of user C++ functions that extern stages call, by numeric id.
// extern_compute() adds a function when the stage is defined; generated code and the interpreter
// look it up at run time. Buffers are only named here (BufferView is runtime/buffer.hpp's): the
// registry stores and hands out functions, and only its callers, above runtime/, call them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/support/error.hpp"

namespace loom {

struct BufferView;  // runtime/buffer.hpp

/// The C++ function of an extern stage: it reads `inputs` and writes `outputs`, whose memory the kernel owns.
using ExternFunction =
    std::function<void(const std::vector<BufferView>& inputs, const std::vector<BufferView>& outputs)>;

/// The process-wide table of extern stage functions, by id (lowered IR names them by integer); thread-safe.
class ExternRegistry {
 public:
  /// The table every build and run uses.
  static ExternRegistry& global() {
    static ExternRegistry registry;
    return registry;
  }

  /// Registers `fn` under `name` (for messages) and returns its id; ids are never reused.
  int64_t add(ExternFunction fn, std::string name) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(std::make_shared<Entry>(Entry{std::move(fn), std::move(name)}));
    return static_cast<int64_t>(entries_.size() - 1);
  }

  /// The function of `id`, shared with the table (another thread may add functions meanwhile).
  std::shared_ptr<const ExternFunction> function(int64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    internal_check(id >= 0 && static_cast<size_t>(id) < entries_.size(), "unknown extern function id ", id);
    const std::shared_ptr<Entry>& entry = entries_[static_cast<size_t>(id)];
    return std::shared_ptr<const ExternFunction>(entry, &entry->fn);
  }

  /// The name of function `id`, or "?" when there is none.
  std::string name(int64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<size_t>(id) < entries_.size() ? entries_[static_cast<size_t>(id)]->name : "?";
  }

 private:
  struct Entry {
    ExternFunction fn;
    std::string name;
  };
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Entry>> entries_;
};

}  // namespace loom

// The process-wide table of user C++ functions that extern stages call, by numeric id.
// Generated code and the interpreter look functions up here at run time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/runtime/buffer.hpp"
#include "loom/support/error.hpp"

namespace loom {

using ExternFunction =
    std::function<void(const std::vector<BufferView>& inputs, const std::vector<BufferView>& outputs)>;

class ExternRegistry {
 public:
  static ExternRegistry& global() {
    static ExternRegistry registry;
    return registry;
  }

  int64_t add(ExternFunction fn, std::string name) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(std::make_shared<Entry>(Entry{std::move(fn), std::move(name)}));
    return static_cast<int64_t>(entries_.size() - 1);
  }

  void call(int64_t id, const std::vector<BufferView>& inputs, const std::vector<BufferView>& outputs) const {
    std::shared_ptr<Entry> entry;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      internal_check(id >= 0 && static_cast<size_t>(id) < entries_.size(), "unknown extern function id ", id);
      entry = entries_[static_cast<size_t>(id)];
    }
    entry->fn(inputs, outputs);
  }

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

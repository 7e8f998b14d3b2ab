// The in-memory cache of compiled kernels: keyed by the structural hash of the lowered function
// (parameters, size variables, body) plus the resolved target, confirmed with structural_equal on
// a hit. Concurrent builds of one function compile it once; the others wait for that result.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/structural_equal.hpp"
#include "loom/ir/structural_hash.hpp"
#include "loom/runtime/cpu_backend.hpp"

namespace loom::runtime {

/// The parts of a lowered function that decide its machine code, flattened so that the hasher
/// and the equality checker walk exactly the same roots in the same order. Parameter names do
/// not matter (alpha-equivalence), their kinds, types and layouts do.
struct FunctionKeyParts {
  std::string layout;  // name, then per parameter its kind, element type and rank
  std::vector<Expr> params;
  std::vector<Expr> size_vars;
  Stmt body;

  explicit FunctionKeyParts(const LoweredFunc& f) : body(f.body) {
    layout = f.name;
    for (const FuncParam& p : f.params) {
      if (p.kind == FuncParam::Kind::Buffer) {
        layout +=
            cat("|buffer:", p.buffer.dtype.str(), ":", p.buffer.shape.size(), ":", p.buffer.strides.size());
        params.push_back(p.buffer.data);
        params.insert(params.end(), p.buffer.shape.begin(), p.buffer.shape.end());
        params.insert(params.end(), p.buffer.strides.begin(), p.buffer.strides.end());
      } else {
        layout += "|scalar";
        params.push_back(p.scalar);
      }
    }
    size_vars.assign(f.size_vars.begin(), f.size_vars.end());
  }

  /// A 64-bit hash of the function and `salt` (the target and format versions). Different salts
  /// give independent hashes: the disk cache names files by one and confirms with another.
  uint64_t hash(const std::string& salt) const {
    StructuralHasher h;
    h.add_string(salt).add_string(layout).add(params).add(size_vars).add(body);
    return h.value();
  }

  bool equals(const FunctionKeyParts& other) const {
    if (layout != other.layout) return false;
    StructuralEqualChecker checker;
    return checker.equal(params, other.params) && checker.equal(size_vars, other.size_vars) &&
           checker.equal(body, other.body);
  }
};

class MemoryKernelCache {
 public:
  using CodePtr = std::shared_ptr<const CompiledCode>;

  static MemoryKernelCache& global() {
    static MemoryKernelCache* cache = new MemoryKernelCache();  // outlives kernels in static storage
    return *cache;
  }

  struct Reservation {
    std::promise<CodePtr> promise;
    uint64_t key = 0;
    const void* entry = nullptr;  // identifies the cache entry to drop on failure
  };

  /// The result of a lookup: either `code` (a hit, possibly still being compiled by another
  /// thread: get() waits) or a `reservation` that the caller must fulfil() or abandon().
  struct Lookup {
    std::shared_future<CodePtr> code;
    std::shared_ptr<Reservation> reservation;
  };

  Lookup find_or_reserve(uint64_t key, const LoweredFunc& f, const std::string& target) {
    FunctionKeyParts parts(f);
    std::lock_guard<std::mutex> lock(mutex_);
    ++clock_;
    auto range = entries_.equal_range(key);
    for (auto it = range.first; it != range.second; ++it) {
      Entry& e = *it->second;
      if (e.target == target && e.parts.equals(parts)) {
        e.last_use = clock_;
        return Lookup{e.code, nullptr};
      }
    }
    auto reservation = std::make_shared<Reservation>();
    reservation->key = key;
    auto entry = std::make_shared<Entry>(
        Entry{std::move(parts), target, reservation->promise.get_future().share(), clock_});
    reservation->entry = entry.get();
    entries_.emplace(key, std::move(entry));
    evict_if_needed();
    return Lookup{std::shared_future<CodePtr>(), std::move(reservation)};
  }

  void fulfil(Reservation& r, CodePtr code) { r.promise.set_value(std::move(code)); }

  /// Compilation failed: waiting builders get the exception; the next build tries again.
  void abandon(Reservation& r, std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto range = entries_.equal_range(r.key);
      for (auto it = range.first; it != range.second; ++it) {
        if (it->second.get() == r.entry) {
          entries_.erase(it);
          break;
        }
      }
    }
    r.promise.set_exception(std::move(error));
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

  /// Forgets every entry (kernels that hold their code keep it); for tests and benchmarks.
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
  }

 private:
  struct Entry {
    FunctionKeyParts parts;
    std::string target;
    std::shared_future<CodePtr> code;
    uint64_t last_use = 0;
  };

  MemoryKernelCache() {
    if (const char* env = std::getenv("LOOM_JIT_CACHE_ENTRIES"); env && *env) {
      try {
        capacity_ = static_cast<size_t>(std::max(1L, std::stol(env)));
      } catch (...) {
      }
    }
  }

  /// Drops the least recently used finished entries beyond the capacity, so that a long-running
  /// program that builds many kernels does not keep all their code mapped forever.
  void evict_if_needed() {
    while (entries_.size() > capacity_) {
      auto victim = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        bool ready = it->second->code.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
        if (ready && (victim == entries_.end() || it->second->last_use < victim->second->last_use))
          victim = it;
      }
      if (victim == entries_.end()) return;  // everything is still compiling
      entries_.erase(victim);
    }
  }

  mutable std::mutex mutex_;
  std::unordered_multimap<uint64_t, std::shared_ptr<Entry>> entries_;
  uint64_t clock_ = 0;
  size_t capacity_ = 256;
};

}  // namespace loom::runtime

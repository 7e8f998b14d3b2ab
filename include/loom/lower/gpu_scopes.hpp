// What the GPU lowering passes call shared memory and a GPU thread index: the memory scopes that
// one block shares, and the thread tags whose loops are kernel regions.
#pragma once

#include <string>

namespace loom {

inline bool is_shared_scope(const std::string& scope) { return scope == "shared" || scope == "shared.dyn"; }

/// threadIdx.* and blockIdx.* (not vthread): a loop bound to one of them is a GPU launch index.
inline bool is_gpu_thread_tag(const std::string& tag) {
  return tag.rfind("threadIdx", 0) == 0 || tag.rfind("blockIdx", 0) == 0;
}

}  // namespace loom

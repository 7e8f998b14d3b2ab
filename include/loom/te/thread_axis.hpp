// thread_axis(): the IterVar of a GPU thread or block index ("threadIdx.x", "blockIdx.y")
// or a virtual thread ("vthread"), which schedule loops are bound to with Stage::bind.
#pragma once

#include <string>

#include "loom/ir/iter_var.hpp"
#include "loom/support/error.hpp"

namespace loom {

inline bool is_valid_thread_tag(const std::string& tag) {
  for (const char* t : {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
                        "vthread", "cthread"})
    if (tag == t) return true;
  return tag.rfind("vthread", 0) == 0;
}

/// A thread axis whose extent is taken from the loop bound to it.
inline IterVar thread_axis(const std::string& tag, const std::string& name = "") {
  if (!is_valid_thread_tag(tag))
    throw Error(cat("thread_axis: unknown thread tag '", tag,
                    "'; use one of blockIdx.x/y/z, threadIdx.x/y/z, vthread"));
  return IterVar(Range(), Var(name.empty() ? tag : name), IterVarKind::ThreadIndex, tag);
}

/// A thread axis with a fixed extent [min, min + extent).
inline IterVar thread_axis(Range dom, const std::string& tag, const std::string& name = "") {
  IterVar iv = thread_axis(tag, name);
  return IterVar(dom, iv.var(), IterVarKind::ThreadIndex, tag);
}

}  // namespace loom

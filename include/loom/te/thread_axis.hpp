// thread_axis(): the IterVar of a GPU thread or block index ("threadIdx.x", "blockIdx.y")
// or a virtual thread ("vthread"), which schedule loops are bound to with Stage::bind.
#pragma once

#include <string>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/iter_var.hpp"
#include "loom/support/error.hpp"

namespace loom {

/// The six launch indices, the virtual threads and "cthread" (ir/gpu_vocabulary.hpp).
inline bool is_valid_thread_tag(const std::string& tag) {
  return find_launch_index(tag) >= 0 || is_virtual_thread_tag(tag) || tag == thread_tag::cthread;
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

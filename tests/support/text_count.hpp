// How many times a text (generated LLVM IR, assembly, CUDA source) contains a fragment: the tests'
// way of counting instructions, intrinsics and attributes in what a backend emitted.
#pragma once

#include <string>

namespace loom::test {

/// The occurrences of `what` in `text`, overlapping ones included.
inline int count_of(const std::string& text, const std::string& what) {
  int found = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++found;
  return found;
}

}  // namespace loom::test

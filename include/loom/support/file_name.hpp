// File names made from user-given names (kernel and pass names), for IR dumps and caches.
#pragma once

#include <cctype>
#include <string>

namespace loom::detail {

/// `s` with every character but letters, digits, '_' and '-' replaced by '_'.
inline std::string sanitize_file_name(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return out;
}

}  // namespace loom::detail

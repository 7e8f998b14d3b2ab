// The definitions of ir/printer.hpp.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/ir/printer.hpp");

#include <ostream>
#include <sstream>
#include <string>

#include "loom/ir/ir_printer.hpp"
#include "loom/ir/printer.hpp"

namespace loom {

LOOM_DECL std::string to_string(const Expr& e) {
  std::ostringstream os;
  IRPrinter(os).print(e);
  return os.str();
}

LOOM_DECL std::string to_string(const Stmt& s) {
  std::ostringstream os;
  IRPrinter(os).print(s, 0);
  return os.str();
}

LOOM_DECL std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }
LOOM_DECL std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }

}  // namespace loom

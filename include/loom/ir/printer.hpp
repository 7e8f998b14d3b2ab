// Printing IR as text shaped like TVM's `tvm.lower(..., simple_mode=True)`: to_string() and
// operator<< for expressions and statements (the printer itself: ir/ir_printer.hpp).
#pragma once

#include <iosfwd>
#include <string>

#include "loom/ir/stmt.hpp"
#include "loom/support/config.hpp"

namespace loom {

/// TVM-style text of an expression or statement (a loop nest with its allocations and attributes);
/// what loom::lower()'s output prints as.
/// @{
LOOM_DECL std::string to_string(const Expr& e);
LOOM_DECL std::string to_string(const Stmt& s);
LOOM_DECL std::ostream& operator<<(std::ostream& os, const Expr& e);
LOOM_DECL std::ostream& operator<<(std::ostream& os, const Stmt& s);
/// @}

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/ir/impl/printer.hpp"
#endif

// The interpreter's compiler: a lowered function's loop IR to compiled nodes (the class in
// compiler_decl.hpp, its expressions in compile_expr.hpp, its statements in compile_stmt.hpp).
#pragma once

#include "loom/interp/compile_expr.hpp"
#include "loom/interp/compile_stmt.hpp"
#include "loom/interp/compiler_decl.hpp"

// The whole LLVM code generator: include this (not the parts) to turn a LoweredFunc into a module.
#pragma once

#include "loom/codegen/llvm/codegen_amx.hpp"
#include "loom/codegen/llvm/codegen_cast.hpp"
#include "loom/codegen/llvm/codegen_expr.hpp"
#include "loom/codegen/llvm/codegen_llvm.hpp"
#include "loom/codegen/llvm/codegen_loops.hpp"
#include "loom/codegen/llvm/codegen_memory.hpp"

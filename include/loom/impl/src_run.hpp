// Separate compilation, part 2 of 3 (see impl/src.hpp): what runs lowered functions: argument
// checks and kernels, the interpreter and the GPU simulator, build() with the CUDA backend.
#pragma once

#include "loom/impl/src_library.hpp"

#include "loom/backend/impl/build.hpp"
#include "loom/backend/impl/lint.hpp"
#include "loom/runtime/impl/arg_check.hpp"
#include "loom/runtime/impl/kernel.hpp"
#include "loom/sim/impl/interpreter.hpp"
#include "loom/sim/impl/simulator.hpp"

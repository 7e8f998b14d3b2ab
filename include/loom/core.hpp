// Everything in Loom's API except build() and Kernel: tensor expressions, schedules, lowering, the
// IR printer, the reference interpreter and the GPU simulator. LLVM-free. Internal headers (passes,
// code generators, the interpreter's nodes) are not included: include them where you need them.
#pragma once

#include "loom/support/config.hpp"
#include "loom/version.hpp"

#include "loom/ir/bitwise_op.hpp"
#include "loom/ir/extern_c.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/simplify.hpp"

#include "loom/te/compute.hpp"
#include "loom/te/extern_op.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/reduction.hpp"
#include "loom/te/scan.hpp"
#include "loom/te/tensor_intrin.hpp"
#include "loom/te/thread_axis.hpp"
#include "loom/te/x86_amx_intrinsics.hpp"
#include "loom/te/x86_dot_intrinsics.hpp"

#include "loom/schedule/schedule.hpp"

#include "loom/lower/lower.hpp"

#include "loom/runtime/buffer.hpp"
#include "loom/sim/interpreter.hpp"
#include "loom/sim/simulator.hpp"

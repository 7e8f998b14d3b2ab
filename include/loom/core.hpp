// Everything in Loom except the JIT backends: tensor expressions, schedules, lowering, the
// IR printer and the reference interpreter. Include this where no LLVM or CUDA is needed.
#pragma once

#include "loom/version.hpp"

#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/structural_equal.hpp"
#include "loom/ir/structural_hash.hpp"
#include "loom/ir/substitute.hpp"

#include "loom/te/compute.hpp"
#include "loom/te/extern_op.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/reduction.hpp"
#include "loom/te/scan.hpp"
#include "loom/te/tensor_intrin.hpp"
#include "loom/te/thread_axis.hpp"

#include "loom/schedule/cache.hpp"
#include "loom/schedule/group.hpp"
#include "loom/schedule/loop_primitives.hpp"
#include "loom/schedule/memory_primitives.hpp"
#include "loom/schedule/placement_primitives.hpp"
#include "loom/schedule/rfactor.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/schedule/swizzle.hpp"
#include "loom/schedule/tensorize.hpp"

#include "loom/lower/lower.hpp"

#include "loom/ir/extern_c.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/sim/interpreter.hpp"
#include "loom/sim/simulator.hpp"

// Separate compilation, part 1 of 3 (see impl/src.hpp): the front end: IR printing and
// simplification, tensor expressions, schedules, lowering.
#pragma once

#include "loom/impl/src_library.hpp"

#include "loom/ir/impl/analyzer.hpp"
#include "loom/ir/impl/printer.hpp"
#include "loom/ir/impl/simplify.hpp"
#include "loom/lower/impl/lower.hpp"
#include "loom/lower/impl/lowered_func.hpp"
#include "loom/schedule/impl/cache.hpp"
#include "loom/schedule/impl/group.hpp"
#include "loom/schedule/impl/loop_primitives.hpp"
#include "loom/schedule/impl/memory_primitives.hpp"
#include "loom/schedule/impl/placement_primitives.hpp"
#include "loom/schedule/impl/rfactor.hpp"
#include "loom/schedule/impl/schedule.hpp"
#include "loom/schedule/impl/swizzle.hpp"
#include "loom/schedule/impl/tensorize.hpp"
#include "loom/te/impl/compute.hpp"
#include "loom/te/impl/scan.hpp"

// Separate compilation, part 3 of 3 (see impl/src.hpp): the library schedules and the tuner.
#pragma once

#include "loom/impl/src_library.hpp"

#include "loom/lib/impl/gemm.hpp"
#include "loom/lib/impl/gemm_common.hpp"
#include "loom/lib/impl/gemm_streamk.hpp"
#include "loom/lib/impl/gemm_tuning.hpp"
#include "loom/lib/impl/gpu_gemm.hpp"
#include "loom/lib/impl/gpu_gemm_main_loop.hpp"
#include "loom/lib/impl/gpu_gemm_model.hpp"
#include "loom/lib/impl/gpu_gemm_tuning.hpp"
#include "loom/lib/impl/streamk_gemm.hpp"
#include "loom/lib/impl/streamk_model.hpp"
#include "loom/lib/impl/streamk_tuning.hpp"
#include "loom/tune/impl/boosted_trees.hpp"
#include "loom/tune/impl/cache_traffic.hpp"
#include "loom/tune/impl/cost_model.hpp"
#include "loom/tune/impl/database.hpp"
#include "loom/tune/impl/ir_features.hpp"
#include "loom/tune/impl/measure.hpp"
#include "loom/tune/impl/search.hpp"
#include "loom/tune/impl/tune.hpp"

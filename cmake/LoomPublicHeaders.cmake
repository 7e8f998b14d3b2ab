# The public headers, shared by cmake/CheckLayers.cmake (which checks that a user's file reaches
# exactly these) and cmake/CheckDocComments.cmake (which checks that their declarations are documented).
# The headers a user's file reaches through <loom/loom.hpp> and the lib/ entry points in separate
# compilation: declarations, types and small inline helpers only.
set(LOOM_PUBLIC_HEADERS
  loom/loom.hpp loom/core.hpp loom/version.hpp
  loom/support/config.hpp loom/support/cpu_info.hpp loom/support/error.hpp loom/support/gpu_device.hpp loom/support/object.hpp
  loom/support/target.hpp
  loom/ir/amx_tile_product.hpp loom/ir/bitwise_op.hpp loom/ir/dtype.hpp loom/ir/expr.hpp loom/ir/extern_c.hpp loom/ir/gpu_vocabulary.hpp
  loom/ir/half.hpp
  loom/ir/iter_var.hpp loom/ir/node_kinds.hpp loom/ir/op.hpp loom/ir/printer.hpp loom/ir/producer.hpp
  loom/ir/reduce.hpp loom/ir/simplify.hpp loom/ir/stmt.hpp
  loom/te/compute.hpp loom/te/extern_op.hpp loom/te/extern_registry.hpp loom/te/placeholder.hpp
  loom/te/reduction.hpp loom/te/scan.hpp loom/te/tensor.hpp loom/te/tensor_intrin.hpp
  loom/te/thread_axis.hpp loom/te/x86_amx_intrinsics.hpp loom/te/x86_dot_intrinsics.hpp
  loom/schedule/relations.hpp loom/schedule/schedule.hpp loom/schedule/stage.hpp
  loom/schedule/swizzle_layout.hpp
  loom/lower/lower.hpp loom/lower/lowered_func.hpp loom/lower/pass_context.hpp
  loom/runtime/arg_check.hpp loom/runtime/buffer.hpp loom/runtime/kernel.hpp loom/runtime/sim_clock_model.hpp
  loom/runtime/sim_report.hpp loom/runtime/workspace_pool.hpp
  loom/sim/interpreter.hpp loom/sim/simulator.hpp
  loom/backend/build.hpp loom/backend/lint.hpp
  loom/tune/boosted_trees.hpp loom/tune/cache_traffic.hpp loom/tune/config.hpp loom/tune/cost_model.hpp loom/tune/database.hpp loom/tune/ir_features.hpp loom/tune/measure.hpp
  loom/tune/mpi.hpp loom/tune/search.hpp loom/tune/tune.hpp loom/tune/worker_queue.hpp
  loom/lib/gemm.hpp loom/lib/gemm_config.hpp loom/lib/gemm_epilogue.hpp loom/lib/gemm_tuning.hpp
  loom/lib/gpu_gemm.hpp loom/lib/gpu_gemm_model.hpp loom/lib/gpu_gemm_tuning.hpp loom/lib/matrix_layout.hpp
  loom/lib/gpu_tiled_gemm.hpp
  loom/lib/streamk_decomposition.hpp loom/lib/streamk_gemm.hpp loom/lib/streamk_model.hpp loom/lib/streamk_simt_model.hpp loom/lib/streamk_tuning.hpp)
set(LOOM_PUBLIC_ROOTS loom/loom.hpp loom/tune/tune.hpp loom/lib/gemm.hpp loom/lib/gemm_tuning.hpp loom/lib/gpu_gemm.hpp loom/lib/gpu_gemm_model.hpp loom/lib/gpu_gemm_tuning.hpp loom/lib/gpu_tiled_gemm.hpp loom/lib/streamk_gemm.hpp loom/lib/streamk_tuning.hpp)

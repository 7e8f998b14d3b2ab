// libloom, part 2 of 3: what runs lowered functions (kernels and their argument checks, the
// interpreter, the GPU simulator, build() and the CUDA backend). See include/loom/impl/src.hpp.
#include <loom/impl/src_run.hpp>

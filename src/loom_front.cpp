// libloom, part 1 of 3: the front end (IR printing and simplification, tensor expressions,
// schedules, lowering). Compiled with LOOM_SEPARATE_COMPILATION: see include/loom/impl/src.hpp.
#include <loom/impl/src_front.hpp>

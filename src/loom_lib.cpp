// libloom, part 3 of 3: the library schedules of lib/. See include/loom/impl/src.hpp.
#include <loom/impl/src_lib.hpp>

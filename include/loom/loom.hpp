// The whole of Loom: core.hpp plus the backends that compile lowered functions.
#pragma once

#include "loom/core.hpp"

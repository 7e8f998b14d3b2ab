// Loom's version, for consumers that want to check what they build against.
#pragma once

#define LOOM_VERSION_MAJOR 0
#define LOOM_VERSION_MINOR 1
#define LOOM_VERSION_PATCH 0

/// Loom: tensor expressions (placeholder, compute), schedules (create_schedule, Stage), lowering to
/// a loop IR (lower), and kernels for the CPU or a GPU (build, Kernel). Include <loom/loom.hpp>.
namespace loom {
/// Loom's version as "major.minor.patch" (LOOM_VERSION_MAJOR, _MINOR, _PATCH as numbers).
inline constexpr const char* version() { return "0.1.0"; }
}  // namespace loom

// Linux hands the AMX tile data state (8 KiB of registers per thread) to a process only when it
// asks: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), Linux 5.16 and later. An AMX
// instruction before that raises SIGILL. The permission covers the whole process, its threads and
// the ones it starts later, so the kernel runtime asks once, before the first AMX kernel runs.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "loom/support/error.hpp"

namespace loom::runtime {

/// Asks Linux for the AMX tile state once per process. Returns "" when this process may use the
/// tiles, else why not (for an error message).
inline const std::string& request_amx_permission() {
  static const std::string refusal = []() -> std::string {
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;  // asm/prctl.h
    constexpr int kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
      return cat("Linux refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA: ",
                 std::strerror(errno),
                 "); AMX needs a CPU with AMX and Linux 5.16 or later, and a process whose signal "
                 "stacks (sigaltstack) have room for the 8 KiB tile state");
    unsigned long granted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0 || !(granted & (1ul << kXfeatureXtiledata)))
      return "Linux accepted the request for the AMX tile state, but ARCH_GET_XCOMP_PERM does not list it";
    return "";
#else
    return "AMX kernels run only on x86-64 Linux";
#endif
  }();
  return refusal;
}

}  // namespace loom::runtime

// What Loom knows of the host CPU's memory hierarchy and vector unit: the data cache sizes (from
// Linux's sysfs), the SIMD width, and the dot-product and AMX tile instructions (CPUID). lib::gemm
// sizes its blocks and picks its micro-kernel from them; the tuning database
// records them with every measurement, so that a record says which machine it was taken on.
#pragma once

#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

namespace loom {

/// The host CPU's data caches and vector unit. host() reads Linux's sysfs (falling back to sysconf, then to
/// common sizes) and the SIMD width the JIT targets on this machine.
struct CpuCacheInfo {
  /// The data cache sizes in bytes: L1 data, L2 and L3.
  /// @{
  int64_t l1d_bytes = 32 * 1024;
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 8 * 1024 * 1024;
  /// @}
  /// The L1 data cache's ways (sysfs, else sysconf; 0: unknown). l1d_associativity() says how many
  /// lines a 4 KiB-aligned stride can keep in one set.
  int l1d_ways = 0;
  int vector_bytes = 32;  ///< 64 with AVX-512, 32 with AVX2, 16 otherwise
  int registers = 16;     ///< vector registers the micro-kernel may use (32 with AVX-512)
  /// The 512-bit dot-product instructions: AVX512-BF16 (vdpbf16ps) and AVX512-VNNI (vpdpbusd).
  /// @{
  bool bf16_dot = false, int8_dot = false;
  /// @}
  /// The AMX tile instructions: AMX-BF16 (tdpbf16ps) and AMX-INT8 (tdpb[su][su]d), each with AMX-TILE
  /// and the tile state enabled by the OS (XCR0). Linux still grants the tile state to a process only
  /// when it asks (runtime/amx_permission.hpp; the kernel runtime asks before an AMX kernel runs).
  /// @{
  bool amx_bf16 = false, amx_int8 = false;
  /// @}
  /// Whether large blocks can have transparent huge pages (sysfs says `always` or `madvise`):
  /// runtime::WorkspacePool asks for them for the blocks of 2 MiB and more it maps.
  bool huge_pages = false;

  /// l1d_ways, or where it is unknown l1d_bytes / 4 KiB: x86's L1 data caches are indexed by the
  /// address bits within a 4 KiB page, so they have as many ways as pages they hold.
  int l1d_associativity() const {
    return l1d_ways > 0 ? l1d_ways : static_cast<int>(std::max<int64_t>(1, l1d_bytes / 4096));
  }

  /// This machine's caches, detected once.
  static const CpuCacheInfo& host() {
    static const CpuCacheInfo info = detect();
    return info;
  }

  /// Reads the caches and SIMD width now (sysfs, then sysconf, then common sizes).
  static CpuCacheInfo detect() {
    CpuCacheInfo c;
    // sysfs gives each level's size; sysconf knows the same on glibc but may say 0.
    for (int index = 0; index < 8; ++index) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
      std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size"),
          ways_file(dir + "ways_of_associativity");
      int level = 0;
      std::string type, size;
      if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size)) break;
      const int64_t bytes = parse_size(size);
      if (bytes <= 0 || type == "Instruction") continue;
      if (int ways = 0; level == 1 && ways_file >> ways && ways > 0) c.l1d_ways = ways;
      if (level == 1) c.l1d_bytes = bytes;
      if (level == 2) c.l2_bytes = bytes;
      if (level == 3) c.l3_bytes = bytes;
    }
    std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string thp_modes;
    std::getline(thp, thp_modes);
    c.huge_pages =
        thp_modes.find("[always]") != std::string::npos || thp_modes.find("[madvise]") != std::string::npos;
#ifdef _SC_LEVEL1_DCACHE_SIZE
    if (c.l1d_bytes <= 0) c.l1d_bytes = sysconf(_SC_LEVEL1_DCACHE_SIZE);
#endif
#ifdef _SC_LEVEL1_DCACHE_ASSOC
    if (c.l1d_ways <= 0) c.l1d_ways = static_cast<int>(std::max<long>(0, sysconf(_SC_LEVEL1_DCACHE_ASSOC)));
#endif
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
      c.vector_bytes = 64;
      c.registers = 32;
      c.bf16_dot = __builtin_cpu_supports("avx512bf16");
      c.int8_dot = __builtin_cpu_supports("avx512vnni");
    } else if (__builtin_cpu_supports("avx2")) {
      c.vector_bytes = 32;
    } else {
      c.vector_bytes = 16;
    }
    detect_amx(c);
#else
    c.vector_bytes = 16;
    c.registers = 32;
#endif
    return c;
  }

  /// Sets amx_bf16 and amx_int8 from CPUID leaf 7 (EDX bits 22, 24, 25) and XCR0 (tile
  /// configuration and data state, bits 17 and 18).
  static void detect_amx(CpuCacheInfo& c) {
#if defined(__x86_64__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 24))) return;
    unsigned e1 = 0, b1 = 0, c1 = 0, d1 = 0;
    if (!__get_cpuid(1, &e1, &b1, &c1, &d1) || !(c1 & (1u << 27))) return;  // no OSXSAVE: no xgetbv
    unsigned xcr0_low = 0, xcr0_high = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    if ((xcr0_low & 0x60000u) != 0x60000u) return;
    c.amx_bf16 = (edx & (1u << 22)) != 0;
    c.amx_int8 = (edx & (1u << 25)) != 0;
#else
    (void)c;
#endif
  }

  /// "48K" -> 49152; "1024K" -> 1048576; "32M" -> 33554432.
  static int64_t parse_size(const std::string& s) {
    if (s.empty()) return 0;
    int64_t value = 0;
    size_t i = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) value = value * 10 + (s[i] - '0');
    if (i < s.size() && (s[i] == 'K' || s[i] == 'k')) value *= 1024;
    if (i < s.size() && (s[i] == 'M' || s[i] == 'm')) value *= 1024 * 1024;
    return value;
  }
};

}  // namespace loom

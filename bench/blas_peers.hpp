// The BLAS libraries that bench_gemm measures Loom against, each named by library, version and
// the kernel it runs on this machine (a ratio means little without them: the same OpenBLAS runs a
// Haswell kernel on one CPU and a SkylakeX kernel on another, and MKL falls back to its generic
// kernel on CPUs it does not recognise). Debian's OpenBLAS is linked and always present; MKL and
// the newest OpenBLAS (PyPI wheels `mkl` and `scipy-openblas32`, which scripts/bench-peers.sh
// installs into a venv in the build tree) are loaded with dlopen when found, so the bench builds
// and runs without them. MKL also brings the low-precision products that bench_gemm_lowp measures
// (bfloat16 -> float32, 8-bit -> int32); the OpenBLAS builds loaded here have none.
#pragma once

#include <cblas.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace loom_bench {

/// One BLAS library's row-major sgemm and dgemm (C = A B: alpha 1, beta 0).
struct BlasPeer {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
  using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
  std::string name;     // openblas (Debian's, linked), mkl, openblas-scipy
  std::string version;  // as the library reports it
  std::string kernel;   // the code it runs here: OpenBLAS's core name, MKL's instruction-set library
  /// MKL's cblas_gemm_bf16bf16f32: C (float32) = alpha A B + beta C with A and B in bfloat16, passed
  /// as their raw 16-bit patterns (MKL_BF16 is a uint16_t); arguments as in sgemm.
  using GemmBf16 = void (*)(int layout, int transa, int transb, int m, int n, int k, float alpha,
                            const uint16_t* a, int lda, const uint16_t* b, int ldb, float beta, float* c,
                            int ldc);
  /// MKL's cblas_gemm_s8u8s32: C (int32) = alpha (A + ao)(B + bo) + beta C + co, 8-bit A and B;
  /// offsetc says whether co is one value (detail::kMklFixOffset), one per column or one per row.
  /// Which of A and B it reads as signed: a8_signed / b8_signed.
  using Gemm8bit = void (*)(int layout, int transa, int transb, int offsetc, int m, int n, int k, float alpha,
                            const void* a, int lda, int8_t ao, const void* b, int ldb, int8_t bo, float beta,
                            int32_t* c, int ldc, const int32_t* co);
  Sgemm sgemm = nullptr;
  Dgemm dgemm = nullptr;
  GemmBf16 gemm_bf16 = nullptr;  // MKL only; null elsewhere
  Gemm8bit gemm_8bit = nullptr;  // MKL only; null elsewhere, or when the signedness probe failed
  /// Whether gemm_8bit reads A, and B, as int8 (else uint8) in a row-major call: found at load time
  /// by detail::probe_8bit_signedness, not taken from the function's name (see there).
  bool a8_signed = false, b8_signed = false;
  void (*set_threads)(int) = nullptr;

  /// peer= in a bench line: "mkl-2026.2:avx512", "openblas-0.3.21:Haswell".
  std::string label() const { return name + "-" + version + ":" + kernel; }

  /// The 8-bit product's element types as a name, A's then B's then C's: "u8s8s32".
  std::string int8_types() const {
    return std::string(a8_signed ? "s8" : "u8") + (b8_signed ? "s8" : "u8") + "s32";
  }

  void gemm(int m, int n, int k, const float* a, const float* b, float* c) const {
    sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
  }
  void gemm(int m, int n, int k, const double* a, const double* b, double* c) const {
    dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
  }
  /// Row-major bfloat16 A (m x k) and B (k x n), given as bit patterns, into float32 C (needs gemm_bf16).
  void gemm(int m, int n, int k, const uint16_t* a, const uint16_t* b, float* c) const;
  /// Row-major 8-bit A (m x k) and B (k x n), of the signedness a8_signed / b8_signed, into int32 C
  /// (needs gemm_8bit): no offsets.
  void gemm_int8(int m, int n, int k, const void* a, const void* b, int32_t* c) const;
};

namespace detail {

/// The word after "OpenBLAS " in openblas_get_config()'s text: the version.
inline std::string openblas_version(const char* config) {
  const char* p = std::strstr(config, "OpenBLAS ");
  if (!p) return "unknown";
  p += 9;
  return std::string(p, std::strcspn(p, " "));
}

/// The libmkl_<isa>.so that MKL mapped for its kernels (after a first call): def (generic x86-64),
/// mc3, avx2, avx512, avx10. MKL picks it from the CPU; on CPUs it does not know it takes def.
inline std::string mkl_kernel_library() {
  std::string found = "unknown";
  if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, maps)) {
      const char* lib = std::strstr(line, "/libmkl_");
      if (!lib) continue;
      const std::string isa(lib + 8, std::strcspn(lib + 8, "."));
      for (const char* kernel : {"def", "mc3", "avx2", "avx512", "avx10"})
        if (isa == kernel) found = isa;
    }
    std::fclose(maps);
  }
  return found;
}

template <typename F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

// MKL's thread count: MKL_Set_Num_Threads, and its OpenMP runtime's own, which MKL 2026.2's
// cblas_gemm_bf16bf16f32 follows instead: on a 2-core Zen 3 (AVX2) it ran on both cores after
// MKL_Set_Num_Threads(1) (CPU time 1.9x the wall time; 85 GFLOP/s at 1024^3 against 40 on one).
inline void (*mkl_set_num_threads)(int) = nullptr;
inline void (*mkl_omp_set_num_threads)(int) = nullptr;
inline void set_mkl_threads(int n) {
  mkl_set_num_threads(n);
  if (mkl_omp_set_num_threads) mkl_omp_set_num_threads(n);
}

// The CBLAS enum values MKL's low-precision products take (as ints: OpenBLAS's cblas.h has no
// CBLAS_OFFSET). mkl_cblas.h numbers the offset modes row 171, column 172, fixed 173; a run with
// co = {1000, 2000, ...} on MKL 2026.2 agreed: 173 added co[0] to every element, 171 added co[j] to
// column j (one value per column, the same for each row) and 172 co[i] to row i.
inline constexpr int kMklRowMajor = 101, kMklNoTrans = 111, kMklFixOffset = 173;

/// Finds which operands `f` (cblas_gemm_s8u8s32) reads as signed in a row-major call, from one
/// 1 x 1 x 2 product whose four readings all differ: a = {0xFE, 3}, b = {1, 0xFF} gives
/// 254 - 3 = 251 (a unsigned, b signed), -2 + 765 = 763 (a signed, b unsigned), -2 - 3 = -5 (both
/// signed) or 254 + 765 = 1019 (neither). False when the result is none of them.
///
/// What it found on MKL 2026.2 (on an AMD EPYC with AVX512-VNNI, MKL's def library mapped): row-major, A is
/// read as UINT8 and B as INT8, the other way round from the name, which holds for column-major calls (there
/// A is int8, B uint8); MKL computes a row-major C = A B as the column-major C^T = B^T A^T, and the
/// signedness stays with the position. A 2 x 3 x 4 product with bytes above 127 agreed with a triple loop
/// reading A unsigned and B signed, and with none of the other three readings.
inline bool probe_8bit_signedness(BlasPeer::Gemm8bit f, bool* a_signed, bool* b_signed) {
  const uint8_t a[2] = {0xFE, 3}, b[2] = {1, 0xFF};
  const int32_t zero = 0;
  int32_t c = 0;
  f(kMklRowMajor, kMklNoTrans, kMklNoTrans, kMklFixOffset, 1, 1, 2, 1.0f, a, 2, 0, b, 1, 0, 0.0f, &c, 1,
    &zero);
  switch (c) {
    case 251: *a_signed = false, *b_signed = true; return true;
    case 763: *a_signed = true, *b_signed = false; return true;
    case -5: *a_signed = true, *b_signed = true; return true;
    case 1019: *a_signed = false, *b_signed = false; return true;
    default: return false;
  }
}

}  // namespace detail

inline void BlasPeer::gemm(int m, int n, int k, const uint16_t* a, const uint16_t* b, float* c) const {
  gemm_bf16(detail::kMklRowMajor, detail::kMklNoTrans, detail::kMklNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f,
            c, n);
}

inline void BlasPeer::gemm_int8(int m, int n, int k, const void* a, const void* b, int32_t* c) const {
  const int32_t no_offset = 0;
  gemm_8bit(detail::kMklRowMajor, detail::kMklNoTrans, detail::kMklNoTrans, detail::kMklFixOffset, m, n, k,
            1.0f, a, k, 0, b, n, 0, 0.0f, c, n, &no_offset);
}

/// Whether `kernel` (openblas_get_corename()) names one of OpenBLAS's AVX-512 kernels.
inline bool is_avx512_openblas_kernel(const std::string& kernel) {
  for (const char* name : {"SkylakeX", "Cooperlake", "SapphireRapids", "Sapphirerapids"})
    if (kernel.find(name) != std::string::npos) return true;
  return false;
}

/// A note when an OpenBLAS may run below what this CPU can do, else "": OPENBLAS_CORETYPE in the
/// environment forces a kernel, and an OpenBLAS that does not recognise a CPU falls back to an older
/// one. Comparing with such a peer flatters Loom: on a CPU with AVX-512 the strongest OpenBLAS is
/// the one on its AVX-512 kernel.
inline std::string weak_kernel_note(const BlasPeer& p) {
  if (p.name.rfind("openblas", 0) != 0) return "";
  __builtin_cpu_init();
  const bool avx512_cpu = __builtin_cpu_supports("avx512f");
  const bool avx512_kernel = is_avx512_openblas_kernel(p.kernel);
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (forced && *forced)
    return p.name + " runs its " + p.kernel + " kernel because OPENBLAS_CORETYPE=" + forced + " is set" +
           (avx512_cpu && !avx512_kernel ? " (this CPU has AVX-512: unset it for a stronger peer)" : "");
  if (avx512_cpu && !avx512_kernel)
    return p.name + " chose its " + p.kernel +
           " kernel on this AVX-512 CPU; OPENBLAS_CORETYPE=SkylakeX runs its AVX-512 kernel, a stronger peer";
  return "";
}

/// The folder of the venv that scripts/bench-peers.sh made: $LOOM_BENCH_PEERS, else `fallback`
/// (the build tree's bench-peers/venv, compiled in).
inline std::string blas_peers_venv(const char* fallback) {
  const char* env = std::getenv("LOOM_BENCH_PEERS");
  return env && *env ? env : fallback;
}

/// Debian's OpenBLAS, then MKL and scipy-openblas from `venv` where they are installed. A library
/// that is there but fails to load is reported on stderr and left out.
inline std::vector<BlasPeer> load_blas_peers(const std::string& venv) {
  std::vector<BlasPeer> peers;
  BlasPeer debian;
  debian.name = "openblas";
  debian.version = detail::openblas_version(openblas_get_config());
  debian.kernel = openblas_get_corename();
  // The linked library's cblas_* take CBLAS_ORDER and CBLAS_TRANSPOSE: called, not cast.
  debian.sgemm = [](int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) {
    cblas_sgemm(static_cast<CBLAS_ORDER>(order), static_cast<CBLAS_TRANSPOSE>(ta),
                static_cast<CBLAS_TRANSPOSE>(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  };
  debian.dgemm = [](int order, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                    const double* b, int ldb, double beta, double* c, int ldc) {
    cblas_dgemm(static_cast<CBLAS_ORDER>(order), static_cast<CBLAS_TRANSPOSE>(ta),
                static_cast<CBLAS_TRANSPOSE>(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  };
  debian.set_threads = [](int threads) { openblas_set_num_threads(threads); };
  peers.push_back(debian);

  namespace fs = std::filesystem;
  auto open = [](const fs::path& path) -> void* {
    if (!fs::exists(path)) return nullptr;
    // Local symbols: each library's cblas_* stays its own, apart from the linked OpenBLAS's.
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!h) std::fprintf(stderr, "bench peers: %s does not load: %s\n", path.c_str(), dlerror());
    return h;
  };
  if (void* mkl = open(fs::path(venv) / "lib" / "libmkl_rt.so.3")) {
    BlasPeer p;
    p.name = "mkl";
    char text[256] = {};
    if (auto version = detail::symbol<void (*)(char*, int)>(mkl, "MKL_Get_Version_String"))
      version(text, sizeof text);
    // "Intel(R) oneAPI Math Kernel Library Version 2026.2-Product Build ...": the version word.
    const char* v = std::strstr(text, "Version ");
    p.version = v ? std::string(v + 8, std::strcspn(v + 8, "- ")) : "unknown";
    p.sgemm = detail::symbol<BlasPeer::Sgemm>(mkl, "cblas_sgemm");
    p.dgemm = detail::symbol<BlasPeer::Dgemm>(mkl, "cblas_dgemm");
    detail::mkl_set_num_threads = detail::symbol<void (*)(int)>(mkl, "MKL_Set_Num_Threads");
    if (p.sgemm && p.dgemm && detail::mkl_set_num_threads) {
      float one = 1, out = 0;
      p.gemm(1, 1, 1, &one, &one, &out);  // loads the kernel library that the CPU gets
      p.kernel = detail::mkl_kernel_library();
      // The OpenMP runtime MKL loaded with its threading layer (not loaded again here): the venv's, or
      // whichever copy of that name it found.
      void* omp = dlopen((fs::path(venv) / "lib" / "libiomp5.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
      if (!omp) omp = dlopen("libiomp5.so", RTLD_NOW | RTLD_NOLOAD);
      if (omp) detail::mkl_omp_set_num_threads = detail::symbol<void (*)(int)>(omp, "omp_set_num_threads");
      p.set_threads = detail::set_mkl_threads;
      p.gemm_bf16 = detail::symbol<BlasPeer::GemmBf16>(mkl, "cblas_gemm_bf16bf16f32");
      p.gemm_8bit = detail::symbol<BlasPeer::Gemm8bit>(mkl, "cblas_gemm_s8u8s32");
      if (p.gemm_8bit && !detail::probe_8bit_signedness(p.gemm_8bit, &p.a8_signed, &p.b8_signed)) {
        std::fprintf(stderr, "bench peers: mkl's cblas_gemm_s8u8s32 gave an unexpected result; not used\n");
        p.gemm_8bit = nullptr;
      }
      peers.push_back(p);
    }
  }
  const fs::path scipy_lib = fs::path(venv) / "lib";
  if (fs::exists(scipy_lib))
    for (const auto& entry : fs::directory_iterator(scipy_lib)) {
      // lib/python3.X/site-packages/scipy_openblas32/lib/libscipy_openblas.so
      const fs::path so =
          entry.path() / "site-packages" / "scipy_openblas32" / "lib" / "libscipy_openblas.so";
      void* h = entry.path().filename().string().rfind("python", 0) == 0 ? open(so) : nullptr;
      if (!h) continue;
      BlasPeer p;
      p.name = "openblas-scipy";
      auto config = detail::symbol<char* (*)()>(h, "scipy_openblas_get_config");
      auto corename = detail::symbol<char* (*)()>(h, "scipy_openblas_get_corename");
      p.version = config ? detail::openblas_version(config()) : "unknown";
      p.kernel = corename ? corename() : "unknown";
      p.sgemm = detail::symbol<BlasPeer::Sgemm>(h, "scipy_cblas_sgemm");
      p.dgemm = detail::symbol<BlasPeer::Dgemm>(h, "scipy_cblas_dgemm");
      p.set_threads = detail::symbol<void (*)(int)>(h, "scipy_openblas_set_num_threads");
      if (p.sgemm && p.dgemm && p.set_threads) peers.push_back(p);
      break;
    }
  return peers;
}

}  // namespace loom_bench

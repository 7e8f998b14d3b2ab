// The BLAS libraries that bench_gemm measures Loom against, each named by library, version and
// the kernel it runs on this machine (a ratio means little without them: the same OpenBLAS runs a
// Haswell kernel on one CPU and a SkylakeX kernel on another, and MKL falls back to its generic
// kernel on CPUs it does not recognise). Debian's OpenBLAS is linked and always present; MKL and
// the newest OpenBLAS (PyPI wheels `mkl` and `scipy-openblas32`, which scripts/bench-peers.sh
// installs into a venv in the build tree) are loaded with dlopen when found, so the bench builds
// and runs without them.
#pragma once

#include <cblas.h>
#include <dlfcn.h>

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
  Sgemm sgemm = nullptr;
  Dgemm dgemm = nullptr;
  void (*set_threads)(int) = nullptr;

  /// peer= in a bench line: "mkl-2026.2:avx512", "openblas-0.3.21:Haswell".
  std::string label() const { return name + "-" + version + ":" + kernel; }

  void gemm(int m, int n, int k, const float* a, const float* b, float* c) const {
    sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
  }
  void gemm(int m, int n, int k, const double* a, const double* b, double* c) const {
    dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
  }
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

}  // namespace detail

/// A note when an OpenBLAS may run below what this CPU can do, else "": OPENBLAS_CORETYPE in the
/// environment forces a kernel, and an OpenBLAS that does not recognise a CPU falls back to an older
/// one. Comparing with such a peer flatters Loom: on a CPU with AVX-512 the strongest OpenBLAS is
/// the one on its AVX-512 kernel.
inline std::string weak_kernel_note(const BlasPeer& p) {
  if (p.name.rfind("openblas", 0) != 0) return "";
  __builtin_cpu_init();
  const bool avx512_cpu = __builtin_cpu_supports("avx512f");
  bool avx512_kernel = false;
  for (const char* kernel : {"SkylakeX", "Cooperlake", "SapphireRapids", "Sapphirerapids"})
    avx512_kernel = avx512_kernel || p.kernel.find(kernel) != std::string::npos;
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
    p.set_threads = detail::symbol<void (*)(int)>(mkl, "MKL_Set_Num_Threads");
    if (p.sgemm && p.dgemm && p.set_threads) {
      float one = 1, out = 0;
      p.gemm(1, 1, 1, &one, &one, &out);  // loads the kernel library that the CPU gets
      p.kernel = detail::mkl_kernel_library();
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

// NVRTC, loaded with dlopen at run time: compiles Loom's CUDA C to PTX and cubin for a named
// architecture; failures become loom::Error with NVRTC's log and the offending source lines.
#pragma once

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "loom/support/error.hpp"
#include "loom/support/library_symbols.hpp"

namespace loom::runtime::cuda {

/// The few NVRTC entry points Loom uses, declared here so that building Loom never needs the
/// CUDA toolkit's headers (the ABI is stable: plain C functions returning an int status).
struct Nvrtc {
  using Program = void*;
  using Result = int;
  Result (*version)(int*, int*) = nullptr;
  Result (*create_program)(Program*, const char*, const char*, int, const char* const*,
                           const char* const*) = nullptr;
  Result (*destroy_program)(Program*) = nullptr;
  Result (*compile_program)(Program, int, const char* const*) = nullptr;
  Result (*get_ptx_size)(Program, size_t*) = nullptr;
  Result (*get_ptx)(Program, char*) = nullptr;
  Result (*get_cubin_size)(Program, size_t*) = nullptr;
  Result (*get_cubin)(Program, char*) = nullptr;
  Result (*get_log_size)(Program, size_t*) = nullptr;
  Result (*get_log)(Program, char*) = nullptr;
  const char* (*error_string)(Result) = nullptr;

  std::string path;          // the library that was loaded
  std::string include_dir;   // the toolkit's include directory, when there is one
  int major = 0, minor = 0;  // NVRTC's version
};

namespace detail {

/// Directories where a CUDA toolkit keeps its libraries: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda.
inline std::vector<std::string> cuda_library_dirs() {
  std::vector<std::string> dirs;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) dirs.push_back(std::string(v) + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/lib/x86_64-linux-gnu");
  return dirs;
}

struct NvrtcLoad {
  Nvrtc api;
  bool ok = false;
  std::string error;  // why it is absent
};

inline NvrtcLoad load_nvrtc() {
  NvrtcLoad out;
  std::vector<std::string> candidates;
  if (const char* forced = std::getenv("LOOM_NVRTC_PATH"); forced) {
    candidates.push_back(forced);  // tests use a path that does not exist to simulate no CUDA
  } else {
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) candidates.push_back(name);
    for (const std::string& dir : cuda_library_dirs())
      for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
        candidates.push_back(dir + "/" + name);
  }
  void* handle = nullptr;
  std::string tried;
  for (const std::string& c : candidates) {
    handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      out.api.path = c;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (!handle) {
    out.error = cat("libnvrtc was not found (tried ", tried,
                    "); install the CUDA toolkit or set CUDA_HOME to it (LOOM_NVRTC_PATH names the library "
                    "exactly)");
    return out;
  }
  LibrarySymbols symbols(handle);
  auto sym = [&](auto& fn, const char* name) { symbols.resolve(fn, name); };
  Nvrtc& a = out.api;
  sym(a.version, "nvrtcVersion");
  sym(a.create_program, "nvrtcCreateProgram");
  sym(a.destroy_program, "nvrtcDestroyProgram");
  sym(a.compile_program, "nvrtcCompileProgram");
  sym(a.get_ptx_size, "nvrtcGetPTXSize");
  sym(a.get_ptx, "nvrtcGetPTX");
  sym(a.get_cubin_size, "nvrtcGetCUBINSize");
  sym(a.get_cubin, "nvrtcGetCUBIN");
  sym(a.get_log_size, "nvrtcGetProgramLogSize");
  sym(a.get_log, "nvrtcGetProgramLog");
  sym(a.error_string, "nvrtcGetErrorString");
  if (!symbols.complete()) {
    out.error = cat(a.path, " lacks ", symbols.first_missing(),
                    ", an NVRTC function Loom needs (nvrtcGetCUBIN needs CUDA 11.1 or newer)");
    return out;
  }
  a.version(&a.major, &a.minor);
  // cuda_fp16.h and friends: the include directory beside the library's lib64.
  std::filesystem::path lib = a.path;
  std::vector<std::filesystem::path> includes;
  if (lib.has_parent_path()) includes.push_back(lib.parent_path().parent_path() / "include");
  for (const std::string& dir : cuda_library_dirs())
    includes.push_back(std::filesystem::path(dir).parent_path() / "include");
  for (const auto& dir : includes) {
    std::error_code ec;
    if (std::filesystem::exists(dir / "cuda_fp16.h", ec)) {
      a.include_dir = dir.string();
      break;
    }
  }
  out.ok = true;
  return out;
}

}  // namespace detail

/// The loaded NVRTC, or nullptr when this machine has none (then nvrtc_unavailable_reason()).
inline const Nvrtc* nvrtc() {
  static const detail::NvrtcLoad load = detail::load_nvrtc();
  return load.ok ? &load.api : nullptr;
}

inline std::string nvrtc_unavailable_reason() {
  static const detail::NvrtcLoad load = detail::load_nvrtc();
  return load.error;
}

/// What a compilation produced.
struct NvrtcOutput {
  std::string ptx;
  std::string cubin;  // empty unless asked for
  std::string log;    // warnings
  std::string arch;   // "sm_80"
  double milliseconds = 0;
};

namespace detail {

/// NVRTC's log with every line it blames ("kernel.cu(12): error: ...") followed by that line.
inline std::string annotate_log(const std::string& log, const std::string& source, const std::string& file) {
  std::vector<std::string> lines;
  {
    std::istringstream in(source);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  std::ostringstream out;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) {
    out << l << "\n";
    const std::string prefix = file + "(";
    if (l.rfind(prefix, 0) != 0) continue;
    const size_t close = l.find(')', prefix.size());
    if (close == std::string::npos) continue;
    const int line = std::atoi(l.substr(prefix.size(), close - prefix.size()).c_str());
    if (line >= 1 && static_cast<size_t>(line) <= lines.size())
      out << "  source line " << line << ": " << lines[static_cast<size_t>(line) - 1] << "\n";
  }
  return out.str();
}

}  // namespace detail

/// Compiles `source` for `arch` ("sm_80", "sm_90", ...): PTX always, a cubin when asked. Fast
/// math lets NVCC contract a*b+c into FMAs (and use approximate math functions).
/// Throws loom::Error when NVRTC is absent or the compilation fails.
inline NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                                 bool want_cubin = false, bool fast_math = false) {
  const Nvrtc* api = nvrtc();
  if (!api)
    throw Error(cat("compiling '", name, "' for CUDA needs NVRTC: ", nvrtc_unavailable_reason(),
                    ". Without it, Target::cuda_sim() runs the same kernels on the CPU"));
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5)
    throw Error(
        cat("unknown CUDA architecture '", arch, "': name one as sm_<major><minor>, e.g. sm_80 or sm_90"));
  const auto start = std::chrono::steady_clock::now();
  const std::string file = name + ".cu";
  NvrtcOutput out;
  out.arch = arch;
  auto run = [&](const std::string& gpu_arch, bool cubin) {
    Nvrtc::Program program = nullptr;
    Nvrtc::Result r = api->create_program(&program, source.c_str(), file.c_str(), 0, nullptr, nullptr);
    if (r != 0) throw Error(cat("NVRTC could not create a program for '", name, "': ", api->error_string(r)));
    struct Destroy {
      const Nvrtc* api;
      Nvrtc::Program* p;
      ~Destroy() { api->destroy_program(p); }
    } destroy{api, &program};
    // Without fast math, no multiply-add contraction: results then match the simulator's.
    std::vector<std::string> options = {"--gpu-architecture=" + gpu_arch, "-std=c++17", "-default-device",
                                        fast_math ? "--use_fast_math" : "--fmad=false"};
    if (!api->include_dir.empty()) options.push_back("--include-path=" + api->include_dir);
    std::vector<const char*> argv;
    for (const std::string& o : options) argv.push_back(o.c_str());
    r = api->compile_program(program, static_cast<int>(argv.size()), argv.data());
    size_t log_size = 0;
    api->get_log_size(program, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 1) api->get_log(program, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    if (r != 0)
      throw Error(cat("NVRTC failed to compile '", name, "' for ", arch, " (", api->error_string(r), "):\n",
                      detail::annotate_log(log, source, file)));
    out.log = log;
    if (cubin) {
      size_t size = 0;
      api->get_cubin_size(program, &size);
      out.cubin.resize(size);
      if (size) api->get_cubin(program, out.cubin.data());
    } else {
      size_t size = 0;
      api->get_ptx_size(program, &size);
      out.ptx.resize(size);
      if (size) api->get_ptx(program, out.ptx.data());
      while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
    }
  };
  // PTX comes from a compute_XX compilation (it can be JIT-compiled for any newer device);
  // the cubin, exactly for the named architecture, from an sm_XX one.
  run("compute_" + arch.substr(3), false);
  if (want_cubin) run(arch, true);
  out.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace loom::runtime::cuda

// Runs the toolkit's `ptxas -v` on PTX when it is installed and reads its resource report
// (registers, shared memory, spills): how tests check the kernels without a GPU.
#pragma once

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>

#include "loom/support/error.hpp"

namespace loom::runtime::cuda {

struct PtxasReport {
  int registers = 0;
  int64_t shared_bytes = 0;
  int64_t spill_stores = 0, spill_loads = 0;
  std::string text;  // ptxas's own lines
};

/// The ptxas executable ($CUDA_HOME/bin, /usr/local/cuda/bin, or PATH), or "" when absent.
inline std::string find_ptxas() {
  std::vector<std::string> candidates;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) candidates.push_back(std::string(v) + "/bin/ptxas");
  candidates.push_back("/usr/local/cuda/bin/ptxas");
  for (const std::string& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return "";
}

/// ptxas -v's report for the kernel `kernel` in `ptx`, compiled for `arch`; nullopt when ptxas
/// is not installed. Throws loom::Error when ptxas rejects the PTX.
inline std::optional<PtxasReport> run_ptxas(const std::string& ptx, const std::string& arch,
                                            const std::string& kernel) {
  const std::string ptxas = find_ptxas();
  if (ptxas.empty()) return std::nullopt;
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string stem = cat("loom_ptxas_", getpid(), "_", kernel);
  const std::filesystem::path in = dir / (stem + ".ptx"), log = dir / (stem + ".log");
  std::ofstream(in) << ptx;
  const std::string command = cat("'", ptxas, "' -v --gpu-name ", arch, " '", in.string(),
                                  "' -o /dev/null > '", log.string(), "' 2>&1");
  const int status = std::system(command.c_str());
  std::ifstream file(log);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::filesystem::remove(in);
  std::filesystem::remove(log);
  if (status != 0) throw Error(cat("ptxas rejected the PTX of ", kernel, ":\n", text));
  PtxasReport r;
  // Only the lines about `kernel` (a module can hold several).
  bool in_kernel = false;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    if (l.find("Compiling entry function") != std::string::npos)
      in_kernel = l.find("'" + kernel + "'") != std::string::npos;
    if (!in_kernel) continue;
    r.text += l + "\n";
    std::smatch m;
    if (std::regex_search(l, m, std::regex("Used (\\d+) registers"))) r.registers = std::stoi(m[1]);
    if (std::regex_search(l, m, std::regex("(\\d+) bytes smem"))) r.shared_bytes = std::stoll(m[1]);
    if (std::regex_search(l, m, std::regex("(\\d+) bytes spill stores, (\\d+) bytes spill loads"))) {
      r.spill_stores = std::stoll(m[1]);
      r.spill_loads = std::stoll(m[2]);
    }
  }
  return r;
}

}  // namespace loom::runtime::cuda

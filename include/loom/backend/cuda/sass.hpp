// The SASS of a cubin, when the CUDA toolkit's cuobjdump is installed (with nvdisasm beside it: the
// PyPI wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm, which scripts/sass-tools.sh puts in a
// venv in the build tree), and the instructions of its loops counted by opcode: how the tests and
// lib::gpu_gemm_sass() check that ptxas kept the main loop the code generator wrote. Optional
// everywhere: without the tools the callers say so and skip.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "loom/support/error.hpp"

namespace loom::runtime::cuda {

/// The cuobjdump executable, or "" when none is found. Looked for, in order: $LOOM_CUOBJDUMP (the
/// executable itself), `hint` and $LOOM_SASS_TOOLS (each a folder holding cuobjdump, a folder whose
/// bin/ does, or a Python venv with the nvidia-cuda-cuobjdump wheel, whose executables live in
/// lib/python3.X/site-packages/nvidia/cuNN/bin), $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin.
inline std::string find_cuobjdump(const std::string& hint = "") {
  namespace fs = std::filesystem;
  auto executable = [](const fs::path& p) { return access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p); };
  if (const char* v = std::getenv("LOOM_CUOBJDUMP"); v && *v && executable(v)) return v;
  std::vector<fs::path> dirs;
  for (const std::string& d :
       {hint, std::string(std::getenv("LOOM_SASS_TOOLS") ? std::getenv("LOOM_SASS_TOOLS") : "")}) {
    if (d.empty()) continue;
    dirs.push_back(d);
    dirs.push_back(fs::path(d) / "bin");
    // A venv: the wheels put their executables under site-packages/nvidia/cu<major>/bin.
    std::error_code ec;
    for (const auto& lib : fs::directory_iterator(fs::path(d) / "lib", ec)) {
      const fs::path nvidia = lib.path() / "site-packages" / "nvidia";
      std::error_code ec2;
      for (const auto& cu : fs::directory_iterator(nvidia, ec2)) dirs.push_back(cu.path() / "bin");
    }
  }
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) dirs.push_back(fs::path(v) / "bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const fs::path& d : dirs)
    if (executable(d / "cuobjdump")) return (d / "cuobjdump").string();
  return "";
}

/// `cuobjdump -sass` of `cubin`, run with cuobjdump's folder first on PATH (older cuobjdumps call
/// the nvdisasm found there); nullopt when cuobjdump is not found. Throws loom::Error with its
/// output when it fails.
inline std::optional<std::string> disassemble_cubin(const std::string& cubin, const std::string& hint = "") {
  const std::string tool = find_cuobjdump(hint);
  if (tool.empty()) return std::nullopt;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path();
  static std::atomic<int> serial{0};
  const std::string stem = cat("loom_sass_", getpid(), "_", ++serial);
  const fs::path in = dir / (stem + ".cubin"), out = dir / (stem + ".sass");
  std::ofstream(in, std::ios::binary) << cubin;
  const std::string command = cat("PATH='", fs::path(tool).parent_path().string(), "':\"$PATH\" '", tool,
                                  "' -sass '", in.string(), "' > '", out.string(), "' 2>&1");
  const int status = std::system(command.c_str());
  std::ifstream file(out);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  fs::remove(in);
  fs::remove(out);
  if (status != 0) throw Error(cat("cuobjdump (", tool, ") failed on a cubin:\n", text));
  return text;
}

/// One loop of a SASS listing: the instructions from a backward branch's target to the branch,
/// counted by opcode (the mnemonic before its first '.': HMMA, LDSM, LDGSTS, BAR, ...). Never-run
/// filler (`@!PT` predicated, NOP) is not counted.
struct SassLoop {
  int64_t first = 0, last = 0;             ///< byte offsets of its first instruction and of the branch
  std::map<std::string, int64_t> opcodes;  ///< instructions per opcode
  int64_t instructions = 0;                ///< all of them
  /// The count of `opcode` (0 when absent).
  int64_t count(const std::string& opcode) const {
    auto it = opcodes.find(opcode);
    return it == opcodes.end() ? 0 : it->second;
  }
};

/// The loops of function `function` (every function when empty) in `sass`, a listing by
/// `cuobjdump -sass` (branch targets as 0x offsets) or nvdisasm (targets as `(.L_x_N) labels).
inline std::vector<SassLoop> sass_loops(const std::string& sass, const std::string& function = "") {
  struct Instruction {
    int64_t at;
    std::string text;
  };
  std::vector<Instruction> code;
  std::map<std::string, int64_t> labels;
  std::vector<std::string> pending_labels;
  bool in_function = function.empty();
  const std::regex function_line(R"(Function\s*:\s*(\S+))");
  const std::regex instruction_line(R"(^\s*/\*([0-9a-fA-F]+)\*/\s+([^;]*);)");
  const std::regex label_line(R"(^\s*(\.L_x_\d+):)");
  std::istringstream lines(sass);
  for (std::string l; std::getline(lines, l);) {
    std::smatch m;
    if (std::regex_search(l, m, function_line)) {
      in_function = function.empty() || m[1] == function;
      continue;
    }
    if (!in_function) continue;
    if (std::regex_search(l, m, label_line)) {
      pending_labels.push_back(m[1]);
      continue;
    }
    if (!std::regex_search(l, m, instruction_line)) continue;
    const int64_t at = std::stoll(m[1], nullptr, 16);
    for (const std::string& name : pending_labels) labels[name] = at;
    pending_labels.clear();
    code.push_back({at, m[2]});
  }
  std::vector<SassLoop> loops;
  const std::regex branch(R"(\bBRA\s+(?:`?\(?(\.L_x_\d+)\)?|(0x[0-9a-fA-F]+)))");
  for (const Instruction& b : code) {
    std::smatch m;
    if (!std::regex_search(b.text, m, branch)) continue;
    int64_t target = -1;
    if (m[1].matched) {
      auto it = labels.find(m[1]);
      if (it != labels.end()) target = it->second;
    } else {
      target = std::stoll(m[2], nullptr, 16);
    }
    if (target < 0 || target >= b.at) continue;  // forward, or the self-branch after EXIT
    SassLoop loop;
    loop.first = target;
    loop.last = b.at;
    for (const Instruction& i : code) {
      if (i.at < target || i.at > b.at) continue;
      std::istringstream words(i.text);
      std::string op;
      words >> op;
      if (op == "@!PT") continue;  // a guard that is never true: filler ptxas keeps for alignment
      if (!op.empty() && op[0] == '@') words >> op;
      op = op.substr(0, op.find('.'));
      if (op.empty() || op == "NOP") continue;
      ++loop.opcodes[op];
      ++loop.instructions;
    }
    loops.push_back(std::move(loop));
  }
  return loops;
}

}  // namespace loom::runtime::cuda

// The results of the bank-conflict analysis (sim/bank_analysis.hpp): per shared buffer and per
// access, the wavefronts a warp needs; and the trace they are counted from, which replays under
// another layout (padding, swizzle) without following the kernel again.
#pragma once

#include <algorithm>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/runtime/sim_report.hpp"
#include "loom/sim/access_recorder.hpp"

namespace loom::lib {

/// One shared-memory Load or Store node: every execution by a warp is one access instruction.
struct BankAccessReport {
  bool is_store = false;
  std::string text;  // e.g. "load A.shared[((tx*32) + ty)]"
  SimBankStats stats;
};

/// One shared buffer (one Allocate node), counted as the simulator counts it (SimSharedBuffer).
struct BankBufferReport {
  std::string name, kernel;
  DType dtype;
  SimBankStats load, store;
  std::vector<BankAccessReport> accesses;  // in order of first execution
  int64_t wavefronts() const { return load.wavefronts + store.wavefronts; }
  int64_t conflicts() const { return load.conflicts() + store.conflicts(); }
};

struct BankReport {
  std::vector<BankBufferReport> buffers;  // in order of first launch, like SimReport

  /// The shared buffer called `name` (the first, when kernels reuse names).
  const BankBufferReport& buffer(const std::string& name) const {
    for (const BankBufferReport& b : buffers)
      if (b.name == name) return b;
    std::string known;
    for (const BankBufferReport& b : buffers) known += (known.empty() ? "" : ", ") + b.name;
    throw Error(cat("the bank-conflict analysis found no shared buffer '", name,
                    "'; it found: ", known.empty() ? "none" : known));
  }

  std::string to_string() const {
    std::ostringstream os;
    os << "analytic shared-memory bank conflicts (32 banks of 4 bytes):\n";
    for (const BankBufferReport& b : buffers) {
      os << "  " << b.name << " (" << b.kernel << ", " << b.dtype.str() << "): load " << b.load.wavefronts
         << "/" << b.load.ideal_wavefronts << " wavefronts, store " << b.store.wavefronts << "/"
         << b.store.ideal_wavefronts << ", conflicts " << b.conflicts() << "\n";
      for (const BankAccessReport& a : b.accesses)
        os << "    " << std::left << std::setw(60) << a.text << std::right << " " << a.stats.instructions
           << " instr, " << a.stats.wavefronts << " wavefronts (ideal " << a.stats.ideal_wavefronts << ")\n";
    }
    return os.str();
  }
};

/// Values of the function's symbolic sizes, by name, for kernels whose shapes are not constant.
struct BankAnalysisOptions {
  std::map<std::string, int64_t> sizes;
};

/// What the warps did to shared memory, in order, independent of the layout: replaying it with
/// another mapping of element offsets gives the counts of another padding or swizzle exactly.
struct BankTrace {
  struct Event {
    int access = -1;  // -1: the end of a warp statement (the simulator's end_statement)
    int lane = 0;
    int bytes = 0;
    int64_t element = 0;  // index into the buffer, in elements of the access
  };
  struct Access {
    int buffer = 0;
    bool is_store = false;
    std::string text;
    int vector_bytes = 0;  // sim::SharedAccessInfo::vector_bytes
  };
  struct Buffer {
    std::string name, kernel;
    DType dtype;
  };
  std::vector<Event> events;
  std::vector<Access> accesses;
  std::vector<Buffer> buffers;
};

/// Element-offset maps by buffer index (BankTrace::buffers); buffers without one keep theirs.
using LayoutMaps = std::unordered_map<int, std::function<int64_t(int64_t)>>;

/// Counts the trace's wavefronts with the simulator's AccessRecorder, through `maps`.
inline BankReport replay_bank_trace(const BankTrace& trace, const LayoutMaps& maps = {}) {
  sim::KernelInfo info;  // one "buffer" per access, so that the tallies come per access
  for (size_t i = 0; i < trace.accesses.size(); ++i)
    info.accesses.push_back(sim::SharedAccessInfo{static_cast<int>(i), trace.accesses[i].is_store,
                                                  trace.accesses[i].vector_bytes});
  std::vector<sim::BankTally> tallies(trace.accesses.size());
  sim::AccessRecorder recorder;
  recorder.prepare(info, &tallies);
  std::vector<const std::function<int64_t(int64_t)>*> map_of(trace.accesses.size(), nullptr);
  for (size_t i = 0; i < trace.accesses.size(); ++i) {
    auto it = maps.find(trace.accesses[i].buffer);
    if (it != maps.end()) map_of[i] = &it->second;
  }
  for (const BankTrace::Event& e : trace.events) {
    if (e.access < 0) {
      recorder.flush();
      continue;
    }
    const auto* map = map_of[static_cast<size_t>(e.access)];
    const int64_t element = map ? (*map)(e.element) : e.element;
    recorder.record(e.access, e.lane, element * e.bytes, e.bytes);
  }
  recorder.flush();
  BankReport report;
  for (const BankTrace::Buffer& b : trace.buffers)
    report.buffers.push_back(BankBufferReport{b.name, b.kernel, b.dtype, {}, {}, {}});
  for (size_t i = 0; i < trace.accesses.size(); ++i) {
    const BankTrace::Access& a = trace.accesses[i];
    BankBufferReport& b = report.buffers[static_cast<size_t>(a.buffer)];
    const SimBankStats& s = a.is_store ? tallies[i].store : tallies[i].load;
    (a.is_store ? b.store : b.load) += s;
    b.accesses.push_back(BankAccessReport{a.is_store, a.text, s});
  }
  return report;
}

}  // namespace loom::lib

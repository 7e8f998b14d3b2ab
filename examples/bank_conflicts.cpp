// Shared-memory bank conflicts, measured and removed: for a transpose, an fp16 GEMM A tile read as
// mma fragments and a float4 pattern, prints the analytic and simulated wavefronts and conflicts
// before and after padding, swizzle and lib::avoid_bank_conflicts' choice, checking every result.
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include <loom/lib/bank_conflicts.hpp>
#include <loom/lib/bank_conflicts_cases.hpp>

#include "example_util.hpp"

using namespace loom;

namespace {

/// Runs `f` on the GPU simulator and the unscheduled computation on the interpreter with the same
/// inputs; exits unless the outputs are equal.
template <typename T>
SimReport run_checked(const lib::SharedTileCase& c, const LoweredFunc& f) {
  std::vector<int64_t> in_shape, out_shape;
  for (const Expr& e : c.input.shape()) in_shape.push_back(*as_const_int(e));
  for (const Expr& e : c.output.shape()) out_shape.push_back(*as_const_int(e));
  Buffer<T> in(in_shape), out(out_shape), expected(out_shape);
  example::fill_random(in, 7);
  interpret(lower(create_schedule(c.output), c.args(), c.name + "_reference"), {in, expected});
  SimReport report = simulate(f, {in, out});
  example::expect_all_close(out, expected, (c.name + " on the GPU simulator").c_str(), 0.0);
  return report;
}

void row(const std::string& name, const std::string& layout, const lib::BankReport& analytic,
         const SimReport& sim) {
  const lib::BankBufferReport& a = analytic.buffer("A.shared");
  const SimSharedBuffer& s = sim.buffer("A.shared");
  const bool same = a.load.wavefronts == s.load.wavefronts && a.store.wavefronts == s.store.wavefronts &&
                    a.load.ideal_wavefronts == s.load.ideal_wavefronts &&
                    a.store.ideal_wavefronts == s.store.ideal_wavefronts &&
                    a.load.instructions == s.load.instructions &&
                    a.store.instructions == s.store.instructions;
  std::cout << std::left << std::setw(12) << name << std::setw(26) << layout << std::right << std::setw(9)
            << a.load.wavefronts << std::setw(9) << s.load.wavefronts << std::setw(7)
            << a.load.ideal_wavefronts << std::setw(9) << a.load.conflicts() << std::setw(9)
            << a.store.wavefronts << std::setw(9) << s.store.wavefronts << std::setw(7)
            << a.store.ideal_wavefronts << std::setw(9) << a.store.conflicts() << "\n";
  if (!same) {
    std::cout << "MISMATCH: the analysis and the simulator count differently\n"
              << analytic.to_string() << sim.to_string();
    std::exit(1);
  }
}

template <typename T>
void show(const lib::SharedTileCase& c, const std::vector<std::pair<std::string, Schedule>>& layouts) {
  for (const auto& [layout, s] : layouts) {
    LoweredFunc f = lower(s, c.args(), c.name);
    row(c.name, layout, lib::analyze_bank_conflicts(f), run_checked<T>(c, f));
  }
  Schedule fixed = c.schedule.copy();
  lib::BankConflictFix fix = lib::avoid_bank_conflicts(fixed, c.tile, c.args(), c.name);
  LoweredFunc f = lower(fixed, c.args(), c.name);
  row(c.name, "avoid_bank_conflicts", lib::analyze_bank_conflicts(f), run_checked<T>(c, f));
  std::cout << "  chose " << fix.str() << "\n";
  if (!fix.conflict_free) {
    std::cout << "the fix left conflicts\n";
    std::exit(1);
  }
  // The same with padding only (for buffers a swizzle cannot serve, e.g. tensorize operands).
  Schedule padded = c.schedule.copy();
  lib::BankFixOptions padding_only;
  padding_only.allow_swizzle = false;
  lib::BankConflictFix pad = lib::avoid_bank_conflicts(padded, c.tile, c.args(), c.name, padding_only);
  LoweredFunc p = lower(padded, c.args(), c.name);
  row(c.name, "... padding only", lib::analyze_bank_conflicts(p), run_checked<T>(c, p));
  std::cout << "  chose " << pad.str() << (pad.conflict_free ? "" : ", not conflict-free") << "\n";
}

Schedule with(const lib::SharedTileCase& c, int pad, SwizzleLayout swizzle = {}) {
  Schedule s = c.schedule.copy();
  if (pad > 0) s[c.tile].storage_align(c.tile.axis(0), 32, pad);
  if (swizzle.defined()) s[c.tile].swizzle(swizzle.bits, swizzle.base, swizzle.shift);
  return s;
}

}  // namespace

int main() {
  std::cout
      << "Shared-memory wavefronts of the tile A.shared: analytic (no kernel run) vs the GPU simulator\n"
      << "(32 banks of 4 bytes; ideal = one wavefront per phase; every result is checked against the\n"
      << "unscheduled computation)\n\n";
  std::cout << std::left << std::setw(12) << "case" << std::setw(26) << "layout" << std::right << std::setw(9)
            << "ld.anl" << std::setw(9) << "ld.sim" << std::setw(7) << "ideal" << std::setw(9) << "ld.cnfl"
            << std::setw(9) << "st.anl" << std::setw(9) << "st.sim" << std::setw(7) << "ideal" << std::setw(9)
            << "st.cnfl"
            << "\n";

  // 32x32 transpose, 70x70 so that the edge blocks are partial.
  lib::SharedTileCase t = lib::transpose_case(70);
  show<float>(t, {{"32-float rows", with(t, 0)},
                  {"padding 1 (row 33)", with(t, 1)},
                  {"swizzle <5,0,5>", with(t, 0, SwizzleLayout{5, 0, 5})}});

  // fp16 GEMM A tile, 128 x 32 per block, 200 rows (the second block is partial).
  lib::SharedTileCase m = lib::mma_a_tile_case(200);
  show<half>(m, {{"32-half rows", with(m, 0)},
                 {"padding 8 (row 40)", with(m, 8)},
                 {"swizzle <2,3,3>", with(m, 0, SwizzleLayout{2, 3, 3})}});

  // float4 rows read down a column of lanes.
  lib::SharedTileCase v = lib::float4_case(40);
  show<float>(v, {{"32-float rows", with(v, 0)},
                  {"padding 4 (row 36)", with(v, 4)},
                  {"swizzle <3,2,3>", with(v, 0, SwizzleLayout{3, 2, 3})}});

  std::cout << "\nThe swizzled transpose as lowered IR (the swizzle shows as an attribute of the tile):\n";
  Schedule fixed = t.schedule.copy();
  lib::avoid_bank_conflicts(fixed, t.tile, t.args(), t.name);
  std::string ir = lower(fixed, t.args(), t.name).to_string();
  std::cout << ir.substr(0, ir.find('\n', ir.find("allocate"))) << "\n  ...\n";
  std::cout << "ok\n";
}

// Low-precision GEMM: loom::lib::gemm on bfloat16 x bfloat16 -> float32 and 8-bit x 8-bit -> int32
// against MKL's cblas_gemm_bf16bf16f32 and cblas_gemm_s8u8s32 (blas_peers.hpp; the OpenBLAS builds
// it loads have no such products), row-major, square and skinny shapes, 1 and all threads. The two
// libraries are timed in alternating rounds and each keeps its best call; the results are checked
// (8-bit: equal to MKL's and to a plain loop on sample elements; bfloat16: within a relative
// tolerance of both), and a mismatch makes the exit status 1. One line per dtype, shape and threads:
//   loom-bench gemm_lowp dtype=bf16 m= n= k= threads= loom_gflops= dot_peak_gflops= peak_frac=
//     peer=mkl-<version>:<kernel> peer_gflops= ratio=<loom/peer> max_rel_diff=<vs MKL, over the
//     largest |C|> config="<GemmConfig>"
//   loom-bench gemm_lowp dtype=int8 types=u8s8s32 m= ... loom_gops= dot_peak_gops= peak_frac= peer=
//     peer_gops= ratio= config=
// (types: A's, B's and C's element types, as MKL reads its operands; dot_peak: vdpbf16ps / vpdpbusd
// chains without loads on the same threads, bench/fma_peak.hpp; left out where Loom uses AMX tiles,
// config="... dot=amx"). Without MKL, peer=none.
// The full set takes several minutes; LOOM_BENCH_QUICK=1 (ctest's smoke run) does 256^3 and 512^3.
#include <loom/ir/half.hpp>
#include <loom/lib/gemm.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>
#include <loom/tune/measure.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "blas_peers.hpp"
#include "fma_peak.hpp"

using namespace loom;

namespace {

bool quick() {
  const char* q = std::getenv("LOOM_BENCH_QUICK");
  return q && std::string(q) != "0";
}

/// The CPU's flags from /proc/cpuinfo that the low-precision kernels depend on, as "name=0/1".
std::string cpu_flags_text() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty()) return "unknown (no /proc/cpuinfo flags)";
  std::string out;
  for (const char* f : {"avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8"})
    out += cat(out.empty() ? "" : " ", f, "=", flags.find(cat(" ", f, " ")) != std::string::npos ? 1 : 0);
  return out;
}

const loom_bench::BlasPeer* mkl_peer(const std::vector<loom_bench::BlasPeer>& peers) {
  for (const loom_bench::BlasPeer& p : peers)
    if (p.name == "mkl" && (p.gemm_bf16 || p.gemm_8bit)) return &p;
  return nullptr;
}

void set_threads(const std::vector<loom_bench::BlasPeer>& peers, int n) {
  runtime::ThreadPool::global().set_num_threads(n);
  for (const loom_bench::BlasPeer& p : peers) p.set_threads(n);
}

void pause_between_libraries() {
  // Idle BLAS threads spin a while before they sleep (MKL's OpenMP about 0.2 s): let the previous
  // library's threads fall asleep before timing the next one.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

struct Shape {
  int64_t m, n, k;
  double ops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

/// The element pairs whose sums the spot checks recompute with a plain loop: the corners and a few
/// chosen at random.
std::vector<std::pair<int64_t, int64_t>> sample_elements(const Shape& s) {
  std::vector<std::pair<int64_t, int64_t>> out = {{0, 0}, {0, s.n - 1}, {s.m - 1, 0}, {s.m - 1, s.n - 1}};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 12; ++i)
    out.emplace_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(s.m)),
                     static_cast<int64_t>(rng() % static_cast<uint64_t>(s.n)));
  return out;
}

/// The best milliseconds per call of Loom and of the peer (peer: +inf without one), over `rounds`
/// alternating rounds of as many calls as fill about `round_ms` (from one timed call each).
struct Times {
  double loom_ms = std::numeric_limits<double>::infinity();
  double peer_ms = std::numeric_limits<double>::infinity();
};
template <typename Loom, typename Peer>
Times time_both(Loom&& loom_call, Peer&& peer_call, bool have_peer) {
  const int rounds = quick() ? 2 : 3;
  const double round_ms = quick() ? 20 : 400;
  auto calls_for = [&](double one_ms) {
    return static_cast<int>(std::clamp(std::ceil(round_ms / std::max(one_ms, 1e-3)), 1.0, 200.0));
  };
  Times t;
  const int loom_calls = calls_for(tune::best_ms(loom_call, 1));
  const int peer_calls = have_peer ? calls_for(tune::best_ms(peer_call, 1)) : 0;
  for (int r = 0; r < rounds; ++r) {
    // Each side goes first in every other round: neither always finds the caches the other left.
    for (int side = 0; side < 2; ++side) {
      const bool loom_turn = (side == 0) == (r % 2 == 0);
      if (!loom_turn && !have_peer) continue;
      pause_between_libraries();
      if (loom_turn)
        t.loom_ms = std::min(t.loom_ms, tune::best_ms(loom_call, loom_calls));
      else
        t.peer_ms = std::min(t.peer_ms, tune::best_ms(peer_call, peer_calls));
    }
  }
  return t;
}

std::string rate_text(double ops, double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", ops / (ms * 1e-3) / 1e9);
  return buf;
}

/// The line's peer fields: peer=<label> peer_<unit>= ratio=, or peer=none.
std::string peer_text(const loom_bench::BlasPeer* peer, const Shape& s, const Times& t, const char* unit) {
  if (!peer) return "peer=none";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", t.peer_ms / t.loom_ms);
  return cat("peer=", peer->label(), " peer_", unit, "=", rate_text(s.ops(), t.peer_ms), " ratio=", buf);
}

/// " dot_peak_<unit>= peak_frac=": the measured peak of the dot instruction with these threads (once
/// per kind and thread count; bench/fma_peak.hpp) and Loom's share of it; "" where the CPU has none,
/// and for AMX tiles (`dot`), whose peak the vector chains do not measure.
std::string peak_text(bool int8, int threads, const Shape& s, const Times& t, lib::DotInstruction dot) {
  if (dot == lib::DotInstruction::Amx) return "";
  static std::map<std::pair<bool, int>, double> peaks;
  auto [it, fresh] = peaks.emplace(std::make_pair(int8, threads), 0.0);
  if (fresh) it->second = loom_bench::measure_dot_peak(int8, threads, 100);
  if (it->second <= 0) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, " dot_peak_%s=%.1f peak_frac=%.3f", int8 ? "gops" : "gflops", it->second,
                s.ops() / (t.loom_ms * 1e-3) / 1e9 / it->second);
  return buf;
}

lib::Gemm make_gemm(const Shape& s, DType a, DType b) {
  lib::GemmProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.dtype = a;
  if (b != a) p.b_dtype = b;
  return lib::gemm(p);  // sized for the thread pool's current thread count
}

/// bfloat16 x bfloat16 -> float32 on one shape, every thread count. Returns the mismatches.
int run_bf16(const Shape& s, const std::vector<int>& thread_counts,
             const std::vector<loom_bench::BlasPeer>& peers, const loom_bench::BlasPeer* mkl) {
  const bool have_peer = mkl && mkl->gemm_bf16;
  Buffer<loom::bfloat16> a({s.m, s.k}), b({s.k, s.n});
  Buffer<float> c({s.m, s.n}), reference({s.m, s.n});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = loom::bfloat16(dist(rng));
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = loom::bfloat16(dist(rng));
  static_assert(sizeof(loom::bfloat16) == sizeof(uint16_t) && std::is_standard_layout_v<loom::bfloat16>);
  const auto* a_bits = reinterpret_cast<const uint16_t*>(a.data());
  const auto* b_bits = reinterpret_cast<const uint16_t*>(b.data());
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  int failures = 0;
  for (int threads : thread_counts) {
    set_threads(peers, threads);
    const std::string where = cat("dtype=bf16 m=", s.m, " n=", s.n, " k=", s.k, " threads=", threads);
    lib::Gemm g = make_gemm(s, bf16, bf16);
    Kernel f = build(g.schedule, g.args(), Target::cpu(), "gemm");
    f(a, b, c);
    // Both accumulate products of the same bfloat16 values (exact in float32) in float32, in their
    // own orders: they differ by rounding, far below what a lost or doubled product would make.
    bool ok = true;
    double max_rel = 0;
    if (have_peer) {
      mkl->gemm(m, n, k, a_bits, b_bits, reference.data());
      double largest = 0, diff = 0;
      for (int64_t i = 0; i < c.num_elements(); ++i) {
        largest = std::max(largest, std::abs(static_cast<double>(reference.at_flat(i))));
        diff = std::max(diff, std::abs(static_cast<double>(c.at_flat(i)) - reference.at_flat(i)));
      }
      max_rel = diff / std::max(largest, 1e-30);
      if (!(max_rel <= 1e-4)) {
        std::printf(
            "loom-bench gemm_lowp error: %s loom differs from mkl by %.3g (of the largest |C| %.3g)\n",
            where.c_str(), diff, largest);
        ok = false;
      }
    }
    for (auto [i, j] : sample_elements(s)) {
      double exact = 0, magnitude = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double term = static_cast<double>(static_cast<float>(a(i, p))) * static_cast<float>(b(p, j));
        exact += term;
        magnitude += std::abs(term);
      }
      const double tolerance = 1e-4 * magnitude + 1e-6;
      for (auto [who, got] : {std::pair<const char*, double>{"loom", c(i, j)},
                              std::pair<const char*, double>{"mkl", have_peer ? reference(i, j) : exact}})
        if (!(std::abs(got - exact) <= tolerance)) {
          std::printf("loom-bench gemm_lowp error: %s %s C(%lld, %lld) = %.9g, a plain loop gives %.9g\n",
                      where.c_str(), who, static_cast<long long>(i), static_cast<long long>(j), got, exact);
          ok = false;
        }
    }
    const Times t = time_both([&] { f(a, b, c); },
                              [&] { mkl->gemm(m, n, k, a_bits, b_bits, reference.data()); }, have_peer);
    char rel[32];
    std::snprintf(rel, sizeof rel, "%.2e", max_rel);
    std::printf("loom-bench gemm_lowp %s loom_gflops=%s%s %s%s config=\"%s\"\n", where.c_str(),
                rate_text(s.ops(), t.loom_ms).c_str(), peak_text(false, threads, s, t, g.config.dot).c_str(),
                peer_text(have_peer ? mkl : nullptr, s, t, "gflops").c_str(),
                have_peer ? cat(" max_rel_diff=", rel).c_str() : "", g.config.str().c_str());
    std::fflush(stdout);
    failures += ok ? 0 : 1;
  }
  return failures;
}

/// 8-bit A (TA) x 8-bit B (TB) -> int32 on one shape, every thread count. Returns the mismatches.
template <typename TA, typename TB>
int run_int8(const Shape& s, const std::vector<int>& thread_counts,
             const std::vector<loom_bench::BlasPeer>& peers, const loom_bench::BlasPeer* mkl) {
  const bool have_peer = mkl && mkl->gemm_8bit;
  const DType a_type = std::is_signed_v<TA> ? i8 : u8, b_type = std::is_signed_v<TB> ? i8 : u8;
  const std::string types =
      cat(std::is_signed_v<TA> ? "s8" : "u8", std::is_signed_v<TB> ? "s8" : "u8", "s32");
  Buffer<TA> a({s.m, s.k});
  Buffer<TB> b({s.k, s.n});
  Buffer<int32_t> c({s.m, s.n}), reference({s.m, s.n});
  // Every byte value, negative ones and ones above 127 included: a wrong signedness shows.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = static_cast<TA>(byte(rng));
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<TB>(byte(rng));
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  int failures = 0;
  for (int threads : thread_counts) {
    set_threads(peers, threads);
    const std::string where =
        cat("dtype=int8 types=", types, " m=", s.m, " n=", s.n, " k=", s.k, " threads=", threads);
    lib::Gemm g = make_gemm(s, a_type, b_type);
    Kernel f = build(g.schedule, g.args(), Target::cpu(), "gemm");
    f(a, b, c);
    bool ok = true;
    if (have_peer) {
      mkl->gemm_int8(m, n, k, a.data(), b.data(), reference.data());
      int64_t differ = 0, first = -1;
      for (int64_t i = 0; i < c.num_elements(); ++i)
        if (c.at_flat(i) != reference.at_flat(i)) {
          if (first < 0) first = i;
          ++differ;
        }
      if (differ) {
        std::printf(
            "loom-bench gemm_lowp error: %s loom differs from mkl in %lld elements, first C(%lld, %lld): %d "
            "vs %d\n",
            where.c_str(), static_cast<long long>(differ), static_cast<long long>(first / s.n),
            static_cast<long long>(first % s.n), c.at_flat(first), reference.at_flat(first));
        ok = false;
      }
    }
    for (auto [i, j] : sample_elements(s)) {
      int64_t exact = 0;
      for (int64_t p = 0; p < s.k; ++p)
        exact += static_cast<int64_t>(a(i, p)) * static_cast<int64_t>(b(p, j));
      for (auto [who, got] : {std::pair<const char*, int64_t>{"loom", c(i, j)},
                              std::pair<const char*, int64_t>{"mkl", have_peer ? reference(i, j) : exact}})
        if (got != exact) {
          std::printf("loom-bench gemm_lowp error: %s %s C(%lld, %lld) = %lld, a plain loop gives %lld\n",
                      where.c_str(), who, static_cast<long long>(i), static_cast<long long>(j),
                      static_cast<long long>(got), static_cast<long long>(exact));
          ok = false;
        }
    }
    const Times t =
        time_both([&] { f(a, b, c); }, [&] { mkl->gemm_int8(m, n, k, a.data(), b.data(), reference.data()); },
                  have_peer);
    std::printf("loom-bench gemm_lowp %s loom_gops=%s%s %s config=\"%s\"\n", where.c_str(),
                rate_text(s.ops(), t.loom_ms).c_str(), peak_text(true, threads, s, t, g.config.dot).c_str(),
                peer_text(have_peer ? mkl : nullptr, s, t, "gops").c_str(), g.config.str().c_str());
    std::fflush(stdout);
    failures += ok ? 0 : 1;
  }
  return failures;
}

/// The micro-kernel instruction lib::gemm picks for these input types here.
std::string loom_dot(DType a, DType b) {
  lib::Gemm g = make_gemm({256, 256, 256}, a, b);
  return lib::dot_instruction_name(g.config.dot);
}

}  // namespace

int main() {
  const std::vector<loom_bench::BlasPeer> peers =
      loom_bench::load_blas_peers(loom_bench::blas_peers_venv(LOOM_BENCH_PEERS_VENV));
  const loom_bench::BlasPeer* mkl = mkl_peer(peers);
  // The 8-bit types follow MKL's reading of its operands (blas_peers.hpp found it: row-major, A
  // uint8 and B int8 on MKL 2026.2), so that both compute the same product; without MKL, the same
  // (vpdpbusd's own uint8 x int8).
  const bool a8_signed = mkl && mkl->gemm_8bit ? mkl->a8_signed : false;
  const bool b8_signed = mkl && mkl->gemm_8bit ? mkl->b8_signed : true;
  const DType a8 = a8_signed ? i8 : u8, b8 = b8_signed ? i8 : u8;

  std::printf("bench_gemm_lowp cpu: %s\n", cpu_flags_text().c_str());
  std::printf("bench_gemm_lowp loom dot: bf16=%s int8(%s x %s)=%s\n", loom_dot(bf16, bf16).c_str(),
              a8_signed ? "int8" : "uint8", b8_signed ? "int8" : "uint8", loom_dot(a8, b8).c_str());
  if (mkl)
    std::printf("bench_gemm_lowp peer: %s bf16=%s int8=%s\n", mkl->label().c_str(),
                mkl->gemm_bf16 ? "cblas_gemm_bf16bf16f32" : "missing",
                mkl->gemm_8bit
                    ? cat("cblas_gemm_s8u8s32 (reads row-major operands as ", mkl->int8_types(), ")").c_str()
                    : "missing");
  else
    std::printf("bench_gemm_lowp peer: none (MKL not found; bash scripts/bench-peers.sh installs MKL)\n");
  std::fflush(stdout);

  std::vector<Shape> shapes;
  if (quick())
    shapes = {{256, 256, 256}, {512, 512, 512}};
  else
    shapes = {{256, 256, 256}, {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
              {1, 4096, 4096}, {64, 4096, 4096}, {4096, 64, 4096},   {4096, 4096, 64}};
  const int all = runtime::ThreadPool::global().pool_threads();
  std::vector<int> thread_counts = {1};
  if (all > 1) thread_counts.push_back(all);

  int failures = 0;
  auto guarded = [&](const char* what, const Shape& s, auto&& run) {
    try {
      failures += run();
    } catch (const std::exception& e) {
      std::printf("loom-bench gemm_lowp error: dtype=%s m=%lld n=%lld k=%lld: %s\n", what,
                  static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                  e.what());
      ++failures;
    }
  };
  for (const Shape& s : shapes) guarded("bf16", s, [&] { return run_bf16(s, thread_counts, peers, mkl); });
  for (const Shape& s : shapes)
    guarded("int8", s, [&] {
      if (!a8_signed && b8_signed) return run_int8<uint8_t, int8_t>(s, thread_counts, peers, mkl);
      if (a8_signed && !b8_signed) return run_int8<int8_t, uint8_t>(s, thread_counts, peers, mkl);
      if (a8_signed) return run_int8<int8_t, int8_t>(s, thread_counts, peers, mkl);
      return run_int8<uint8_t, uint8_t>(s, thread_counts, peers, mkl);
    });
  if (failures) std::printf("bench_gemm_lowp: %d mismatches or failures\n", failures);
  return failures ? 1 : 0;
}

// The flagship demo: TVM's "How to optimize GEMM on CPU" tutorial, step by step on 1024^3 f32
// (blocking, vectorization, permutation, packing, write cache, parallel), then Loom's library GEMM
// against every BLAS this machine has (Debian's OpenBLAS; MKL and the newest OpenBLAS when
// scripts/bench-peers.sh installed them), each named with its version and the kernel it runs here.
#include <loom/lib/gemm.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>

#include "blas_peers.hpp"  // bench/: the same peers as bench_gemm
#include "example_util.hpp"

using namespace loom;

namespace {

constexpr int kM = 1024, kN = 1024, kK = 1024;
constexpr double kFlops = 2.0 * kM * kN * kK;

struct Data {
  Buffer<float> a{kM, kK}, b{kK, kN}, c{kM, kN}, expected{kM, kN};
  Data() {
    example::fill_random(a, 1);
    example::fill_random(b, 2);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kM, kN, kK, 1.0f, a.data(), kK, b.data(), kN, 0.0f,
                expected.data(), kN);
  }
  double max_abs_error() const {
    double e = 0;
    for (int64_t i = 0; i < c.num_elements(); ++i)
      e = std::max(e, std::abs(static_cast<double>(c.at_flat(i)) - static_cast<double>(expected.at_flat(i))));
    return e;
  }
};

/// The best of a few timed calls; a call slower than half a second (the first steps) is timed
/// once, so that the whole demo stays well under a minute.
double seconds_per_call(const std::function<void()>& call) {
  using Clock = std::chrono::steady_clock;
  auto time_one = [&] {
    Clock::time_point start = Clock::now();
    call();
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double best = time_one();  // also the warm-up: page faults, thread start-up
  if (best > 0.5) return best;
  for (int r = 0; r < 10; ++r) best = std::min(best, time_one());
  return best;
}

struct Step {
  std::string name;
  double gflops = 0;
  LoweredFunc lowered;
};

class Demo {
 public:
  explicit Demo(Data& d) : d_(d) {}

  /// Builds and times one schedule; checks it against Debian's OpenBLAS; prints one line.
  Kernel run(const std::string& name, const Schedule& s, const std::vector<LowerArg>& args) {
    Kernel f = build(s, args, Target::cpu(), "gemm");
    d_.c.fill(0.0f);
    double seconds = seconds_per_call([&] { f(d_.a, d_.b, d_.c); });
    const double error = d_.max_abs_error();
    const double gflops = kFlops / seconds / 1e9;
    if (baseline_gflops_ == 0) baseline_gflops_ = gflops;
    std::printf("%-22s %9.2f ms %8.2f GFLOP/s  speedup %7.1fx  max-abs-error vs OpenBLAS %.2e\n",
                name.c_str(), seconds * 1e3, gflops, gflops / baseline_gflops_, error);
    std::fflush(stdout);
    if (error > 1e-3) {
      std::printf("MISMATCH: %s differs from cblas_sgemm by %g\n", name.c_str(), error);
      std::exit(1);
    }
    if (gflops > best_.gflops) best_ = Step{name, gflops, f.lowered()};
    last_gflops_ = gflops;
    return f;
  }

  /// The peers, timed the same way, each with its own threads; returns the fastest's GFLOP/s.
  double run_peers(double loom_gflops) {
    double strongest = 0;
    std::string strongest_label;
    for (const loom_bench::BlasPeer& p :
         loom_bench::load_blas_peers(loom_bench::blas_peers_venv(LOOM_BENCH_PEERS_VENV))) {
      p.set_threads(runtime::ThreadPool::global().num_threads());
      const double seconds =
          seconds_per_call([&] { p.gemm(kM, kN, kK, d_.a.data(), d_.b.data(), d_.c.data()); });
      const double gflops = kFlops / seconds / 1e9;
      std::printf("%-22s %9.2f ms %8.2f GFLOP/s  speedup %7.1fx  (%s %s, %s kernel)\n",
                  (p.name + " sgemm").c_str(), seconds * 1e3, gflops, gflops / baseline_gflops_,
                  p.name.c_str(), p.version.c_str(), p.kernel.c_str());
      if (gflops > strongest) strongest = gflops, strongest_label = p.label();
      if (const std::string note = loom_bench::weak_kernel_note(p); !note.empty())
        std::printf("  note: %s\n", note.c_str());
    }
    std::printf("loom::lib::gemm runs at %.2fx the fastest BLAS here (%s)\n", loom_gflops / strongest,
                strongest_label.c_str());
    return strongest;
  }

  const Step& best() const { return best_; }
  double last_gflops() const { return last_gflops_; }

 private:
  Data& d_;
  double baseline_gflops_ = 0, last_gflops_ = 0;
  Step best_;
};

/// C[m, n] = sum_k A[m, k] * B[k, n], the tutorial's algorithm.
struct Gemm {
  Tensor A = placeholder({kM, kK}, f32, "A");
  Tensor B = placeholder({kK, kN}, f32, "B");
  IterVar k = reduce_axis(0, kK, "k");
  Tensor C = compute(
      {kM, kN}, [&](Expr m, Expr n) { return sum(A(m, k) * B(k, n), {k}); }, "C");
};

/// The tutorial's array packing: B rearranged as [N / bn][K][bn] so the innermost loop reads it
/// contiguously.
struct PackedGemm {
  static constexpr int bn = 32;
  Tensor A = placeholder({kM, kK}, f32, "A");
  Tensor B = placeholder({kK, kN}, f32, "B");
  Tensor packedB = compute(
      {kN / bn, kK, bn}, [&](Expr x, Expr y, Expr z) { return B(y, x * bn + z); }, "packedB");
  IterVar k = reduce_axis(0, kK, "k");
  Tensor C = compute(
      {kM, kN},
      [&](Expr m, Expr n) { return sum(A(m, k) * packedB(floordiv(n, bn), k, floormod(n, bn)), {k}); }, "C");
};

}  // namespace

/// OPENBLAS_CORETYPE, read when OpenBLAS loads (before main), can force a kernel older than this
/// CPU's, and a comparison with it flatters Loom (bench/blas_peers.hpp, weak_kernel_note). The demo
/// then runs itself again without the variable, and says so.
void restart_without_forced_weak_openblas_kernel(char** argv) {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (!forced || !*forced) return;
  __builtin_cpu_init();
  const std::string kernel = openblas_get_corename();
  if (!__builtin_cpu_supports("avx512f") || loom_bench::is_avx512_openblas_kernel(kernel)) return;
  std::printf(
      "OPENBLAS_CORETYPE=%s makes OpenBLAS run its %s kernel on this AVX-512 CPU: running the demo "
      "again without it, so that OpenBLAS runs the kernel it chooses for this CPU\n\n",
      forced, kernel.c_str());
  std::fflush(stdout);
  unsetenv("OPENBLAS_CORETYPE");
  execv("/proc/self/exe", argv);
  std::printf("(could not run again: %s; the OpenBLAS lines below are on the %s kernel)\n\n",
              std::strerror(errno), kernel.c_str());
}

int main(int, char** argv) {
  restart_without_forced_weak_openblas_kernel(argv);
  Data d;
  Demo demo(d);
  const int bn = 32, kfactor = 4;
  std::printf("C = A x B, M = N = K = %d, float32, %d threads (LOOM_NUM_THREADS)\n\n", kM,
              runtime::ThreadPool::global().num_threads());

  {  // 1. The default schedule: three nested loops.
    Gemm g;
    Schedule s = create_schedule(g.C);
    demo.run("baseline", s, {g.A, g.B, g.C});
  }
  {  // 2. Blocking: 32x32 tiles of C that stay in cache while k runs.
    Gemm g;
    Schedule s = create_schedule(g.C);
    auto [mo, no, mi, ni] = s[g.C].tile(g.C.axis(0), g.C.axis(1), bn, bn);
    auto [ko, ki] = s[g.C].split(g.k, kfactor);
    s[g.C].reorder({mo, no, ko, ki, mi, ni});
    demo.run("blocking", s, {g.A, g.B, g.C});
  }
  {  // 3. Vectorization: the innermost 32 columns become SIMD operations.
    Gemm g;
    Schedule s = create_schedule(g.C);
    auto [mo, no, mi, ni] = s[g.C].tile(g.C.axis(0), g.C.axis(1), bn, bn);
    auto [ko, ki] = s[g.C].split(g.k, kfactor);
    s[g.C].reorder({mo, no, ko, ki, mi, ni});
    s[g.C].vectorize(ni);
    demo.run("vectorization", s, {g.A, g.B, g.C});
  }
  {  // 4. Loop permutation: mi outside ki, so each C row stays put while k advances.
    Gemm g;
    Schedule s = create_schedule(g.C);
    auto [mo, no, mi, ni] = s[g.C].tile(g.C.axis(0), g.C.axis(1), bn, bn);
    auto [ko, ki] = s[g.C].split(g.k, kfactor);
    s[g.C].reorder({mo, no, ko, mi, ki, ni});
    s[g.C].vectorize(ni);
    demo.run("loop permutation", s, {g.A, g.B, g.C});
  }
  {  // 5. Array packing: B's 32-column panels made contiguous.
    PackedGemm g;
    Schedule s = create_schedule(g.C);
    auto [mo, no, mi, ni] = s[g.C].tile(g.C.axis(0), g.C.axis(1), bn, bn);
    auto [ko, ki] = s[g.C].split(g.k, kfactor);
    s[g.C].reorder({mo, no, ko, mi, ki, ni});
    s[g.C].vectorize(ni);
    s[g.packedB].vectorize(g.packedB.axis(2));
    s[g.packedB].parallel(g.packedB.axis(0));
    demo.run("array packing", s, {g.A, g.B, g.C});
  }
  {  // 6. Write cache: accumulate a 32x32 block in a local buffer, then write it out once.
    PackedGemm g;
    Schedule s = create_schedule(g.C);
    Tensor CC = s.cache_write(g.C, "global");
    auto [mo, no, mi, ni] = s[g.C].tile(g.C.axis(0), g.C.axis(1), bn, bn);
    s[CC].compute_at(s[g.C], no);
    IterVar mc = CC.axis(0), nc = CC.axis(1);
    auto [ko, ki] = s[CC].split(CC.reduce_axis(0), kfactor);
    s[CC].reorder({ko, mc, ki, nc});
    s[CC].vectorize(nc);
    s[CC].unroll(ki);
    s[g.packedB].vectorize(g.packedB.axis(2));
    s[g.packedB].parallel(g.packedB.axis(0));
    demo.run("write cache", s, {g.A, g.B, g.C});
  }
  {  // 7. Parallel: blocks of rows of C across the thread pool.
    PackedGemm g;
    Schedule s = create_schedule(g.C);
    Tensor CC = s.cache_write(g.C, "global");
    auto [mo, no, mi, ni] = s[g.C].tile(g.C.axis(0), g.C.axis(1), bn, bn);
    s[CC].compute_at(s[g.C], no);
    IterVar mc = CC.axis(0), nc = CC.axis(1);
    auto [ko, ki] = s[CC].split(CC.reduce_axis(0), kfactor);
    s[CC].reorder({ko, mc, ki, nc});
    s[CC].vectorize(nc);
    s[CC].unroll(ki);
    s[g.C].parallel(mo);
    s[g.packedB].vectorize(g.packedB.axis(2));
    s[g.packedB].parallel(g.packedB.axis(0));
    demo.run("parallel", s, {g.A, g.B, g.C});
  }
  {  // 8. Loom's library GEMM: packed panels, a register-tile micro-kernel, cache blocking.
    lib::GemmProblem p;
    p.m = kM;
    p.n = kN;
    p.k = kK;
    lib::Gemm g = lib::gemm(p);
    std::printf("\nloom::lib::gemm chose %s\n", g.config.str().c_str());
    Kernel f = demo.run("loom::lib::gemm", g.schedule, g.args());
    demo.run_peers(demo.last_gflops());
    // The micro-kernel, as the CPU runs it: fused multiply-adds on 512-bit registers (zmm) whose
    // accumulators stay in registers across k.
    const std::string& assembly = f.assembly();
    int fmas = 0;
    for (size_t at = assembly.find("vfmadd"); at != std::string::npos; at = assembly.find("vfmadd", at + 1))
      ++fmas;
    std::printf("its machine code has %d vfmadd instructions (the unrolled %lldx%lld register tile)\n", fmas,
                static_cast<long long>(g.config.mr), static_cast<long long>(g.config.nr));
  }

  std::printf("\nThe lowered IR of the fastest schedule (%s, %.1f GFLOP/s):\n\n", demo.best().name.c_str(),
              demo.best().gflops);
  std::cout << demo.best().lowered << "\n";
  std::cout << "ok\n";
}

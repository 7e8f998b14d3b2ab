// lib::gpu_gemm (tensor cores: cp.async stages, ldmatrix, mma.sync) in the simulator on shapes that
// no tile divides, for f16, bf16 and tf32 inputs and every layout of A and B, its shared-memory
// banks, its refusals, its CUDA through NVRTC and ptxas; and cp.async's asynchrony in the
// simulator (data lands at wait_group; using it earlier is reported).
#include "cuda_test_util.hpp"
#include "mma_cases.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/lib/gpu_gemm.hpp>
#include <loom/te/ptx_intrinsics.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// A and B for g, shaped as stored, filled with random values (or small integers, whose products
/// and sums are exact in f32 in any order).
template <typename T>
struct GemmInputs {
  Buffer<T> a, b;
  GemmInputs(const lib::GpuGemm& g, bool integers)
      : a(g.a_layout == lib::Layout::RowMajor ? std::vector<int64_t>{g.m, g.k}
                                              : std::vector<int64_t>{g.k, g.m}),
        b(g.b_layout == lib::Layout::RowMajor ? std::vector<int64_t>{g.k, g.n}
                                              : std::vector<int64_t>{g.n, g.k}) {
    if (integers) {
      fill_small_integers(a, 11);
      fill_small_integers(b, 12);
    } else {
      fill(a, 11);
      fill(b, 12);
    }
  }
  /// A (m x k) and B (k x n) element (i, j), whatever the layout.
  /// @{
  T a_at(const lib::GpuGemm& g, int64_t i, int64_t p) const {
    return g.a_layout == lib::Layout::RowMajor ? a(i, p) : a(p, i);
  }
  T b_at(const lib::GpuGemm& g, int64_t p, int64_t j) const {
    return g.b_layout == lib::Layout::RowMajor ? b(p, j) : b(j, p);
  }
  /// @}
};

/// Which values of f32 inputs the reference multiplies: the tf32 values g's configuration makes
/// (rounded, or truncated with tf32_round off), the other tf32 values, or the f32 inputs.
enum class Tf32Reference { AsConfigured, Other, Exact };

/// Simulates g on random inputs (or small integers) and returns the largest |C - ref| / (1 + |ref|),
/// ref in double from the values the tensor core multiplies (for f32 inputs: see Tf32Reference).
template <typename T>
double simulated_error(const lib::GpuGemm& g, SimReport* report = nullptr,
                       Tf32Reference tf32 = Tf32Reference::AsConfigured, bool integers = false) {
  GemmInputs<T> in(g, integers);
  const bool c_row = g.c_layout == lib::Layout::RowMajor;
  Buffer<float> c(c_row ? std::vector<int64_t>{g.m, g.n} : std::vector<int64_t>{g.n, g.m});
  for (int64_t i = 0; i < c.num_elements(); ++i) c.at_flat(i) = std::numeric_limits<float>::quiet_NaN();
  SimReport r = simulate(g.func, {in.a, in.b, c});
  if (report) *report = r;
  const bool round = (tf32 == Tf32Reference::AsConfigured) == g.config.tf32_round;
  auto value = [&](T x) {
    return tf32 == Tf32Reference::Exact ? static_cast<double>(x) : tensor_core_value(x, round);
  };
  double worst = 0;
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < g.k; ++p) s += value(in.a_at(g, i, p)) * value(in.b_at(g, p, j));
      const double got = c_row ? c(i, j) : c(j, i);
      worst = std::max(worst, std::isfinite(got) ? std::abs(got - s) / (1 + std::abs(s)) : 1e30);
    }
  return worst;
}

/// The error of g's simulated C for its input type (random inputs, or small integers), and that
/// its ldmatrix and shared loads of A and B had no bank conflicts.
double checked_error(const lib::GpuGemm& g, bool integers = false) {
  SimReport report;
  double error = 0;
  if (g.input == f16)
    error = simulated_error<half>(g, &report, Tf32Reference::AsConfigured, integers);
  else if (g.input == bf16)
    error = simulated_error<bfloat16>(g, &report, Tf32Reference::AsConfigured, integers);
  else
    error = simulated_error<float>(g, &report, Tf32Reference::AsConfigured, integers);
  CHECK(report.races.empty());
  for (const char* buffer : {"A_shared", "B_shared"}) {
    CAPTURE(buffer);
    const SimSharedBuffer& b = report.buffer(buffer);
    CHECK(b.load.instructions > 0);
    CHECK(b.load.conflicts() == 0);
    CHECK(b.store.conflicts() == 0);  // element copies (cp.async's writes are not counted)
  }
  return error;
}

/// The elements of g's shared buffer `name`, as allocated.
int64_t shared_elements(const lib::GpuGemm& g, const std::string& name) {
  struct Finder : IRVisitor {
    std::string name;
    int64_t elements = -1;
    using IRVisitor::visit;
    void visit(const AllocateNode* op) override {
      if (op->buffer.name() == name) elements = *as_const_int(op->extents.at(0));
      IRVisitor::visit(op);
    }
  } finder;
  finder.name = name;
  finder.visit_stmt(g.func.body);
  return finder.elements;
}

/// A small tile configuration, so that the simulator runs several blocks quickly.
lib::GpuGemmConfig small_config(int stages = 3) {
  lib::GpuGemmConfig c;
  c.block_m = 64;
  c.block_n = 64;
  c.block_k = 32;
  c.warp_m = 32;
  c.warp_n = 32;
  c.stages = stages;
  return c;
}

const lib::Layout kLayouts[] = {lib::Layout::RowMajor, lib::Layout::ColMajor};

/// One warp: each lane copies 16 bytes of `src` into the shared tile with cp.async, then (maybe
/// after commit and wait) reads its own bytes back into `out`.
LoweredFunc async_copy_kernel(bool wait, bool read_neighbour) {
  Var tx("tx", i32), bx("bx", i32), src("src", handle_type), out("out", handle_type),
      tile("tile", handle_type);
  std::vector<Stmt> s;
  s.push_back(warp_intrinsic_call(ptx::cp_async_cg16,
                                  {{tile, f16, tx * 8}, {src, f16, tx * 8}, {Var(), i32, Expr(16)}}));
  s.push_back(warp_intrinsic_call(ptx::cp_async_commit, {}));
  if (wait) s.push_back(warp_intrinsic_call(ptx::cp_async_wait(0), {}));
  const Expr from = read_neighbour ? (tx + 1) % 32 * 8 : tx * 8;
  s.push_back(StoreNode::make(out, LoadNode::make(f16, tile, from), tx));
  const Stmt body = AllocateNode::make(tile, f16, {Expr(256)}, scope::shared, SeqNode::make(s));
  return flat_kernel("async_copy", bx, tx, 1, 32, body, {{src, f16, 256}, {out, f16, 32}});
}

}  // namespace

TEST_CASE("gpu_gemm: simulated C matches a double reference on shapes no tile divides") {
  // Element copies (K or N not a multiple of 8) and cp.async (both multiples of 8), f16 and bf16.
  const lib::GpuGemm odd = lib::gpu_gemm(129, 257, 65);
  CHECK(odd.a_copy_bytes == 0);
  CHECK(odd.b_copy_bytes == 0);
  CHECK(simulated_error<half>(odd) < 1e-5);
  const lib::GpuGemm skinny = lib::gpu_gemm(1000, 999, 37);
  CHECK(simulated_error<half>(skinny) < 1e-5);
  const lib::GpuGemm aligned = lib::gpu_gemm(136, 264, 96);
  CHECK(aligned.a_copy_bytes == 16);
  CHECK(aligned.b_copy_bytes == 16);
  SimReport report;
  CHECK(simulated_error<half>(aligned, &report) < 1e-5);
  CHECK(report.races.empty());
  CHECK(simulated_error<bfloat16>(lib::gpu_gemm(136, 264, 96, bf16)) < 1e-5);
  CHECK(simulated_error<half>(lib::gpu_gemm(1, 512, 1024)) < 1e-5);
  // ldmatrix from the swizzled tiles is free of bank conflicts.
  for (const char* buffer : {"A_shared", "B_shared"}) {
    CAPTURE(buffer);
    const SimSharedBuffer& b = report.buffer(buffer);
    CHECK(b.load.instructions > 0);
    CHECK(b.load.conflicts() == 0);
  }
}

TEST_CASE("gpu_gemm: ldmatrix tiles are XOR-swizzled, not padded, and free of bank conflicts") {
  // 16-byte chunk c of row r sits at chunk c ^ ((r / L) % S) of its row: rows of 8 or more chunks
  // (the default block_k of 64 halves, B's 128 columns) and of 4 (block_k 32, 64-byte rows: two
  // rows per 128-byte line) take no padding; checked_error asserts that ldmatrix and the element
  // copies see no bank conflicts. tf32 tiles read with 32-bit loads (A column-major, B row-major)
  // keep 32 bytes of padding per row.
  for (lib::Layout la : kLayouts)
    for (lib::Layout lb : kLayouts)
      for (const int64_t k : {96, 65}) {  // cp.async, element copies
        const lib::GpuGemm g = lib::gpu_gemm(136, 264, k, f16, {}, la, lb);
        CAPTURE(g.describe());
        CHECK(shared_elements(g, "A_shared") == 3 * 128 * 64);
        CHECK(shared_elements(g, "B_shared") == 3 * 64 * 128);
        CHECK(checked_error(g, true) == 0);
      }
  const lib::GpuGemm narrow = lib::gpu_gemm(70, 75, 45, f16, small_config(2));  // rows of 4 chunks
  CHECK(shared_elements(narrow, "A_shared") == 2 * 64 * 32);
  CHECK(checked_error(narrow, true) == 0);
  const lib::GpuGemm tf32 = lib::gpu_gemm(72, 80, 56, f32, small_config(), lib::Layout::ColMajor);
  CHECK(shared_elements(tf32, "A_shared") == 3 * 32 * (64 + 8));  // 32-bit loads: padded
  CHECK(shared_elements(tf32, "B_shared") == 3 * 32 * (64 + 8));
  CHECK(checked_error(tf32) < 1e-5);
}

TEST_CASE("gpu_gemm: 2 and 4 stages and smaller tiles compute the same product") {
  lib::GpuGemmConfig two;
  two.stages = 2;
  CHECK(simulated_error<half>(lib::gpu_gemm(100, 136, 200, f16, two)) < 1e-5);
  lib::GpuGemmConfig four;
  four.stages = 4;
  four.block_m = 64;
  four.block_n = 64;
  four.warp_m = 32;
  four.warp_n = 32;
  CHECK(simulated_error<half>(lib::gpu_gemm(100, 136, 200, f16, four)) < 1e-5);
}

TEST_CASE("gpu_gemm: every layout of A and B, f16, bf16 and tf32, element copies, cp.async and both") {
  // Shapes no tile divides: 70x75x45 (16-bit: element copies, but 4-byte cp.async where M = 70 is
  // contiguous; tf32: 4-byte cp.async), 72x80x56 (all multiples of 8: 16-byte cp.async), and
  // 72x75x48, where the layout decides: B row-major is contiguous in N = 75 and gets element copies
  // (tf32: 4-byte cp.async) while A keeps 16-byte copies. Random inputs within f32 rounding of the
  // sums; small integers exactly.
  struct Shape {
    int64_t m, n, k;
  };
  for (DType t : {f16, bf16, f32})
    for (lib::Layout la : kLayouts)
      for (lib::Layout lb : kLayouts)
        for (const Shape s : {Shape{70, 75, 45}, Shape{72, 80, 56}, Shape{72, 75, 48}}) {
          const lib::GpuGemm g = lib::gpu_gemm(s.m, s.n, s.k, t, small_config(s.k == 45 ? 2 : 3), la, lb);
          CAPTURE(g.describe());
          // The widest cp.async that divides the contiguous dimension's bytes: f32 always has 4.
          auto copy_bytes = [&](int64_t contiguous) {
            const int64_t bytes = contiguous * t.bytes();
            return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : 0;
          };
          CHECK(g.a_copy_bytes == copy_bytes(la == lib::Layout::RowMajor ? s.k : s.m));
          CHECK(g.b_copy_bytes == copy_bytes(lb == lib::Layout::RowMajor ? s.n : s.k));
          CHECK(checked_error(g) < 1e-5);
          if (s.k != 48) CHECK(checked_error(g, true) == 0);
        }
}

TEST_CASE("gpu_gemm: C column-major (stored n x m)") {
  // Every element lands at C[j][i]: small integers exactly, f16 and tf32, with A and B of either
  // layout, on a shape no tile divides; C's parameter is shaped n x m.
  for (DType t : {f16, f32})
    for (lib::Layout la : kLayouts) {
      const lib::GpuGemm g =
          lib::gpu_gemm(70, 75, 56, t, small_config(), la, lib::Layout::ColMajor, lib::Layout::ColMajor);
      CAPTURE(g.describe());
      CHECK(g.describe().find("C column-major (stored n x m)") != std::string::npos);
      CHECK(checked_error(g, true) == 0);
      const BufferParam& c = g.func.params.at(2).buffer;
      CHECK(*as_const_int(c.shape.at(0)) == 75);
      CHECK(*as_const_int(c.shape.at(1)) == 70);
    }
}

TEST_CASE("gpu_gemm: tf32 rounds A and B to nearest by default, truncates with tf32_round off") {
  // Each simulation matches the reference from its own tf32 values and is off by about 2^-12
  // relative from the other's and from the exact f32 product: the rounding is what makes the
  // difference (a main loop without the cvt, or with it when told not to, fails here).
  const lib::GpuGemm g = lib::gpu_gemm(40, 48, 64, f32, small_config());
  CHECK(g.describe().find("float32 (rounded to tf32)") != std::string::npos);
  CHECK(simulated_error<float>(g) < 1e-5);
  CHECK(simulated_error<float>(g, nullptr, Tf32Reference::Other) > 1e-4);
  CHECK(simulated_error<float>(g, nullptr, Tf32Reference::Exact) > 1e-4);
  lib::GpuGemmConfig truncating = small_config();
  truncating.tf32_round = false;
  const lib::GpuGemm t = lib::gpu_gemm(40, 48, 64, f32, truncating);
  CHECK(t.describe().find("float32 (truncated to tf32)") != std::string::npos);
  CHECK(t.config.str().find("/tf32_truncated") != std::string::npos);
  CHECK(simulated_error<float>(t) < 1e-5);
  CHECK(simulated_error<float>(t, nullptr, Tf32Reference::Other) > 1e-4);
  // The generated CUDA rounds with cvt.rna.tf32.f32 only when asked to.
  CHECK(cuda::codegen_cuda(g.func).source.find("cvt.rna.tf32.f32") != std::string::npos);
  CHECK(cuda::codegen_cuda(t.func).source.find("cvt.rna.tf32.f32") == std::string::npos);
  CHECK(g.config.block_k == 32);
  CHECK(lib::gpu_gemm(40, 48, 64, f32).config.block_k == 32);  // the default: 128 bytes of K
  CHECK(lib::gpu_gemm(40, 48, 64, f16).config.block_k == 64);
}

TEST_CASE("gpu_gemm: A and B parameters are shaped as stored") {
  const lib::GpuGemm g =
      lib::gpu_gemm(70, 75, 45, f16, small_config(), lib::Layout::ColMajor, lib::Layout::ColMajor);
  CHECK(g.func.name == "gpu_gemm_float16_A_col_B_col");
  Kernel f = build(g.func, Target::cuda_sim());
  Buffer<half> a({45, 70}), b({75, 45}), wrong_a({70, 45});
  Buffer<float> c({70, 75});
  fill(a, 1);
  fill(b, 2);
  CHECK_NOTHROW(f(a, b, c));
  CHECK_THROWS_WITH_AS(f(wrong_a, b, c),
                       "dimension 0 of argument 'A' is 70, but kernel 'gpu_gemm_float16_A_col_B_col' expects "
                       "45: pass a buffer of shape [45, 70]",
                       Error);
}

TEST_CASE("gpu_gemm: refusals name the field and the fix") {
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(64, 64, 64, f64),
                       "gpu_gemm: input type float64 is not supported; the tensor-core GEMM takes float16, "
                       "bfloat16 or float32 (multiplied as tf32)",
                       Error);
  lib::GpuGemmConfig c;
  c.warp_n = 24;
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(64, 64, 64, f16, c),
                       doctest::Contains("config.warp_n = 24 must be a multiple of 16"), Error);
  c = {};
  c.stages = 1;
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(64, 64, 64, f16, c), "gpu_gemm: config.stages = 1 must be 2 to 8",
                       Error);
  c = {};
  c.block_k = 24;
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(64, 64, 64, f16, c),
                       "gpu_gemm: config.block_k = 24 must be a multiple of 16 (the k of one mma.sync for "
                       "float16 inputs), or 0 for the default",
                       Error);
  c.block_k = 24;  // a multiple of tf32's k = 8: accepted
  CHECK(lib::gpu_gemm(64, 64, 64, f32, c).config.block_k == 24);
  c.block_k = 12;
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(64, 64, 64, f32, c),
                       doctest::Contains("config.block_k = 12 must be a multiple of 8 (the k of one mma.sync "
                                         "for float32 inputs)"),
                       Error);
  CHECK_THROWS_WITH_AS(lib::gpu_gemm(0, 64, 64), "gpu_gemm: the shape 0x64x64 must be positive", Error);
}

TEST_CASE("gpu_gemm: NVRTC and ptxas compile it for sm_80 and sm_90 without spills") {
  // The default configuration, and the two layouts that between them use every way of loading
  // fragments: f16 with A and B column-major (ldmatrix.trans for A, ldmatrix for B, the reverse of
  // row-major), tf32 row-major (ldmatrix of 32-bit A, shared loads of B) and tf32 column-major
  // (shared loads of A, ldmatrix of B).
  using lib::Layout;
  struct Variant {
    DType input;
    Layout a, b;
    const char* mma;
  };
  for (const Variant v :
       {Variant{f16, Layout::RowMajor, Layout::RowMajor, "m16n8k16.row.col.f32.f16.f16.f32"},
        Variant{f16, Layout::ColMajor, Layout::ColMajor, "m16n8k16.row.col.f32.f16.f16.f32"},
        Variant{f32, Layout::RowMajor, Layout::RowMajor, "m16n8k8.row.col.f32.tf32.tf32.f32"},
        Variant{f32, Layout::ColMajor, Layout::ColMajor, "m16n8k8.row.col.f32.tf32.tf32.f32"}}) {
    const lib::GpuGemm g = lib::gpu_gemm(4096, 4096, 4096, v.input, {}, v.a, v.b);
    CAPTURE(g.describe());
    const cuda::CudaModule m = cuda::codegen_cuda(g.func);
    CHECK(m.source.find("cp.async.cg.shared.global [%0], [%1], 16, %2;") != std::string::npos);
    CHECK(m.source.find("cp.async.wait_group 1;") != std::string::npos);
    // ldmatrix.trans exactly where k runs down a 16-bit tile's rows (A column-major, B
    // row-major); none for 32-bit data.
    const bool trans = v.input != f32;
    CHECK((m.source.find("ldmatrix.sync.aligned.m8n8.x4.trans") != std::string::npos) == trans);
    CHECK(m.source.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
    if (!have_nvrtc()) return;
    for (const std::string arch : {"sm_80", "sm_90"}) {
      CAPTURE(arch);
      const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, m.name, arch, true);
      CHECK(out.ptx.find(cat("mma.sync.aligned.", v.mma)) != std::string::npos);
      const auto report = runtime::cuda::run_ptxas(out.ptx, arch, m.kernels.at(0).kernel.name);
      if (!report) continue;
      MESSAGE(g.describe() << " on " << arch << ": " << report->text);
      CHECK(report->spill_stores == 0);
      CHECK(report->spill_loads == 0);
      CHECK(report->registers <= 255);
    }
  }
}

TEST_CASE("cp.async in the simulator: the data lands at wait_group, and a read before it is reported") {
  Buffer<half> src({256}), out({32});
  for (int64_t i = 0; i < 256; ++i) src.at_flat(i) = static_cast<half>(static_cast<float>(i % 50));
  simulate(async_copy_kernel(true, false), {src, out});
  for (int64_t i = 0; i < 32; ++i)
    CHECK(static_cast<float>(out.at_flat(i)) == static_cast<float>(i * 8 % 50));
  CHECK_THROWS_WITH_AS(
      simulate(async_copy_kernel(false, false), {src, out}),
      doctest::Contains("reads bytes 0 to 1 of shared buffer 'tile' while a cp.async of thread "
                        "(0, 0, 0) of block (0, 0, 0) to bytes 0 to 15 is in flight"),
      Error);
  // Another lane's copy, waited for by that lane but with no barrier between: a race.
  SimOptions options;
  options.races_are_errors = false;
  const SimReport r = simulate(async_copy_kernel(true, true), {src, out}, options);
  CHECK_FALSE(r.races.empty());
}

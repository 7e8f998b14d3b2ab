// lib::streamk_gemm on tensor cores (config.tensor_cores: gpu_gemm's main loop over each unit's
// k-steps): exact in the simulator for f16, bf16 and tf32, row- and column-major A and B, sizes no
// tile divides, and every decomposition, with plans that split tiles (partials, flags, fixup) and
// no global races; refusals name the field; NVRTC and ptxas for sm_80 and sm_90 (no spills) and,
// where cuobjdump is installed, one k-step's SASS against gpu_gemm's.
#include "cuda_test_util.hpp"
#include "mma_cases.hpp"

#include <filesystem>

#include <loom/backend/cuda/sass.hpp>
#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/lib/gpu_gemm_model.hpp>
#include <loom/lib/streamk_gemm.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

using lib::Decomposition;
using lib::Layout;

/// A tensor-core Stream-K configuration: 64x64 blocks of four 32x32 warps, 3 stages (block_k: 128
/// bytes), on `sms` simulated SMs of one block each.
lib::StreamKConfig sk_mma_config(Decomposition d, int sms, int split_k = 0) {
  lib::StreamKConfig cfg;
  cfg.tensor_cores = lib::GpuGemmConfig{64, 64, 0, 32, 32, 3};
  cfg.sms = sms;
  cfg.blocks_per_sm = 1;
  cfg.decomposition = d;
  cfg.split_k = split_k;
  return cfg;
}

/// Runs g twice in the simulator (the second launch must not see the first's flags) on small
/// integers, whose products and sums are exact in f32 in any order: C must equal the reference
/// exactly, with no global race and no read of an unwritten partial.
template <typename T>
void sk_mma_check(const lib::StreamKGemm& g) {
  CAPTURE(g.describe());
  const int64_t m = g.shape.m, n = g.shape.n, k = g.shape.k;
  const bool a_row = g.a_layout == Layout::RowMajor, b_row = g.b_layout == Layout::RowMajor;
  Buffer<T> a(a_row ? std::vector<int64_t>{m, k} : std::vector<int64_t>{k, m});
  Buffer<T> b(b_row ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k});
  fill_small_integers(a, 3);
  fill_small_integers(b, 5);
  Kernel f = build(g.func, Target::cuda_sim("sm_80"));
  for (int launch = 0; launch < 2; ++launch) {
    CAPTURE(launch);
    Buffer<float> c({m, n});
    for (int64_t i = 0; i < c.num_elements(); ++i) c.at_flat(i) = std::numeric_limits<float>::quiet_NaN();
    f(a, b, c);
    int64_t wrong = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s +=
              static_cast<double>(a_row ? a(i, p) : a(p, i)) * static_cast<double>(b_row ? b(p, j) : b(j, p));
        if (!(c(i, j) == s)) ++wrong;
      }
    CHECK(wrong == 0);
    const SimReport report = f.sim_report();
    CHECK(report.races.empty());
    CHECK(report.uninitialized_reads.empty());
  }
}

struct SkMmaCase {
  int64_t m, n, k;
  DType input;
  Layout a, b;
  Decomposition d;
  int sms, split_k;
};

/// The venv scripts/sass-tools.sh makes in the build tree this test runs from.
std::string sk_mma_sass_tools() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : (exe.parent_path().parent_path() / "sass-tools" / "venv").string();
}

/// The loop of `kernel` in `listing` with the most HMMA (null: none).
std::optional<runtime::cuda::SassLoop> sk_mma_main_loop(const std::string& listing,
                                                        const std::string& kernel) {
  std::optional<runtime::cuda::SassLoop> main;
  for (const runtime::cuda::SassLoop& l : runtime::cuda::sass_loops(listing, kernel))
    if (l.count("HMMA") > 0 && (!main || l.count("HMMA") > main->count("HMMA"))) main = l;
  return main;
}

}  // namespace

TEST_CASE(
    "streamk_gemm tensor cores: exact in the simulator for every input type, layout and decomposition") {
  const SkMmaCase cases[] = {
      // 3 x 5 tiles of 2 k-steps on 4 blocks: Stream-K splits a tile; odd K and N: element copies.
      {129, 257, 65, f16, Layout::RowMajor, Layout::RowMajor, Decomposition::StreamK, 4, 0},
      // 16-byte cp.async of A, 8-byte of B (n % 8 = 4 halves), the hybrid on 7 blocks.
      {129, 260, 200, f16, Layout::RowMajor, Layout::RowMajor, Decomposition::StreamKHybrid, 7, 0},
      {129, 257, 65, f16, Layout::ColMajor, Layout::ColMajor, Decomposition::StreamKHybrid, 7, 0},
      // 4 x 3 tiles of 5 k-steps in 3 parts.
      {200, 136, 300, bf16, Layout::RowMajor, Layout::ColMajor, Decomposition::SplitK, 4, 3},
      {200, 136, 300, f32, Layout::ColMajor, Layout::RowMajor, Decomposition::StreamK, 5, 0},
      // One row of C: 4 tiles of 16 tf32 k-steps on 3 blocks.
      {1, 256, 512, f32, Layout::RowMajor, Layout::RowMajor, Decomposition::StreamK, 3, 0},
      {1, 256, 512, bf16, Layout::ColMajor, Layout::RowMajor, Decomposition::DataParallel, 3, 0},
  };
  for (const SkMmaCase& c : cases) {
    const lib::StreamKGemm g =
        lib::streamk_gemm(c.m, c.n, c.k, c.input, sk_mma_config(c.d, c.sms, c.split_k), c.a, c.b);
    CAPTURE(g.describe());
    // The fixup path runs: every plan but the data-parallel one splits a tile here.
    CHECK((g.plan.split_tiles() > 0) == (c.d != Decomposition::DataParallel));
    CHECK(g.config.tile.bk == g.config.tensor_cores->block_k);
    if (c.input == f16)
      sk_mma_check<half>(g);
    else if (c.input == bf16)
      sk_mma_check<bfloat16>(g);
    else
      sk_mma_check<float>(g);
  }
}

TEST_CASE(
    "streamk_gemm tensor cores: a unit's k range is gpu_gemm's main loop, the partials accumulator-major") {
  lib::StreamKGemm g = lib::streamk_gemm(129, 257, 65, f16, sk_mma_config(Decomposition::StreamK, 4));
  CHECK(
      g.describe().find("tensor cores (gpu_gemm's main loop): float16, A row-major, B row-major, warp 32x32, "
                        "3 stages") != std::string::npos);
  CHECK(g.workspace_floats == 4 * 64 * 64);  // one 64x64 slot per Stream-K block
  const std::string cuda = cuda::codegen_cuda(g.func).source;
  for (const char* piece : {"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "loom_flag_signal",
                            "loom_flag_wait", "for (int kt = 0; kt < (k_end - k_begin); ++kt)"})
    CHECK_MESSAGE(cuda.find(piece) != std::string::npos, piece);
}

TEST_CASE("streamk_gemm tensor cores: refusals name the field") {
  lib::StreamKConfig simt;
  simt.sms = 4;
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, bf16, simt),
                       "streamk_gemm: input type bfloat16 is not supported by the SIMT main loop; use f32 or "
                       "f16 (accumulated in f32), or set config.tensor_cores for the tensor-core main loop "
                       "(float16, bfloat16, or float32 read as tf32)",
                       Error);
  CHECK_THROWS_WITH_AS(
      lib::streamk_gemm(64, 64, 64, f16, simt, Layout::RowMajor, Layout::ColMajor),
      "streamk_gemm: a column-major B needs the tensor-core main loop: set config.tensor_cores "
      "(the SIMT main loop reads row-major A and B only)",
      Error);
  lib::StreamKConfig bad = sk_mma_config(Decomposition::StreamK, 4);
  bad.tensor_cores->block_k = 24;
  CHECK_THROWS_WITH_AS(
      lib::streamk_gemm(64, 64, 64, f16, bad),
      "streamk_gemm: config.tensor_cores.block_k = 24 must be a multiple of 16 (the k of one "
      "mma.sync for float16 inputs), or 0 for the default",
      Error);
  bad = sk_mma_config(Decomposition::StreamK, 4);
  bad.tensor_cores->warp_m = 48;
  CHECK_THROWS_WITH_AS(
      lib::streamk_gemm(64, 64, 64, f16, bad),
      "streamk_gemm: config.tensor_cores.block_m x block_n = 64x64 must be a multiple of the "
      "warp tile 48x32",
      Error);
  // 8 stages of 64x256 and 256x64 f16 tiles: 512 KB of (dynamic) shared memory, which the grid's
  // sizing counts.
  lib::StreamKConfig huge = sk_mma_config(Decomposition::StreamK, 4);
  huge.tensor_cores = lib::GpuGemmConfig{64, 64, 256, 32, 32, 8};
  huge.blocks_per_sm = 0;
  CHECK_THROWS_WITH_AS(
      lib::streamk_gemm(64, 64, 64, f16, huge),
      doctest::Contains("streamk_gemm: one block of the kernel does not fit on an SM of sm_"), Error);
  // Without a GPU the device is "sm_90 with 4 SMs" (the config's); with one, the driver's sm_XY.
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f16, huge),
                       doctest::Contains("(0 blocks per SM (limited by shared memory"), Error);
  CHECK_THROWS_WITH_AS(
      lib::streamk_gemm(64, 64, 64, f16, huge),
      doctest::Contains("; use a smaller block or warp tile, or fewer stages, in config.tensor_cores"),
      Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, i32, sk_mma_config(Decomposition::StreamK, 4)),
                       "streamk_gemm: input type int32 is not supported; the tensor-core GEMM takes float16, "
                       "bfloat16 or float32 (multiplied as tf32)",
                       Error);
}

TEST_CASE("streamk_gemm tensor cores: ptxas for sm_80 and sm_90, no spills, and gpu_gemm's k-step in SASS") {
  if (!have_nvrtc()) {
    MESSAGE("skipping: NVRTC is not installed");
    return;
  }
  struct Variant {
    DType input;
    Layout a, b;
    std::string arch;
  };
  // gpu_gemm's default tiles (128x128x128 bytes, 64x64 warps, 3 stages) on a grid of 132 blocks;
  // 16-byte copies (every contiguous dimension a multiple of 8 elements). K is a multiple of
  // block_k: a ragged K puts the last k-step's bounded copies in the loop too (twice the LDGSTS
  // in the listing, as in gpu_gemm, though a step runs one of them).
  const Variant variants[] = {{f16, Layout::RowMajor, Layout::RowMajor, "sm_80"},
                              {f16, Layout::RowMajor, Layout::RowMajor, "sm_90"},
                              {f32, Layout::ColMajor, Layout::ColMajor, "sm_90"}};
  for (const Variant& v : variants) {
    lib::StreamKConfig cfg;
    cfg.tensor_cores = lib::GpuGemmConfig{};
    cfg.sms = 132;
    cfg.blocks_per_sm = 1;
    const lib::StreamKGemm g = lib::streamk_gemm(1000, 1104, 768, v.input, cfg, v.a, v.b);
    CAPTURE(g.describe());
    CAPTURE(v.arch);
    const cuda::CudaModule m = cuda::codegen_cuda(g.func);
    const cuda::KernelCode& kernel = m.kernels.back();
    CHECK(kernel.threads_per_block == 128);
    const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, m.name, v.arch, true);
    CHECK(out.ptx.find("st.release.gpu") != std::string::npos);
    CHECK(out.ptx.find("ld.acquire.gpu") != std::string::npos);
    if (auto report = runtime::cuda::run_ptxas(out.ptx, v.arch, kernel.kernel.name)) {
      MESSAGE(kernel.kernel.name << " (" << v.arch << "): " << report->registers << " registers");
      CHECK(report->spill_stores == 0);
      CHECK(report->spill_loads == 0);
      CHECK(report->registers * kernel.threads_per_block <= 65536);
    }
    const std::optional<std::string> listing =
        runtime::cuda::disassemble_cubin(out.cubin, sk_mma_sass_tools());
    if (!listing) {
      MESSAGE("skipping the SASS counts: cuobjdump was not found (scripts/sass-tools.sh)");
      continue;
    }
    const std::optional<runtime::cuda::SassLoop> loop = sk_mma_main_loop(*listing, kernel.kernel.name);
    REQUIRE(loop.has_value());
    // gpu_gemm's k-step for the same tiles, as the model counts it in the IR (checked against SASS
    // in gpu_gemm_sass_test.cpp): one barrier per k-step.
    const lib::GpuGemmStepCounts ir =
        lib::gpu_gemm_step_counts(lib::gpu_gemm(1000, 1104, 768, v.input, *g.config.tensor_cores, v.a, v.b));
    const double steps = static_cast<double>(loop->count("BAR"));
    REQUIRE(steps >= 1);
    MESSAGE("per k-step: HMMA " << loop->count("HMMA") / steps << " LDSM " << loop->count("LDSM") / steps
                                << " LDGSTS " << loop->count("LDGSTS") / steps << " LDS "
                                << loop->count("LDS") / steps << ", " << loop->instructions / steps
                                << " instructions");
    CHECK(loop->count("HMMA") / steps == ir.mma);
    CHECK(loop->count("LDSM") / steps == ir.ldmatrix);
    CHECK(loop->count("LDGSTS") / steps == ir.cp_async);
    CHECK(loop->count("LDS") / steps == ir.shared_loads);
  }
}

// What ptxas makes of lib::gpu_gemm's main loop: the SASS listing's loops counted by opcode (the
// parser on listings written here, both cuobjdump's and nvdisasm's way of naming branch targets),
// and, where NVRTC and cuobjdump are installed (scripts/sass-tools.sh), the HMMA, LDSM, LDGSTS,
// LDS and BAR of one k-step against the instructions the performance model counts in the lowered
// IR; ptxas's registers against the model's estimate.
#include "cuda_test_util.hpp"

#include <filesystem>

#include <loom/backend/cuda/sass.hpp>
#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_model.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

lib::GpuGemmConfig sass_config(int bm, int bn, int bk, int wm, int wn, int stages) {
  return {bm, bn, bk, wm, wn, stages};  // GpuGemmConfig is an aggregate in this order
}

}  // namespace

TEST_CASE("SASS listing: loops are backward branches, counted by opcode without filler") {
  // cuobjdump's form: targets as offsets. A forward branch, a never-run @!PT load, a NOP and the
  // self-branch after EXIT are not loops or not counted.
  const std::string cuobjdump = R"(
	code for sm_80
		Function : k0
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDGSTS.E.BYPASS.128 [R2], desc[UR4][R4.64] ;
        /*0020*/                   DEPBAR.LE SB0, 0x1 ;
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0040*/               @P0 BRA 0x70 ;
        /*0050*/                   LDGSTS.E.BYPASS.128 [R2], desc[UR4][R4.64] ;
        /*0060*/              @!PT LDS RZ, [RZ] ;
        /*0070*/                   LDSM.16.M88.4 R8, [R3] ;
        /*0080*/                   HMMA.16816.F32 R12, R8, R10, R12 ;
        /*0090*/                   HMMA.16816.F32 R16, R8, R11, R16 ;
        /*00a0*/                   NOP ;
        /*00b0*/               @P1 BRA 0x20 ;
        /*00c0*/                   EXIT ;
        /*00d0*/                   BRA 0xd0;
		Function : k1
        /*0000*/                   HMMA.16816.F32 R12, R8, R10, R12 ;
        /*0010*/                   BRA 0x0 ;
)";
  std::vector<runtime::cuda::SassLoop> loops = runtime::cuda::sass_loops(cuobjdump, "k0");
  REQUIRE(loops.size() == 1);
  CHECK(loops[0].first == 0x20);
  CHECK(loops[0].last == 0xb0);
  CHECK(loops[0].count("HMMA") == 2);
  CHECK(loops[0].count("LDSM") == 1);
  CHECK(loops[0].count("LDGSTS") == 1);
  CHECK(loops[0].count("BAR") == 1);
  CHECK(loops[0].count("BRA") == 2);
  CHECK(loops[0].count("LDS") == 0);
  CHECK(loops[0].count("NOP") == 0);
  CHECK(loops[0].instructions == 8);                        // DEPBAR BAR BRA LDGSTS LDSM HMMA HMMA BRA
  CHECK(runtime::cuda::sass_loops(cuobjdump).size() == 2);  // every function: k1's too
  // nvdisasm's form: labels.
  const std::string nvdisasm = R"(
.L_x_1:
        /*0de0*/                   ISETP.GE.U32.AND P0, PT, R2, 0x40, PT ;
        /*0df0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0e00*/               @P0 BRA `(.L_x_0) ;
        /*0e10*/                   LDGSTS.E.BYPASS.128 [R2], desc[UR4][R4.64] ;
.L_x_0:
        /*0e20*/                   HMMA.16816.F32 R48, R16.reuse, R144, R48 ;
        /*0e30*/               @P1 BRA `(.L_x_1) ;
.L_x_2:
        /*0e40*/                   BRA `(.L_x_2);
)";
  loops = runtime::cuda::sass_loops(nvdisasm);
  REQUIRE(loops.size() == 1);
  CHECK(loops[0].first == 0xde0);
  CHECK(loops[0].count("HMMA") == 1);
  CHECK(loops[0].count("LDGSTS") == 1);
  CHECK(loops[0].instructions == 6);
}

TEST_CASE("gpu_gemm SASS: one k-step holds the instructions the model counts in the IR") {
  // ptxas keeps one HMMA per mma.sync (m16n8k16 and m16n8k8 are single instructions from sm_80 on),
  // one LDSM per ldmatrix.x4, one LDGSTS per 16-byte cp.async, one LDS per 32-bit fragment load and
  // the k-step's one barrier; SASS's counts are per k-step even if ptxas unrolled the loop.
  struct Variant {
    DType input;
    lib::GpuGemmConfig config;
    lib::Layout a, b;
    std::string arch;
  };
  const std::vector<Variant> variants = {
      {f16, {}, lib::Layout::RowMajor, lib::Layout::RowMajor, "sm_80"},
      {f16, {}, lib::Layout::RowMajor, lib::Layout::RowMajor, "sm_90"},
      {f16, {}, lib::Layout::ColMajor, lib::Layout::ColMajor, "sm_80"},
      {f32, {}, lib::Layout::RowMajor, lib::Layout::RowMajor, "sm_90"},
      {f32, {}, lib::Layout::ColMajor, lib::Layout::ColMajor, "sm_80"},
      {f16, sass_config(128, 128, 32, 32, 64, 4), lib::Layout::RowMajor, lib::Layout::RowMajor, "sm_90"},
  };
  for (const Variant& v : variants) {
    const lib::GpuGemm g = lib::gpu_gemm(4096, 4096, 4096, v.input, v.config, v.a, v.b);
    CAPTURE(g.describe());
    CAPTURE(v.arch);
    const lib::GpuGemmSass sass = lib::gpu_gemm_sass(g, v.arch, sass_tools_venv());
    if (!sass.available) {
      MESSAGE("skipping gpu_gemm's SASS counts: " << sass.unavailable);
      return;
    }
    const lib::GpuGemmStepCounts ir = lib::gpu_gemm_step_counts(g);
    MESSAGE("loom-bench gpu_gemm_sass arch=" << v.arch << " " << g.describe() << ": per k-step HMMA "
                                             << sass.hmma << " LDSM " << sass.ldsm << " LDGSTS "
                                             << sass.ldgsts << " LDS " << sass.lds << " BAR " << sass.bar
                                             << ", " << sass.instructions << " instructions, "
                                             << sass.steps_per_iteration << " k-steps per loop iteration");
    CHECK(sass.hmma == ir.mma);
    CHECK(sass.ldsm == ir.ldmatrix);
    CHECK(sass.ldgsts == ir.cp_async);
    CHECK(sass.lds == ir.shared_loads);
    CHECK(sass.bar == ir.barriers);
    CHECK(sass.sts == 0);
    CHECK(sass.ldg == 0);
    // All instructions, address arithmetic and the loop's included: what the model estimates
    // when it has no SASS (3 per copy and 8 besides the counted ones), within 20%.
    const double estimate =
        lib::predict_gpu_gemm(g, lib::GpuPerfSpec::for_arch(v.arch), lib::gpu_gemm_resources(g, v.arch))
            .instructions_per_warp_step;
    MESSAGE("instructions per warp-step: SASS " << sass.instructions << ", the model's estimate "
                                                << estimate);
    CHECK(std::abs(sass.instructions - estimate) <= 0.2 * sass.instructions);
  }
}

TEST_CASE("gpu_gemm registers: ptxas against the model's estimate") {
  if (!have_nvrtc() || runtime::cuda::find_ptxas().empty()) {
    MESSAGE(
        "skipping: the model's register estimate is checked against ptxas, and NVRTC or ptxas is missing");
    return;
  }
  // The tile sweep's configurations (docs/gpu-measurements.md) on sm_90, f16, and the tf32 default.
  const std::vector<std::pair<DType, lib::GpuGemmConfig>> configs = {
      {f16, {}},
      {f32, {}},
      {f16, sass_config(128, 128, 32, 64, 64, 3)},
      {f16, sass_config(128, 256, 32, 64, 64, 3)},
      {f16, sass_config(128, 128, 32, 32, 64, 4)},
      {f16, sass_config(128, 128, 64, 64, 32, 3)},
      {f16, sass_config(64, 128, 32, 32, 64, 3)},
  };
  for (const auto& [input, config] : configs) {
    const lib::GpuGemm g = lib::gpu_gemm(4096, 4096, 4096, input, config);
    CAPTURE(g.describe());
    const lib::GpuGemmResources r = lib::gpu_gemm_resources(g, "sm_90");
    CHECK(r.registers_from == "ptxas");
    CHECK(r.spill_bytes == 0);
    const int estimate = lib::gpu_gemm_estimated_registers(g);
    MESSAGE("registers: ptxas " << r.registers << ", estimate " << estimate);
    CHECK(std::abs(estimate - r.registers) <= 0.12 * r.registers);
    // The same occupancy on an H100 from either count.
    lib::GpuGemmResources e = r;
    e.registers = estimate;
    CHECK(lib::predict_gpu_gemm(g, lib::GpuPerfSpec::h100(), e).occupancy.blocks_per_sm ==
          lib::predict_gpu_gemm(g, lib::GpuPerfSpec::h100(), r).occupancy.blocks_per_sm);
  }
}

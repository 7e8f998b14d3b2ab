// Warp intrinsics (te/warp_intrinsic.hpp, te/ptx_intrinsics.hpp): the simulator's mma.sync and
// ldmatrix against scalar references over the PTX ISA's fragment layouts, the CUDA text and its
// NVRTC/ptxas compilation, the errors of a wrong call, and an intrinsic a user registers.
#include "cuda_test_util.hpp"
#include "mma_cases.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/te/ptx_fragments.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// Simulates the mma kernel for `T` and returns C, with A and B filled with small integers.
template <typename T>
Buffer<float> run_mma(DType in, FragmentLoad load, Buffer<float>* expected = nullptr,
                      SimReport* report = nullptr) {
  const int k = in == f32 ? 8 : 16;
  Buffer<T> a({16, k}), b({k, 8});
  fill_small_integers(a, 1);
  fill_small_integers(b, 2);
  Buffer<float> c({16, 8});
  SimReport r = simulate(mma_kernel(in, load), {a, b, c});
  if (report) *report = r;
  if (expected) {
    *expected = Buffer<float>({16, 8});
    mma_reference(a, b, *expected);
  }
  return c;
}

int count_differences(const Buffer<float>& x, const Buffer<float>& y) {
  int n = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) n += x.at_flat(i) != y.at_flat(i);
  return n;
}

/// A block of `threads` threads (one warp or less) calling mma on local fragments.
LoweredFunc mma_with_threads(int threads) {
  Var tx("tx", i32), bx("bx", i32), af("a_frag", handle_type), bf("b_frag", handle_type),
      cf("c_frag", handle_type);
  Stmt s = warp_intrinsic_call(
      ptx::mma_f16, {{cf, f32, Expr(0)}, {af, f16, Expr(0)}, {bf, f16, Expr(0)}, {cf, f32, Expr(0)}});
  s = AllocateNode::make(cf, f32, {Expr(4)}, scope::local, s);
  s = AllocateNode::make(bf, f16, {Expr(4)}, scope::local, s);
  s = AllocateNode::make(af, f16, {Expr(8)}, scope::local, s);
  return flat_kernel("mma_partial", bx, tx, 1, threads, s, {});
}

/// One warp calling ldmatrix.x1 from buffer `src` of scope `src_scope` at element `index`.
LoweredFunc ldmatrix_from(const std::string& src_scope, const Expr& index) {
  Var tx("tx", i32), bx("bx", i32), dst("frag", handle_type), src("tile", handle_type);
  Stmt s = warp_intrinsic_call(ptx::ldmatrix(1, false), {{dst, f16, Expr(0)}, {src, f16, index}});
  s = AllocateNode::make(dst, f16, {Expr(2)}, scope::local, s);
  s = AllocateNode::make(src, f16, {Expr(64)}, src_scope, s);
  return flat_kernel("ldmatrix_case", bx, tx, 1, 32, s, {});
}

}  // namespace

TEST_CASE(
    "warp intrinsics: te/ptx_fragments.hpp's tables agree with the PTX ISA's, transcribed independently") {
  auto at = [](const LayoutEntry& e, int lane) {
    const int g = lane / 4, t = lane % 4;
    return ptx::FragmentCoord{e.rg * g + e.rt * t + e.r0, e.cg * g + e.ct * t + e.c0};
  };
  auto same = [](ptx::FragmentCoord x, ptx::FragmentCoord y) { return x.row == y.row && x.col == y.col; };
  for (int lane = 0; lane < 32; ++lane) {
    CAPTURE(lane);
    for (int i = 0; i < 8; ++i) CHECK(same(ptx::mma_m16n8k16_a(lane, i), at(kA16[i], lane)));
    for (int i = 0; i < 4; ++i) CHECK(same(ptx::mma_m16n8k16_b(lane, i), at(kB16[i], lane)));
    for (int i = 0; i < 4; ++i) CHECK(same(ptx::mma_m16n8_c(lane, i), at(kC[i], lane)));
    for (int i = 0; i < 4; ++i) CHECK(same(ptx::mma_m16n8k8_tf32_a(lane, i), at(kA8[i], lane)));
    for (int i = 0; i < 2; ++i) CHECK(same(ptx::mma_m16n8k8_tf32_b(lane, i), at(kB8[i], lane)));
  }
  // Each fragment covers its matrix exactly once over the 32 lanes.
  int covered[16][16] = {};
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 8; ++i) ++covered[ptx::mma_m16n8k16_a(lane, i).row][ptx::mma_m16n8k16_a(lane, i).col];
  for (auto& row : covered)
    for (int n : row) CHECK(n == 1);
}

TEST_CASE("warp intrinsics: mma.sync in the simulator computes 2 A B for f16, bf16 and tf32 fragments") {
  Buffer<float> expected;
  CHECK(count_differences(run_mma<half>(f16, FragmentLoad::Scalar, &expected), expected) == 0);
  CHECK(count_differences(run_mma<bfloat16>(bf16, FragmentLoad::Scalar, &expected), expected) == 0);
  CHECK(count_differences(run_mma<float>(f32, FragmentLoad::Scalar, &expected), expected) == 0);
}

TEST_CASE("warp intrinsics: fragments loaded with a wrong layout give a wrong product") {
  Buffer<float> expected;
  const Buffer<float> got = run_mma<half>(f16, FragmentLoad::WrongLayout, &expected);
  CHECK(count_differences(got, expected) > 0);
}

TEST_CASE("warp intrinsics: tf32 operands keep 10 mantissa bits, as the tensor core reads them") {
  // 1 + 2^-12 is not a tf32 value: the tensor core drops its low bit, so A B = B exactly.
  Buffer<float> a({16, 8}), b({8, 8}), c({16, 8});
  for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = (i / 8 == i % 8) ? 1.0f + 1.0f / 4096 : 0.0f;
  fill_small_integers(b, 3);
  simulate(mma_kernel(f32, FragmentLoad::Scalar), {a, b, c});
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) CHECK(c(i, j) == 2 * b(i, j));
}

TEST_CASE("warp intrinsics: ldmatrix.x4 and ldmatrix.x2.trans feed mma from shared memory") {
  Buffer<float> expected;
  SimReport report;
  CHECK(count_differences(run_mma<half>(f16, FragmentLoad::Ldmatrix, &expected, &report), expected) == 0);
  Buffer<float> bf_expected;
  CHECK(count_differences(run_mma<bfloat16>(bf16, FragmentLoad::Ldmatrix, &bf_expected), bf_expected) == 0);
  // 32-bit data (tf32 fragments): untransposed ldmatrix moves each element whole.
  Buffer<float> tf32_expected;
  CHECK(count_differences(run_mma<float>(f32, FragmentLoad::Ldmatrix, &tf32_expected), tf32_expected) == 0);
  CHECK(report.races.empty());
  CHECK(report.uninitialized_reads.empty());
  // The bank model sees each ldmatrix phase as 8 lanes reading 16 bytes. A's rows are 32 bytes
  // apart, so rows r and r + 4 of each 8x8 matrix share banks: 2 wavefronts per phase (8 for the
  // x4, ideal 4). B's rows are 16 bytes apart: conflict-free (2 wavefronts, ideal 2).
  const SimSharedBuffer& a = report.buffer("A_shared");
  CHECK(a.load.instructions == 1);
  CHECK(a.load.ideal_wavefronts == 4);
  CHECK(a.load.wavefronts == 8);
  const SimSharedBuffer& b = report.buffer("B_shared");
  CHECK(b.load.instructions == 1);
  CHECK(b.load.wavefronts == b.load.ideal_wavefronts);
}

TEST_CASE("warp intrinsics: CUDA text, and NVRTC and ptxas compile it for sm_80 and sm_90 without spills") {
  const cuda::CudaModule m = cuda::codegen_cuda(mma_kernel(f16, FragmentLoad::Ldmatrix));
  CHECK(m.source.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}") !=
        std::string::npos);
  CHECK(m.source.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4]") !=
        std::string::npos);
  CHECK(m.source.find("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") != std::string::npos);
  CHECK(m.source.find("__align__(8) __half b_frag[4];") != std::string::npos);
  if (!have_nvrtc()) return;
  for (DType in : {f16, bf16, f32}) {
    for (const std::string arch : {"sm_80", "sm_90"}) {
      CAPTURE(in.str());
      CAPTURE(arch);
      const cuda::CudaModule mod =
          cuda::codegen_cuda(mma_kernel(in, in == f32 ? FragmentLoad::Scalar : FragmentLoad::Ldmatrix));
      const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(mod.source, mod.name, arch, true);
      CHECK(out.ptx.find(in == f32 ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
                                   : "mma.sync.aligned.m16n8k16.row.col.f32") != std::string::npos);
      const auto report = runtime::cuda::run_ptxas(out.ptx, arch, mod.kernels.at(0).kernel.name);
      if (!report) continue;
      MESSAGE(mod.name << " " << arch << ": " << report->text);
      CHECK(report->spill_stores == 0);
      CHECK(report->spill_loads == 0);
      CHECK(report->text.find(" 0 bytes stack frame") != std::string::npos);  // fragments in registers
    }
  }
}

TEST_CASE("warp intrinsics: a wrong call is refused with a message that says what to change") {
  Var buf("frag", handle_type);
  CHECK_THROWS_WITH_AS(warp_intrinsic_call("ptx.mma.m16n8k32", {}),
                       doctest::Contains("warp intrinsic 'ptx.mma.m16n8k32' is not known; the built-ins are "
                                         "ptx.mma.m16n8k16.row.col.f32.f16.f16.f32"),
                       Error);
  CHECK_THROWS_WITH_AS(warp_intrinsic_call(ptx::mma_f16, {{buf, f32, Expr(0)}}),
                       "warp intrinsic 'ptx.mma.m16n8k16.row.col.f32.f16.f16.f32' takes 4 operands, not 1",
                       Error);
  CHECK_THROWS_WITH_AS(
      warp_intrinsic_call(
          ptx::mma_f16, {{buf, f32, Expr(0)}, {buf, f32, Expr(0)}, {buf, f16, Expr(0)}, {buf, f32, Expr(0)}}),
      "warp intrinsic 'ptx.mma.m16n8k16.row.col.f32.f16.f16.f32': operand a is an element of 'frag' as "
      "float32, "
      "but it must be float16",
      Error);
  CHECK_THROWS_WITH_AS(
      simulate(mma_with_threads(16), {}),
      doctest::Contains("warp intrinsic ptx.mma.m16n8k16.row.col.f32.f16.f16.f32 is executed by "
                        "lanes 0-15 of warp 0 (threads 0-15) of block (0, 0, 0); all 32 lanes "
                        "of a warp execute it together"),
      Error);
  // .trans on 32-bit data would mix the halves of different elements.
  CHECK_THROWS_WITH_AS(
      warp_intrinsic_call(ptx::ldmatrix(4, true), {{buf, f32, Expr(0)}, {buf, f32, Expr(0)}}),
      "warp intrinsic 'ptx.ldmatrix.x4.trans': operand dst is an element of 'frag' as float32, "
      "but it must be float16 or bfloat16 or int16 or uint16",
      Error);
  CHECK_THROWS_WITH_AS(
      simulate(ldmatrix_from(scope::local, Expr(0)), {}),
      doctest::Contains("operand src of warp intrinsic ptx.ldmatrix.x1 is buffer 'tile', in local "
                        "memory; the instruction's src is in shared memory"),
      Error);
  CHECK_THROWS_WITH_AS(simulate(ldmatrix_from(scope::shared, Expr(4)), {}),
                       doctest::Contains("is at byte 8 of buffer 'tile', not a multiple of 16 bytes"), Error);
  CHECK_THROWS_WITH_AS(
      build(mma_kernel(f16, FragmentLoad::Ldmatrix), Target::cuda_sim("sm_75")),
      "build 'mma_float16_ldmatrix' for cuda_sim -arch=sm_75: kernel mma_float16_ldmatrix_kernel0 "
      "uses warp intrinsic ptx.mma.m16n8k16.row.col.f32.f16.f16.f32, which needs sm_80 or newer; "
      "build for a newer architecture (Target::cuda(\"sm_80\")) or leave the instruction out",
      Error);
  CHECK_THROWS_WITH_AS(
      WarpIntrinsicRegistry::global().add(WarpIntrinsic{"ptx.mine", {}, 0, {}, {}, 1}),
      doctest::Contains("names beginning with \"ptx.\" belong to Loom's built-in instructions"), Error);
}

TEST_CASE("warp intrinsics: ldmatrix of shared memory no thread wrote is reported as an uninitialized read") {
  SimOptions options;
  options.races_are_errors = false;
  const SimReport r = simulate(ldmatrix_from(scope::shared, Expr(0)), {}, options);
  CHECK_FALSE(r.uninitialized_reads.empty());
}

TEST_CASE("warp intrinsics: a user registers one (lane reversal) and both backends run it") {
  static const bool registered = [] {
    WarpIntrinsic w;
    w.name = "test.reverse_lanes";
    w.operands = {{"dst", WarpOperandSpace::Local, false, true, 4, 4, {f32}},
                  {"src", WarpOperandSpace::Local, true, false, 4, 4, {f32}}};
    w.cuda = [](const std::vector<std::string>& p) {
      return cat("*", p[0], " = __shfl_xor_sync(0xffffffffu, *", p[1], ", 31);");
    };
    w.simulate = [](const WarpLanes& lanes) {
      float v[32];
      for (int l = 0; l < 32; ++l) v[l] = lanes.read<float>(l, 1, 0);
      for (int l = 0; l < 32; ++l) lanes.write<float>(l, 0, 0, v[l ^ 31]);
    };
    WarpIntrinsicRegistry::global().add(w);
    return true;
  }();
  CHECK(registered);
  Var tx("tx", i32), bx("bx", i32), out("out", handle_type), x("x", handle_type), y("y", handle_type);
  Stmt s = SeqNode::make({StoreNode::make(x, cast(f32, tx * 10), Expr(0)),
                          warp_intrinsic_call("test.reverse_lanes", {{y, f32, Expr(0)}, {x, f32, Expr(0)}}),
                          StoreNode::make(out, LoadNode::make(f32, y, Expr(0)), bx * 64 + tx)});
  s = AllocateNode::make(y, f32, {Expr(1)}, scope::local,
                         AllocateNode::make(x, f32, {Expr(1)}, scope::local, s));
  const LoweredFunc f = flat_kernel("reverse", bx, tx, 2, 64, s, {{out, f32, 128}});
  Buffer<float> o({128});
  simulate(f, {o});
  for (int i = 0; i < 128; ++i) CHECK(o.at_flat(i) == static_cast<float>(((i % 64) ^ 31) * 10));
  const std::string src = cuda::codegen_cuda(f).source;
  CHECK(src.find("= __shfl_xor_sync(0xffffffffu, *(&x[0]), 31);") != std::string::npos);
}

TEST_CASE("warp intrinsics: cvt.rna.tf32.f32 rounds to nearest, ties away from zero, as compiled") {
  const LoweredFunc f = tf32_round_kernel();
  const std::vector<Tf32RoundCase>& cases = tf32_round_cases();
  Buffer<float> a({128}), b({128});
  for (int64_t i = 0; i < 128; ++i) a.at_flat(i) = bits_float(cases[i % cases.size()].in);
  simulate(f, {a, b});
  for (int64_t i = 0; i < 128; ++i) {
    CAPTURE(i);
    CHECK(float_bits(b.at_flat(i)) == cases[i % cases.size()].out);
  }
  const std::string src = cuda::codegen_cuda(f).source;
  CHECK(src.find("asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(loom_t[3]) : \"f\"(loom_s[3]));") !=
        std::string::npos);
}

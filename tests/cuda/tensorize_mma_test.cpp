// tensorize onto tensor cores (te/ptx_tensor_intrins.hpp, lib/gpu_tensorized_gemm.hpp): a TE GEMM
// whose warp tiles live in "local.fragment" buffers, filled by ldmatrix, multiplied by mma.sync and
// stored by the C fragment's layout, simulated exactly for f16, bf16 and tf32, both B layouts, several
// block and warp tiles and cp.async pipelines; a wrong fragment mapping fails; the CUDA compiles
// with its fragments in registers; and each misuse is refused with a message that says what to do.
#include "cuda_test_util.hpp"
#include "mma_cases.hpp"

#include <loom/backend/cuda/sass.hpp>
#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/lib/gpu_tensorized_gemm.hpp>
#include <loom/sim/interpreter.hpp>
#include <loom/te/extern_op.hpp>

using namespace loom;
using namespace loom::cuda_test;
using ptx_tensor::BLayout;

namespace {

struct TcCase {
  int m = 64, n = 64, k = 64;
  DType in = f16;
  lib::Layout a = lib::Layout::RowMajor, b = lib::Layout::RowMajor;  // A m x k, B k x n
  lib::TensorizedGemmConfig config;
};

/// Simulates the case on small integers (exact in f32 in any order) and returns how many elements
/// of C differ from the double reference; `report` gets the simulator's report.
template <typename T>
int64_t tc_simulated_mismatches(const TcCase& c, SimReport* report) {
  const lib::TensorizedGemm g = lib::gpu_tensorized_gemm(c.m, c.n, c.k, c.in, c.config, c.a, c.b);
  const LoweredFunc f = lower(g.schedule, {g.A, g.B, g.C}, "tc_gemm");
  const bool mk = c.a == lib::Layout::RowMajor, kn = c.b == lib::Layout::RowMajor;
  Buffer<T> a(mk ? std::vector<int64_t>{c.m, c.k} : std::vector<int64_t>{c.k, c.m});
  Buffer<T> b(kn ? std::vector<int64_t>{c.k, c.n} : std::vector<int64_t>{c.n, c.k});
  fill_small_integers(a, 3);
  fill_small_integers(b, 4);
  Buffer<float> out({c.m, c.n});
  SimReport r = simulate(f, {a, b, out});
  if (report) *report = r;
  int64_t wrong = 0;
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double ref = 0;
      for (int p = 0; p < c.k; ++p)
        ref += static_cast<double>(mk ? a(i, p) : a(p, i)) * static_cast<double>(kn ? b(p, j) : b(j, p));
      wrong += out(i, j) != ref;
    }
  return wrong;
}

int64_t tc_mismatches(const TcCase& c, SimReport* report = nullptr) {
  if (c.in == f32) return tc_simulated_mismatches<float>(c, report);
  return c.in == f16 ? tc_simulated_mismatches<half>(c, report)
                     : tc_simulated_mismatches<bfloat16>(c, report);
}

TcCase small_tiles() {
  TcCase c;
  c.config.block_m = c.config.block_n = 64;
  c.config.warp_m = c.config.warp_n = 32;
  c.config.block_k = 16;
  c.config.stages = 0;
  return c;
}

}  // namespace

TEST_CASE("tensorize mma: a TE GEMM on tensor cores is exact in the simulator") {
  std::vector<std::pair<TcCase, std::string>> cases;
  cases.emplace_back(small_tiles(), "64^3 f16, B[k, n], one block of 2 x 2 warps, synchronous copies");
  TcCase nk = small_tiles();
  nk.b = lib::Layout::ColMajor, nk.in = bf16, nk.m = 128, nk.k = 48;
  cases.emplace_back(nk, "bf16, B[n, k], two blocks, three K steps");
  TcCase wide = small_tiles();
  wide.n = 128, wide.k = 96, wide.config.block_n = 128, wide.config.warp_n = 64, wide.config.block_k = 32;
  cases.emplace_back(wide, "warp tile 32 x 64, K steps of 32 (two mma slices each)");
  TcCase piped = wide;
  piped.config.stages = 3, piped.b = lib::Layout::ColMajor;
  cases.emplace_back(piped, "3-stage cp.async pipeline, B[n, k]");
  TcCase narrow = small_tiles();  // warp_n 24: B loaded one 16 x 8 tile at a time (ldmatrix.x2)
  narrow.n = 96, narrow.config.block_n = 48, narrow.config.warp_n = 24;
  cases.emplace_back(narrow, "warp tile 32 x 24, B[k, n] 8 wide");
  TcCase narrow_nk = narrow;
  narrow_nk.b = lib::Layout::ColMajor, narrow_nk.config.stages = 2;
  cases.emplace_back(narrow_nk, "warp tile 32 x 24, B[n, k] 8 wide, 2 stages");
  TcCase tf32 = small_tiles();  // f32 as tf32: k slices of 8; B[k, n] by 32-bit loads
  tf32.in = f32, tf32.n = 128, tf32.config.block_n = 128, tf32.config.warp_n = 64;
  cases.emplace_back(tf32, "tf32, B[k, n] (32-bit shared loads), 16-wide B tiles");
  TcCase tf32_nk = wide;
  tf32_nk.in = f32, tf32_nk.b = lib::Layout::ColMajor, tf32_nk.config.stages = 3;
  cases.emplace_back(tf32_nk, "tf32, B[n, k] (ldmatrix of 32-bit data), 3 stages");
  TcCase tf32_narrow = narrow;
  tf32_narrow.in = f32;
  cases.emplace_back(tf32_narrow, "tf32, B[k, n] 8 wide");
  TcCase a_col = small_tiles();  // A stored k x m: ldmatrix.x4.trans
  a_col.a = lib::Layout::ColMajor, a_col.config.stages = 2;
  cases.emplace_back(a_col, "A column-major (ldmatrix.trans), f16");
  TcCase both_col = wide;
  both_col.a = both_col.b = lib::Layout::ColMajor, both_col.in = bf16, both_col.config.stages = 3;
  cases.emplace_back(both_col, "A and B column-major, bf16, 3 stages");
  TcCase tf32_a_col = small_tiles();  // tf32 A stored k x m: 32-bit loads
  tf32_a_col.in = f32, tf32_a_col.a = lib::Layout::ColMajor;
  cases.emplace_back(tf32_a_col, "tf32, A column-major (32-bit loads), B row-major (32-bit loads)");
  TcCase tf32_a_col_nk = tf32_a_col;
  tf32_a_col_nk.b = lib::Layout::ColMajor, tf32_a_col_nk.config.stages = 3;
  cases.emplace_back(tf32_a_col_nk, "tf32, A and B column-major");
  TcCase one_warp = small_tiles();  // B tiles of 8 columns: rows of 16 bytes, left unpadded
  one_warp.m = 32, one_warp.n = 24, one_warp.k = 32;
  one_warp.config.block_m = one_warp.config.warp_m = 16, one_warp.config.block_n = one_warp.config.warp_n = 8;
  cases.emplace_back(one_warp, "one 16 x 8 warp tile per block, 8-column B rows unpadded");
  TcCase standard;  // the default configuration: 128 x 128 x 32 blocks of four 64 x 64 warps
  standard.m = 128, standard.n = 256, standard.k = 64, standard.in = bf16;
  cases.emplace_back(standard, "the default tiles, bf16");
  for (const auto& [c, what] : cases) {
    CAPTURE(what);
    SimReport r;
    CHECK(tc_mismatches(c, &r) == 0);
    CHECK(r.races.empty());
    for (const SimSharedBuffer& b : r.shared_buffers) {
      CAPTURE(b.name);
      CHECK(b.load.conflicts() == 0);  // ldmatrix rows 16 bytes of padding apart
    }
  }
}

TEST_CASE("tensorize mma: a fragment mapping that differs from the mma's fails") {
  // The same mma with its C tiles numbered column-first: the tile an mma accumulates is not the
  // tile store_c writes, so C comes out permuted.
  Tensor a = placeholder({16, 16}, f16, "a"), b = placeholder({16, 8}, f16, "b");
  IterVar k = reduce_axis(0, 16, "k");
  Tensor product = compute(
      {16, 8}, [&](Expr i, Expr j) { return sum(cast(f32, a(i, k)) * cast(f32, b(k, j)), {k}); }, "c");
  auto column_first = [](const BufferRegion& r) {  // a 32 x 32 fragment: 2 x 4 tiles of 16 x 8
    Expr row = r.strides[0], r0 = floordiv(r.elem_offset, row), c0 = floormod(r.elem_offset, row);
    return (floordiv(c0, 8) * 2 + floordiv(r0, 16)) * 4;
  };
  auto init = [&](const std::vector<BufferRegion>&, const std::vector<BufferRegion>& out) {
    std::vector<Stmt> s;
    for (int e = 0; e < 4; ++e)
      s.push_back(StoreNode::make(out[0].data, make_const(f32, 0.0), column_first(out[0]) + e));
    return SeqNode::make(s);
  };
  auto update = [&](const std::vector<BufferRegion>& in, const std::vector<BufferRegion>& out) {
    Expr c = column_first(out[0]);
    Expr ao = ptx_tensor::detail::fragment_offset(in[0], 16, 16, "column_first", "A");
    Expr bo = ptx_tensor::detail::fragment_offset(in[1], 16, 8, "column_first", "B");
    return warp_intrinsic_call(
        ptx::mma_f16,
        {{out[0].data, f32, c}, {in[0].data, f16, ao}, {in[1].data, f16, bo}, {out[0].data, f32, c}});
  };
  TcCase c = small_tiles();
  CHECK(tc_mismatches(c) == 0);
  c.config.mma = decl_tensor_intrin(
      product,
      [&](const auto& in, const auto& out) {
        return SeqNode::make({init(in, out), update(in, out)});
      },
      "column_first", init, update);
  CHECK(tc_mismatches(c) > 0);
}

TEST_CASE("tensorize mma: the CUDA keeps every fragment in registers") {
  // The default tiles (128 x 128 x 32, four 64 x 64 warps, 3 stages) at 256 x 256 x 128.
  const lib::TensorizedGemm g = lib::gpu_tensorized_gemm(256, 256, 128);
  const cuda::CudaModule m = cuda::codegen_cuda(lower(g.schedule, {g.A, g.B, g.C}, "tc_gemm"));
  CHECK(m.source.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
  CHECK(m.source.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);  // B
  CHECK(m.source.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
  CHECK(m.source.find("cp.async.cg.shared.global") != std::string::npos);
  if (!have_nvrtc()) return;
  const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, m.name, "sm_80", true);
  const auto report = runtime::cuda::run_ptxas(out.ptx, "sm_80", m.kernels.at(0).kernel.name);
  if (!report) return;
  MESSAGE("gpu_tensorized_gemm 256x256x128 (defaults) on sm_80: " << report->text);
  CHECK(report->spill_stores == 0);
  CHECK(report->spill_loads == 0);
  // Fragments indexed by constants (their loops unrolled) stay in registers.
  CHECK(report->text.find(" 0 bytes stack frame") != std::string::npos);
}

TEST_CASE("tensorize mma: the SASS of one K step, where cuobjdump is installed") {
  // ptxas keeps one HMMA per mma.sync, one LDSM per ldmatrix and one LDGSTS per 16-byte cp.async;
  // per K step of the default tiles (four 64 x 64 warps): 2 k slices x 32 mma, A in 4 x4 loads and B
  // in 4 x4.trans loads per slice, and 4 + 4 copies per thread. tf32 (K steps of 16, k slices of 8):
  // the same 64 mma, A by x4, B[n, k] by x4 of 32-bit rows.
  if (!have_nvrtc()) return;
  const std::string tools = sass_tools_venv();
  if (runtime::cuda::find_cuobjdump(tools).empty()) {
    MESSAGE("skipped: no cuobjdump (scripts/sass-tools.sh installs it)");
    return;
  }
  struct Variant {
    DType in;
    lib::Layout b;
    int64_t hmma, ldsm, ldgsts;
  };
  for (const Variant v :
       {Variant{f16, lib::Layout::RowMajor, 64, 16, 8}, Variant{f32, lib::Layout::ColMajor, 64, 16, 8}})
    for (const std::string arch : {"sm_80", "sm_90"}) {
      CAPTURE(arch);
      CAPTURE(v.in.str());
      const lib::TensorizedGemm g =
          lib::gpu_tensorized_gemm(4096, 4096, 4096, v.in, {}, lib::Layout::RowMajor, v.b);
      const cuda::CudaModule m = cuda::codegen_cuda(lower(g.schedule, {g.A, g.B, g.C}, "tc_gemm"));
      const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, m.name, arch, true);
      const std::optional<std::string> sass = runtime::cuda::disassemble_cubin(out.cubin, tools);
      REQUIRE(sass.has_value());
      const runtime::cuda::SassLoop* main = nullptr;
      const std::vector<runtime::cuda::SassLoop> loops = runtime::cuda::sass_loops(*sass);
      for (const runtime::cuda::SassLoop& l : loops)
        if (l.count("HMMA") > 0) main = &l;
      REQUIRE(main != nullptr);
      const int64_t steps = std::max<int64_t>(1, main->count("BAR"));  // one barrier per K step
      MESSAGE(arch << " " << v.in.str() << ": " << main->instructions / steps << " instructions per K step");
      CHECK(main->count("HMMA") == v.hmma * steps);
      CHECK(main->count("LDSM") == v.ldsm * steps);
      CHECK(main->count("LDGSTS") == v.ldgsts * steps);
    }
}

TEST_CASE("tensorize mma: a 16-wide B[n, k] load into a fragment deeper than 16 is refused") {
  // One warp, C 16 x 16 = A 16 x 32 B^T with the fragments at the root: B's fragment holds all 32 of
  // k, so the two 8 x 16 tiles of one ldmatrix.x4 would not be adjacent in its registers.
  Tensor A = placeholder({16, 32}, f16, "A"), B = placeholder({16, 32}, f16, "B");
  IterVar k = reduce_axis(0, 32, "k");
  Tensor C = compute(
      {16, 16}, [&](Expr i, Expr j) { return sum(cast(f32, A(i, k)) * cast(f32, B(j, k)), {k}); }, "C");
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, scope::shared, {C}), BS = s.cache_read(B, scope::shared, {C});
  Tensor AF = s.cache_read(AS, scope::fragment, {C}), BF = s.cache_read(BS, scope::fragment, {C});
  Tensor CF = s.cache_write(C, scope::fragment);
  auto [ko, ki] = s[CF].split(CF.reduce_axis(0), 16);
  auto [jo, ji] = s[CF].split(CF.axis(1), 8);
  s[CF].reorder({ko, jo, CF.axis(0), ji, ki});
  s[CF].tensorize(CF.axis(0), ptx_tensor::mma(f16, BLayout::NK));
  auto [ako, aki] = s[AF].split(AF.axis(1), 16);
  s[AF].reorder({ako, AF.axis(0), aki});
  s[AF].tensorize(AF.axis(0), ptx_tensor::load_a(f16));
  auto [bko, bki] = s[BF].split(BF.axis(1), 16);
  s[BF].reorder({bko, BF.axis(0), bki});
  s[BF].tensorize(BF.axis(0), ptx_tensor::load_b(f16, BLayout::NK, 16));
  auto [co, ci] = s[C].split(C.axis(1), 8);
  s[C].reorder({co, C.axis(0), ci});
  s[C].tensorize(C.axis(0), ptx_tensor::store_c());
  IterVar f = s[AS].fuse(AS.axis(0), AS.axis(1));  // the warp's 32 lanes copy A
  auto [fo, lane] = s[AS].split(f, 32);
  s[AS].bind(lane, thread_axis(thread_tag::threadIdx_x));
  CHECK_THROWS_WITH_AS(
      lower(s, {A, B, C}, "deep_b"),
      doctest::Contains("tensor intrinsic 'ptx_tensor.load_b.nk.w16.float16': fragment "
                        "'B.shared.local.fragment' (the B fragment, B[n, k]) has rows of more than "
                        "16 elements of k, so the two 8 x 16 tiles one ldmatrix.x4 loads are not "
                        "adjacent in its registers"),
      Error);
  CHECK_THROWS_WITH_AS(
      ptx_tensor::load_b(f16, BLayout::KN, 12),
      doctest::Contains("ptx_tensor::load_b: width = 12 must be 8 (one 16 x 8 tile of the mma, "
                        "ldmatrix.x2) or 16 (two, ldmatrix.x4)"),
      Error);
}

TEST_CASE("gpu_tensorized_gemm: tiles that do not divide are refused with what to do") {
  CHECK_THROWS_WITH_AS(
      lib::gpu_tensorized_gemm(100, 128, 64),
      doctest::Contains("gpu_tensorized_gemm: block_m = 128 must be a positive multiple of warp_m (64) that "
                        "divides m = 100 (tensorize replaces whole tiles, so nothing may be left over; pad "
                        "the problem, or use lib::gpu_gemm, which takes any shape)"),
      Error);
  lib::TensorizedGemmConfig c;
  c.warp_n = 12;
  CHECK_THROWS_WITH_AS(
      lib::gpu_tensorized_gemm(128, 128, 64, f16, c),
      doctest::Contains("warp_n = 12 must be a positive multiple of 8 that divides block_n = 128"), Error);
  CHECK_THROWS_WITH_AS(
      lib::gpu_tensorized_gemm(128, 128, 64, i8),
      doctest::Contains("gpu_tensorized_gemm: inputs of type int8 are not supported; the tensor "
                        "cores take f16, bf16 or f32 (as tf32)"),
      Error);
  c = {};
  c.block_k = 12;
  CHECK_THROWS_WITH_AS(lib::gpu_tensorized_gemm(128, 128, 48, f32, c),
                       doctest::Contains("block_k = 12 must be a positive multiple of 8 that divides k = 48"),
                       Error);
}

TEST_CASE("tensorize mma: ldmatrix rows that are not 16 bytes apart are refused at lowering") {
  const lib::TensorizedGemm g = lib::gpu_tensorized_gemm(128, 128, 64);
  Schedule s = g.schedule;
  // On top of the library's padding (rows of 40 halves): rows of 68 halves, 136 bytes.
  s[g.A_shared].storage_align(g.A_shared.axis(0), 32, 4);
  CHECK_THROWS_WITH_AS(
      lower(s, {g.A, g.B, g.C}, "misaligned"),
      doctest::Contains("tensor intrinsic 'ptx_tensor.load_a.mk.float16': the rows of 'A.shared' (the "
                        "A tile) are 136 bytes apart, but ldmatrix reads 16-byte rows at 16-byte "
                        "aligned addresses; make the row stride a multiple of 16 bytes"),
      Error);
  const lib::TensorizedGemm h = lib::gpu_tensorized_gemm(128, 128, 64);
  Schedule padded = h.schedule;  // C's fragment rows padded to 68: not whole 16 x 8 tiles
  padded[h.C_fragment].storage_align(h.C_fragment.axis(0), 64, 4);
  CHECK_THROWS_WITH_AS(
      lower(padded, {h.A, h.B, h.C}, "padded_fragment"),
      doctest::Contains("fragment 'C.local.fragment' (the C fragment) has rows of 68 elements, "
                        "which is not a whole number of 8-element tiles; compute it for a region "
                        "whose width is a multiple of 8"),
      Error);
  CHECK_THROWS_WITH_AS(
      ptx_tensor::mma(i8, BLayout::KN),
      doctest::Contains("ptx_tensor::mma: inputs of type int8 are not supported; the tensor-core "
                        "intrinsics take f16 or bf16 (mma m16n8k16) or f32 (read as tf32, mma "
                        "m16n8k8)"),
      Error);
}

TEST_CASE(
    "loom.lane_id: the lane in the simulator, %laneid in CUDA, [0, 31] to the analyzer, not on a host") {
  Var tx("tx", i32), bx("bx", i32), out("out", handle_type);
  // Blocks of 48 threads: the second warp is partial, lanes 0-15.
  Stmt store = StoreNode::make(out, ptx_tensor::lane(), bx * 48 + tx);
  const LoweredFunc f = flat_kernel("lanes", bx, tx, 2, 48, store, {{out, i32, 96}});
  Buffer<int32_t> lanes({96});
  simulate(f, {lanes});
  for (int i = 0; i < 96; ++i) CHECK(lanes(i) == i % 48 % 32);
  CHECK(cuda::codegen_cuda(f).source.find("asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));") !=
        std::string::npos);
  Analyzer analyzer;
  const ConstIntBound b = analyzer.const_int_bound(ptx_tensor::lane());
  CHECK(b.min_value == 0);
  CHECK(b.max_value == 31);
  LoweredFunc host;
  host.name = "host_lane";
  host.params = f.params;
  host.body = StoreNode::make(out, ptx_tensor::lane(), Expr(0));
  CHECK_THROWS_WITH_AS(
      interpret(host, {lanes}),
      doctest::Contains("the interpreter cannot run loom.lane_id() in 'host_lane': it is the lane of "
                        "a GPU thread in its warp"),
      Error);
}

TEST_CASE("tensorize mma: an extern stage cannot take a fragment") {
  Tensor A = placeholder({32}, f32, "A");
  Tensor P = extern_compute(
      {32}, f32, {A}, [](const std::vector<BufferView>&, const std::vector<BufferView>&) {}, "fill");
  Tensor C = compute(
      {32}, [&](Expr i) { return P(i); }, "C");
  Tensor D = compute(
      {32}, [&](Expr i) { return A(i); }, "D");  // a warp's lanes on threadIdx.x
  Schedule s = create_schedule({C, D});
  s[P].set_scope(scope::fragment);
  s[D].bind(D.axis(0), thread_axis(thread_tag::threadIdx_x));
  CHECK_THROWS_WITH_AS(
      lower(s, {A, C, D}, "extern_fragment"),
      doctest::Contains("extern stage: buffer 'fill' is in scope local.fragment (a warp's tile "
                        "spread over its lanes' registers), which no C function can read"),
      Error);
}

TEST_CASE("gpu_tensorized_gemm: stages outside 0 and 2 to 8 are refused") {
  lib::TensorizedGemmConfig c;
  c.stages = 1;
  CHECK_THROWS_WITH_AS(
      lib::gpu_tensorized_gemm(128, 128, 64, f16, c),
      doctest::Contains("gpu_tensorized_gemm: stages = 1 must be 0 (synchronous copies) or 2 to 8"), Error);
}

TEST_CASE("tensorize mma: store_c converts the f32 accumulators to an f16 C") {
  // C (16 x 16, f16) = f16(A (16 x 32) B (32 x 16)) in two blocks of one warp, each 16 x 8 of C: the
  // f32 sums in a fragment stage of their own that store_c(f16) reads.
  Tensor A = placeholder({16, 32}, f16, "A"), B = placeholder({32, 16}, f16, "B");
  IterVar k = reduce_axis(0, 32, "k");
  Tensor acc = compute(
      {16, 16}, [&](Expr i, Expr j) { return sum(cast(f32, A(i, k)) * cast(f32, B(k, j)), {k}); }, "acc");
  Tensor C = compute(
      {16, 16}, [&](Expr i, Expr j) { return cast(f16, acc(i, j)); }, "C");
  Schedule s = create_schedule(C);
  s[acc].set_scope(scope::fragment);
  Tensor AS = s.cache_read(A, scope::shared, {acc}), BS = s.cache_read(B, scope::shared, {acc});
  Tensor AF = s.cache_read(AS, scope::fragment, {acc}), BF = s.cache_read(BS, scope::fragment, {acc});
  auto [co, ci] = s[C].split(C.axis(1), 8);
  s[C].reorder({co, C.axis(0), ci});
  s[C].bind(co, thread_axis(thread_tag::blockIdx_x));
  s[C].tensorize(C.axis(0), ptx_tensor::store_c(f16));
  s[acc].compute_at(s[C], co);
  auto [ko, ki] = s[acc].split(acc.reduce_axis(0), 16);
  s[acc].reorder({ko, acc.axis(0), acc.axis(1), ki});
  s[acc].tensorize(acc.axis(0), ptx_tensor::mma(f16, BLayout::KN));
  for (const Tensor& t : {AF, BF, AS, BS}) s[t].compute_at(s[acc], ko);  // consumers first
  s[AF].tensorize(AF.axis(0), ptx_tensor::load_a(f16));
  s[BF].tensorize(BF.axis(0), ptx_tensor::load_b(f16, BLayout::KN));
  for (const Tensor& t : {AS, BS}) {
    IterVar f = s[t].fuse(t.axis(0), t.axis(1));
    auto [fo, lane] = s[t].split(f, 32);
    s[t].bind(lane, thread_axis(thread_tag::threadIdx_x));
  }
  const LoweredFunc f = lower(s, {A, B, C}, "f16_out");
  Buffer<half> a({16, 32}), b({32, 16}), c({16, 16});
  fill_small_integers(a, 5);
  fill_small_integers(b, 6);
  SimReport r = simulate(f, {a, b, c});
  CHECK(r.races.empty());
  int wrong = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double ref = 0;
      for (int p = 0; p < 32; ++p) ref += static_cast<double>(a(i, p)) * static_cast<double>(b(p, j));
      wrong += static_cast<double>(c(i, j)) != ref;  // small integers: exact in f16 too
    }
  CHECK(wrong == 0);
}

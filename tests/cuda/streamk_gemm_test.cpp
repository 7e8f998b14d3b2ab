// The Stream-K GEMM kernel (lib/streamk_gemm.hpp): every decomposition gives the unscheduled
// reference's result on the GPU simulator (f32 and f16 inputs, tile counts that are not multiples
// of the block count, ragged M, N and K), twice in a row; NVRTC and ptxas compile it; the grid
// flags in the simulator (suspending waits, the deadlock error) and the interpreter's error;
// parameter errors name the parameter.
#include "cuda_test_util.hpp"

#include <loom/codegen/cuda/codegen_cuda.hpp>
#include <loom/ir/grid_flags.hpp>
#include <loom/lib/streamk_gemm.hpp>

#include <cmath>
#include <functional>
#include <limits>

using namespace loom;
using namespace loom::cuda_test;

namespace {

using lib::Decomposition;

/// The unscheduled TE GEMM (f32 accumulation of the inputs' products) run by the interpreter.
template <typename T>
Buffer<float> reference(const Buffer<T>& a, const Buffer<T>& b, DType t) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  Tensor A = placeholder({m, k}, t, "A");
  Tensor B = placeholder({k, n}, t, "B");
  IterVar r = reduce_axis(0, k, "k");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return sum(cast(f32, A(i, r)) * cast(f32, B(r, j)), {r}); }, "C");
  Buffer<float> c({m, n});
  interpret(lower(create_schedule(C), {A, B, C}, "reference"), {a, b, c});
  return c;
}

/// Small tiles so that the simulator runs each case in milliseconds: 16x16x8, 8x8 threads, one
/// block per SM (a grid of `sms` blocks).
lib::StreamKConfig small(Decomposition d, int sms = 4, int split_k = 0) {
  lib::StreamKConfig cfg;
  cfg.tile = lib::GemmTile{16, 16, 8};
  cfg.thread_m = 2;
  cfg.thread_n = 2;
  cfg.sms = sms;
  cfg.blocks_per_sm = 1;
  cfg.decomposition = d;
  cfg.split_k = split_k;
  return cfg;
}

template <typename T>
void check_on_simulator(int64_t m, int64_t n, int64_t k, DType t, const lib::StreamKConfig& cfg) {
  lib::StreamKGemm g = lib::streamk_gemm(m, n, k, t, cfg);
  CAPTURE(g.describe());
  Kernel f = build(g.func, Target::cuda_sim("sm_80"));
  Buffer<T> a({m, k}), b({k, n});
  fill(a, 11);
  fill(b, 12);
  const Buffer<float> expected = reference(a, b, t);
  for (int launch = 0; launch < 2; ++launch) {  // the second launch must not see the first's flags
    CAPTURE(launch);
    Buffer<float> c({m, n});
    for (int64_t i = 0; i < c.num_elements(); ++i) c.at_flat(i) = std::numeric_limits<float>::quiet_NaN();
    f(a, b, c);
    int64_t wrong = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (!(std::fabs(c(i, j) - expected(i, j)) <= 1e-4f * (1.0f + std::fabs(expected(i, j))))) ++wrong;
    CHECK(wrong == 0);
    const SimReport report = f.sim_report();
    CHECK(report.races.empty());
    CHECK(report.uninitialized_reads.empty());
  }
}

const Decomposition kAll[] = {Decomposition::StreamKHybrid, Decomposition::DataParallel,
                              Decomposition::SplitK, Decomposition::StreamK};

}  // namespace

TEST_CASE("streamk_gemm: every decomposition matches the reference on 4 simulated SMs (6, 7, 9 tiles)") {
  struct Shape {
    int64_t m, n, k;
  };
  // 2x3, 7x1 and 3x3 tiles of 16x16; M, N and K are not multiples of 16, 16 and 8.
  const Shape shapes[] = {{20, 40, 29}, {100, 10, 53}, {45, 37, 21}};
  for (const Shape& s : shapes) {
    for (Decomposition d : kAll) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      const std::string name = lib::decomposition_name(d);
      CAPTURE(name);
      check_on_simulator<float>(s.m, s.n, s.k, f32, small(d));
      check_on_simulator<half>(s.m, s.n, s.k, f16, small(d));
    }
  }
}

TEST_CASE("streamk_gemm: split-K whose fixup block is not the one with the last K part") {
  // 7 tiles x 3 parts on 4 blocks: tile 1's parts are units 3, 4, 5 on blocks 3, 0, 1, so block 3
  // (the highest-numbered) fixes it up although it holds the first part.
  lib::StreamKGemm g = lib::streamk_gemm(100, 10, 53, f32, small(Decomposition::SplitK, 4, 3));
  CHECK(g.describe().find("block 3: tile 1 k[0,3) fixup") != std::string::npos);
  check_on_simulator<float>(100, 10, 53, f32, small(Decomposition::SplitK, 4, 3));
  check_on_simulator<float>(45, 37, 53, f32, small(Decomposition::SplitK, 4, 7));  // more parts than blocks
  check_on_simulator<float>(45, 37, 53, f32, small(Decomposition::SplitK, 4, 2));
}

TEST_CASE("streamk_gemm: more blocks than tiles, one block, and a single tile") {
  for (Decomposition d : kAll) {
    const std::string name = lib::decomposition_name(d);
    CAPTURE(name);
    check_on_simulator<float>(30, 20, 37, f32, small(d, 7));  // 4 tiles on 7 blocks
    check_on_simulator<float>(30, 20, 37, f32, small(d, 1));
    check_on_simulator<float>(9, 5, 100, f32, small(d, 3));  // one tile, 13 iterations
    check_on_simulator<float>(9, 5, 10, f32, small(d, 3));   // fewer iterations (2) than blocks
  }
}

TEST_CASE("streamk_gemm: the hybrid's decomposition, workspace and shared-memory plan") {
  // 9 tiles of 12 iterations on 4 blocks: tiles 0..4 (one partial wave plus one full wave) are
  // streamed, 5..8 are data-parallel, one per block.
  lib::StreamKGemm g = lib::streamk_gemm(45, 37, 93, f32, small(Decomposition::StreamKHybrid));
  MESSAGE(g.describe());
  CHECK(g.plan.split_tiles() > 0);
  CHECK(g.flag_count == 4);
  CHECK(g.workspace_floats == 4 * 16 * 16);
  const std::string d = g.describe();
  // Each block runs its Stream-K units from its last tile back to its first: block 0 publishes its
  // part of tile 1 before block 1, which fixes tile 1 up, waits for it.
  CHECK(d.find("block 0: tile 1 k[0,3) partial, tile 0 k[0,12), tile 5 k[0,12)") != std::string::npos);
  CHECK(d.find("block 1: tile 2 k[0,6) partial, tile 1 k[3,12) fixup") != std::string::npos);

  // The A/B tiles of the Stream-K phase and of the data-parallel phase share shared memory.
  cuda::CudaModule m = cuda::codegen_cuda(g.func);
  // One thread spins on a contributor's flag, then the block passes a barrier (not 64 spinners).
  const size_t wait = m.source.find("(void)(loom_flag_wait(");
  REQUIRE(wait != std::string::npos);
  const size_t before = m.source.find_last_not_of(" \n", wait - 1);
  const std::string guard = "if ((tx == 0) && (ty == 0)) {";
  CHECK(m.source.compare(before + 1 - guard.size(), guard.size(), guard) == 0);
  CHECK(m.source.find("__syncthreads();", wait) < m.source.find("partials[", wait));
  REQUIRE(m.kernels.size() == 2);  // clearing the flags, then the GEMM
  const cuda::KernelCode& k = m.kernels[1];
  const int64_t one_phase = (16 * 8 + 8 * 16) * 4;
  MESSAGE("shared memory: " << 2 * one_phase << " bytes with a buffer each, " << k.static_shared_bytes
                            << " planned (" << k.shared_bytes_saved << " saved)");
  CHECK(k.shared_bytes_saved == one_phase);
  CHECK(k.static_shared_bytes == one_phase);
  CHECK(m.source.find("loom_flag_wait(") != std::string::npos);
  CHECK(m.source.find("loom_flag_signal(") != std::string::npos);

  // Without a GPU the grid defaults to an H100's 132 SMs.
  if (!runtime::cuda::driver_available())
    CHECK(lib::streamk_gemm(45, 37, 21, f32, small(Decomposition::StreamK, 0)).config.sms == 132);

  // Data-parallel needs neither workspace nor flags: one kernel.
  lib::StreamKGemm dp = lib::streamk_gemm(45, 37, 21, f32, small(Decomposition::DataParallel));
  CHECK(dp.flag_count == 0);
  CHECK(cuda::codegen_cuda(dp.func).kernels.size() == 1);
}

TEST_CASE("streamk_gemm: the hybrid weighs fixups: data-parallel, or Stream-K on fewer blocks") {
  // 9 tiles of 3 iterations on 4 blocks: three data-parallel waves take 9 iterations; streaming
  // 5 tiles would take 4 + 3 but publishing and reading partial sums cost more than the 2 saved.
  lib::StreamKGemm dp = lib::streamk_gemm(45, 37, 21, f32, small(Decomposition::StreamKHybrid));
  CHECK(dp.plan.kind == Decomposition::DataParallel);
  CHECK(dp.flag_count == 0);
  // 15 tiles of 4 iterations on 7 blocks: 8 tiles streamed over blocks 0..5 only (two tiles of a
  // block split at most), so block 6 starts the whole tiles, and blocks 0..5 take one each after.
  const lib::StreamKConfig seven = small(Decomposition::StreamKHybrid, 7);
  lib::StreamKGemm few = lib::streamk_gemm(75, 45, 29, f32, seven);
  CAPTURE(few.describe());
  CHECK(few.plan.stream_k_tiles == 8);
  CHECK(few.plan.stream_k_workers == 6);
  CHECK(few.flag_count == 6);
  CHECK(few.describe().find("block 6: tile 8 k[0,4)\n") != std::string::npos);
  CHECK(few.describe().find("block 0: tile 1 k[0,2) partial, tile 0 k[0,4), tile 9 k[0,4)") !=
        std::string::npos);
  check_on_simulator<float>(75, 45, 29, f32, seven);
  check_on_simulator<half>(75, 45, 29, f16, seven);
  // One tile of 8 iterations on 4 blocks: streamed over 2 (4 each and one partial) rather than 4.
  lib::StreamKGemm one = lib::streamk_gemm(16, 16, 64, f32, small(Decomposition::StreamKHybrid));
  CHECK(one.plan.stream_k_workers == 2);
  check_on_simulator<float>(16, 16, 64, f32, small(Decomposition::StreamKHybrid));
}

TEST_CASE("streamk_gemm: a workspace of 2^31 floats or more is indexed in 64 bits") {
  // Split-K in 16 parts of a 16384 x 16384 C: 65536 tiles x 16 parts x 64 x 64 floats = 2^32 in
  // the workspace. Built only (it would need 16 GiB); every workspace access must be 64-bit.
  lib::StreamKConfig cfg;
  cfg.decomposition = Decomposition::SplitK;
  cfg.split_k = 16;
  lib::StreamKGemm g = lib::streamk_gemm(16384, 16384, 8192, f32, cfg);
  CHECK(g.workspace_floats == int64_t{1} << 32);
  int accesses = 0, narrow = 0;
  auto check_index = [&](const Var& buffer, const Expr& index) {
    if (buffer.name() != "partials") return;
    ++accesses;
    if (index.dtype() != i64) ++narrow;
  };
  struct Finder : IRVisitor {
    std::function<void(const Var&, const Expr&)> found;
    using IRVisitor::visit;
    void visit(const LoadNode* op) override {
      found(op->buffer, op->index);
      IRVisitor::visit(op);
    }
    void visit(const StoreNode* op) override {
      found(op->buffer, op->index);
      IRVisitor::visit(op);
    }
  } finder;
  finder.found = check_index;
  finder.visit_stmt(g.func.body);
  CHECK(accesses > 0);
  CHECK(narrow == 0);
  // Small workspaces keep 32-bit indices (cheaper address arithmetic).
  lib::StreamKGemm small_ws = lib::streamk_gemm(45, 37, 21, f32, small(Decomposition::SplitK, 4, 3));
  accesses = narrow = 0;
  finder.visit_stmt(small_ws.func.body);
  CHECK(accesses > 0);
  CHECK(narrow == accesses);
}

TEST_CASE("streamk_gemm: NVRTC compiles the kernel for sm_80 and sm_90, and ptxas finds no spills") {
  if (!have_nvrtc()) return;
  for (DType t : {f32, f16}) {
    for (Decomposition d : {Decomposition::StreamKHybrid, Decomposition::SplitK}) {
      lib::StreamKConfig cfg;  // 64x64x16 tiles, 4x4 elements per thread, 132 SMs
      cfg.sms = 132;
      cfg.decomposition = d;
      lib::StreamKGemm g = lib::streamk_gemm(1000, 1100, 777, t, cfg);
      cuda::CudaModule m = cuda::codegen_cuda(g.func);
      const std::string kernel = m.kernels.back().kernel.name;
      for (const std::string arch : {"sm_80", "sm_90"}) {
        CAPTURE(arch);
        CAPTURE(t.str());
        runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, "streamk_gemm", arch, true);
        CHECK(out.ptx.find(".entry " + kernel) != std::string::npos);
        CHECK(out.ptx.find("ld.acquire.gpu") != std::string::npos);
        CHECK(out.ptx.find("st.release.gpu") != std::string::npos);
        if (auto report = runtime::cuda::run_ptxas(out.ptx, arch, kernel)) {
          MESSAGE(kernel << " (" << arch << ", " << t.str() << ", " << std::string(lib::decomposition_name(d))
                         << "):\n"
                         << report->text);
          CHECK(report->spill_stores == 0);
          CHECK(report->spill_loads == 0);
        }
      }
    }
  }
}

TEST_CASE("streamk_gemm: bad parameters name the parameter") {
  auto cfg = [](auto&& edit) {
    lib::StreamKConfig c = small(Decomposition::StreamKHybrid);
    edit(c);
    return c;
  };
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) { c.sms = -1; })),
                       doctest::Contains("sms=-1 is out of range"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) { c.thread_m = 3; })),
                       doctest::Contains("thread_m=3 does not divide the tile's bm=16"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) { c.thread_n = 5; })),
                       doctest::Contains("thread_n=5 does not divide the tile's bn=16"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) { c.tile.bk = 0; })),
                       doctest::Contains("bk=0"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) {
                                           c.tile = {256, 256, 8};
                                         })),
                       doctest::Contains("more than CUDA's 1024"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) { c.blocks_per_sm = 65; })),
                       doctest::Contains("blocks_per_sm=65 is out of range"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) {
                                           c.blocks_per_sm = 0;
                                           c.arch = "sm_60";
                                         })),
                       doctest::Contains("arch='sm_60' is not a CUDA architecture Loom models"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, f32, cfg([](auto& c) { c.split_k = -2; })),
                       doctest::Contains("split_k=-2"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(0, 64, 64, f32, small(Decomposition::StreamK)),
                       doctest::Contains("m=0"), Error);
  CHECK_THROWS_WITH_AS(lib::streamk_gemm(64, 64, 64, i32, small(Decomposition::StreamK)),
                       doctest::Contains("input type int32 is not supported"), Error);
}

TEST_CASE("grid flags: the simulator runs waits on co-resident blocks and explains a wait that would hang") {
  Buffer<float> out({64});
  CHECK_NOTHROW(simulate(flag_pair(false), {out}));
  CHECK(out(63) == 1.0f);
  // Block 0 waits for block 1: both are resident on the modelled H100, so block 0 suspends.
  CHECK_NOTHROW(simulate(flag_pair(true), {out}));
  CHECK(out(0) == 0.0f);
  CHECK(out(63) == 1.0f);
  // On one SM holding one block, block 1 could never be dispatched: a deadlock.
  SimOptions one_slot;
  one_slot.device = GpuDeviceSpec::for_compute_capability(80, 1);
  one_slot.device.max_blocks_per_sm = 1;
  CHECK_THROWS_WITH_AS(simulate(flag_pair(true), {out}, one_slot),
                       doctest::Contains("block (0, 0, 0) (thread 0) waits until flags[0] == 1"), Error);
  CHECK_THROWS_WITH_AS(
      simulate(flag_pair(true), {out}, one_slot),
      doctest::Contains("make every block wait only on flags that lower-numbered blocks signal"), Error);
  CHECK_NOTHROW(simulate(flag_pair(false), {out}, one_slot));
  // CUDA: a release store after a fence, a spin on acquire loads; the flags buffer is writable.
  const std::string source = cuda::codegen_cuda(flag_pair(false)).source;
  CHECK(source.find("__threadfence();") != std::string::npos);
  CHECK(source.find("int* __restrict__ flags") != std::string::npos);
  CHECK(source.find("const int* __restrict__ flags") == std::string::npos);
}

TEST_CASE("grid flags: the interpreter rejects them outside a kernel") {
  Var flags("flags", handle_type);
  LoweredFunc f;
  f.name = "host_flags";
  f.body = AllocateNode::make(flags, i32, {Expr(1)}, "global", flag_wait(flags, 0, 1));
  CHECK_THROWS_WITH_AS(interpret(f, std::vector<KernelArg>{}),
                       doctest::Contains("grid flags hand data between the blocks of a GPU kernel"), Error);
  CHECK_THROWS_WITH_AS(flag_signal(Var("x", i32), 0, 1), doctest::Contains("the flags must be a buffer"),
                       Error);
}

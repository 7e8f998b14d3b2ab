// The definitions of lib/gpu_gemm_model.hpp: the GPUs' figures and their sources, the count of the
// main loop's instructions in the lowered IR, the kernel's resources (ptxas or an estimate), its
// SASS (cuobjdump), and the model itself.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gpu_gemm_model.hpp");

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/backend/cuda/nvrtc.hpp"
#include "loom/backend/cuda/ptxas.hpp"
#include "loom/backend/cuda/sass.hpp"
#include "loom/codegen/cuda/codegen_cuda.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lib/gpu_gemm.hpp"
#include "loom/lib/gpu_gemm_model.hpp"
#include "loom/te/warp_intrinsic.hpp"

namespace loom::lib {

namespace detail {

/// The copy stream that this kernel sustained on an H200 at 8192^3 (docs/gpu-measurements.md,
/// sixth session): 4096 tiles x 128 k-steps x 32 KiB of A and B in 3.419 ms, 5.02 TB/s. The model
/// takes it as sm_90's sustained L2-to-SM bandwidth (docs/gpu-gemm-model.md says why).
inline constexpr double kSm90L2Tbps = 4096.0 * 128 * 32768 / 3.419e-3 / 1e12;
/// The fraction of a nominal 5120 bytes per clock (A100's published L2 read bandwidth; NVIDIA
/// publishes none for H100) at 1.83 GHz that this is.
inline constexpr double kSm90L2Fraction = kSm90L2Tbps / (5120 * 1.83e9 / 1e12);

}  // namespace detail

LOOM_DECL GpuPerfSpec GpuPerfSpec::a100() {
  GpuPerfSpec s;
  s.name = "A100-SXM4-80GB";
  s.arch = "sm_80";
  s.device = GpuDeviceSpec::a100();
  s.clock_ghz = 1.41;
  s.dense_tflops_16bit = 312;
  s.dense_tflops_tf32 = 156;
  s.fp32_lanes_per_sm = 64;
  s.mma_sync_fraction = 1.0;
  s.dram_tbps = 2.039;
  s.l2_tbps = detail::kSm90L2Fraction * 5120 * 1.41e9 / 1e12;
  s.l2_latency = 200;
  s.dram_latency = 500 * 1.41;  // 500 ns
  s.barrier_latency = 24;
  s.shared_latency = 30;
  s.sources = {
      "SMs 108, boost clock 1.41 GHz, dense tensor peaks 312 TFLOP/s (f16/bf16) and 156 (tf32), 64 FP32 "
      "lanes per SM (19.5 TFLOP/s), HBM2e 2.039 TB/s, 40 MB L2, 164 KB of shared memory per SM: NVIDIA "
      "A100 datasheet and whitepaper",
      "mma.sync at the full dense rate: on sm_80 it is the tensor cores' native instruction (an "
      "assumption; no A100 was measured)",
      cat("sustained L2-to-SM bandwidth ", s.l2_tbps,
          " TB/s: NOT measured; the fraction of a nominal 5120 B/clock that H100/H200 sustained for "
          "this kernel (",
          detail::kSm90L2Fraction, ") applied to A100's published 5120 B/clock at 1.41 GHz"),
      "latencies (cycles): L2 hit 200, DRAM 500 ns, barrier 24, shared load 30: round microbenchmark figures "
      "(halving or doubling them moves the predictions at 2048^3 and above by under 3%, 5% for "
      "tf32 with its rounding instructions)"};
  return s;
}

LOOM_DECL GpuPerfSpec GpuPerfSpec::h100() {
  GpuPerfSpec s;
  s.name = "H100-SXM5";
  s.arch = "sm_90";
  s.device = GpuDeviceSpec::h100();
  s.clock_ghz = 1.83;
  s.dense_tflops_16bit = 989.4;
  s.dense_tflops_tf32 = 494.7;
  s.fp32_lanes_per_sm = 128;
  s.mma_sync_fraction = 627.0 / 989.4;
  s.dram_tbps = 3.35;
  s.l2_tbps = detail::kSm90L2Tbps;
  s.l2_latency = 260;
  s.dram_latency = 500 * 1.83;
  s.barrier_latency = 24;
  s.shared_latency = 30;
  s.sources = {
      "SMs 132, dense tensor peaks 989.4 TFLOP/s (f16/bf16) and 494.7 (tf32), 128 FP32 lanes per SM, HBM3 "
      "3.35 TB/s, 50 MB L2, 228 KB of shared memory per SM: NVIDIA H100 SXM5 datasheet; 1.83 GHz is the "
      "clock those peaks "
      "are computed at (132 SMs x 4096 flops per clock); the GPU boosts to 1.98 GHz",
      "mma.sync reaches 627 TFLOP/s, 0.634 of the dense peak: measured on an H200 by bench/gpu_gemm.cpp's "
      "gpu_mma_peak (632 on an H100); the full rate needs wgmma. tf32 is assumed to reach the same fraction",
      cat("sustained L2-to-SM bandwidth ", detail::kSm90L2Tbps,
          " TB/s: what this kernel's copy stream moved at 8192^3 on an H200 (17.2 GB of A and B tiles "
          "in 3.419 ms), taken as the L2's limit (docs/gpu-gemm-model.md gives the evidence and the "
          "doubt)"),
      "latencies (cycles): L2 hit 260, DRAM 500 ns, barrier 24, shared load 30: round microbenchmark figures "
      "(halving or doubling them moves the predictions at 2048^3 and above by under 3%, 5% for "
      "tf32 with its rounding instructions)"};
  return s;
}

LOOM_DECL GpuPerfSpec GpuPerfSpec::h200() {
  GpuPerfSpec s = h100();
  s.name = "H200-SXM";
  s.dram_tbps = 4.8;
  s.sources.push_back(
      "H200: the H100 SXM5's GH100 (SMs, clocks, peaks, L2) with 141 GB of HBM3e at 4.8 TB/s");
  return s;
}

LOOM_DECL GpuPerfSpec GpuPerfSpec::for_arch(const std::string& arch) {
  if (describes(arch)) return arch == "sm_80" ? a100() : h100();
  throw Error(cat("the gpu_gemm performance model has no GPU for architecture '", arch,
                  "': it describes sm_80 (A100) and sm_90 (H100); for another GPU fill a GpuPerfSpec "
                  "(its published peaks, bandwidths and SM limits) and call predict_gpu_gemm with it"));
}

LOOM_DECL double GpuPerfSpec::dense_tflops(DType input) const {
  if (input == f16 || input == bf16) return dense_tflops_16bit;
  if (input == f32) return dense_tflops_tf32;
  throw Error(
      cat("no tensor-core peak for ", input.str(), " inputs: the model knows f16, bf16 and f32 (tf32)"));
}

namespace detail {

/// Counts one k-step of the main loop: warp intrinsics by kind, loads and stores by memory, barriers.
class StepCounter {
 public:
  StepCounter(std::set<const Object*> shared, std::set<const Object*> global)
      : shared_(std::move(shared)), global_(std::move(global)) {}

  GpuGemmStepCounts count(const Stmt& s) const {
    GpuGemmStepCounts c;
    if (!s.defined()) return c;
    if (const auto* seq = s.as<SeqNode>()) {
      for (const Stmt& x : seq->seq) add(c, count(x));
    } else if (const auto* branch = s.as<IfThenElseNode>()) {
      // One of the branches runs: the larger count (the last tile's bounded copies, say).
      c = count(branch->then_case);
      const GpuGemmStepCounts e = count(branch->else_case);
      c.mma = std::max(c.mma, e.mma);
      c.ldmatrix = std::max(c.ldmatrix, e.ldmatrix);
      c.cp_async = std::max(c.cp_async, e.cp_async);
      c.shared_loads = std::max(c.shared_loads, e.shared_loads);
      c.shared_stores = std::max(c.shared_stores, e.shared_stores);
      c.global_loads = std::max(c.global_loads, e.global_loads);
      c.barriers = std::max(c.barriers, e.barriers);
      c.tf32_roundings = std::max(c.tf32_roundings, e.tf32_roundings);
      add(c, count_expr(branch->condition));
    } else if (const auto* loop = s.as<ForNode>()) {
      const GpuGemmStepCounts body = count(loop->body);
      const auto* extent = loop->extent.as<IntImmNode>();
      // A thread (the block's, the grid's) runs its body once; a symbolic trip count counts once.
      const int64_t trips = extent && loop->kind != ForKind::ThreadBinding ? extent->value : 1;
      for (int64_t i = 0; i < trips; ++i) add(c, body);
    } else if (const auto* a = s.as<AllocateNode>()) {
      c = count(a->body);
    } else if (const auto* l = s.as<LetStmtNode>()) {
      c = count(l->body);
      add(c, count_expr(l->value));
    } else if (const auto* at = s.as<AttrStmtNode>()) {
      c = count(at->body);
    } else if (s.as<BarrierNode>()) {
      c.barriers = 1;
    } else if (const auto* st = s.as<StoreNode>()) {
      if (shared_.count(st->buffer.get())) ++c.shared_stores;
      add(c, count_expr(st->value));
      add(c, count_expr(st->index));
    } else if (const auto* e = s.as<EvaluateNode>()) {
      const auto* call = e->value.as<CallNode>();
      if (call && call->name == intrinsic::warp_intrinsic && !call->args.empty()) {
        const auto* name = call->args[0].as<StringImmNode>();
        const std::string n = name ? name->value : "";
        if (n.rfind("ptx.mma.", 0) == 0) ++c.mma;
        if (n.rfind("ptx.ldmatrix.", 0) == 0) ++c.ldmatrix;
        if (n.rfind("ptx.cp.async.ca.", 0) == 0 || n.rfind("ptx.cp.async.cg.", 0) == 0) ++c.cp_async;
        const std::string cvt = "ptx.cvt.rna.tf32.f32.x";
        if (n.rfind(cvt, 0) == 0) c.tf32_roundings += std::stoi(n.substr(cvt.size()));
        return c;  // its operands are addresses, not loads
      }
      add(c, count_expr(e->value));
    }
    return c;
  }

 private:
  static void add(GpuGemmStepCounts& a, const GpuGemmStepCounts& b) {
    a.mma += b.mma;
    a.ldmatrix += b.ldmatrix;
    a.cp_async += b.cp_async;
    a.shared_loads += b.shared_loads;
    a.shared_stores += b.shared_stores;
    a.global_loads += b.global_loads;
    a.barriers += b.barriers;
    a.tf32_roundings += b.tf32_roundings;
  }

  GpuGemmStepCounts count_expr(const Expr& e) const {
    struct Loads : IRVisitor {
      const StepCounter* self;
      GpuGemmStepCounts c;
      explicit Loads(const StepCounter* s) : self(s) {}
      using IRVisitor::visit;
      void visit(const LoadNode* op) override {
        if (self->shared_.count(op->buffer.get())) ++c.shared_loads;
        if (self->global_.count(op->buffer.get())) ++c.global_loads;
        IRVisitor::visit(op);
      }
    } loads(this);
    loads.visit_expr(e);
    return loads.c;
  }

  std::set<const Object*> shared_, global_;
};

/// The serial loop with the most mma.sync: the k loop.
inline const ForNode* gpu_gemm_main_loop(const Stmt& body, const StepCounter& counter) {
  struct Finder : IRVisitor {
    const StepCounter* counter = nullptr;
    const ForNode* best = nullptr;
    int64_t best_mma = 0;
    using IRVisitor::visit;
    void visit(const ForNode* loop) override {
      if (loop->kind == ForKind::Serial) {
        const int64_t mma = counter->count(loop->body).mma;
        if (mma > best_mma) {
          best = loop;
          best_mma = mma;
        }
      }
      IRVisitor::visit(loop);
    }
  } finder;
  finder.counter = &counter;
  finder.visit_stmt(body);
  return finder.best;
}

/// The shared buffers the function allocates and their bytes.
inline std::set<const Object*> shared_buffers(const Stmt& body, int64_t* bytes) {
  struct Finder : IRVisitor {
    std::set<const Object*> out;
    int64_t bytes = 0;
    using IRVisitor::visit;
    void visit(const AllocateNode* a) override {
      if (a->scope == scope::shared) {
        out.insert(a->buffer.get());
        int64_t elements = 1;
        for (const Expr& e : a->extents) {
          const auto* n = e.as<IntImmNode>();
          internal_check(n != nullptr, "gpu_gemm's shared allocation has a symbolic extent");
          elements *= n->value;
        }
        bytes += elements * a->dtype.bytes();
      }
      IRVisitor::visit(a);
    }
  } finder;
  finder.visit_stmt(body);
  if (bytes) *bytes += finder.bytes;
  return finder.out;
}

inline int64_t gpu_gemm_shared_bytes(const GpuGemm& g) {
  int64_t bytes = 0;
  shared_buffers(g.func.body, &bytes);
  return bytes;
}

inline int gpu_gemm_threads(const GpuGemm& g) {
  const GpuGemmConfig& c = g.config;
  return 32 * (c.block_m / c.warp_m) * (c.block_n / c.warp_n);
}

/// The input's bytes per element and the flops of one mma.sync (m16n8k16, or m16n8k8 for tf32).
inline int gpu_gemm_element_bytes(const GpuGemm& g) { return g.input.bytes(); }
inline double gpu_gemm_mma_flops(const GpuGemm& g) { return 2.0 * 16 * 8 * (g.input == f32 ? 8 : 16); }

}  // namespace detail

LOOM_DECL GpuGemmStepCounts gpu_gemm_step_counts(const GpuGemm& g) {
  std::set<const Object*> global;
  for (const FuncParam& p : g.func.params)
    if (p.kind == FuncParam::Kind::Buffer) global.insert(p.buffer.data.get());
  const detail::StepCounter counter(detail::shared_buffers(g.func.body, nullptr), std::move(global));
  const ForNode* loop = detail::gpu_gemm_main_loop(g.func.body, counter);
  if (loop) return counter.count(loop->body);
  // One k-step: the simplifier removed the loop of one trip. The kernel's body is that step (its
  // copies are the prologue's, before the step rather than in it).
  const GpuGemmStepCounts all = counter.count(g.func.body);
  internal_check(all.mma > 0, "gpu_gemm's lowered function has no mma.sync");
  return all;
}

LOOM_DECL int gpu_gemm_estimated_registers(const GpuGemm& g) {
  const GpuGemmConfig& c = g.config;
  const int accumulators = c.warp_m * c.warp_n / 32;
  // One k slice's fragments: 4 registers per 16-row A tile and 2 per 8-column B tile, for 16-bit
  // and tf32 inputs alike. With four warps a block, ptxas loads the next slice's fragments while
  // the current one multiplies (the SASS shows every ldmatrix of the step ahead of the first
  // mma); with more warps it interleaves them.
  const int fragments = c.warp_m / 4 + c.warp_n / 4;
  const int slices = detail::gpu_gemm_threads(g) <= 128 ? 2 : 1;
  const int copies = static_cast<int>(gpu_gemm_step_counts(g).cp_async);
  const int regs = accumulators + slices * fragments + copies + 8;
  return std::min(255, (regs + 7) / 8 * 8);
}

LOOM_DECL GpuGemmResources gpu_gemm_resources(const GpuGemm& g, const std::string& arch) {
  GpuGemmResources r;
  r.threads = detail::gpu_gemm_threads(g);
  r.shared_bytes = detail::gpu_gemm_shared_bytes(g);
  if (runtime::cuda::nvrtc() && !runtime::cuda::find_ptxas().empty()) {
    const cuda::CudaModule m = cuda::codegen_cuda(g.func);
    const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, m.name, arch);
    const auto report = runtime::cuda::run_ptxas(out.ptx, arch, m.kernels.at(0).kernel.name);
    internal_check(report.has_value(), "ptxas was found but gave no report");
    r.registers = report->registers;
    r.registers_from = "ptxas";
    r.spill_bytes = report->spill_stores + report->spill_loads;
    return r;
  }
  r.registers = gpu_gemm_estimated_registers(g);
  r.registers_from = "estimate";
  return r;
}

LOOM_DECL GpuGemmSass gpu_gemm_sass(const GpuGemm& g, const std::string& arch, const std::string& tools) {
  GpuGemmSass s;
  if (!runtime::cuda::nvrtc()) {
    s.unavailable = cat("NVRTC is not installed (", runtime::cuda::nvrtc_unavailable_reason(), ")");
    return s;
  }
  s.tool = runtime::cuda::find_cuobjdump(tools);
  if (s.tool.empty()) {
    s.unavailable =
        "cuobjdump was not found (scripts/sass-tools.sh installs it into <build>/sass-tools/venv; "
        "LOOM_SASS_TOOLS or LOOM_CUOBJDUMP name another)";
    return s;
  }
  const cuda::CudaModule m = cuda::codegen_cuda(g.func);
  const runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(m.source, m.name, arch, true);
  const std::optional<std::string> listing = runtime::cuda::disassemble_cubin(out.cubin, tools);
  internal_check(listing.has_value(), "cuobjdump was found but not run");
  const std::vector<runtime::cuda::SassLoop> loops =
      runtime::cuda::sass_loops(*listing, m.kernels.at(0).kernel.name);
  const runtime::cuda::SassLoop* main = nullptr;
  for (const runtime::cuda::SassLoop& l : loops)
    if (l.count("HMMA") > 0 && (!main || l.count("HMMA") > main->count("HMMA"))) main = &l;
  if (!main) {
    const int64_t steps = (g.k + g.config.block_k - 1) / g.config.block_k;
    // ptxas may unroll a loop of a few trips completely: nothing to count per step then.
    if (steps <= 2 * g.config.stages) {
      s.unavailable = cat("the SASS has no loop with HMMA: ptxas unrolled the ", steps, " k-steps");
      return s;
    }
    throw Error(cat("the SASS of ", m.name, " for ", arch, " (", steps, " k-steps) has no loop with HMMA; ",
                    "its start:\n", listing->substr(0, 4000)));
  }
  s.steps_per_iteration = std::max<int64_t>(1, main->count("BAR"));
  const double steps = static_cast<double>(s.steps_per_iteration);
  s.hmma = main->count("HMMA") / steps;
  s.ldsm = main->count("LDSM") / steps;
  s.ldgsts = main->count("LDGSTS") / steps;
  s.bar = main->count("BAR") / steps;
  s.lds = main->count("LDS") / steps;
  s.sts = main->count("STS") / steps;
  s.ldg = main->count("LDG") / steps;
  s.instructions = main->instructions / steps;
  s.available = true;
  return s;
}

namespace detail {

/// One round's terms, SM cycles, for b blocks on the busiest SM and n_active on the GPU.
struct GpuGemmRound {
  double tensor = 0, shared = 0, l2 = 0, issue = 0, latency = 0, copy_wait = 0, round = 0;
  std::string limiter;
};

struct GpuGemmModelInputs {
  const GpuPerfSpec* spec;
  GpuGemmStepCounts c;
  double instructions = 0;  // per warp-step
  int warps = 0;            // per block
  int stages = 0;
  bool async = false;
  double tile_bytes = 0;      // A and B per block-step
  double m = 0;               // one warp's mma time on its scheduler's tensor pipe
  double l2_per_clock = 0;    // the GPU's sustained L2 bytes per SM clock
  double dram_per_clock = 0;  // DRAM bytes per SM clock
};

inline GpuGemmRound gpu_gemm_round(const GpuGemmModelInputs& in, int64_t b, int64_t n_active) {
  const GpuPerfSpec& s = *in.spec;
  const GpuGemmStepCounts& c = in.c;
  GpuGemmRound r;
  const double bw = static_cast<double>(b * in.warps);
  const int schedulers = s.device.sub_partitions;
  r.tensor = std::ceil(bw / schedulers) * in.m;
  const double wavefronts = 4.0 * c.ldmatrix + 4.0 * c.cp_async + c.shared_loads + c.shared_stores;
  r.shared = bw * wavefronts * 128.0 / s.shared_bytes_per_clock;
  r.l2 = static_cast<double>(n_active) * in.tile_bytes / in.l2_per_clock;
  r.issue = bw * in.instructions / schedulers;
  const double q = std::ceil(static_cast<double>(in.warps) / schedulers);
  double bubble = static_cast<double>(c.barriers) * s.barrier_latency +
                  q * (in.instructions - static_cast<double>(c.mma)) + s.shared_latency;
  if (!in.async) bubble += s.l2_latency;  // element copies wait for their loads before storing them
  const double sms_busy = std::min<double>(static_cast<double>(s.device.sms), static_cast<double>(n_active));
  const double copy_latency =
      s.l2_latency + static_cast<double>(b) * in.tile_bytes / (in.l2_per_clock / sms_busy);
  // A tile's copies are issued stages - 1 rounds before the tile is read: they wait for what is
  // left of their latency. Solved in closed form: with a wait, round = chain + latency - (stages -
  // 1) round, so round = (chain + latency) / stages, unless a throughput term is larger.
  const double throughput = std::max({r.tensor, r.shared, r.l2, r.issue});
  const double chain = q * in.m + bubble;
  const double stages = static_cast<double>(in.stages);
  r.round = std::max(throughput, chain);
  if (in.async && copy_latency > (stages - 1) * r.round)
    r.round = std::max(throughput, (chain + copy_latency) / stages);
  r.copy_wait = in.async ? std::max(0.0, copy_latency - (stages - 1) * r.round) : 0.0;
  r.latency = chain + r.copy_wait;
  const std::pair<double, const char*> terms[] = {
      {r.tensor, "tensor"}, {r.shared, "shared"}, {r.l2, "l2"}, {r.issue, "issue"}, {r.latency, "latency"}};
  r.limiter = std::max_element(std::begin(terms), std::end(terms), [](const auto& a, const auto& b) {
                return a.first < b.first;
              })->second;
  return r;
}

/// The model's inputs for `g` on `spec`, from the counts, instructions and threads of `p`.
inline GpuGemmModelInputs gpu_gemm_model_inputs(const GpuGemm& g, const GpuPerfSpec& spec,
                                                const GpuGemmPrediction& p) {
  const GpuGemmConfig& cfg = g.config;
  GpuGemmModelInputs in;
  in.spec = &spec;
  in.c = p.per_warp;
  in.instructions = p.instructions_per_warp_step;
  in.warps = p.resources.threads / 32;
  in.stages = cfg.stages;
  // An operand of element copies waits for its loads.
  in.async = g.a_copy_bytes > 0 && g.b_copy_bytes > 0;
  in.tile_bytes = static_cast<double>(cfg.block_m + cfg.block_n) * cfg.block_k * gpu_gemm_element_bytes(g);
  const double peak_per_sm_clock =
      spec.dense_tflops(g.input) * 1e12 / (spec.device.sms * spec.clock_ghz * 1e9);
  const double mma_rate = peak_per_sm_clock * spec.mma_sync_fraction / spec.device.sub_partitions;
  in.m = static_cast<double>(p.per_warp.mma) * gpu_gemm_mma_flops(g) / mma_rate;
  in.l2_per_clock = spec.l2_bytes_per_clock();
  in.dram_per_clock = spec.dram_bytes_per_clock();
  return in;
}

}  // namespace detail

LOOM_DECL GpuGemmPrediction predict_gpu_gemm(const GpuGemm& g, const GpuPerfSpec& spec,
                                             const GpuGemmResources& resources,
                                             double instructions_per_warp_step) {
  if (spec.clock_ghz <= 0 || spec.l2_tbps <= 0 || spec.dram_tbps <= 0 || spec.mma_sync_fraction <= 0 ||
      spec.device.sms <= 0)
    throw Error(cat("predict_gpu_gemm: the GpuPerfSpec '", spec.name,
                    "' needs a positive clock, L2 and DRAM bandwidth, mma.sync fraction and SM count"));
  const GpuGemmConfig& cfg = g.config;
  GpuGemmPrediction p;
  p.device = spec.name;
  p.arch = spec.arch;
  p.per_warp = gpu_gemm_step_counts(g);
  p.resources = resources;
  const GpuGemmStepCounts& c = p.per_warp;
  // Instructions issued: SASS's count when given; else the counted ones, 3 address instructions per
  // copy (a cp.async's or an element's) and 8 for the loop, the stage and the wait (sm_90's SASS of
  // the default f16 kernel: 231 for 177 counted ones and 16 copies, estimated 233; sm_80's: 256),
  // and 2 per tf32 rounding (the default tf32 kernel's SASS on sm_90: 540 per step, estimated 537).
  const int64_t copies = c.cp_async + c.global_loads;
  const double counted = static_cast<double>(c.mma + c.ldmatrix + c.cp_async + c.shared_loads +
                                             c.shared_stores + c.global_loads + c.barriers) +
                         2.0 * static_cast<double>(c.tf32_roundings);
  p.instructions_per_warp_step =
      instructions_per_warp_step > 0 ? instructions_per_warp_step : counted + 3.0 * copies + 8;

  p.occupancy =
      occupancy(spec.device, BlockResources{resources.threads, resources.registers, resources.shared_bytes});
  if (p.occupancy.blocks_per_sm <= 0)
    throw Error(cat("predict_gpu_gemm: one block of ", g.describe(), " does not fit on an SM of ", spec.name,
                    " (", p.occupancy.str(), "; ", resources.registers, " registers per thread, ",
                    resources.shared_bytes, " bytes of shared memory)"));
  const int warps = resources.threads / 32;
  p.warps_per_sm = p.occupancy.blocks_per_sm * warps;

  const detail::GpuGemmModelInputs in = detail::gpu_gemm_model_inputs(g, spec, p);
  const int eb = detail::gpu_gemm_element_bytes(g);

  const int64_t tiles_m = (g.m + cfg.block_m - 1) / cfg.block_m,
                tiles_n = (g.n + cfg.block_n - 1) / cfg.block_n;
  p.tiles = tiles_m * tiles_n;
  p.k_steps = (g.k + cfg.block_k - 1) / cfg.block_k;
  const int64_t slots = static_cast<int64_t>(spec.device.sms) * p.occupancy.blocks_per_sm;
  p.waves = (p.tiles + slots - 1) / slots;
  p.last_wave_fill = static_cast<double>(p.tiles - (p.waves - 1) * slots) / static_cast<double>(slots);

  const detail::GpuGemmRound full =
      detail::gpu_gemm_round(in, p.occupancy.blocks_per_sm, std::min<int64_t>(slots, p.tiles));
  p.tensor_cycles = full.tensor;
  p.shared_cycles = full.shared;
  p.l2_cycles = full.l2;
  p.issue_cycles = full.issue;
  p.latency_cycles = full.latency;
  p.copy_wait_cycles = full.copy_wait;
  p.round_cycles = full.round;
  p.limiter = full.limiter;

  // The waves, in the order the GPU starts blocks (blockIdx.x, the n tile, fastest).
  double cycles = 0;
  bool dram_bound = false;
  for (int64_t w = 0; w < p.waves; ++w) {
    const int64_t first = w * slots, n_active = std::min(slots, p.tiles - first);
    const int64_t b = (n_active + spec.device.sms - 1) / spec.device.sms;
    const detail::GpuGemmRound r = detail::gpu_gemm_round(in, b, n_active);
    const double c_bytes = static_cast<double>(n_active) * cfg.block_m * cfg.block_n * 4;
    const double wave = spec.dram_latency + static_cast<double>(n_active) * in.tile_bytes / in.l2_per_clock +
                        static_cast<double>(p.k_steps) * r.round + c_bytes / in.l2_per_clock;
    // DRAM: each distinct row panel of A and column panel of B the wave's tiles read, once, and C.
    const int64_t last = first + n_active - 1;
    const int64_t row0 = first / tiles_n, row1 = last / tiles_n;
    const int64_t cols = row1 > row0 ? std::min(tiles_n, n_active) : n_active;
    double panel_bytes = 0;
    for (int64_t row = row0; row <= row1; ++row)
      panel_bytes += static_cast<double>(std::min<int64_t>(cfg.block_m, g.m - row * cfg.block_m)) * g.k * eb;
    panel_bytes += static_cast<double>(std::min(g.n, cols * cfg.block_n)) * g.k * eb;
    const double dram_bytes = panel_bytes + c_bytes;
    p.dram_bytes += dram_bytes;
    p.l2_bytes += static_cast<double>(n_active) * static_cast<double>(p.k_steps) * in.tile_bytes;
    const double dram = spec.dram_latency + dram_bytes / in.dram_per_clock;
    if (dram > wave) dram_bound = true;
    cycles += std::max(wave, dram);
  }
  if (dram_bound) p.limiter = "dram";
  p.seconds = cycles / (spec.clock_ghz * 1e9);
  p.tflops =
      2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) / p.seconds / 1e12;
  p.peak_tflops = spec.dense_tflops(g.input);
  p.fraction_of_peak = p.tflops / p.peak_tflops;
  return p;
}

LOOM_DECL GpuGemmPrediction predict_gpu_gemm(const GpuGemm& g, const std::string& arch) {
  const GpuPerfSpec spec = GpuPerfSpec::for_arch(arch);
  return predict_gpu_gemm(g, spec, gpu_gemm_resources(g, arch));
}

LOOM_DECL double gpu_gemm_round_cycles(const GpuGemm& g, const GpuPerfSpec& spec,
                                       const GpuGemmPrediction& prediction, int64_t blocks, int64_t active) {
  if (blocks < 1 || active < blocks)
    throw Error(cat("gpu_gemm_round_cycles: ", blocks, " blocks on the SM and ", active,
                    " on the GPU; give at least one block, and no more on the SM than on the GPU"));
  return detail::gpu_gemm_round(detail::gpu_gemm_model_inputs(g, spec, prediction), blocks, active).round;
}

LOOM_DECL std::string GpuGemmPrediction::str() const {
  auto fixed = [](double x) { return cat(static_cast<int64_t>(std::llround(x))); };
  return cat(device, " (", arch, "): ", occupancy.str(), ", ", warps_per_sm,
             " warps per SM; per round (a k-step of ", "each resident block) tensor ", fixed(tensor_cycles),
             ", shared ", fixed(shared_cycles), ", L2 ", fixed(l2_cycles), ", issue ", fixed(issue_cycles),
             ", latency ", fixed(latency_cycles), " (copy wait ", fixed(copy_wait_cycles),
             ") cycles: ", limiter, "-bound; ", tiles, " tiles in ", waves, " waves (the last ",
             fixed(100 * last_wave_fill), "% full), ", k_steps, " k-steps; ", fixed(seconds * 1e6), " us, ",
             fixed(tflops), " TFLOP/s, ", fixed(100 * fraction_of_peak), "% of the dense peak ",
             fixed(peak_tflops));
}

}  // namespace loom::lib

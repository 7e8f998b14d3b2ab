// CodeGenLLVM's memory: loads and stores (scalar, contiguous vector, masked, gather/scatter), the
// element codecs (bool is a byte, float16/bfloat16 their bits), allocations (zeroed unless written
// whole before any read, 64-byte aligned; small constant ones on the stack), prefetches, and the alias scopes
// that tell LLVM distinct buffers do not overlap.
#pragma once

#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/codegen/llvm/codegen_llvm.hpp"
#include "loom/codegen/written_before_read.hpp"
#include "loom/ir/clamped_ramp.hpp"

namespace loom::codegen {

/// One alias scope per buffer (each parameter and each allocated buffer): an access to buffer i
/// is in scope i and does not alias the others. This is the `noalias` of distinct tensors, which
/// Kernel::call makes sound by rejecting overlapping arguments that the kernel writes.
inline void CodeGenLLVM::create_alias_scopes() {
  std::vector<std::string> names;
  for (const FuncParam& p : func_.params)
    if (p.kind == FuncParam::Kind::Buffer) names.push_back(p.buffer.name);
  struct Allocations : IRVisitor {
    std::vector<const AllocateNode*> found;
    using IRVisitor::visit;
    void visit(const AllocateNode* op) override {
      found.push_back(op);
      IRVisitor::visit(op);
    }
  } allocations;
  allocations.visit_stmt(func_.body);
  for (const AllocateNode* a : allocations.found) {
    if (allocation_scopes_.emplace(a->buffer.get(), static_cast<int>(names.size())).second)
      names.push_back(a->buffer.name());
  }
  if (names.size() < 2) return;  // nothing to tell apart
  llvm::MDBuilder md(ctx_);
  alias_domain_ = md.createAnonymousAliasScopeDomain("loom.buffers");
  for (const std::string& n : names) scope_nodes_.push_back(md.createAnonymousAliasScope(alias_domain_, n));
  for (size_t i = 0; i < scope_nodes_.size(); ++i) {
    std::vector<llvm::Metadata*> others;
    for (size_t j = 0; j < scope_nodes_.size(); ++j)
      if (j != i) others.push_back(scope_nodes_[j]);
    scope_lists_.push_back(llvm::MDNode::get(ctx_, {scope_nodes_[i]}));
    noalias_lists_.push_back(llvm::MDNode::get(ctx_, others));
  }
}

inline void CodeGenLLVM::tag_access(llvm::Instruction* access, int scope) {
  if (scope < 0 || static_cast<size_t>(scope) >= scope_lists_.size()) return;
  access->setMetadata(llvm::LLVMContext::MD_alias_scope, scope_lists_[static_cast<size_t>(scope)]);
  access->setMetadata(llvm::LLVMContext::MD_noalias, noalias_lists_[static_cast<size_t>(scope)]);
}

inline llvm::Value* CodeGenLLVM::from_memory(DType element, llvm::Value* raw) {
  if (element.is_bool()) return builder_.CreateICmpNE(raw, llvm::Constant::getNullValue(raw->getType()));
  if (element.is_bfloat()) return floats_.bfloat16_bits_to_float(raw);
  if (element.is_float() && element.bits == 16) return floats_.half_bits_to_float(raw);
  return raw;
}

inline llvm::Value* CodeGenLLVM::to_memory(DType element, llvm::Value* value) {
  if (element.is_bool()) {
    llvm::Type* bytes =
        value->getType()->isVectorTy()
            ? llvm::VectorType::get(builder_.getInt8Ty(), llvm::cast<llvm::VectorType>(value->getType()))
            : static_cast<llvm::Type*>(builder_.getInt8Ty());
    return builder_.CreateZExt(value, bytes);
  }
  if (element.is_bfloat()) return floats_.float_to_bfloat16_bits(value);
  if (element.is_float() && element.bits == 16) return floats_.float_to_half_bits(value);
  return value;
}

// A copy of 16-bit floats (a packed panel of bfloat16, a cache_read) moves their bits: through float
// and back is the identity but for a signalling NaN, which the copy keeps, and LLVM does not see
// through the rounding, which made such copies several times slower than copies of float32.
inline llvm::Value* CodeGenLLVM::stored_value(DType element, const Expr& value) {
  const auto* load = value.as<LoadNode>();
  if (element.is_float() && element.bits == 16 && load && load->dtype.element_of() == element)
    return emit(LoadNode::make(DType(TypeCode::UInt, 16, 1), load->buffer, load->index, load->predicate));
  return to_memory(element, emit(value));
}

inline llvm::Value* CodeGenLLVM::address_of(const LoadNode* op) {
  const BufferBinding buffer = lookup_buffer(op->buffer);
  llvm::Type* mem = memory_type(op->dtype.element_of());
  const RampNode* ramp = op->index.as<RampNode>();
  llvm::Value* index = ramp ? emit_index(ramp->base) : lane0(emit_index(op->index));
  return builder_.CreateGEP(mem, buffer.ptr, index);
}

namespace detail {
/// Whether the `lanes` elements of `element` from index `base` (a constant) all lie in a stack slot
/// of `slot_bytes` that this function owns. A masked access there can be a whole load, and a masked
/// store a store of the old lanes blended with the new: no lane leaves the slot and no other thread
/// sees it. LLVM then keeps the slot in registers (SROA), which it cannot do through masked
/// intrinsics: a register tile with a partial vector (cache_write "local", 56 columns in vectors of
/// 16) stayed in memory, a store and a load around every multiply-add.
inline bool whole_in_slot(int64_t slot_bytes, const Expr& base, int lanes, DType element) {
  const int64_t* first = as_const_int(base);
  if (slot_bytes <= 0 || !first || *first < 0 || element.bits % 8 != 0) return false;
  const int64_t bytes = element.bytes();
  return *first <= slot_bytes / bytes && lanes <= slot_bytes / bytes - *first;
}
}  // namespace detail

inline llvm::Value* CodeGenLLVM::emit_load(const LoadNode* op) {
  const BufferBinding buffer = lookup_buffer(op->buffer);  // a copy: nested code may bind more
  const DType element = op->dtype.element_of();
  const int lanes = op->dtype.lanes;
  llvm::Type* mem = memory_type(element);
  const llvm::Align align(static_cast<uint64_t>(element.bytes()));  // checked by Kernel::call

  // Active lanes: the load's predicate within the enclosing if_then_else's mask.
  llvm::Value* active = op->predicate.defined() ? to_bool(emit(op->predicate)) : nullptr;
  if (active && lanes > 1 && !active->getType()->isVectorTy())
    active = builder_.CreateVectorSplat(static_cast<unsigned>(lanes), active);
  if (mask_) {
    llvm::Value* m = lanes > 1 ? mask_ : any_lane(mask_);
    active = active ? builder_.CreateAnd(active, m) : m;
  }

  // One element at scalar index `index`, in memory's type; where `when` (an i1) is given, read only
  // if it holds (a masked-off load reads nothing: its index may be out of bounds), else 0.
  auto scalar_load = [&](const Expr& index, llvm::Value* when) -> llvm::Value* {
    auto load_here = [&]() {
      llvm::Value* ptr = builder_.CreateInBoundsGEP(mem, buffer.ptr, emit_index(index));
      llvm::LoadInst* load = builder_.CreateAlignedLoad(mem, ptr, align);
      tag_access(load, buffer.scope);
      return static_cast<llvm::Value*>(load);
    };
    if (!when) return load_here();
    llvm::BasicBlock* load_bb = llvm::BasicBlock::Create(ctx_, "load.active", fn_.function);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "load.end", fn_.function);
    llvm::BasicBlock* before = builder_.GetInsertBlock();
    builder_.CreateCondBr(when, load_bb, merge);
    builder_.SetInsertPoint(load_bb);
    llvm::Value* saved = mask_;
    mask_ = nullptr;  // inside the branch every lane that reaches here is active
    llvm::Value* v = load_here();
    mask_ = saved;
    llvm::BasicBlock* load_end = builder_.GetInsertBlock();
    builder_.CreateBr(merge);
    builder_.SetInsertPoint(merge);
    llvm::PHINode* phi = builder_.CreatePHI(v->getType(), 2);
    phi->addIncoming(v, load_end);
    phi->addIncoming(llvm::Constant::getNullValue(v->getType()), before);
    return phi;
  };
  if (lanes == 1) return from_memory(element, scalar_load(op->index, active));

  llvm::Type* vector_mem = with_lanes(mem, lanes);
  llvm::Value* passthru = llvm::Constant::getNullValue(vector_mem);
  llvm::Value* saved = mask_;
  mask_ = active;  // the index of a masked-off lane is not evaluated either
  llvm::Instruction* access = nullptr;
  // One address per lane: the general case, and a clamped ramp's lanes where some are outside.
  auto gather = [&]() -> llvm::Instruction* {
    llvm::Value* ptrs = builder_.CreateInBoundsGEP(mem, buffer.ptr, emit_index(op->index));
    return builder_.CreateMaskedGather(vector_mem, ptrs, align, active, passthru);
  };
  const RampNode* ramp = op->index.as<RampNode>();
  const BroadcastNode* broadcast = op->index.as<BroadcastNode>();
  if (ramp && is_const_int(ramp->stride, 1)) {
    llvm::Value* ptr = builder_.CreateInBoundsGEP(mem, buffer.ptr, emit_index(ramp->base));
    if (active && detail::whole_in_slot(buffer.slot_bytes, ramp->base, lanes, element)) {
      llvm::LoadInst* whole = builder_.CreateAlignedLoad(vector_mem, ptr, align);
      tag_access(whole, buffer.scope);
      mask_ = saved;
      return from_memory(element, builder_.CreateSelect(active, whole, passthru));
    }
    access = active ? static_cast<llvm::Instruction*>(
                          builder_.CreateMaskedLoad(vector_mem, ptr, align, active, passthru))
                    : builder_.CreateAlignedLoad(vector_mem, ptr, align);
  } else if (broadcast) {
    // Every lane reads one element: one scalar load, spread, made (under a mask) where any lane is
    // active, its masked-off lanes 0 as a gather's would be. A masked gather of one address per
    // lane is many times slower: a 3x3 convolution whose vectors of 16 columns end past its 56 (the
    // weight, broadcast, under the store's mask) ran 7x slower than with 8 lanes.
    llvm::Value* spread = builder_.CreateVectorSplat(
        static_cast<unsigned>(lanes), scalar_load(broadcast->value, active ? any_lane(active) : nullptr));
    if (active) spread = builder_.CreateSelect(active, spread, passthru);
    mask_ = saved;
    return from_memory(element, spread);
  } else if (llvm::Value* joined = load_runs(op->index, mem, align, active, buffer.ptr, buffer.scope)) {
    mask_ = saved;
    return from_memory(element, joined);
  } else if (std::optional<ClampedRamp> clamped = clamped_ramp(op->index)) {
    // A ramp under a border's clamp or select: where every active lane is inside the border, one
    // (masked) vector load at the ramp, else the gather. lib::gemm's pass over a padded product
    // (select(j < n, j, n - 1) under the store's mask j < n, so LLVM drops the branch) gathered every
    // vector, and a stencil's clamped neighbours do: bfloat16 64 x 4090 x 4096, one Zen 5 core, 6.1
    // -> 5.9-6.0 ms.
    llvm::Value* inside = to_bool(emit(clamped->condition));
    if (active) inside = builder_.CreateOr(inside, builder_.CreateNot(active));
    const RampNode* ramp_at = clamped->ramp.as<RampNode>();
    llvm::Value* v = emit_branches(
        all_lanes(inside), "clamp",
        [&]() -> llvm::Value* {
          // Not inbounds under a mask: with its first lanes off, the ramp may start outside the buffer.
          llvm::Value* at = emit_index(ramp_at->base);
          llvm::Value* ptr = active ? builder_.CreateGEP(mem, buffer.ptr, at)
                                    : builder_.CreateInBoundsGEP(mem, buffer.ptr, at);
          llvm::Instruction* dense = active ? static_cast<llvm::Instruction*>(builder_.CreateMaskedLoad(
                                                  vector_mem, ptr, align, active, passthru))
                                            : builder_.CreateAlignedLoad(vector_mem, ptr, align);
          tag_access(dense, buffer.scope);
          return dense;
        },
        [&]() -> llvm::Value* {
          llvm::Instruction* each = gather();
          tag_access(each, buffer.scope);
          return each;
        });
    mask_ = saved;
    return from_memory(element, v);
  } else {
    access = gather();
  }
  mask_ = saved;
  tag_access(access, buffer.scope);
  return from_memory(element, access);
}

inline void CodeGenLLVM::emit_store(const StoreNode* op) {
  const BufferBinding buffer = lookup_buffer(op->buffer);
  const DType element = op->value.dtype().element_of();
  const int lanes = op->value.dtype().lanes;
  llvm::Type* mem = memory_type(element);
  const llvm::Align align(static_cast<uint64_t>(element.bytes()));
  llvm::Value* active = op->predicate.defined() ? to_bool(emit(op->predicate)) : nullptr;

  if (lanes == 1) {
    // Predicate first; the value and index of a masked-off store are not evaluated.
    llvm::BasicBlock* merge = nullptr;
    if (active) {
      llvm::BasicBlock* store_bb = llvm::BasicBlock::Create(ctx_, "store.active", fn_.function);
      merge = llvm::BasicBlock::Create(ctx_, "store.end", fn_.function);
      builder_.CreateCondBr(lane0(active), store_bb, merge);
      builder_.SetInsertPoint(store_bb);
    }
    llvm::Value* v = stored_value(element, op->value);
    llvm::Value* ptr = builder_.CreateInBoundsGEP(mem, buffer.ptr, emit_index(op->index));
    tag_access(builder_.CreateAlignedStore(v, ptr, align), buffer.scope);
    if (merge) {
      builder_.CreateBr(merge);
      builder_.SetInsertPoint(merge);
    }
    return;
  }

  if (active && !active->getType()->isVectorTy())
    active = builder_.CreateVectorSplat(static_cast<unsigned>(lanes), active);
  // Every lane's value and index are computed before any lane is written.
  llvm::Value* saved = mask_;
  mask_ = active;
  llvm::Value* v = stored_value(element, op->value);
  llvm::Instruction* access = nullptr;
  const RampNode* ramp = op->index.as<RampNode>();
  if (ramp && is_const_int(ramp->stride, 1)) {
    llvm::Value* ptr = builder_.CreateInBoundsGEP(mem, buffer.ptr, emit_index(ramp->base));
    if (active && detail::whole_in_slot(buffer.slot_bytes, ramp->base, lanes, element)) {
      llvm::LoadInst* old = builder_.CreateAlignedLoad(v->getType(), ptr, align);
      tag_access(old, buffer.scope);
      v = builder_.CreateSelect(active, v, old);
      active = nullptr;
    }
    if (nontemporal_depth_ > 0 && buffer.argument && !nontemporal_loaded_.count(op->buffer.get()))
      access = nontemporal_store(v, ptr, align, buffer.scope, active);
    else if (active)
      access = builder_.CreateMaskedStore(v, ptr, align, active);
    else
      access = builder_.CreateAlignedStore(v, ptr, align);
  } else if (store_runs(op->index, v, align, active, buffer.ptr, buffer.scope)) {
    mask_ = saved;
    return;
  } else {
    // A scatter writes lanes in order, so with repeated indices the last active lane wins.
    llvm::Value* ptrs = builder_.CreateInBoundsGEP(mem, buffer.ptr, emit_index(op->index));
    access = builder_.CreateMaskedScatter(v, ptrs, align, active);
  }
  mask_ = saved;
  tag_access(access, buffer.scope);
}

namespace detail {
/// Elements [from, from + count) of `lanes` (all from `from` when count is 0) as a shuffle mask.
inline llvm::SmallVector<int, 64> shuffle_mask(const std::vector<int>& lanes, size_t from = 0,
                                               size_t count = 0) {
  if (count == 0) count = lanes.size() - from;
  return llvm::SmallVector<int, 64>(lanes.begin() + static_cast<std::ptrdiff_t>(from),
                                    lanes.begin() + static_cast<std::ptrdiff_t>(from + count));
}
}  // namespace detail

// Where each run of a gather or scatter as runs starts, and which of `active`'s lanes (null: all)
// it covers. With a mask the addresses are computed without `inbounds`: a run whose lanes are all
// off may start outside the buffer, and its masked access then touches nothing.
inline std::vector<std::pair<llvm::Value*, llvm::Value*>> CodeGenLLVM::run_accesses(
    const LaneOffsets& offsets, const LaneRuns& runs, llvm::Type* mem, llvm::Value* buffer,
    llvm::Value* active) {
  llvm::Value* base = emit_index(offsets.base);
  std::vector<std::pair<llvm::Value*, llvm::Value*>> out;
  for (size_t r = 0; r < runs.starts.size(); ++r) {
    llvm::Value* at = builder_.CreateAdd(base, builder_.getInt64(static_cast<uint64_t>(runs.starts[r])));
    llvm::Value* ptr =
        active ? builder_.CreateGEP(mem, buffer, at) : builder_.CreateInBoundsGEP(mem, buffer, at);
    const size_t length = static_cast<size_t>(runs.length);
    llvm::Value* run_active =
        active ? builder_.CreateShuffleVector(active, detail::shuffle_mask(runs.lane_of, r * length, length))
               : nullptr;
    out.emplace_back(ptr, run_active);
  }
  return out;
}

// A gather whose lanes read a few contiguous runs: one vector load per run (masked by the lanes
// that read it), the runs joined end to end, and one shuffle into lane order. The runs read just the
// elements the lanes do. LLVM turns the shuffles of an interleave into unpacks and permutes: the
// pairs of bfloat16 that a packed panel takes from two rows of B were 32 scalar loads and inserts.
// With a mask, a branch takes plain loads where every lane is active (all but the last vectors of
// a padded copy): splitting the mask into the runs' lanes and the masked loads cost several times
// the loads (lib::gemm 8-bit, 64 x 4090 x 512, its copy of B masked at column 4090: one Zen 5 core
// 0.44 -> 0.30 ms, as with 4096 columns).
inline llvm::Value* CodeGenLLVM::load_runs(const Expr& index, llvm::Type* mem, llvm::Align align,
                                           llvm::Value* active, llvm::Value* buffer, int scope) {
  auto found = access_as_runs(index);
  if (!found) return nullptr;
  const auto& [offsets, runs] = *found;
  llvm::Type* run_type = with_lanes(mem, static_cast<int>(runs.length));
  // The runs' loads (masked by `mask`, null: none), joined and shuffled into lane order.
  auto load = [&](llvm::Value* mask) {
    std::vector<llvm::Value*> parts;
    for (auto [ptr, run_active] : run_accesses(offsets, runs, mem, buffer, mask)) {
      llvm::Instruction* part =
          run_active ? static_cast<llvm::Instruction*>(builder_.CreateMaskedLoad(
                           run_type, ptr, align, run_active, llvm::Constant::getNullValue(run_type)))
                     : builder_.CreateAlignedLoad(run_type, ptr, align);
      tag_access(part, scope);
      parts.push_back(part);
    }
    // Join pairs of equal parts until one is left (the count of runs is a power of two).
    while (parts.size() > 1) {
      std::vector<llvm::Value*> joined;
      const unsigned width = llvm::cast<llvm::FixedVectorType>(parts[0]->getType())->getNumElements();
      std::vector<int> both(2 * width);
      std::iota(both.begin(), both.end(), 0);
      for (size_t i = 0; i < parts.size(); i += 2)
        joined.push_back(builder_.CreateShuffleVector(parts[i], parts[i + 1], detail::shuffle_mask(both)));
      parts = std::move(joined);
    }
    return builder_.CreateShuffleVector(parts[0], detail::shuffle_mask(runs.source));
  };
  if (!active || llvm::isa<llvm::Constant>(active)) return load(active);
  return emit_branches(
      all_lanes(active), "runs", [&] { return load(nullptr); }, [&] { return load(active); });
}

/// Whether every lane of the mask `active` (a vector of i1) is on.
inline llvm::Value* CodeGenLLVM::all_lanes(llvm::Value* active) {
  const unsigned lanes =
      static_cast<unsigned>(llvm::cast<llvm::FixedVectorType>(active->getType())->getNumElements());
  llvm::Value* bits = builder_.CreateBitCast(active, builder_.getIntNTy(lanes));
  return builder_.CreateICmpEQ(bits, llvm::Constant::getAllOnesValue(bits->getType()));
}

// A scatter whose lanes write a few contiguous runs: each run's part of the value gathered by a
// shuffle, and one (masked) vector store per run. The runs write just the elements the lanes do,
// each once; the value and the base are computed before the first store.
inline bool CodeGenLLVM::store_runs(const Expr& index, llvm::Value* v, llvm::Align align, llvm::Value* active,
                                    llvm::Value* buffer, int scope) {
  auto found = access_as_runs(index);
  if (!found) return false;
  const auto& [offsets, runs] = *found;
  llvm::Type* mem = llvm::cast<llvm::VectorType>(v->getType())->getElementType();
  const size_t length = static_cast<size_t>(runs.length);
  size_t r = 0;
  for (auto [ptr, run_active] : run_accesses(offsets, runs, mem, buffer, active)) {
    llvm::Value* part =
        builder_.CreateShuffleVector(v, detail::shuffle_mask(runs.lane_of, r++ * length, length));
    tag_access(run_active
                   ? static_cast<llvm::Instruction*>(builder_.CreateMaskedStore(part, ptr, align, run_active))
                   : builder_.CreateAlignedStore(part, ptr, align),
               scope);
  }
  return true;
}

/// A vector stored to a parameter in a loop marked pragma(axis, "nontemporal_stores"), which the
/// loop does not read: a streaming store, which writes the line without reading it first and leaves it
/// out of the caches (C of a GEMM with short K, written once and too large to stay cached, costs half
/// the memory traffic). x86's streaming stores fault at an address not aligned to the vector, which a
/// parameter does not promise, and write every lane, so the address and the mask (`active`, null:
/// every lane) are tested: aligned with every lane active, the streaming store; otherwise an ordinary
/// (masked) one. Vectors of other than 16, 32, 64 or a multiple of 64 bytes are stored as usual. Both
/// stores carry the buffer's alias scope; returns the one the caller tags (the streaming one, or the
/// only one).
inline llvm::Instruction* CodeGenLLVM::nontemporal_store(llvm::Value* v, llvm::Value* ptr, llvm::Align align,
                                                         int scope, llvm::Value* active) {
  auto ordinary = [&]() -> llvm::Instruction* {
    if (active) return builder_.CreateMaskedStore(v, ptr, align, active);
    return builder_.CreateAlignedStore(v, ptr, align);
  };
  const uint64_t bytes = module_->getDataLayout().getTypeStoreSize(v->getType()).getFixedValue();
  if (!(bytes == 16 || bytes == 32 || (bytes >= 64 && bytes % 64 == 0))) return ordinary();
  const uint64_t needed = std::min<uint64_t>(bytes, 64);
  llvm::Value* offset = builder_.CreateAnd(builder_.CreatePtrToInt(ptr, i64_type()), needed - 1);
  llvm::Value* whole = builder_.CreateICmpEQ(offset, builder_.getInt64(0));
  if (active) whole = builder_.CreateAnd(whole, all_lanes(active));
  llvm::BasicBlock* streamed = llvm::BasicBlock::Create(ctx_, "store.nontemporal", fn_.function);
  llvm::BasicBlock* cached = llvm::BasicBlock::Create(ctx_, "store.cached", fn_.function);
  llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "store.done", fn_.function);
  builder_.CreateCondBr(whole, streamed, cached);
  builder_.SetInsertPoint(streamed);
  // LLVM 19's x86 back end drops the hint on vectors of float16 (without AVX512-FP16 it stores their
  // bits as integers, and a bitcast to them here is folded back): those stores stay ordinary.
  llvm::StoreInst* stream = builder_.CreateAlignedStore(v, ptr, llvm::Align(needed));
  stream->setMetadata(llvm::LLVMContext::MD_nontemporal,
                      llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(builder_.getInt32(1))}));
  builder_.CreateBr(merge);
  builder_.SetInsertPoint(cached);
  tag_access(ordinary(), scope);
  builder_.CreateBr(merge);
  builder_.SetInsertPoint(merge);
  return stream;
}

/// Orders the streaming stores before what follows (the end of a nontemporal_stores loop, or of a
/// thread's share of one): they are weakly ordered, so without it another thread told that the loop
/// finished could read C before they land. sfence on x86, a full fence elsewhere.
inline void CodeGenLLVM::store_fence() {
  if (llvm::Triple(module_->getTargetTriple()).isX86())
    builder_.CreateCall(llvm::Intrinsic::getDeclaration(module_.get(), llvm::Intrinsic::x86_sse_sfence));
  else
    builder_.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
}

/// Memory for the body's lifetime, zero-filled like the interpreter's (unless the body provably
/// overwrites all of it before reading any: then no one can tell) and 64-byte aligned. Small
/// buffers of constant size live in the function's stack frame (one slot, zeroed each time the
/// Allocate runs); the rest come from loom_rt_alloc, freed at the end and on every error exit.
inline void CodeGenLLVM::emit_allocate(const AllocateNode* op) {
  constexpr int64_t kMaxStackBuffer = int64_t{64} << 10;
  constexpr int64_t kMaxStackPerFunction = int64_t{256} << 10;
  const int64_t element_bytes = int64_t{op->dtype.bytes()} * op->dtype.lanes;
  int64_t total = element_bytes;
  bool constant = true;
  for (const Expr& e : op->extents) {
    const int64_t* v = as_const_int(e);
    if (!v || *v < 0 || __builtin_mul_overflow(total, *v, &total)) constant = false;
  }
  auto scope_it = allocation_scopes_.find(op->buffer.get());
  const int scope = scope_it == allocation_scopes_.end() ? -1 : scope_it->second;
  const std::string name = op->buffer.name();
  const bool zero_fill = !written_before_read(*op);

  if (constant && total <= kMaxStackBuffer && fn_.stack_bytes + total <= kMaxStackPerFunction) {
    fn_.stack_bytes += total;
    llvm::AllocaInst* slot = static_alloca(
        llvm::ArrayType::get(builder_.getInt8Ty(), static_cast<uint64_t>(std::max<int64_t>(total, 1))), 64,
        name.c_str());
    if (total > 0 && zero_fill)
      builder_.CreateMemSet(slot, builder_.getInt8(0), static_cast<uint64_t>(total), llvm::Align(64));
    bind_buffer(op->buffer, BufferBinding{slot, scope, name, total});
    emit_stmt(op->body);
    unbind_buffer(op->buffer);
    return;
  }

  const size_t rank = op->extents.size();
  llvm::AllocaInst* extents =
      static_alloca(llvm::ArrayType::get(i64_type(), std::max<size_t>(rank, 1)), 8, "alloc_extents");
  for (size_t d = 0; d < rank; ++d) {
    builder_.CreateStore(extend_to_i64(emit(op->extents[d]), op->extents[d].dtype()),
                         builder_.CreateConstInBoundsGEP1_64(i64_type(), extents, d));
  }
  llvm::FunctionCallee alloc = runtime_function(
      "loom_rt_alloc", ptr_type(), {ptr_type(), ptr_type(), i64_type(), i32_type(), ptr_type(), i32_type()});
  llvm::CallInst* memory = builder_.CreateCall(
      alloc, {fn_.ctx, string_constant(name), builder_.getInt64(static_cast<uint64_t>(element_bytes)),
              builder_.getInt32(static_cast<uint32_t>(rank)), extents, builder_.getInt32(zero_fill ? 1 : 0)});
  // Sound facts about loom_rt_alloc: fresh memory (nothing else points into it), 64-byte aligned.
  memory->addRetAttr(llvm::Attribute::NoAlias);
  memory->addRetAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
  fail_if(builder_.CreateIsNull(memory), "");  // loom_rt_alloc said why
  fn_.heap.push_back(memory);
  bind_buffer(op->buffer, BufferBinding{memory, scope, name});
  emit_stmt(op->body);
  unbind_buffer(op->buffer);
  fn_.heap.pop_back();
  builder_.CreateCall(runtime_function("loom_rt_free", builder_.getVoidTy(), {ptr_type()}), {memory});
}

/// A hint, never a read: the address may be anywhere (the interpreter ignores prefetches).
inline void CodeGenLLVM::emit_prefetch(const PrefetchNode* op) {
  const LoadNode* load = op->location.as<LoadNode>();
  if (!load) return;
  const BufferBinding buffer = lookup_buffer(load->buffer);
  llvm::Type* mem = memory_type(load->dtype.element_of());
  const RampNode* ramp = load->index.as<RampNode>();
  llvm::Value* index = ramp ? emit_index(ramp->base) : lane0(emit_index(load->index));
  llvm::Value* ptr = builder_.CreateGEP(mem, buffer.ptr, index);  // not inbounds: it may point anywhere
  llvm::CallInst* hint = builder_.CreateIntrinsic(
      llvm::Intrinsic::prefetch, {ptr_type()},
      {ptr, builder_.getInt32(op->read_write ? 1 : 0),
       builder_.getInt32(static_cast<uint32_t>(std::clamp(op->locality, 0, 3))), builder_.getInt32(1)});
  // LLVM counts a prefetch as an access to its argument's memory: untagged, it may alias every
  // buffer, and a loop that prefetches keeps its accumulators' stores in the loop (a GEMM's register
  // tile written back every k: 3x slower). In its buffer's scope it aliases only that buffer, which
  // is sound for a hint that neither reads nor writes.
  tag_access(hint, buffer.scope);
}

}  // namespace loom::codegen

// Storage flattening: every multi-dimensional tensor becomes flat memory. Realize becomes
// Allocate (strides padded by storage_align, TVM's rule), Provide becomes Store, and reads
// become Loads at the row-major offset (relative to the realized region's origin).
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/extern_call.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/lower/inject_double_buffer.hpp"
#include "loom/lower/inject_pipeline.hpp"
#include "loom/lower/schedule_ops.hpp"

namespace loom {

/// A tensor laid out in flat memory.
struct FlatBuffer {
  Var data;
  DType dtype;
  std::vector<Expr> mins;     // the realized region's origin (zero for arguments)
  std::vector<Expr> extents;  // the realized region's extents
  std::vector<Expr> strides;  // in elements
  SwizzleLayout swizzle;      // applied to the row-major offset (schedule/impl/swizzle.hpp)
  std::string scope;          // the Realize's; empty for arguments
};

/// Strides of a row-major layout with TVM's storage_align rule applied to aligned dims:
/// stride = stride + (factor + offset - stride % factor) % factor.
inline std::vector<Expr> aligned_strides(const std::vector<Expr>& extents,
                                         const std::vector<StorageAlign>& align) {
  Analyzer analyzer;
  std::vector<Expr> strides(extents.size());
  Expr stride = extents.empty() ? Expr(1) : make_int_const(extents[0].dtype(), 1);
  for (size_t d = extents.size(); d-- > 0;) {
    for (const StorageAlign& a : align) {
      if (a.dim != static_cast<int>(d) || a.factor == 0) continue;
      Expr factor = make_int_const(stride.dtype(), a.factor),
           offset = make_int_const(stride.dtype(), a.offset);
      stride = analyzer.simplify(stride + floormod(factor + offset - floormod(stride, factor), factor));
    }
    strides[d] = stride;
    stride = analyzer.simplify(stride * extents[d]);
  }
  return strides;
}

namespace detail {

class StorageFlattener : public IRMutator {
 public:
  StorageFlattener(std::unordered_map<TensorKey, FlatBuffer, TensorKeyHash> params, TensorAliasMap aliases,
                   std::unordered_map<TensorKey, std::vector<StorageAlign>, TensorKeyHash> align,
                   TensorSet double_buffer,
                   std::unordered_map<TensorKey, SwizzleLayout, TensorKeyHash> swizzle = {},
                   std::unordered_map<TensorKey, int, TensorKeyHash> pipelined = {})
      : buffers_(std::move(params)),
        aliases_(std::move(aliases)),
        align_(std::move(align)),
        double_buffer_(std::move(double_buffer)),
        swizzle_(std::move(swizzle)),
        pipelined_(std::move(pipelined)) {}

  /// The call and kernel that messages name ("lower", "main" by default).
  void set_caller(const std::string& entry, const std::string& kernel) {
    entry_ = entry;
    caller_ = cat(entry, " '", kernel, "'");
  }
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  const FlatBuffer& buffer_of(const Producer& p, const char* use) {
    TensorKey key(p);
    auto alias = aliases_.find(key);
    if (alias != aliases_.end()) key = TensorKey(alias->second);
    auto it = buffers_.find(key);
    if (it == buffers_.end()) {
      Tensor t = as_tensor(p);
      if (t.op()->kind == OpKind::Placeholder)
        throw Error(cat(caller_, ": placeholder '", t.name(), "' is ", use,
                        " but is not an argument; add it to the arguments (", entry_, "(s, {", t.name(),
                        ", ...}, ...))"));
      throw InternalError(cat("no storage for tensor '", t.name(), "' where it is ", use));
    }
    return it->second;
  }

  Expr flat_index(const FlatBuffer& b, const std::vector<Expr>& indices) {
    Expr index;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr offset = is_zero(b.mins[d]) ? indices[d] : indices[d] - b.mins[d];
      Expr term = is_one(b.strides[d]) ? offset : offset * b.strides[d];
      index = index.defined() ? index + term : term;
    }
    if (!index.defined()) index = Expr(0);
    return b.swizzle.defined() ? b.swizzle.apply(index) : index;
  }

  /// A swizzle permutes aligned blocks of period() elements; each row must hold whole blocks.
  void check_swizzle(const Tensor& t, const FlatBuffer& b, const std::string& scope, const Expr& size) {
    const std::string where = cat("swizzle ", b.swizzle.str(), " of stage '", t.name(), "'");
    if (!is_shared_scope(scope))
      throw Error(cat(where, ": the buffer is in scope '", scope.empty() ? scope::global : scope,
                      "' when it is lowered; swizzle only shared-memory buffers"));
    Expr row = b.strides.size() >= 2 ? b.strides[b.strides.size() - 2] : size;
    const int64_t* n = as_const_int(row);
    if (!n)
      throw Error(cat(where, ": its row length ", to_string(row),
                      " is not a constant; a swizzle needs rows of a known number of elements"));
    if (*n % b.swizzle.period() != 0)
      throw Error(cat(where, " permutes blocks of 2^(base+bits) = ", b.swizzle.period(),
                      " elements, but a row of '", t.name(), "' has ", *n,
                      " elements; choose base + bits so that 2^(base+bits) divides ", *n));
  }

  Stmt visit(const RealizeNode* op) override {
    Tensor t = as_tensor(op->producer);
    FlatBuffer b;
    b.data = Var(t.name(), handle_type);
    b.dtype = t.dtype();
    for (const Range& r : op->bounds) {
      b.mins.push_back(r.min);
      b.extents.push_back(r.extent);
    }
    auto align = align_.find(TensorKey(t));
    b.strides =
        aligned_strides(b.extents, align == align_.end() ? std::vector<StorageAlign>{} : align->second);
    b.scope = op->scope;
    Expr size = b.extents.empty() ? Expr(1) : analyzer_.simplify(b.strides[0] * b.extents[0]);
    if (op->scope == scope::fragment) size = lane_share(t, size);
    auto swizzle = swizzle_.find(TensorKey(t));
    if (swizzle != swizzle_.end()) {
      b.swizzle = swizzle->second;
      check_swizzle(t, b, op->scope, size);
    }
    buffers_[TensorKey(t)] = b;
    Stmt body = mutate(op->body);
    buffers_.erase(TensorKey(t));
    Stmt alloc = AllocateNode::make(b.data, b.dtype, {size}, op->scope, body);
    if (double_buffer_.count(TensorKey(t)))
      alloc = AttrStmtNode::make(attr::double_buffer_scope, b.data, Expr(1), alloc);
    if (auto stages = pipelined_.find(TensorKey(t)); stages != pipelined_.end())
      alloc = AttrStmtNode::make(attr::pipeline_stages, b.data, Expr(stages->second), alloc);
    if (b.swizzle.defined())  // shows in the printed IR; every pass and backend looks through it
      alloc = AttrStmtNode::make(attr::swizzle, b.data, StringImmNode::make(b.swizzle.str()), alloc);
    return alloc;
  }

  /// A fragment's allocation in each lane: its 1/32 of the warp's tile.
  Expr lane_share(const Tensor& t, const Expr& size) {
    const int64_t* n = as_const_int(size);
    if (!n || *n % 32 != 0)
      throw Error(cat("stage '", t.name(), "' is in scope ", scope::fragment, ", which spreads ",
                      to_string(size),
                      " elements over the 32 lanes of a warp; the region it is computed for must have a "
                      "constant number of elements that 32 divides (whole tensor-intrinsic tiles: compute it "
                      "at a loop whose tile is a multiple of the intrinsic's)"));
    return make_int_const(size.dtype(), *n / 32);
  }

  /// Only tensor intrinsics know which lane holds which element of a fragment.
  void check_not_fragment(const FlatBuffer& b, const std::string& tensor, const char* use) {
    if (b.scope != scope::fragment) return;
    std::string who = writer_.empty() || writer_ == tensor ? std::string() : cat(" by stage '", writer_, "'");
    throw Error(cat("'", tensor, "' is in scope ", scope::fragment,
                    " (a warp's tile spread over its lanes' registers), but it is ", use, who,
                    " element by element, outside a tensorized loop; tensorize the loops of every stage that "
                    "reads or writes it with intrinsics that know the fragment layout (ptx_tensor:: in "
                    "te/ptx_tensor_intrins.hpp), or use scope \"local\""));
  }

  Stmt visit(const ProvideNode* op) override {
    const FlatBuffer& b = buffer_of(op->producer, "written");
    const std::string name = as_tensor(op->producer).name();
    check_not_fragment(b, name, "written");
    const std::string outer = std::exchange(writer_, name);
    Expr value = mutate(op->value);
    writer_ = outer;
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, changed);
    return StoreNode::make(b.data, value, flat_index(b, indices));
  }

  Expr visit(const ProducerLoadNode* op) override {
    const FlatBuffer& b = buffer_of(op->producer, "read");
    check_not_fragment(b, as_tensor(op->producer).name(), "read");
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, changed);
    return LoadNode::make(b.dtype, b.data, flat_index(b, indices));
  }

  /// A tensorized nest: the intrinsic's builder writes the code for the operands' windows.
  Stmt visit(const EvaluateNode* op) override {
    const auto* call = op->value.as<CallNode>();
    if (!call || call->name != intrinsic::tensorize_call) return IRMutator::visit(op);
    TensorIntrin intrin = TensorIntrinRegistry::global().get(call->args[0].as<IntImmNode>()->value);
    auto part = static_cast<IntrinPart>(call->args[1].as<IntImmNode>()->value);
    int64_t n_in = call->args[2].as<IntImmNode>()->value;
    const auto* ic = static_cast<const ComputeOpNode*>(intrin->op.get());
    std::vector<Tensor> intrin_inputs = ic->input_tensors();
    std::vector<BufferRegion> inputs, outputs;
    for (size_t i = 4; i + 1 < call->args.size(); i += 2) {
      const auto* load = call->args[i].as<ProducerLoadNode>();
      size_t dropped = static_cast<size_t>(call->args[i + 1].as<IntImmNode>()->value);
      bool is_input = static_cast<int64_t>((i - 4) / 2) < n_in;
      // The init runs where the reduction starts, which may be outside the loop that computes an
      // input (a packed panel computed per K block): it writes only the outputs and sees no inputs.
      if (is_input && part == IntrinPart::ReduceInit) continue;
      const FlatBuffer& b = buffer_of(load->producer, "handed to a tensor intrinsic");
      if (b.swizzle.defined())
        throw Error(cat("tensor intrinsic '", intrin->name, "': operand '", b.data.name(), "' is swizzled (",
                        b.swizzle.str(),
                        "), but an intrinsic sees its operands as strided windows; remove the swizzle"));
      BufferRegion region;
      region.data = b.data;
      region.dtype = b.dtype;
      bool changed = false;
      region.elem_offset = analyzer_.simplify(flat_index(b, mutate_all(load->indices, changed)));
      region.strides.assign(b.strides.begin() + static_cast<std::ptrdiff_t>(dropped), b.strides.end());
      region.shape = is_input ? intrin_inputs[inputs.size()].shape() : ic->shape;
      region.scope = b.scope;
      (is_input ? inputs : outputs).push_back(region);
    }
    const IntrinBody& build = part == IntrinPart::Body         ? intrin->body
                              : part == IntrinPart::ReduceInit ? intrin->reduce_init
                                                               : intrin->reduce_update;
    Stmt code = build(inputs, outputs);
    if (!code.defined())
      throw Error(cat("tensor intrinsic '", intrin->name, "': its body builder returned no statement"));
    return code;
  }

  Expr visit(const CallNode* op) override {
    if (op->name != intrinsic::extern_stage_tensors) return IRMutator::visit(op);
    ExternStageCall call;
    call.function_id = op->args[0].as<IntImmNode>()->value;
    int64_t n_in = op->args[1].as<IntImmNode>()->value;
    for (size_t i = 3; i < op->args.size(); ++i) {
      const auto* load = op->args[i].as<ProducerLoadNode>();
      const FlatBuffer& b = buffer_of(load->producer, "passed to an extern stage");
      if (b.scope == scope::fragment)
        throw Error(cat("extern stage: buffer '", b.data.name(), "' is in scope ", scope::fragment,
                        " (a warp's tile spread over its lanes' registers), which no C function can read; "
                        "give the extern stage a buffer in another scope"));
      if (b.swizzle.defined())
        throw Error(cat("extern stage: buffer '", b.data.name(), "' is swizzled (", b.swizzle.str(),
                        "), but an extern function sees buffers as strided arrays; remove the swizzle"));
      ExternBufferArg arg{b.data, b.dtype, b.extents, b.strides};
      (static_cast<int64_t>(i - 3) < n_in ? call.inputs : call.outputs).push_back(arg);
    }
    return call.encode();
  }

 private:
  std::unordered_map<TensorKey, FlatBuffer, TensorKeyHash> buffers_;
  TensorAliasMap aliases_;
  std::unordered_map<TensorKey, std::vector<StorageAlign>, TensorKeyHash> align_;
  TensorSet double_buffer_;
  std::unordered_map<TensorKey, SwizzleLayout, TensorKeyHash> swizzle_;
  std::unordered_map<TensorKey, int, TensorKeyHash> pipelined_;  // Stage::pipeline's slots
  Analyzer analyzer_;
  std::string writer_;  // the stage whose Provide is being flattened, for messages
  std::string entry_ = "lower", caller_ = "lower 'main'";
};

}  // namespace detail

/// Flattens `body`; `params` gives the flat layout of each argument tensor.
/// Messages name the call `entry` (lower or build) and the kernel `kernel`.
inline Stmt storage_flatten(const Stmt& body, const ScheduleNode& sch,
                            const std::unordered_map<TensorKey, FlatBuffer, TensorKeyHash>& params,
                            const std::string& entry = "lower", const std::string& kernel = "main") {
  std::unordered_map<TensorKey, std::vector<StorageAlign>, TensorKeyHash> align;
  TensorSet double_buffer;
  std::unordered_map<TensorKey, SwizzleLayout, TensorKeyHash> swizzle;
  std::unordered_map<TensorKey, int, TensorKeyHash> pipelined;
  for (const Ref<StageNode>& s : sch.stages) {
    for (int k = 0; k < s->origin_op->num_outputs(); ++k) {
      if (s->swizzle.defined()) swizzle[TensorKey(s->origin_op->output(k))] = s->swizzle;
      if (!s->storage_align.empty()) align[TensorKey(s->origin_op->output(k))] = s->storage_align;
      if (s->double_buffer) double_buffer.insert(TensorKey(s->origin_op->output(k)));
      if (s->pipeline_stages > 0) pipelined[TensorKey(s->origin_op->output(k))] = s->pipeline_stages;
    }
  }
  detail::StorageFlattener flattener(params, storage_aliases(sch), std::move(align), std::move(double_buffer),
                                     std::move(swizzle), std::move(pipelined));
  flattener.set_caller(entry, kernel);
  return flattener.mutate(body);
}

}  // namespace loom

// Warp intrinsics: instructions that a whole warp executes together, each lane passing the
// addresses of its operands (mma.sync's register fragments, ldmatrix's shared-memory rows). One
// definition gives both what the CUDA backend emits (usually PTX inline assembly) and what the GPU
// simulator does (a function over the 32 lanes' operand memory), so that a kernel using it runs
// the same in both. The built-in PTX instructions are defined in te/ptx_intrinsics.hpp; users
// register their own with WarpIntrinsicRegistry::global().add().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/ir/expr.hpp"
#include "loom/support/error.hpp"

namespace loom {

namespace intrinsic {
/// Evaluate(call): args are a StringImm naming the warp intrinsic, then per operand, in the
/// intrinsic's order, address_of(Load(buffer, index)) or, for a value operand, the value.
inline constexpr const char* warp_intrinsic = "loom.warp_intrinsic";
}  // namespace intrinsic

/// Where an operand lives: a thread's registers ("local" buffers), the block's shared memory, or
/// global memory.
enum class WarpOperandSpace { Local, Shared, Global };

inline const char* space_name(WarpOperandSpace s) {
  switch (s) {
    case WarpOperandSpace::Local: return "local";
    case WarpOperandSpace::Shared: return "shared";
    case WarpOperandSpace::Global: return "global";
  }
  return "?";
}

/// One operand: what each lane passes, and how much memory at that address the instruction uses.
/// An operand may also be a value (`value`): an integer each lane computes, not an address.
struct WarpOperandSpec {
  std::string name;  // for messages: "d", "a", "src"
  WarpOperandSpace space = WarpOperandSpace::Local;
  bool reads = true, writes = false;
  int bytes = 4;                 // per lane, at the lane's address
  int align = 4;                 // the address must be a multiple of this many bytes
  std::vector<DType> dtypes;     // the buffer's element type: one of these (empty: any)
  uint32_t lanes = 0xffffffffu;  // the lanes whose address is used (ldmatrix.x1: 0-7)
  bool value = false;            // an integer value, not an address
  /// >= 0: the value operand that says how many of `bytes` are used (cp.async's src-size).
  int bytes_from = -1;
};

/// What an instruction does beyond its semantics function, for the simulator: cp.async copies
/// land at a later wait_group, so their copy, commit and wait are modelled by the simulator itself.
enum class WarpAsyncRole { None, Copy, Commit, Wait };

/// The operands' memory, lane by lane, as the simulator hands it to a semantics function: the
/// address of operand `o` of lane `l` (null where the lane does not use it). Semantics functions
/// read every input before writing any output, as operands may overlap (mma's C and D).
class WarpLanes {
 public:
  static constexpr int kMaxOperands = 8;
  std::byte* at(int lane, int operand) const { return ptr_[lane][operand]; }
  void set(int lane, int operand, std::byte* p) { ptr_[lane][operand] = p; }

  int64_t value(int lane, int operand) const { return values_[lane][operand]; }
  void set_value(int lane, int operand, int64_t v) { values_[lane][operand] = v; }

  template <typename T>
  T read(int lane, int operand, int element) const {
    T v;
    std::memcpy(&v, at(lane, operand) + element * static_cast<int>(sizeof(T)), sizeof(T));
    return v;
  }
  template <typename T>
  void write(int lane, int operand, int element, T v) const {
    std::memcpy(at(lane, operand) + element * static_cast<int>(sizeof(T)), &v, sizeof(T));
  }

 private:
  std::array<std::array<std::byte*, kMaxOperands>, 32> ptr_{};
  std::array<std::array<int64_t, kMaxOperands>, 32> values_{};
};

struct WarpIntrinsic {
  std::string name;  // "ptx.mma.m16n8k16.row.col.f32.f16.f16.f32"
  std::vector<WarpOperandSpec> operands;
  /// The oldest architecture with the instruction (sm_80: 80).
  int min_sm = 0;
  /// CUDA statement(s) for one call, given the C text of each operand's address (a pointer to its
  /// buffer's element type).
  std::function<std::string(const std::vector<std::string>& addresses)> cuda;
  /// What the warp computes, over all 32 lanes (the simulator has checked every used address).
  std::function<void(const WarpLanes&)> simulate;
  /// Cycles the simulator's clock charges the warp beyond its memory accesses (issue and latency
  /// of the math units; shared and global accesses are charged by the memory model).
  int cycles = 1;
  /// Whether all 32 lanes must execute it together (.sync.aligned); else each active lane alone,
  /// and `simulate` sees null addresses for the inactive lanes.
  bool collective = true;
  WarpAsyncRole async = WarpAsyncRole::None;  // built-in cp.async only
  int wait_groups = 0;                        // for Wait: the groups that may stay in flight
};

/// The intrinsics users add (the built-ins are looked up first, see find_warp_intrinsic).
class WarpIntrinsicRegistry {
 public:
  static WarpIntrinsicRegistry& global() {
    static WarpIntrinsicRegistry registry;
    return registry;
  }
  void add(WarpIntrinsic w) {
    if (w.name.empty() || w.name.rfind("ptx.", 0) == 0)
      throw Error(cat("warp intrinsic '", w.name,
                      "': names beginning with \"ptx.\" belong to Loom's built-in instructions; choose "
                      "another name"));
    if (w.operands.empty() || w.operands.size() > WarpLanes::kMaxOperands)
      throw Error(cat("warp intrinsic '", w.name, "' has ", w.operands.size(), " operands; give 1 to ",
                      WarpLanes::kMaxOperands));
    if (w.async != WarpAsyncRole::None)
      throw Error(cat("warp intrinsic '", w.name, "': asynchronous copies are built in (ptx.cp.async.*)"));
    if (!w.cuda || !w.simulate)
      throw Error(cat("warp intrinsic '", w.name,
                      "' needs both its CUDA text (cuda) and its semantics for the simulator (simulate)"));
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.count(w.name)) throw Error(cat("warp intrinsic '", w.name, "' is already registered"));
    std::string key = w.name;
    entries_.emplace(std::move(key), std::make_shared<const WarpIntrinsic>(std::move(w)));
  }
  const WarpIntrinsic* find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : it->second.get();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const WarpIntrinsic>> entries_;
};

/// One operand of a call: element `index` of `buffer` (whose elements are `dtype`); for a value
/// operand, `buffer` is undefined and `index` is the value.
struct WarpOperand {
  Var buffer;
  DType dtype;
  Expr index;
};

/// The call's name and operands, as the backends read them.
struct WarpIntrinsicCall {
  std::string name;
  std::vector<WarpOperand> operands;

  static WarpIntrinsicCall decode(const CallNode* call) {
    internal_check(call->name == intrinsic::warp_intrinsic && !call->args.empty(),
                   "not a warp intrinsic call");
    const StringImmNode* name = call->args[0].as<StringImmNode>();
    internal_check(name != nullptr, "a warp intrinsic call names its intrinsic first");
    WarpIntrinsicCall c{name->value, {}};
    for (size_t i = 1; i < call->args.size(); ++i) {
      const CallNode* address = call->args[i].as<CallNode>();
      const LoadNode* load = address && address->name == intrinsic::address_of && address->args.size() == 1
                                 ? address->args[0].as<LoadNode>()
                                 : nullptr;
      if (load) {
        c.operands.push_back({load->buffer, load->dtype, load->index});
      } else {
        c.operands.push_back({Var(), call->args[i].dtype(), call->args[i]});  // a value operand
      }
    }
    return c;
  }
};

}  // namespace loom

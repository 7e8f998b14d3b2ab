// What the interpreter's compiler records about one kernel region for the GPU simulator: its
// launch loops (one per thread-bound loop, with extents evaluated at launch), shared buffers and
// shared-memory access instructions, and the global buffers the global race check watches.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/interp/expr_nodes.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/vector_access.hpp"
#include "loom/sim/session.hpp"

namespace loom::sim {

/// A loop bound to a launch index. Its extent is a host expression, evaluated when the kernel
/// is launched; together the extents give the grid and block dimensions.
struct LaunchLoop {
  int launch_index = 0;
  std::string var_name;
  interp::IntExprPtr extent;
};

/// One shared-memory Load or Store node of the kernel: every time a warp executes it, that is one
/// access instruction of the bank model.
struct SharedAccessInfo {
  int buffer = 0;  // index in KernelInfo::shared_buffers
  bool is_store = false;
  /// A vector Load or Store that generated code moves in pieces of this many bytes, consecutive
  /// lanes each (ir/vector_access.hpp); 0: one instruction per lane, as recorded (scalars, gathers,
  /// guarded vectors, warp intrinsics' operands).
  int vector_bytes = 0;
};

/// A global buffer the kernel writes, whose accesses the global race check watches
/// (sim/global_races.hpp): its frame slot (the host's, where its address is at launch), its name,
/// and the shadow's granule, the smallest element any access to it uses (two threads writing
/// neighbouring halves of one word do not race).
struct TrackedGlobal {
  int slot = 0;
  std::string name;
  int granule = 4;
};

/// A global access instruction as the race check sees it: the TrackedGlobal it touches (-1: a
/// buffer the kernel only reads, which cannot race) and whether it writes.
struct GlobalRaceSite {
  int tracked = -1;
  bool is_write = false;
};

struct KernelInfo {
  std::string name;
  std::vector<LaunchLoop> loops;
  std::vector<SharedBufferInfo> shared_buffers;  // one per shared Allocate node of the kernel
  /// The planned shared memory the buffers with a planned_offset share: its size, and the
  /// granule of its race shadow (the smallest element size among them).
  int64_t planned_bytes = 0;
  int planned_granule = 16;
  std::vector<SharedAccessInfo> accesses;  // by access id
  bool has_sync = false;                   // any barrier or thread_allreduce
  bool has_flag_wait = false;              // any loom.flag_wait: its blocks may have to suspend
  /// The global Load and Store nodes, numbered like `accesses`: each is one memory instruction
  /// of the clock model (sim/global_access_recorder.hpp).
  int num_global_accesses = 0;
  /// The buffers the global race check watches, and each global access id's site
  /// (plan_global_races fills both once the kernel is compiled).
  std::vector<TrackedGlobal> tracked_globals;
  std::vector<GlobalRaceSite> global_race_sites;
  /// Shared bytes a block needs that are known before it runs: the planned memory and every
  /// shared allocation of constant size. The occupancy uses it (or more, if a block allocates more).
  int64_t static_shared_bytes = 0;
  /// Registers per thread estimated from the kernel (see SimOptions::registers_per_thread): the
  /// 4-byte words of its constant-size local allocations.
  int64_t local_words = 0;
  std::shared_ptr<const interp::FrameLayout> layout;

  /// The access id of a Load or Store node (the same node compiled for several vector lanes or
  /// several times is one instruction).
  /// The vector Loads of the kernel that generated code reads whole, with their bytes per
  /// instruction (SharedAccessInfo::vector_bytes of shared ones): others are read lane by lane.
  WholeVectorLoads whole_vector_loads;

  int access_id(const void* node, int buffer, bool is_store, int vector_bytes = 0) {
    auto [it, inserted] = access_of_node_.try_emplace(node, static_cast<int>(accesses.size()));
    if (inserted) accesses.push_back(SharedAccessInfo{buffer, is_store, vector_bytes});
    return it->second;
  }

  int global_access_id(const void* node) {
    auto [it, inserted] = global_access_of_node_.try_emplace(node, num_global_accesses);
    if (inserted) ++num_global_accesses;
    return it->second;
  }

  /// What global access `id` touches: buffer slot `slot` (maybe an alias, see note_buffer_alias),
  /// `element_bytes` at a time, writing or not.
  void note_global_access(int id, int slot, int element_bytes, bool is_write) {
    global_slots_.push_back(GlobalSlotUse{id, slot, element_bytes, is_write});
  }
  /// Slot `slot` is bound, inside the kernel, to the buffer of slot `source`.
  void note_buffer_alias(int slot, int source) { alias_of_slot_[slot] = source; }

  /// Decides, once every access of the kernel is known, which global buffers the race check
  /// watches: those the kernel writes. Reads of the others are never checked, which keeps
  /// kernels that write only their outputs as fast as without the check.
  template <typename NameOf>
  void plan_global_races(NameOf&& name_of) {
    auto root = [&](int slot) {
      for (auto it = alias_of_slot_.find(slot); it != alias_of_slot_.end(); it = alias_of_slot_.find(slot))
        slot = it->second;
      return slot;
    };
    std::unordered_map<int, int> tracked_of_root;
    for (const GlobalSlotUse& u : global_slots_)
      if (u.is_write &&
          tracked_of_root.try_emplace(root(u.slot), static_cast<int>(tracked_globals.size())).second)
        tracked_globals.push_back(TrackedGlobal{root(u.slot), name_of(root(u.slot)), u.element_bytes});
    global_race_sites.assign(static_cast<size_t>(num_global_accesses), GlobalRaceSite{});
    for (const GlobalSlotUse& u : global_slots_) {
      auto it = tracked_of_root.find(root(u.slot));
      if (it == tracked_of_root.end()) continue;
      TrackedGlobal& t = tracked_globals[static_cast<size_t>(it->second)];
      t.granule = std::min(t.granule, u.element_bytes);
      global_race_sites[static_cast<size_t>(u.id)] = GlobalRaceSite{it->second, u.is_write};
    }
  }

 private:
  struct GlobalSlotUse {
    int id, slot, element_bytes;
    bool is_write;
  };
  std::vector<GlobalSlotUse> global_slots_;
  std::unordered_map<int, int> alias_of_slot_;
  std::unordered_map<const void*, int> access_of_node_, global_access_of_node_;
};

}  // namespace loom::sim

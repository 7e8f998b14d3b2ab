// Records of a performance model's predictions in the tuning database, as lib's GPU tuners keep
// them (lib::tune_gpu_gemm, lib::tune_streamk_gemm): one record per ranked candidate, its predicted
// milliseconds under a `model:` target, and the lookup of the fastest one for a workload, which
// ignores the CPU the prediction ran on (a model's time does not depend on it). Internal to
// lib/impl/gpu_gemm_tuning.hpp and lib/impl/streamk_tuning.hpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "loom/tune/database.hpp"
#include "loom/tune/tune.hpp"

namespace loom::lib::detail {

/// Appends one record per prediction (its knobs and seconds) to `database` ("off": nothing).
inline void append_model_predictions(const std::string& database, const std::string& workload,
                                     const std::string& name, const std::string& target,
                                     const std::vector<std::pair<tune::Assignment, double>>& predictions) {
  if (database == "off") return;
  const tune::Database db(database);
  for (const auto& [knobs, seconds] : predictions) {
    tune::Record r;
    r.workload = workload;
    r.name = name;
    r.target = target;
    // Where the prediction was computed; the lookup ignores it. threads, cores and caches stay 0:
    // not recorded.
    r.cpu = tune::cpu_model();
    r.knobs = knobs;
    r.ms = seconds * 1e3;
    db.append(r);
  }
}

/// What a tuner's lookup does: read the database (`readable`: it exists), tune (`asked`: LOOM_TUNE=1),
/// or neither, in which case nothing needs to be lowered to compute the workload's key.
struct ModelRecordLookup {
  bool asked = false, readable = false;
  tune::Database db;

  explicit ModelRecordLookup(const std::string& database)
      : asked(tune::tuning_requested()), db(database == "off" ? std::string() : database) {
    std::error_code ec;
    readable = database != "off" && !db.path().empty() && std::filesystem::exists(db.path(), ec);
  }

  /// The record of `workload` on `target` with the smallest time among those `usable` accepts (a
  /// record of another search space is not), if any.
  template <typename Usable>
  std::optional<tune::Record> fastest(const std::string& workload, const std::string& target,
                                      Usable&& usable) const {
    std::optional<tune::Record> best;
    if (!readable) return best;
    for (tune::Record& r : db.read())
      if (r.workload == workload && r.target == target && usable(r.knobs) && (!best || r.ms < best->ms))
        best = std::move(r);
    return best;
  }
};

}  // namespace loom::lib::detail

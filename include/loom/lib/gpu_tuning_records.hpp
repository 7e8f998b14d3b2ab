// Records of lib's GPU tuners (lib::tune_gpu_gemm, lib::tune_streamk_gemm) in the tuning database:
// one record per configuration, its milliseconds as the performance model predicts them (under a
// `model:` target) or as a GPU measured them (under a `device:` target), and the lookup of the
// fastest one for a workload, which ignores the CPU the tuner ran on (the times are the GPU's, from
// events behind the launches, or the model's); and the architecture whose records gpu_gemm() and
// streamk_gemm() read when they are given no configuration.
// Internal to lib/impl/gpu_gemm_tuning.hpp and lib/impl/streamk_tuning.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "loom/lib/gemm_device_timer.hpp"
#include "loom/lib/gpu_gemm_model.hpp"
#include "loom/tune/database.hpp"
#include "loom/tune/tune.hpp"

namespace loom::lib::detail {

/// Appends one record per configuration (its knobs and seconds, predicted or measured) to `database`
/// ("off": nothing).
inline void append_records(const std::string& database, const std::string& workload, const std::string& name,
                           const std::string& target,
                           const std::vector<std::pair<tune::Assignment, double>>& times) {
  if (database == "off") return;
  const tune::Database db(database);
  for (const auto& [knobs, seconds] : times) {
    tune::Record r;
    r.workload = workload;
    r.name = name;
    r.target = target;
    // Where the tuner ran; the lookup ignores it (the target names the GPU or the model). threads, cores and
    // caches stay 0: not recorded.
    r.cpu = tune::cpu_model();
    r.knobs = knobs;
    r.ms = seconds * 1e3;
    db.append(r);
  }
}

/// The records of the database file `db`, parsed once per version of it (its size and modification
/// time) in this process: every gpu_gemm() and streamk_gemm() call without a configuration reads
/// them, and a program may make many.
inline std::shared_ptr<const std::vector<tune::Record>> cached_records(const tune::Database& db) {
  using Stamp = std::pair<std::uintmax_t, std::filesystem::file_time_type>;
  static std::mutex mutex;
  static std::map<std::string, std::pair<Stamp, std::shared_ptr<const std::vector<tune::Record>>>> cache;
  std::error_code ec;
  const Stamp stamp{std::filesystem::file_size(db.path(), ec),
                    std::filesystem::last_write_time(db.path(), ec)};
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(db.path());
  if (it != cache.end() && it->second.first == stamp) return it->second.second;
  auto records = std::make_shared<const std::vector<tune::Record>>(db.read());
  cache[db.path()] = {stamp, records};
  return records;
}

/// The workload key `make()` gives for `problem` (a text naming the problem), made once per process:
/// a key lowers the kernel, whose code does not change while the process runs.
template <typename Make>
std::string memoized_key(const std::string& problem, Make&& make) {
  static std::mutex mutex;
  static std::map<std::string, std::string> keys;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = keys.find(problem); it != keys.end()) return it->second;
  }
  std::string key = make();  // lowers: outside the lock, so that keys of other problems need not wait
  const std::lock_guard<std::mutex> lock(mutex);
  return keys.emplace(problem, std::move(key)).first->second;
}

/// What a tuner's lookup does: read the database (`readable`: it exists), tune (`asked`: LOOM_TUNE=1),
/// or neither, in which case nothing needs to be lowered to compute the workload's key.
struct GpuRecordLookup {
  bool asked = false, readable = false;
  tune::Database db;
  std::shared_ptr<const std::vector<tune::Record>> records;  ///< empty unless readable

  explicit GpuRecordLookup(const std::string& database)
      : asked(tune::tuning_requested()), db(database == "off" ? std::string() : database) {
    std::error_code ec;
    readable = database != "off" && !db.path().empty() && std::filesystem::exists(db.path(), ec);
    records = readable ? cached_records(db) : std::make_shared<const std::vector<tune::Record>>();
  }

  /// Whether the database holds any record of lib's GPU tuners (a target of the model's predictions
  /// or of a GPU's measurements), read without lowering anything: a program that never tuned a GPU
  /// GEMM pays for no workload key.
  bool holds_gpu_records() const {
    for (const tune::Record& r : *records)
      if (r.target.rfind("cuda -arch=", 0) == 0 &&
          (r.target.find(" model:") != std::string::npos || r.target.find(" device:") != std::string::npos))
        return true;
    return false;
  }

  /// The record of `workload` on `target` with the smallest time among those `usable` accepts (a
  /// record of another search space is not), if any.
  template <typename Usable>
  std::optional<tune::Record> fastest(const std::string& workload, const std::string& target,
                                      Usable&& usable) const {
    std::optional<tune::Record> best;
    for (const tune::Record& r : *records)
      if (r.workload == workload && r.target == target && usable(r.knobs) && (!best || r.ms < best->ms))
        best = r;
    return best;
  }

  /// The record a tuner's lookup uses: where the database holds times of `workload` measured on a
  /// GPU of `arch` and such a GPU is present, the fastest of those measured on it; else the fastest
  /// of the model's predictions under `model_target`. `device_target()` gives the target of the
  /// present GPU's records ("" when none of `arch` is present); it is called only when measured
  /// records exist, so that other lookups never start the CUDA driver.
  template <typename Usable, typename DeviceTarget>
  std::optional<tune::Record> preferred(const std::string& workload, const std::string& arch,
                                        const std::string& model_target, Usable&& usable,
                                        DeviceTarget&& device_target) const {
    if (!readable) return std::nullopt;
    const std::string measured_prefix = "cuda -arch=" + arch + " device:";
    bool any_measured = false;
    for (const tune::Record& r : *records)
      any_measured = any_measured || (r.workload == workload && r.target.rfind(measured_prefix, 0) == 0);
    if (any_measured) {
      const std::string target = device_target();
      if (!target.empty())
        if (std::optional<tune::Record> best = fastest(workload, target, usable)) return best;
    }
    return fastest(workload, model_target, usable);
  }
};

/// The architecture whose records gpu_gemm() and streamk_gemm() read in the default database when
/// given no configuration: the GPU's where one is present, "sm_90" (the H100, as StreamKConfig's arch
/// "") where none is. Nothing (keep the default configuration) when the database holds no record of
/// lib's GPU tuners and LOOM_TUNE=1 does not ask to tune, so that a program that never tuned lowers
/// nothing and asks no GPU, or when the GPU present is one the model does not describe (no tuner
/// records its times). Asks a worker process (gpu_identity): this process does not load the CUDA
/// driver to look a record up.
inline std::optional<std::string> default_lookup_arch() {
  const GpuRecordLookup lookup("");
  if (!lookup.asked && !lookup.holds_gpu_records()) return std::nullopt;
  const std::string identity = gpu_identity();
  const std::string arch = identity.empty() ? "sm_90" : identity.substr(0, identity.find('\n'));
  if (!GpuPerfSpec::describes(arch)) return std::nullopt;
  return arch;
}

}  // namespace loom::lib::detail

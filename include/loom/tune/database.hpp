// The tuning database: one JSON object per line (JSON Lines), appended by every process that
// tunes, read by later ones. A record says which workload (a structural hash of the computation
// with its shapes and dtypes), target and machine (CPU model, hardware threads, cache sizes, the
// threads used) a configuration was measured on, and its time.
// Appends take an exclusive lock on the file and write each line with one write(), so several
// processes can share it. Default file: LOOM_CACHE_DIR (or ~/.cache/loom)/tuning.jsonl.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/support/config.hpp"
#include "loom/tune/config.hpp"

namespace loom::tune {

/// The version of the record format; records of another version are skipped when reading.
inline constexpr int kSchemaVersion = 1;

/// One measured configuration.
struct Record {
  std::string workload;  ///< 16 hex digits: structural hash of the computation, shapes and dtypes
  std::string name;      ///< the workload's name as the user gave it (for people reading the file)
  std::string target;    ///< Target::str()
  std::string cpu;       ///< the machine's CPU model
  int threads = 0;       ///< the thread pool's threads during the measurement
  int cores = 0;         ///< the machine's hardware threads (0: not recorded)
  /// The machine's data caches in bytes, as support/cpu_info.hpp reads them (0: not recorded).
  /// @{
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  /// @}
  Assignment knobs;  ///< the configuration
  double ms = 0;     ///< median time of one call, in milliseconds
  /// Timed again in a tuning run's final rounds (tune.hpp's Options::finalists): when a workload
  /// has such records, the fastest of them is its best, whatever the search's own times say.
  bool confirmed = false;
};

/// The records of one file.
class Database {
 public:
  /// The file at `path`; empty: the default (LOOM_CACHE_DIR/tuning.jsonl), or no file at all when
  /// the cache is off (LOOM_CACHE_DIR=off): then appends are dropped and nothing is read.
  LOOM_DECL explicit Database(std::string path = "");

  /// The file (empty: none, the cache is off).
  const std::string& path() const { return path_; }
  /// Appends one record (creating the file and its directory as needed). Throws loom::Error when
  /// the file cannot be written.
  LOOM_DECL void append(const Record& r) const;
  /// Every readable record of the current schema; lines that are not records are skipped.
  LOOM_DECL std::vector<Record> read() const;
  /// The fastest record for `workload` on `target` and this machine (its CPU model, and its cache
  /// sizes where the record has them), if any; the fastest confirmed one where there are confirmed ones.
  LOOM_DECL std::optional<Record> best(const std::string& workload, const std::string& target) const;

 private:
  std::string path_;
};

/// The machine's CPU model (from /proc/cpuinfo; "unknown" where it cannot be read).
LOOM_DECL std::string cpu_model();

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/database.hpp"
#endif

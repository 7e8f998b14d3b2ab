// The on-disk kernel cache: one object file per kernel in LOOM_CACHE_DIR (default ~/.cache/loom),
// behind a header (magic, format version, keys, payload length, checksum) that detects corrupt or
// truncated entries. Processes share the directory: writers write a temporary file, then rename.
// Entries are native code that build() runs, and the checksum is no signature, so, as OpenSSH's
// StrictModes does for keys, a directory or an entry that another user owns or that group or
// others may write is not used: Loom creates the directory 0700 and its entries 0600.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "loom/ir/structural_hash.hpp"
#include "loom/support/error.hpp"

namespace loom::runtime {

/// A 64-bit checksum of `size` bytes, eight at a time through the structural hash's mixer (fast
/// enough to verify every load; it detects corruption, it is not a cryptographic hash).
inline uint64_t checksum64(const char* data, size_t size) {
  uint64_t h = detail::shash::seed_tag;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    h = detail::shash::combine(h, word);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, data + i, size - i);
  return detail::shash::combine(detail::shash::combine(h, tail), size);
}

class DiskKernelCache {
 public:
  /// Identifies an entry: `key` names the file, `confirm` (an independent hash of the same function)
  /// and `target` must match what the file says, so a rare 64-bit collision is a miss, not a crash.
  struct Key {
    uint64_t key = 0;
    uint64_t confirm = 0;
    std::string target;
  };

  /// The cache directory, or nothing when disabled (LOOM_CACHE_DIR=off, or no home directory).
  static std::optional<std::filesystem::path> directory() {
    if (const char* env = std::getenv("LOOM_CACHE_DIR"); env) {
      std::string dir = env;
      if (dir == "off" || dir == "0" || dir == "none") return std::nullopt;
      if (!dir.empty()) return std::filesystem::path(dir);
    }
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
      return std::filesystem::path(xdg) / "loom";
    if (const char* home = std::getenv("HOME"); home && *home)
      return std::filesystem::path(home) / ".cache" / "loom";
    return std::nullopt;
  }

  static std::filesystem::path file_of(const std::filesystem::path& dir, const Key& k) {
    char name[40];
    std::snprintf(name, sizeof name, "kernel-%016llx.lobj", static_cast<unsigned long long>(k.key));
    return dir / name;
  }

  /// Why `dir` must not hold the cache, or "" when it may (or does not exist yet): it is not a
  /// directory, another user owns it, or group or others may write it.
  static std::string directory_distrust(const std::filesystem::path& dir) {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return "";
    if (!S_ISDIR(st.st_mode)) return "it is not a directory";
    return ownership_distrust(st);
  }

  /// Why the entry `file` must not be loaded, or "" when it may (or does not exist): it is not a
  /// regular file (a symbolic link, say), another user owns it, or group or others may write it.
  static std::string entry_distrust(const std::filesystem::path& file) {
    struct stat st;
    if (::lstat(file.c_str(), &st) != 0) return "";
    if (!S_ISREG(st.st_mode)) return "it is not a regular file";
    return ownership_distrust(st);
  }

  /// The warning for a directory or an entry that is not used (printed once per process).
  static std::string distrust_warning(const std::filesystem::path& path, const std::string& why) {
    return cat("loom: the kernel cache at ", path.string(), " is not used: ", why,
               ", so native code in it could have been planted by someone else; kernels are compiled in "
               "memory. Make it yours and private (chmod 700 for the directory, 600 for entries), set "
               "LOOM_CACHE_DIR to a directory of your own, or LOOM_CACHE_DIR=off.");
  }

  /// The object file stored under k, or nothing when absent, unreadable, corrupt, truncated, for
  /// another function or target, or not trusted (the caller then compiles and store()s over it).
  static std::optional<std::string> load(const std::filesystem::path& dir, const Key& k) {
    const std::filesystem::path path = file_of(dir, k);
    if (const std::string why = directory_distrust(dir); !why.empty()) {
      warn_distrust_once(distrust_warning(dir, why));
      return std::nullopt;
    }
    if (const std::string why = entry_distrust(path); !why.empty()) {
      warn_distrust_once(distrust_warning(path, why));
      return std::nullopt;
    }
    // Anything else in the entry's place (a directory, a socket) or a failing read is a miss too:
    // reading a directory through a filebuf throws instead of failing.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
    try {
      std::ifstream in(path, std::ios::binary);
      if (!in) return std::nullopt;
      std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      return decode(file, k);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  /// Writes an entry atomically (a temporary file renamed into place). Best effort: a cache that
  /// cannot be written is reported once on stderr and otherwise ignored.
  static void store(const std::filesystem::path& dir, const Key& k, const std::string& payload) {
    std::error_code ec;
    if (std::filesystem::create_directories(dir, ec))
      std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::replace, ec);
    if (const std::string why = directory_distrust(dir); !why.empty()) {
      warn_distrust_once(distrust_warning(dir, why));
      return;
    }
    const std::filesystem::path final_path = file_of(dir, k);
    static std::atomic<uint64_t> counter{0};
    std::ostringstream tmp_name;
    tmp_name << final_path.filename().string() << ".tmp." << ::getpid() << "."
             << std::hash<std::thread::id>()(std::this_thread::get_id()) << "." << counter++;
    const std::filesystem::path tmp = dir / tmp_name.str();
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (out) {
        const std::string bytes = encode(k, payload);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      }
      if (!out) {
        warn_once(dir, "cannot write " + tmp.string());
        std::filesystem::remove(tmp, ec);
        return;
      }
    }
    // Private whatever the umask: an entry that group or others may write would not be loaded.
    std::filesystem::permissions(tmp,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::replace, ec);
    std::filesystem::rename(tmp, final_path, ec);
    if (ec) {
      warn_once(dir, "cannot rename " + tmp.string() + ": " + ec.message());
      std::filesystem::remove(tmp, ec);
    }
  }

  // ---- the file format ----------------------------------------------------------------------
  // magic "LOOMOBJ\0" | u32 format version | u32 target length | u64 key | u64 confirm
  // | u64 payload length | u64 payload checksum | target bytes | payload (an ELF object file)

  static constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'O', 'B', 'J', '\0'};
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 * 4;

  static std::string encode(const Key& k, const std::string& payload) {
    std::string out(kMagic, sizeof kMagic);
    put(out, kFormatVersion);
    put(out, static_cast<uint32_t>(k.target.size()));
    put(out, k.key);
    put(out, k.confirm);
    put(out, static_cast<uint64_t>(payload.size()));
    put(out, checksum64(payload.data(), payload.size()));
    out += k.target;
    out += payload;
    return out;
  }

  static std::optional<std::string> decode(const std::string& file, const Key& k) {
    if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
      return std::nullopt;
    size_t pos = sizeof kMagic;
    const uint32_t version = get<uint32_t>(file, pos);
    const uint32_t target_length = get<uint32_t>(file, pos);
    const uint64_t key = get<uint64_t>(file, pos), confirm = get<uint64_t>(file, pos);
    const uint64_t payload_length = get<uint64_t>(file, pos), checksum = get<uint64_t>(file, pos);
    if (version != kFormatVersion || key != k.key || confirm != k.confirm) return std::nullopt;
    if (file.size() != kHeaderBytes + target_length + payload_length) return std::nullopt;  // truncated
    if (file.compare(kHeaderBytes, target_length, k.target) != 0) return std::nullopt;
    std::string payload = file.substr(kHeaderBytes + target_length);
    if (checksum64(payload.data(), payload.size()) != checksum) return std::nullopt;  // corrupt
    return payload;
  }

 private:
  template <typename T>
  static void put(std::string& out, T v) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    out.append(bytes, sizeof(T));
  }
  template <typename T>
  static T get(const std::string& in, size_t& pos) {
    T v;
    std::memcpy(&v, in.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }

  static std::string ownership_distrust(const struct stat& st) {
    if (st.st_uid != ::geteuid())
      return cat("it is owned by user ", st.st_uid, ", not by this process's user ", ::geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
      return cat("group or others may write it (mode ", mode, ")");
    }
    return "";
  }

  static void warn_distrust_once(const std::string& warning) {
    static std::once_flag once;
    std::call_once(once, [&] { std::fprintf(stderr, "%s\n", warning.c_str()); });
  }

  static void warn_once(const std::filesystem::path& dir, const std::string& what) {
    static std::once_flag once;
    std::call_once(once, [&] {
      std::fprintf(stderr,
                   "loom: the kernel cache in %s is not usable (%s); kernels are compiled anew. Set "
                   "LOOM_CACHE_DIR to a writable directory, or LOOM_CACHE_DIR=off.\n",
                   dir.string().c_str(), what.c_str());
    });
  }
};

}  // namespace loom::runtime

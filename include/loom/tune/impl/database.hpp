// The definitions of tune/database.hpp: writing records as JSON lines under a file lock, and a
// reader for exactly the JSON this writer produces (objects of strings, numbers and one level of
// nested objects), which skips any line it does not understand.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/database.hpp");

#include "loom/support/cpu_info.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "loom/runtime/disk_cache.hpp"
#include "loom/tune/database.hpp"

namespace loom::tune {

namespace detail {

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// A JSON value of the subset the writer uses: a string, a number, or an object of those.
struct JsonValue {
  enum class Kind { String, Number, Object } kind = Kind::Number;
  std::string text;  // string contents, or the number as written
  std::map<std::string, JsonValue> members;
};

/// Parses one line; nothing if it is not an object of that subset.
class JsonLineReader {
 public:
  explicit JsonLineReader(const std::string& s) : s_(s) {}
  std::optional<JsonValue> object() {
    std::optional<JsonValue> v = value();
    skip_space();
    if (!v || v->kind != JsonValue::Kind::Object || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  std::optional<std::string> string() {
    if (!eat('"')) return std::nullopt;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) return std::nullopt;
        char e = s_[pos_++];
        if (e == 'u') {
          if (pos_ + 4 > s_.size()) return std::nullopt;
          out += static_cast<char>(std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16));
          pos_ += 4;
        } else {
          out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        }
      } else {
        out += c;
      }
    }
    if (!eat('"')) return std::nullopt;
    return out;
  }
  std::optional<JsonValue> value() {
    skip_space();
    if (pos_ >= s_.size()) return std::nullopt;
    JsonValue v;
    if (s_[pos_] == '"') {
      std::optional<std::string> str = string();
      if (!str) return std::nullopt;
      v.kind = JsonValue::Kind::String;
      v.text = *str;
      return v;
    }
    if (s_[pos_] == '{') {
      ++pos_;
      v.kind = JsonValue::Kind::Object;
      if (eat('}')) return v;
      do {
        std::optional<std::string> key = string();
        if (!key || !eat(':')) return std::nullopt;
        std::optional<JsonValue> member = value();
        if (!member) return std::nullopt;
        v.members[*key] = std::move(*member);
      } while (eat(','));
      if (!eat('}')) return std::nullopt;
      return v;
    }
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isdigit(static_cast<unsigned char>(s_[pos_])) || std::strchr("+-.eE", s_[pos_])))
      ++pos_;
    if (pos_ == start) return std::nullopt;
    v.text = s_.substr(start, pos_ - start);
    return v;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

inline std::string record_line(const Record& r) {
  std::string knobs;
  for (const auto& [name, value] : r.knobs)
    knobs += cat(knobs.empty() ? "" : ",", json_string(name), ":", value);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.6g", r.ms);
  return cat("{\"schema\":", kSchemaVersion, ",\"workload\":", json_string(r.workload),
             ",\"name\":", json_string(r.name), ",\"target\":", json_string(r.target),
             ",\"machine\":{\"cpu\":", json_string(r.cpu), ",\"cores\":", r.cores, ",\"l1d\":", r.l1d_bytes,
             ",\"l2\":", r.l2_bytes, ",\"l3\":", r.l3_bytes, ",\"threads\":", r.threads, "},\"knobs\":{",
             knobs, "},\"ms\":", ms, r.confirmed ? ",\"confirmed\":1" : "", "}\n");
}

inline std::optional<Record> parse_record(const std::string& line) {
  std::optional<JsonValue> v = JsonLineReader(line).object();
  if (!v) return std::nullopt;
  auto member = [&](const JsonValue& o, const char* key, JsonValue::Kind kind) -> const JsonValue* {
    auto it = o.members.find(key);
    return it != o.members.end() && it->second.kind == kind ? &it->second : nullptr;
  };
  using K = JsonValue::Kind;
  const JsonValue* schema = member(*v, "schema", K::Number);
  if (!schema || std::atoi(schema->text.c_str()) != kSchemaVersion) return std::nullopt;
  const JsonValue *workload = member(*v, "workload", K::String), *target = member(*v, "target", K::String),
                  *machine = member(*v, "machine", K::Object), *knobs = member(*v, "knobs", K::Object),
                  *ms = member(*v, "ms", K::Number), *name = member(*v, "name", K::String);
  if (!workload || !target || !machine || !knobs || !ms) return std::nullopt;
  Record r;
  r.workload = workload->text;
  r.name = name ? name->text : "";
  r.target = target->text;
  if (const JsonValue* cpu = member(*machine, "cpu", K::String)) r.cpu = cpu->text;
  auto number = [&](const char* key) -> int64_t {
    const JsonValue* n = member(*machine, key, K::Number);
    return n ? std::strtoll(n->text.c_str(), nullptr, 10) : 0;
  };
  r.threads = static_cast<int>(number("threads"));
  r.cores = static_cast<int>(number("cores"));
  r.l1d_bytes = number("l1d");
  r.l2_bytes = number("l2");
  r.l3_bytes = number("l3");
  for (const auto& [knob, value] : knobs->members) {
    if (value.kind != K::Number) return std::nullopt;
    r.knobs[knob] = std::strtoll(value.text.c_str(), nullptr, 10);
  }
  r.ms = std::strtod(ms->text.c_str(), nullptr);
  if (const JsonValue* confirmed = member(*v, "confirmed", K::Number)) r.confirmed = confirmed->text != "0";
  return r;
}

}  // namespace detail

LOOM_DECL Database::Database(std::string path) : path_(std::move(path)) {
  if (!path_.empty()) return;
  if (std::optional<std::filesystem::path> dir = runtime::DiskKernelCache::directory())
    path_ = (*dir / "tuning.jsonl").string();
}

LOOM_DECL void Database::append(const Record& r) const {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw Error(cat("tune: cannot open the tuning database ", path_, ": ", std::strerror(errno)));
  // One locked write per record: lines of processes appending at once never interleave.
  const std::string line = detail::record_line(r);
  ::flock(fd, LOCK_EX);
  const ssize_t written = ::write(fd, line.data(), line.size());
  const int saved = errno;
  ::flock(fd, LOCK_UN);
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size()))
    throw Error(cat("tune: cannot write the tuning database ", path_, ": ", std::strerror(saved)));
}

LOOM_DECL std::vector<Record> Database::read() const {
  std::vector<Record> out;
  if (path_.empty()) return out;
  std::ifstream in(path_);
  for (std::string line; std::getline(in, line);)
    if (std::optional<Record> r = detail::parse_record(line)) out.push_back(std::move(*r));
  return out;
}

LOOM_DECL std::optional<Record> Database::best(const std::string& workload, const std::string& target) const {
  std::optional<Record> best;
  const std::string cpu = cpu_model();
  // The model name alone may not tell machines apart (VMs of two AMD generations both say "AMD
  // EPYC"): the caches must match too where the record has them.
  const CpuCacheInfo& here = CpuCacheInfo::host();
  auto same_caches = [&](const Record& r) {
    auto same = [](int64_t recorded, int64_t host) { return recorded == 0 || recorded == host; };
    return same(r.l1d_bytes, here.l1d_bytes) && same(r.l2_bytes, here.l2_bytes) &&
           same(r.l3_bytes, here.l3_bytes);
  };
  for (Record& r : read())
    if (r.workload == workload && r.target == target && r.cpu == cpu && same_caches(r) &&
        (!best || (r.confirmed && !best->confirmed) || (r.confirmed == best->confirmed && r.ms < best->ms)))
      best = std::move(r);
  return best;
}

LOOM_DECL std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "unknown" : line.substr(start);
      }
    }
  return "unknown";
}

}  // namespace loom::tune

// E-CACHE-UNTRUSTED: the disk kernel cache holds native code that build() runs, so it refuses a
// directory or an entry that another user owns or that group or others may write, and makes its
// own directory 0700 and entries 0600 (runtime/disk_cache.hpp).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include <loom/runtime/disk_cache.hpp>

using loom::runtime::DiskKernelCache;

namespace {

unsigned permission_bits(const std::filesystem::path& p) {
  struct stat st;
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

}  // namespace

TEST_CASE("E-CACHE-UNTRUSTED: a cache directory or entry that others own or may write is not used") {
  char name[] = "/tmp/loom-cache-trust-XXXXXX";
  const std::filesystem::path root = ::mkdtemp(name);
  const std::filesystem::path dir = root / "cache";
  const DiskKernelCache::Key key{0x1234, 0x5678, "test-target"};
  const std::filesystem::path entry = DiskKernelCache::file_of(dir, key);

  // The cache's own directory and entries are private, and load back.
  DiskKernelCache::store(dir, key, "payload");
  CHECK(permission_bits(dir) == 0700);
  CHECK(permission_bits(entry) == 0600);
  CHECK(DiskKernelCache::directory_distrust(dir).empty());
  CHECK(DiskKernelCache::load(dir, key) == std::optional<std::string>("payload"));

  // An entry that others may write is not loaded; store() puts a private one in its place.
  std::filesystem::permissions(entry, std::filesystem::perms::all & ~std::filesystem::perms::owner_exec &
                                          ~std::filesystem::perms::group_exec &
                                          ~std::filesystem::perms::others_exec);
  CHECK(DiskKernelCache::entry_distrust(entry) == "group or others may write it (mode 666)");
  CHECK_FALSE(DiskKernelCache::load(dir, key));
  DiskKernelCache::store(dir, key, "payload 2");
  CHECK(permission_bits(entry) == 0600);
  CHECK(DiskKernelCache::load(dir, key) == std::optional<std::string>("payload 2"));

  // A symbolic link in an entry's place is not followed.
  const DiskKernelCache::Key linked{0xabcd, 1, "test-target"};
  std::filesystem::create_symlink(entry, DiskKernelCache::file_of(dir, linked));
  CHECK(DiskKernelCache::entry_distrust(DiskKernelCache::file_of(dir, linked)) == "it is not a regular file");
  CHECK_FALSE(DiskKernelCache::load(dir, linked));

  // A directory that others may write: nothing is loaded from it or written into it.
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  CHECK(DiskKernelCache::directory_distrust(dir) == "group or others may write it (mode 777)");
  CHECK_FALSE(DiskKernelCache::load(dir, key));
  const DiskKernelCache::Key other{0x9999, 2, "test-target"};
  DiskKernelCache::store(dir, other, "not written");
  CHECK_FALSE(std::filesystem::exists(DiskKernelCache::file_of(dir, other)));
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  CHECK(DiskKernelCache::load(dir, key) == std::optional<std::string>("payload 2"));

  // An entry or a directory that another user owns (planting one needs root).
  if (::geteuid() == 0) {
    REQUIRE(::chown(entry.c_str(), 65534, 65534) == 0);
    CHECK(DiskKernelCache::entry_distrust(entry) ==
          "it is owned by user 65534, not by this process's user 0");
    CHECK_FALSE(DiskKernelCache::load(dir, key));
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    CHECK(DiskKernelCache::directory_distrust(dir) ==
          "it is owned by user 65534, not by this process's user 0");
  } else {
    MESSAGE("not running as root: the entries of another user cannot be planted here");
  }

  // A regular file where the directory should be.
  CHECK(DiskKernelCache::directory_distrust(entry) != "");

  CHECK(
      DiskKernelCache::distrust_warning("/tmp/c", "group or others may write it (mode 777)") ==
      "loom: the kernel cache at /tmp/c is not used: group or others may write it (mode 777), so native code "
      "in it could have been planted by someone else; kernels are compiled in memory. Make it yours and "
      "private (chmod 700 for the directory, 600 for entries), set LOOM_CACHE_DIR to a directory of your "
      "own, or LOOM_CACHE_DIR=off.");
  std::filesystem::remove_all(root);
}

// capture_stderr(fn): what is written to stderr (file descriptor 2) while fn runs, for tests of
// what Loom prints (pass timings, JIT remarks, cache warnings).
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include <unistd.h>

namespace loom::test {

template <typename F>
std::string capture_stderr(F&& fn) {
  std::fflush(stderr);
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  int saved = ::dup(2);
  ::dup2(::fileno(tmp), 2);
  fn();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(tmp);
  std::string out;
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, tmp)) > 0;) out.append(buf, got);
  std::fclose(tmp);
  return out;
}

}  // namespace loom::test

// Smoke test: the headers compile and the library reports the version the build declares.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

TEST_CASE("loom::version() is 0.1.0") { CHECK(std::string(loom::version()) == "0.1.0"); }

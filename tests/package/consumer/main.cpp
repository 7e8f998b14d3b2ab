// A consumer of Loom: prints the version and an expression, to show the headers and the
// loom::loom target work from an installed or embedded Loom.
#include <loom/core.hpp>

#include <iostream>

int main() {
  std::cout << "loom " << loom::version() << "\n";
  loom::Var i("i");
  loom::Expr e = i * 2 + 1;
  std::cout << e << "\n";
  std::cout << "ok\n";
  return 0;
}

// The definition of scan() (te/scan.hpp): checks that init, update and state agree.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/te/scan.hpp");

#include <string>
#include <vector>

#include "loom/ir/analyzer.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/te/scan.hpp"

namespace loom {

LOOM_DECL std::vector<Tensor> scan(std::vector<Tensor> init, std::vector<Tensor> update,
                                   std::vector<Tensor> state_placeholder, std::vector<Tensor> inputs,
                                   std::string name) {
  if (init.empty() || init.size() != update.size() || update.size() != state_placeholder.size())
    throw Error(cat("scan '", name, "': give the same number of init, update and state tensors (got ",
                    init.size(), ", ", update.size(), ", ", state_placeholder.size(), ")"));
  for (size_t k = 0; k < init.size(); ++k) {
    const Tensor &a = init[k], &u = update[k], &s = state_placeholder[k];
    if (s.op()->kind != OpKind::Placeholder)
      throw Error(cat("scan '", name, "': state '", s.name(), "' must be a placeholder (the scan fills it)"));
    if (a.ndim() != u.ndim() || u.ndim() != s.ndim() || u.ndim() < 1)
      throw Error(cat("scan '", name, "': init '", a.name(), "', update '", u.name(), "' and state '",
                      s.name(), "' must have the same rank (got ", a.ndim(), ", ", u.ndim(), ", ", s.ndim(),
                      ")"));
    if (a.dtype() != u.dtype() || u.dtype() != s.dtype())
      throw Error(cat("scan '", name, "': init, update and state must share one dtype"));
    for (int d = 0; d < u.ndim(); ++d) {
      if (!Analyzer().can_prove_equal(u.shape()[static_cast<size_t>(d)], s.shape()[static_cast<size_t>(d)]))
        throw Error(cat("scan '", name, "': dimension ", d, " of update '", u.name(), "' (",
                        to_string(u.shape()[d]), ") differs from the state's (", to_string(s.shape()[d]),
                        ")"));
      if (d > 0 &&
          !Analyzer().can_prove_equal(u.shape()[static_cast<size_t>(d)], a.shape()[static_cast<size_t>(d)]))
        throw Error(cat("scan '", name, "': dimension ", d, " of init '", a.name(), "' (",
                        to_string(a.shape()[d]), ") differs from the update's (", to_string(u.shape()[d]),
                        ")"));
    }
  }
  Expr begin = init[0].shape()[0], end = update[0].shape()[0];
  IterVar axis(Range(begin, simplify(end - begin)), Var(name + ".idx", begin.dtype()), IterVarKind::Ordered);
  Operation op(make_ref<ScanOpNode>(name, axis, std::move(init), std::move(update),
                                    std::move(state_placeholder), std::move(inputs)));
  std::vector<Tensor> out;
  for (int i = 0; i < op->num_outputs(); ++i) out.push_back(op->output(i));
  return out;
}

}  // namespace loom

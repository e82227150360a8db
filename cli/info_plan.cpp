// `tally info` (version, backends, devices) and `tally plan` (what the planner would choose).
#include <iostream>
#include <limits>

#include "commands.hpp"
#include "errors.hpp"
#include "format.hpp"
#include "tally/plan.hpp"

namespace tally_cli {

int run_info() {
  std::cout << "tally " << tally::version() << "\nbackends:\n";
  for (const tally::backend_info& b : tally::backends()) {
    const std::string state = !b.compiled ? "not compiled"
                              : b.usable  ? "usable"
                                          : "compiled, not usable";
    std::cout << "  " << pad_right(std::string(tally::name_of(b.which)), 6) << pad_right(state, 22)
              << b.detail << "\n";
  }
  return 0;
}

namespace {

tally::axis_kind kind_from(const std::string& name) {
  if (name == "regular") return tally::axis_kind::regular;
  if (name == "variable") return tally::axis_kind::variable;
  if (name == "integer") return tally::axis_kind::integer;
  throw usage_error("--kind must be regular, variable or integer, not " + name);
}

}  // namespace

int run_plan(const plan_args& a) {
  const tally::options o = to_options(a.run);
  tally::plan_request req;
  // The command line's data are in host memory, so "auto" resolves to the CPU, as in hist.
  req.where = o.backend == tally::backend::automatic ? tally::backend::cpu : o.backend;
  req.wanted = o.strategy;
  req.kind = kind_from(a.kind);
  req.cells = 1;
  for (int d = 0; d < a.dims; ++d) {
    if (req.cells > std::numeric_limits<std::int64_t>::max() / a.bins)
      throw usage_error("--bins ^ --dims overflows 64 bits");
    req.cells *= a.bins;
  }
  req.dims = a.dims;
  req.channels = a.channels;
  req.sample = parse_dtype(a.dtype);
  req.weighted = !a.weights.empty();
  if (req.weighted) req.weight_type = parse_dtype(a.weights);
  if (req.weighted && req.weight_type != tally::dtype::f32 && req.weight_type != tally::dtype::f64)
    throw usage_error("--weights=" + a.weights + ": weights are f32 or f64, as a fill takes them");
  req.counts = o.counts;
  req.n = a.n;
  req.threads = o.threads;
  req.contiguous = a.dims == 1;  // one column as a file holds it
  if (req.where == tally::backend::cuda && !tally::describe_device(req))
    std::cout << "(no usable CUDA device here: planned as for one multiprocessor with 48 KiB of "
                 "shared memory)\n";
  std::cout << tally::describe(tally::plan(req));
  return 0;
}

}  // namespace tally_cli

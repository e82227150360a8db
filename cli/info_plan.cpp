// `tally info` (version, backends, devices), `tally strategies` (the strategy registry) and
// `tally plan` (what the planner would choose).
#include <iostream>
#include <limits>
#include <string>

#include "commands.hpp"
#include "errors.hpp"
#include "format.hpp"
#include "tally/plan.hpp"
#include "tally/strategy.hpp"

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

/// `text` as lines of at most `width` characters after `indent` spaces, broken at spaces.
std::string wrapped(const std::string& text, std::size_t indent, std::size_t width = 100) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

}  // namespace

int run_strategies() {
  for (const tally::strategy_info& s : tally::strategies()) {
    const std::string where = s.where == tally::backend::automatic ? "cpu or cuda" : std::string(tally::name_of(s.where));
    std::cout << s.name << " (" << where << ")\n"
              << wrapped(std::string(s.technique), 4) << wrapped("applies to: " + std::string(s.applies), 4)
              << wrapped("chosen: " + std::string(s.chosen_when), 4);
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

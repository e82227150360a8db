// Turning option strings into library values, with usage errors that name the option.
#include "args.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "errors.hpp"

namespace tally_cli {

int machine_threads() {
  const unsigned t = std::thread::hardware_concurrency();
  return t == 0 ? 1 : static_cast<int>(t);
}

tally::options to_options(const run_args& run) {
  tally::options o;
  try {
    o.backend = tally::backend_from_name(run.backend);
    // "auto" reads like --backend auto; the library spells the strategy "automatic".
    o.strategy = tally::strategy_from_name(run.strategy == "auto" ? "automatic" : run.strategy);
  } catch (const tally::error& e) {
    throw usage_error(e.what());
  }
  o.counts = run.counts == 32 ? tally::count_type::u32 : tally::count_type::u64;
  // More threads than the machine has only cost a stack each: 1000 of them exhaust a 4 GiB
  // address space, and the OpenMP runtime then ends the process.
  o.threads = std::min(run.threads, machine_threads());
  return o;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::size_t pos = 0;
  for (std::size_t comma; (comma = text.find(',', pos)) != std::string::npos; pos = comma + 1)
    items.push_back(text.substr(pos, comma - pos));
  items.push_back(text.substr(pos));
  return items;
}

std::vector<double> parse_numbers(const std::string& text, const std::string& what) {
  std::vector<double> out;
  for (const std::string& item : split_commas(text)) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(item.c_str(), &end);
    // ERANGE also marks a subnormal result (1e-320), which is a number; only overflow is not.
    if (item.empty() || *end != '\0' || (errno == ERANGE && std::isinf(v)))
      throw usage_error(what + ": '" + item +
                        "' is not a number (expected a comma-separated list)");
    out.push_back(v);
  }
  return out;
}

tally::dtype parse_dtype(const std::string& name) {
  try {
    return tally::dtype_from_name(name);
  } catch (const tally::error& e) {
    throw usage_error(e.what());
  }
}

}  // namespace tally_cli

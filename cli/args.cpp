// Turning option strings into library values, with usage errors that name the option.
#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "errors.hpp"

namespace tally_cli {

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
  o.threads = run.threads;
  return o;
}

std::vector<double> parse_numbers(const std::string& text, const std::string& what) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    const std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(item.c_str(), &end);
    // ERANGE also marks a subnormal result (1e-320), which is a number; only overflow is not.
    if (item.empty() || *end != '\0' || (errno == ERANGE && std::isinf(v)))
      throw usage_error(what + ": '" + item +
                        "' is not a number (expected a comma-separated list)");
    out.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
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

// The --out files: CSV (one row per bin or cell) and JSON (edges, counts, flow, summary).
#pragma once

#include <string>

#include "result.hpp"

namespace tally_cli {

/// 1-D and channels: channel,bin_lo,bin_hi,count (or sum). N-D: axis0_lo,axis0_hi,...,count.
std::string to_csv(const hist_result& r);
std::string to_json(const hist_result& r);

}  // namespace tally_cli

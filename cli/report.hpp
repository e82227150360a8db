// The text `tally hist` prints: input, per-channel or per-axis summaries, terminal charts.
#pragma once

#include <string>

#include "result.hpp"

namespace tally_cli {

std::string report(const hist_result& r, bool bars);

}  // namespace tally_cli

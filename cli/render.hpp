// Terminal charts: horizontal unicode bars for 1-D bins, a table or a cell list for N-D.
#pragma once

#include <string>
#include <vector>

#include "summary.hpp"
#include "tally/histogram.hpp"

namespace tally_cli {

/// At most `max_lines` lines, one per (merged) bin: its range (or its name, where `names` has one
/// per bin and no bins are merged), a bar, its value.
std::string bar_chart(const tally::axis& a, const std::vector<double>& values, bool weighted,
                      const std::vector<std::string>& names = {}, int max_lines = 40, int width = 40);

/// A 2-D histogram as a table of (merged) cells; more axes as a list of the nonzero cells.
std::string nd_chart(const tally::histogram& h, int max_lines = 40);

}  // namespace tally_cli

// The per-column view of a finished run: 1-D histograms as they are, N-D ones by marginal.
#include "result.hpp"

#include "summary.hpp"

namespace tally_cli {

const tally::axis& hist_result::axis_of(int c) const {
  return hist_of(c).axes()[mode == layout_mode::nd ? c : 0];
}

std::vector<double> hist_result::values_of(int c) const {
  return mode == layout_mode::nd ? marginal(hists.front(), c) : hist_of(c).values();
}

}  // namespace tally_cli

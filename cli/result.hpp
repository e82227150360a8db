// A finished `tally hist` run: what the report, the output files and the plots are made from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "readers.hpp"
#include "scan.hpp"
#include "tally/histogram.hpp"

namespace tally_cli {

/// single: one 1-D histogram; channels: one 1-D histogram per interleaved channel;
/// nd: one histogram whose axes are the columns of an n x D matrix.
enum class layout_mode { single, channels, nd };

/// Bins that stand for names rather than numbers (--text's letters): shown by their labels, with
/// no numeric summary (min, max, mean, quantiles), which would be of byte codes.
struct named_bins {
  std::string title;                // what the bins count: "letter groups, A-Z as a-z"
  std::string unit;                 // what one bin is (the plot's x label): "letter group"
  std::string dropped;              // what the samples in no bin are: "not letters"
  std::vector<std::string> labels;  // one per bin: "a-d", "e-h", ...
};

struct hist_result {
  source_info input;
  std::string weights_path;
  layout_mode mode = layout_mode::single;
  std::vector<std::string> names;       // per column: channel or axis
  std::vector<extrema> bounds;          // per column, exact, from the data
  std::vector<tally::histogram> hists;  // per channel; else the one histogram
  bool show_flow = false;
  std::optional<named_bins> named;  // a single histogram's named bins (--text=groups|letters)

  int columns() const { return static_cast<int>(names.size()); }
  bool weighted() const { return hists.front().weighted(); }
  /// The histogram column c is binned in.
  const tally::histogram& hist_of(int c) const {
    return hists[mode == layout_mode::channels ? c : 0];
  }
  const tally::axis& axis_of(int c) const;
  /// Column c's values per bin: its own histogram's, or the N-D histogram's marginal.
  std::vector<double> values_of(int c) const;
};

}  // namespace tally_cli

// From --bins/--range/--edges/--integer and the data's extrema to one tally::axis per column.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "args.hpp"
#include "readers.hpp"
#include "scan.hpp"
#include "tally/axis.hpp"
#include "tally/edges.hpp"

namespace tally_cli {

/// What the options say about one column's axis; unset parts come from defaults and data.
struct axis_spec {
  std::optional<std::int64_t> bins;
  std::optional<tally::bin_estimator> estimator;  // --bins auto|fd|...: numpy's estimate from the data
  std::optional<std::pair<double, double>> range;
  std::optional<std::vector<double>> edges;
  bool integer = false;
};

/// --bins, --range, --edges and --integer, parsed and checked against each other (usage_error)
/// before any file is opened.
struct axis_options {
  std::vector<std::int64_t> bins;
  std::optional<tally::bin_estimator> estimator;
  std::vector<std::pair<double, double>> ranges;
  std::vector<std::vector<double>> edges;
  bool integer = false;
};
axis_options parse_axis_options(const hist_args& args);

/// One spec per column: each option gives one value for all columns or one per column.
std::vector<axis_spec> axis_specs(const axis_options& options, int columns);

/// Whether building this column's axis needs a first pass over the file: for the data's extrema,
/// or for the values an estimator reads.
bool needs_first_pass(const axis_spec& spec, const source_info& input);

/// The number of bins of spec's estimator over the column's values (NaN left out, of the
/// samples' type): numpy's for the range the axis takes (--range, read as numpy reads Python
/// floats, or the data's). Prints numpy's warning where stone's search ends at its bound; fails
/// where numpy's estimator fails or estimates no bins.
std::int64_t estimated_bins(const axis_spec& spec, const source_info& input, const extrema& data,
                            const tally::view& values);

/// Defaults where the spec leaves gaps (an estimator's bins set by estimated_bins first): numpy's range (the data's [min, max]) and edge type (the
/// sample's float type); integer samples spanning at most 65536 values get one bin per integer,
/// others 64 regular bins (numpy's default is 10).
tally::axis make_axis(const axis_spec& spec, const source_info& input, const extrema& data);

}  // namespace tally_cli

// Numbers derived from a histogram's bins: estimated moments and quantiles, marginals, and
// coarser bins for display.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tally/histogram.hpp"

namespace tally_cli {

inline constexpr std::array<double, 5> kQuantiles = {0.01, 0.25, 0.5, 0.75, 0.99};

/// Estimates from bins alone: mean and std from bin centres, quantiles by linear interpolation
/// inside the bin that holds them. NaN where the bins hold no (positive) total.
struct estimate {
  double total = 0;
  double mean = 0, stddev = 0;
  std::array<double, kQuantiles.size()> quantiles{};
};
estimate estimate_of(const std::vector<double>& edges, const std::vector<double>& values);

/// The intervals the bins stand for when estimating: the edges, except that integer samples in
/// an integer axis stand for themselves, so bin k is [k - 0.5, k + 0.5) centred on k.
std::vector<double> value_edges(const tally::axis& a, tally::dtype sample);

/// Values summed over every axis but `axis` (row-major cells, last axis fastest).
std::vector<double> marginal(const tally::histogram& h, int axis);

/// Adjacent bins summed in groups of `group` so that at most `max_bins` remain.
struct merged_bins {
  std::int64_t group = 1;
  std::vector<double> edges;
  std::vector<double> values;
};
merged_bins merge(const std::vector<double>& edges, const std::vector<double>& values,
                  std::int64_t max_bins);

/// The first two axes' cells (summed over any further axes), merged into at most
/// max_rows x max_cols blocks; rows and cols carry the merged edges and marginal sums.
struct merged_grid {
  merged_bins rows, cols;
  std::vector<double> cells;  // rows.values.size() x cols.values.size(), row-major
};
merged_grid merge_2d(const tally::histogram& h, std::int64_t max_rows, std::int64_t max_cols);

}  // namespace tally_cli

// Estimates from bins, N-D marginals and bin merging.
#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tally_cli {

estimate estimate_of(const std::vector<double>& edges, const std::vector<double>& values) {
  estimate e;
  double weighted_sum = 0;
  for (std::size_t k = 0; k < values.size(); ++k) {
    e.total += values[k];
    weighted_sum += values[k] * 0.5 * (edges[k] + edges[k + 1]);
  }
  if (!(e.total > 0)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    e.mean = e.stddev = nan;
    e.quantiles.fill(nan);
    return e;
  }
  e.mean = weighted_sum / e.total;
  double squares = 0;
  for (std::size_t k = 0; k < values.size(); ++k) {
    const double d = 0.5 * (edges[k] + edges[k + 1]) - e.mean;
    squares += values[k] * d * d;
  }
  e.stddev = std::sqrt(squares / e.total);

  for (std::size_t q = 0; q < kQuantiles.size(); ++q) {
    const double target = kQuantiles[q] * e.total;
    double below = 0;
    std::size_t k = 0;
    // The first bin whose cumulative value reaches the target holds the quantile.
    while (k + 1 < values.size() && (values[k] <= 0 || below + values[k] < target))
      below += values[k++];
    const double inside = values[k] > 0 ? (target - below) / values[k] : 0;
    e.quantiles[q] = edges[k] + inside * (edges[k + 1] - edges[k]);
  }
  return e;
}

std::vector<double> value_edges(const tally::axis& a, tally::dtype sample) {
  std::vector<double> edges = a.edges();
  if (a.kind() == tally::axis_kind::integer && !tally::is_floating(sample))
    for (double& e : edges) e -= 0.5;
  return edges;
}

std::vector<double> marginal(const tally::histogram& h, int axis) {
  const std::vector<std::int64_t> shape = h.shape();
  std::int64_t inner = 1;  // cells between neighbours along `axis`
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::int64_t bins = shape[axis];
  std::vector<double> out(bins, 0.0);
  const std::vector<double> values = h.values();
  for (std::int64_t cell = 0; cell < static_cast<std::int64_t>(values.size()); ++cell)
    out[(cell / inner) % bins] += values[cell];
  return out;
}

merged_bins merge(const std::vector<double>& edges, const std::vector<double>& values,
                  std::int64_t max_bins) {
  const std::int64_t bins = static_cast<std::int64_t>(values.size());
  merged_bins m;
  m.group = bins <= max_bins ? 1 : (bins + max_bins - 1) / max_bins;
  for (std::int64_t start = 0; start < bins; start += m.group) {
    const std::int64_t end = std::min(bins, start + m.group);
    double sum = 0;
    for (std::int64_t k = start; k < end; ++k) sum += values[k];
    m.edges.push_back(edges[start]);
    m.values.push_back(sum);
  }
  m.edges.push_back(edges[bins]);
  return m;
}

merged_grid merge_2d(const tally::histogram& h, std::int64_t max_rows, std::int64_t max_cols) {
  merged_grid g;
  g.rows = merge(h.axes()[0].edges(), marginal(h, 0), max_rows);
  g.cols = merge(h.axes()[1].edges(), marginal(h, 1), max_cols);
  const std::vector<std::int64_t> shape = h.shape();
  std::int64_t inner = 1;  // cells per step of axis 1
  for (std::size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  const std::size_t ncols = g.cols.values.size();
  g.cells.assign(g.rows.values.size() * ncols, 0.0);
  const std::vector<double> values = h.values();
  for (std::int64_t cell = 0; cell < static_cast<std::int64_t>(values.size()); ++cell) {
    const std::int64_t j = (cell / inner) % shape[1], i = cell / inner / shape[1];
    g.cells[(i / g.rows.group) * ncols + j / g.cols.group] += values[cell];
  }
  return g;
}

}  // namespace tally_cli

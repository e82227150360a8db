// numpy.histogram's edge rules, in the core so that the Python package and the CLI share them:
// the edges of equal bins as numpy.linspace computes them in a given float type, the axis that
// bins by them, and the first and last edge numpy takes from the data.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tally/axis.hpp"
#include "tally/dtype.hpp"

namespace tally {

/// numpy.linspace(first, last, bins + 1) as numpy.histogram computes its edges: `first` and
/// `last` rounded to `arithmetic` (f16, f32 or f64: the type numpy's linspace computes in, the
/// result type of the range's values), every step of numpy's algorithm rounded to it, the last
/// edge `last` itself, then each edge rounded to `edge_type` (f16, f32 or f64: numpy's bin type).
/// Returns bins + 1 doubles, each a value of edge_type (NaN or infinite where numpy's are).
std::vector<double> linspace_edges(std::int64_t bins, double first, double last, dtype arithmetic,
                                   dtype edge_type);

/// The axis numpy.histogram bins by for `bins` equal bins (linspace_edges' arguments): the
/// regular axis where its edges are numpy's bit for bit, else a variable axis over numpy's edges,
/// which bins identically (edges that overflow to infinity are its outer edges); either way its
/// edges() are numpy's. Throws tally::error with numpy's message ("Too many bins for data range.
/// ...") where two edges are not increasing, and where an edge is NaN.
axis equal_bins(std::int64_t bins, double first, double last, dtype arithmetic, dtype edge_type);

/// The axis for edges numpy made (histogramdd's linspace edges, say): the regular axis whose
/// edges are `edges` bit for bit where there is one (it bins by arithmetic, not a search), else
/// the variable axis over them. The edges as axis::variable takes them.
axis axis_of_edges(std::vector<double> edges);

/// numpy's first and last edge from the data: [min, max] of samples of type `sample`, or
/// [min - 0.5, max + 0.5] where they are equal (in the samples' float type for f16 and f32, in
/// f64 for the others, as numpy 2's arithmetic on the data's scalars), [0, 1] for no samples.
/// Throws tally::error where min or max is not finite.
std::pair<double, double> data_range(bool any, double min, double max, dtype sample);

/// numpy's estimators of a number of equal bins (numpy.histogram's `bins` as a string).
enum class bin_estimator { automatic, fd, doane, rice, scott, sqrt, stone, sturges };

/// The estimator numpy names `name` ("auto", "fd", ...); none for another name.
std::optional<bin_estimator> bin_estimator_from_name(std::string_view name);
const char* name_of(bin_estimator e);

struct bin_estimate {
  std::int64_t bins = 1;
  /// stone's search ended at its last candidate: numpy warns "The number of bins estimated may be
  /// suboptimal."
  bool at_search_bound = false;
};

/// The number of equal bins numpy.histogram_bin_edges(x, name, range=(first, last)) makes over
/// [first, last] (data_range's, or the caller's range): the estimator's width over the values of
/// x within [first, last] (NaN never is), then ceil((last - first) / width); one bin where the
/// width is 0 or no value is in range. `integer_samples`: x holds an integer type's values, and a
/// width below 1 becomes 1 (numpy's rule). Computed in f64 with numpy's formulas and summation
/// order (its pairwise sums; 8192-value blocks for integer samples' means), so f64 and integer
/// samples get numpy's count. numpy computes some steps of f16 and f32 samples in their own type,
/// its cubes (doane) and dot products (stone) in SIMD code: a width within a rounding of a whole
/// number of bins can give one bin more or less than numpy there.
bin_estimate estimate_bins(bin_estimator e, const double* x, std::int64_t n, double first, double last,
                           bool integer_samples);

}  // namespace tally

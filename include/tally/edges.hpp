// numpy.histogram's edge rules, in the core so that the Python package and the CLI share them:
// the edges of equal bins as numpy.linspace computes them in a given float type, the axis that
// bins by them, and the first and last edge numpy takes from the data.
#pragma once

#include <cstdint>
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

}  // namespace tally

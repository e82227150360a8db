// numpy.histogram's edge rules, in the core so that the Python package and the CLI share them:
// the edges of equal bins as numpy.linspace computes them in a given float type, the axis that
// bins by them, and the first and last edge numpy takes from the data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

/// One end of numpy.histogram's `range` as numpy holds it. numpy compares the samples with it
/// and subtracts the two ends in the types its promotion (NEP 50) gives, and the estimate depends
/// on those types: a Python float compares with float16 samples as a float16, a numpy float64
/// as a float64; two Python ints subtract as int64, two int8 scalars as uint8.
struct range_end {
  /// A numpy scalar's type (u8 .. i64, f16, f32, f64); for a Python number (`weak`), i64 for an
  /// int and f64 for a float.
  dtype type = dtype::f64;
  /// A Python int or float: NEP 50's weak scalar, which takes the other operand's type.
  bool weak = true;
  /// The value; an integer rounded to the nearest double (as Python's float(int)).
  double value = 0;
  /// An integer's value exactly (integer types and Python ints). `beyond`: a Python int whose
  /// magnitude is 2^64 or more (`integer` then holds 2^64 - 1 and its sign).
  integer_value integer{};
  bool beyond = false;

  static range_end python_float(double v);
  static range_end python_int(integer_value v);
  /// A Python int of magnitude 2^64 or more: its sign and float(v).
  static range_end python_int_beyond(double v);
  /// A numpy float scalar (t: f16, f32 or f64; v a value of t).
  static range_end of_float(dtype t, double v);
  /// A numpy integer scalar (t: u8 .. i64; v within t).
  static range_end of_integer(dtype t, integer_value v);
};

struct bin_estimate {
  /// The number of bins: `estimate` clamped to int64's range (0 where it is NaN). It may be 0 or
  /// negative (numpy then makes one edge, or refuses the count).
  std::int64_t bins = 1;
  /// numpy's np.ceil(delta / width) before its int(): 1 where the width is 0 or no sample is in
  /// range; NaN or infinite where numpy's int() fails (`failed` says so), and possibly beyond
  /// int64 (numpy's linspace then refuses the count).
  double estimate = 1;
  /// stone's search ended at its last candidate: numpy warns "The number of bins estimated may be
  /// suboptimal."
  bool at_search_bound = false;
  /// The estimator's width (its value in numpy's type): 0 where numpy's is 0 (one bin, the range
  /// never subtracted) or no sample is in range.
  double width = 0;
  /// Where numpy's histogram_bin_edges raises, the Python exception it raises (ValueError,
  /// IndexError, OverflowError) and its message: int() of a NaN or infinite count, a Python int
  /// range beyond its int type, stone's candidate histograms where numpy's own arithmetic fails.
  enum class failure : std::uint8_t { none, value_error, index_error, overflow_error };
  failure failed = failure::none;
  std::string message;
};

/// The number of equal bins numpy.histogram_bin_edges(x, name, range) makes, for samples of any
/// tally type: `range` (numpy's first and last edge after its checks, widened by 0.5 where the
/// two are equal) or none, for the data's [min, max] (widened so where equal; NaN left out).
/// The estimator reads the samples within the range (NaN never is) in their order, and computes
/// as numpy computes for their dtype: float16 and float32 samples' ptp, std, mean, cubes and
/// stone's widths in their own type (float16 sums accumulated in float32, as numpy's), their
/// percentiles and the other widths in float64; integer samples' differences of order
/// statistics in their own type (wrapping, as numpy's) and the rest in float64, their means
/// through numpy's 8192-value buffers; pairwise sums as numpy's; stone's candidate histograms
/// as numpy.histogram's fast path bins them, each dot product in the order of OpenBLAS's
/// SkylakeX ddot kernel (numpy's wheels on AVX-512 machines). bfloat16 samples, which numpy
/// lacks, are estimated as their float32 values. Then ceil(delta / width) in the type numpy
/// divides in, and one bin where the width is 0 or no sample is in range; a width below 1 is 1
/// for integer samples (numpy's rule).
///
/// numpy's SIMD math (SVML's pow and log2 on AVX-512 machines) is not reproduced bit for bit:
/// doane's cubes and the logarithms use the C library's pow and log2, so a width within such a
/// rounding of a whole number of bins could give one bin more or less than numpy there.
///
/// Stone's search costs O(n log n + B^2 log n) for B = max(100, sqrt(n)) candidates (a sorted
/// copy, and each candidate's bin boundaries found by bisection), where numpy's builds B
/// histograms of n samples.
bin_estimate estimate_bins(bin_estimator e, const view& samples,
                           const std::optional<std::pair<range_end, range_end>>& range = std::nullopt);

}  // namespace tally

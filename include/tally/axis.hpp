// Axes: each maps a sample value to a bin index under tally's one bin rule.
//
// The bin rule (written once in src/core/bin_rule.hpp and used by every backend):
//   edges e_0 < e_1 < ... < e_B; a value x falls in bin k when e_k <= x < e_(k+1), except the
//   last bin, which also holds x == e_B. x < e_0 is underflow, x > e_B is overflow, NaN is nan;
//   all three are dropped from the bins and counted separately when flow counters are on.
//   Integer samples wider than 53 bits are compared after rounding to double, as numpy does.
#pragma once

#include <cstdint>
#include <vector>

#include "tally/dtype.hpp"

namespace tally {

enum class axis_kind : std::uint8_t { regular, variable, integer };

class axis {
 public:
  /// `bins` equal-width bins over [lo, hi], the last one closed. The edges are
  /// numpy.linspace(lo, hi, bins + 1) rounded to `edge_type` (f64, f32, f16 or bf16), the same
  /// edges numpy.histogram uses for samples of that float type; with f64 (the default) they
  /// are numpy's edges for f64 and integer samples. A value is binned against these edges
  /// exactly, so results match numpy.histogram bit for bit, values on edges included.
  /// Throws tally::error unless bins >= 1, lo < hi, both finite, and the rounded edges are
  /// strictly increasing.
  static axis regular(std::int64_t bins, double lo, double hi, dtype edge_type = dtype::f64);

  /// Arbitrary edges (at least two, finite, strictly increasing); bins = edges.size() - 1.
  static axis variable(std::vector<double> edges);

  /// One bin per integer in [lo, hi): bins = hi - lo (numpy's bincount is integer(0, max+1)).
  /// A floating-point sample x counts in bin floor(x) - lo.
  static axis integer(std::int64_t lo, std::int64_t hi);

  axis_kind kind() const { return kind_; }
  std::int64_t bins() const { return bins_; }
  /// The first and last edge.
  double lo() const;
  double hi() const;
  /// The float type the regular axis' edges are rounded to (f64 for the other kinds).
  dtype edge_type() const { return edge_type_; }
  /// Edge k, 0 <= k <= bins(), exactly as the bin rule uses it.
  double edge(std::int64_t k) const;
  /// All bins() + 1 edges.
  std::vector<double> edges() const;
  /// Bin widths e_(k+1) - e_k, rounded to the edge type, as numpy.diff computes them for density.
  std::vector<double> widths() const;

  /// The stored parameters, read by the backends.
  double regular_lo() const { return lo_; }
  double regular_hi() const { return hi_; }
  const std::vector<double>& variable_edges() const { return edges_; }
  std::int64_t integer_lo() const { return int_lo_; }

  friend bool operator==(const axis& a, const axis& b);
  friend bool operator!=(const axis& a, const axis& b) { return !(a == b); }

 private:
  axis() = default;
  axis_kind kind_ = axis_kind::regular;
  dtype edge_type_ = dtype::f64;
  std::int64_t bins_ = 0;
  double lo_ = 0, hi_ = 0;        // regular
  std::vector<double> edges_;     // variable
  std::int64_t int_lo_ = 0;       // integer
};

}  // namespace tally

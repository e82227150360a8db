// Axes: each maps a sample value to a bin index under tally's one bin rule.
//
// The bin rule (written once in src/core/bin_rule.hpp and used by every backend):
//   edges e_0 < e_1 < ... < e_B; a value x falls in bin k when e_k <= x < e_(k+1), except the
//   last bin, which also holds x == e_B. x < e_0 is underflow, x > e_B is overflow, NaN is nan;
//   all three are dropped from the bins and counted separately when flow counters are on.
//   Edges may repeat (the bins between equal edges are empty, except a last bin [e, e], which
//   holds the values equal to e) and the outer ones may be infinite, as numpy allows.
//   64-bit integer samples are compared with edges after rounding to double, as numpy does,
//   except where numpy compares them exactly: with integer edges (variable_integers) and with
//   an integer range (regular_exact).
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "tally/dtype.hpp"

namespace tally {

enum class axis_kind : std::uint8_t { regular, variable, integer };

/// An integer of any 64-bit type, signed or not, held exactly (the endpoints of regular_exact).
struct integer_value {
  bool negative = false;
  std::uint64_t magnitude = 0;
  constexpr integer_value() = default;
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  constexpr integer_value(I v) {  // NOLINT: implicit, from any integer
    magnitude = static_cast<std::uint64_t>(v);
    if constexpr (std::is_signed_v<I>) {
      negative = v < 0;
      if (negative) magnitude = std::uint64_t{0} - magnitude;
    }
  }
  friend bool operator==(integer_value a, integer_value b) {
    return a.magnitude == b.magnitude && (a.negative == b.negative || a.magnitude == 0);
  }
};

class axis {
 public:
  /// `bins` equal-width bins over [lo, hi], the last one closed. The edges are
  /// numpy.linspace(lo, hi, bins + 1) rounded to `edge_type` (f64, f32, f16 or bf16), the same
  /// edges numpy.histogram uses for samples of that float type; with f64 (the default) they
  /// are numpy's edges for f64 and integer samples. A value is binned against these edges
  /// exactly, so results match numpy.histogram bit for bit, values on edges included.
  /// Throws tally::error unless bins >= 1, lo < hi, both finite, and the rounded edges are
  /// strictly increasing. Where the edges are the consecutive integers lo, lo + 1, ..., hi
  /// (unit_integer_edges()), integer samples are binned as v - lo, the value hi in the last bin:
  /// the same bins, by the integer axis' cheaper rule.
  static axis regular(std::int64_t bins, double lo, double hi, dtype edge_type = dtype::f64);

  /// regular(bins, double(lo), double(hi)) whose range is also kept exactly: a 64-bit integer
  /// sample is kept when lo <= x <= hi, compared before any rounding (numpy.histogram with an
  /// integer range), and a kept sample is then binned by the f64 edges. Other samples, and
  /// edges(), are as regular's.
  static axis regular_exact(std::int64_t bins, integer_value lo, integer_value hi);

  /// Arbitrary edges: at least two, non-decreasing, not NaN; the first and last may be infinite
  /// (a repeated edge makes an empty bin, and a repeated last edge a bin [e, e] of the values
  /// equal to e, as numpy.histogram); bins = edges.size() - 1.
  static axis variable(std::vector<double> edges);

  /// Integer edges, compared exactly with 64-bit integer samples of the same signedness (and
  /// with the other samples after rounding to double, as numpy compares them): non-decreasing;
  /// edges() gives them rounded to double.
  static axis variable_integers(std::vector<std::int64_t> edges);
  static axis variable_integers(std::vector<std::uint64_t> edges);

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
  const std::vector<double>& variable_edges() const;
  std::int64_t integer_lo() const { return int_lo_; }
  /// variable_integers' edges as given (their bits, for unsigned ones; empty for other axes).
  const std::vector<std::int64_t>& integer_edges() const { return int_edges_; }
  bool integer_edges_unsigned() const { return int_edges_unsigned_; }
  /// A regular axis whose edges are the integers lo, lo + 1, ..., hi, each exact in the edge
  /// type: integer samples take the integer rule, the last bin closed (false for other axes).
  bool unit_integer_edges() const { return unit_integers_; }
  /// regular_exact's range (false for other axes).
  bool has_exact_range() const { return exact_range_; }
  integer_value exact_lo() const { return exact_lo_; }
  integer_value exact_hi() const { return exact_hi_; }

  /// The same kind and parameters, floats compared bit for bit (so equal axes have the same
  /// edges bit for bit, and -0.0 differs from 0.0).
  friend bool operator==(const axis& a, const axis& b);
  friend bool operator!=(const axis& a, const axis& b) { return !(a == b); }

 private:
  axis() = default;
  template <class I> static axis integer_edged(const std::vector<I>& edges);
  axis_kind kind_ = axis_kind::regular;
  dtype edge_type_ = dtype::f64;
  std::int64_t bins_ = 0;
  double lo_ = 0, hi_ = 0;        // regular
  bool unit_integers_ = false;    // regular: edges lo, lo + 1, ..., hi
  // variable: shared by the axis' copies (a call copies its axes; 2^20 edges are 8 MiB)
  std::shared_ptr<const std::vector<double>> edges_;
  std::int64_t int_lo_ = 0;       // integer
  std::vector<std::int64_t> int_edges_;  // variable_integers
  bool int_edges_unsigned_ = false;
  bool exact_range_ = false;  // regular_exact
  integer_value exact_lo_, exact_hi_;
};

}  // namespace tally

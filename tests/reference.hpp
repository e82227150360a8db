// Brute-force reference histogram, written from the documented bin rule alone (not from src/).
//
// Regular edges are numpy.linspace(lo, hi, bins + 1) computed here (step = (hi - lo) / bins,
// edge_k = k * step + lo with two roundings, edge_bins = hi), then rounded to the edge type.
// A value is placed with std::upper_bound over the edges: bin k holds e_k <= x < e_(k+1), the
// last bin also holds x == e_B; x < e_0 is underflow, x > e_B overflow, NaN nan. Integer axes
// compare integer samples exactly and floating samples by floor(x). Weighted sums follow the
// documented order: blocks of 65536 samples in input order; within a block each cell's weights
// are summed from 0.0 in sample order into a partial; partials are added to the total in block
// order. This file is compiled with -ffp-contract=off, so no expression here becomes an FMA.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "tally/tally.hpp"

namespace ref {

using tally::dtype;

/// Samples per block of the weighted summation order (policy::block).
inline constexpr std::int64_t block = 65536;

inline std::int64_t bytes_of(dtype t) {
  switch (t) {
    case dtype::u8:
    case dtype::i8:
      return 1;
    case dtype::u16:
    case dtype::i16:
    case dtype::f16:
    case dtype::bf16:
      return 2;
    case dtype::u32:
    case dtype::i32:
    case dtype::f32:
      return 4;
    case dtype::u64:
    case dtype::i64:
    case dtype::f64:
      return 8;
  }
  throw std::logic_error("bad dtype");
}

/// One sample as stored: an exact signed or unsigned integer, or a floating value (widened
/// exactly to double).
struct sample {
  enum class kind { sint, uint, real };
  kind k = kind::real;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double x = 0;

  /// The value the edge comparison uses: integers rounded to the nearest double.
  double as_double() const {
    switch (k) {
      case kind::sint:
        return static_cast<double>(i);
      case kind::uint:
        return static_cast<double>(u);
      case kind::real:
        return x;
    }
    return x;
  }
};

template <class T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Element i of a strided view (stride in elements).
inline sample read(const tally::view& v, std::int64_t i) {
  const auto* p = static_cast<const unsigned char*>(v.data) + i * v.stride * bytes_of(v.type);
  sample s;
  auto sint = [&](std::int64_t value) { s.k = sample::kind::sint; s.i = value; };
  auto uint = [&](std::uint64_t value) { s.k = sample::kind::uint; s.u = value; };
  auto real = [&](double value) { s.k = sample::kind::real; s.x = value; };
  switch (v.type) {
    case dtype::u8: uint(load<std::uint8_t>(p)); break;
    case dtype::i8: sint(load<std::int8_t>(p)); break;
    case dtype::u16: uint(load<std::uint16_t>(p)); break;
    case dtype::i16: sint(load<std::int16_t>(p)); break;
    case dtype::u32: uint(load<std::uint32_t>(p)); break;
    case dtype::i32: sint(load<std::int32_t>(p)); break;
    case dtype::u64: uint(load<std::uint64_t>(p)); break;
    case dtype::i64: sint(load<std::int64_t>(p)); break;
    case dtype::f16: real(tally::to_double(load<tally::half>(p))); break;
    case dtype::bf16: real(tally::to_double(load<tally::bfloat16>(p))); break;
    case dtype::f32: real(static_cast<double>(load<float>(p))); break;
    case dtype::f64: real(load<double>(p)); break;
  }
  return s;
}

/// Weight i of an f32 or f64 view, widened to double.
inline double weight_at(const tally::view& w, std::int64_t i) {
  const sample s = read(w, i);
  if (s.k != sample::kind::real) throw std::logic_error("weights must be floating");
  return s.x;
}

/// x rounded to nearest (even) in the edge type.
inline double round_to(double x, dtype t) {
  switch (t) {
    case dtype::f64: return x;
    case dtype::f32: return static_cast<double>(static_cast<float>(x));
    case dtype::f16: return tally::to_double(tally::to_half(x));
    case dtype::bf16: return tally::to_double(tally::to_bfloat16(x));
    default: throw std::logic_error("edge type must be floating");
  }
}

/// numpy.linspace(lo, hi, bins + 1) in double, as numpy computes it.
inline std::vector<double> linspace(double lo, double hi, std::int64_t bins) {
  const double delta = hi - lo;
  const double div = static_cast<double>(bins);
  const double step = delta / div;
  std::vector<double> e(static_cast<std::size_t>(bins) + 1);
  for (std::int64_t k = 0; k <= bins; ++k) {
    const double kk = static_cast<double>(k);
    // numpy: y = arange * step (or arange / div * delta when step underflows to 0); y += lo.
    const double scaled = step == 0 ? (kk / div) * delta : kk * step;
    e[static_cast<std::size_t>(k)] = scaled + lo;
  }
  e[static_cast<std::size_t>(bins)] = hi;
  return e;
}

/// What the reference knows of an axis.
struct axis_model {
  tally::axis_kind kind = tally::axis_kind::regular;
  std::int64_t bins = 0;
  dtype edge_type = dtype::f64;
  std::vector<double> edges;  // regular and variable
  std::int64_t int_lo = 0;    // integer: bin b holds the integer int_lo + b
  // regular with an integer range: integer samples outside [range_lo, range_hi] (compared as
  // exact integers) are dropped before the edges are looked at.
  bool exact_range = false;
  tally::integer_value range_lo, range_hi;
  // variable with integer edges (their bits for unsigned ones): compared exactly with integer
  // samples of their signedness.
  std::vector<std::int64_t> int_edges;
  bool int_unsigned = false;
};

/// a < b for exact integers.
inline bool less(const tally::integer_value& a, const tally::integer_value& b) {
  if (a.negative != b.negative) return a.negative && !(a.magnitude == 0 && b.magnitude == 0);
  return a.negative ? a.magnitude > b.magnitude : a.magnitude < b.magnitude;
}

inline axis_model regular(std::int64_t bins, double lo, double hi, dtype edge_type = dtype::f64) {
  axis_model a;
  a.kind = tally::axis_kind::regular;
  a.bins = bins;
  a.edge_type = edge_type;
  a.edges = linspace(lo, hi, bins);
  for (double& e : a.edges) e = round_to(e, edge_type);
  return a;
}

inline axis_model variable(std::vector<double> edges) {
  axis_model a;
  a.kind = tally::axis_kind::variable;
  a.bins = static_cast<std::int64_t>(edges.size()) - 1;
  a.edges = std::move(edges);
  return a;
}

inline axis_model integer(std::int64_t lo, std::int64_t hi) {
  axis_model a;
  a.kind = tally::axis_kind::integer;
  a.bins = hi - lo;
  a.int_lo = lo;
  return a;
}

enum class fate { in_bin, underflow, overflow, nan };

struct placed {
  fate f = fate::in_bin;
  std::int64_t bin = -1;
};

inline placed place_by_edges(const std::vector<double>& e, double x) {
  if (std::isnan(x)) return {fate::nan, -1};
  if (x < e.front()) return {fate::underflow, -1};
  if (x > e.back()) return {fate::overflow, -1};
  const std::int64_t bins = static_cast<std::int64_t>(e.size()) - 1;
  const std::int64_t k = (std::upper_bound(e.begin(), e.end(), x) - e.begin()) - 1;
  return {fate::in_bin, std::min(k, bins - 1)};
}

inline placed place_integer(const axis_model& a, const sample& s) {
  std::int64_t v = 0;
  switch (s.k) {
    case sample::kind::sint:
      v = s.i;
      break;
    case sample::kind::uint:
      if (s.u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return {fate::overflow, -1};  // above every int64 bound
      v = static_cast<std::int64_t>(s.u);
      break;
    case sample::kind::real: {
      if (std::isnan(s.x)) return {fate::nan, -1};
      const double f = std::floor(s.x);
      if (f < -0x1p63) return {fate::underflow, -1};
      if (f >= 0x1p63) return {fate::overflow, -1};
      v = static_cast<std::int64_t>(f);
      break;
    }
  }
  const std::int64_t last = a.int_lo + (a.bins - 1);
  if (v < a.int_lo) return {fate::underflow, -1};
  if (v > last) return {fate::overflow, -1};
  return {fate::in_bin, static_cast<std::int64_t>(static_cast<std::uint64_t>(v) -
                                                  static_cast<std::uint64_t>(a.int_lo))};
}

/// The last k with e[k] <= x among exact integer edges (x == e.back() in the last bin).
template <class I> placed place_by_integer_edges(const std::vector<I>& e, I x) {
  if (x < e.front()) return {fate::underflow, -1};
  if (x > e.back()) return {fate::overflow, -1};
  const auto bins = static_cast<std::int64_t>(e.size()) - 1;
  const std::int64_t k = (std::upper_bound(e.begin(), e.end(), x) - e.begin()) - 1;
  return {fate::in_bin, std::min(k, bins - 1)};
}

inline placed place(const axis_model& a, const sample& s) {
  if (a.kind == tally::axis_kind::integer) return place_integer(a, s);
  const bool sint = s.k == sample::kind::sint, uint = s.k == sample::kind::uint;
  if (!a.int_edges.empty() && sint && !a.int_unsigned) return place_by_integer_edges(a.int_edges, s.i);
  if (!a.int_edges.empty() && uint && a.int_unsigned) {
    std::vector<std::uint64_t> e(a.int_edges.size());
    std::memcpy(e.data(), a.int_edges.data(), e.size() * sizeof(std::uint64_t));
    return place_by_integer_edges(e, s.u);
  }
  if (a.exact_range && (sint || uint)) {
    const tally::integer_value v = sint ? tally::integer_value(s.i) : tally::integer_value(s.u);
    if (less(v, a.range_lo)) return {fate::underflow, -1};
    if (less(a.range_hi, v)) return {fate::overflow, -1};
  }
  return place_by_edges(a.edges, s.as_double());
}

inline std::int64_t cells_of(const std::vector<axis_model>& axes) {
  std::int64_t c = 1;
  for (const auto& a : axes) c *= a.bins;
  return c;
}

/// The reference histogram's state.
struct result {
  bool weighted = false;
  std::vector<std::uint64_t> counts;  // unweighted storage
  std::vector<double> sums;           // weighted storage
  tally::flow_counts flow;
  std::uint64_t samples = 0;

  std::vector<double> values() const {
    if (weighted) return sums;
    return std::vector<double>(counts.begin(), counts.end());
  }
};

inline result empty(const std::vector<axis_model>& axes, bool weighted) {
  result r;
  r.weighted = weighted;
  const auto cells = static_cast<std::size_t>(cells_of(axes));
  if (weighted) {
    r.sums.assign(cells, 0.0);
  } else {
    r.counts.assign(cells, 0);
  }
  return r;
}

/// The cell of sample i (row-major), or -1 after counting its flow under the first rejecting axis.
inline std::int64_t cell_of(result& r, const std::vector<axis_model>& axes,
                            const std::vector<tally::view>& columns, std::int64_t i) {
  std::int64_t cell = 0;
  for (std::size_t d = 0; d < axes.size(); ++d) {
    const placed p = place(axes[d], read(columns[d], i));
    switch (p.f) {
      case fate::in_bin:
        cell = cell * axes[d].bins + p.bin;
        break;
      case fate::underflow:
        ++r.flow.underflow;
        return -1;
      case fate::overflow:
        ++r.flow.overflow;
        return -1;
      case fate::nan:
        ++r.flow.nan;
        return -1;
    }
  }
  return cell;
}

/// The counts of options::flow_bins' layout: each axis underflow, its bins, overflow, NaN
/// (bins + 3 cells), row-major, every sample in one cell.
inline std::vector<std::uint64_t> flow_bin_counts(const std::vector<axis_model>& axes,
                                                  const std::vector<tally::view>& columns) {
  std::int64_t cells = 1;
  for (const auto& a : axes) cells *= a.bins + 3;
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(cells), 0);
  for (std::int64_t i = 0; i < columns.at(0).size; ++i) {
    std::int64_t cell = 0;
    for (std::size_t d = 0; d < axes.size(); ++d) {
      const placed p = place(axes[d], read(columns[d], i));
      const std::int64_t k = p.f == fate::in_bin ? p.bin + 1 : p.f == fate::underflow ? 0
                             : p.f == fate::overflow ? axes[d].bins + 1 : axes[d].bins + 2;
      cell = cell * (axes[d].bins + 3) + k;
    }
    ++counts[static_cast<std::size_t>(cell)];
  }
  return counts;
}

/// One fill call: N-D columns (one per axis), optional weights (weighted storage only; an
/// unweighted fill of weighted storage adds 1.0 per sample). `block_size`: options::sum_block's
/// blocks (n for sum_block 0, input order), also to show that a test tells orders apart.
inline void fill(result& r, const std::vector<axis_model>& axes,
                 const std::vector<tally::view>& columns, const tally::view* weights = nullptr,
                 std::int64_t block_size = block) {
  const std::int64_t n = columns.at(0).size;
  r.samples += static_cast<std::uint64_t>(n);
  if (!r.weighted) {
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t c = cell_of(r, axes, columns, i);
      if (c >= 0) ++r.counts[static_cast<std::size_t>(c)];
    }
    return;
  }
  std::vector<double> partial(r.sums.size(), 0.0);
  std::vector<char> touched(r.sums.size(), 0);
  std::vector<std::int64_t> order;
  for (std::int64_t start = 0; start < n; start += block_size) {
    const std::int64_t end = std::min(n, start + block_size);
    for (std::int64_t i = start; i < end; ++i) {
      const std::int64_t c = cell_of(r, axes, columns, i);
      if (c < 0) continue;
      const auto cu = static_cast<std::size_t>(c);
      if (!touched[cu]) {
        touched[cu] = 1;
        partial[cu] = 0.0;
        order.push_back(c);
      }
      partial[cu] = partial[cu] + (weights ? weight_at(*weights, i) : 1.0);
    }
    for (std::int64_t c : order) {
      const auto cu = static_cast<std::size_t>(c);
      r.sums[cu] = r.sums[cu] + partial[cu];
      touched[cu] = 0;
    }
    order.clear();
  }
}

inline void fill(result& r, const axis_model& axis, const tally::view& samples,
                 const tally::view* weights = nullptr) {
  fill(r, std::vector<axis_model>{axis}, std::vector<tally::view>{samples}, weights);
}

/// A correctly rounded sum (Shewchuk's exact partials, with the final rounding step of Python's
/// math.fsum): finite values kept as non-overlapping partials; infinities and NaN as IEEE
/// addition in any order treats them.
class exact_sum {
 public:
  void add(double x) {
    if (std::isnan(x)) { nan_ = true; return; }
    if (std::isinf(x)) { (x > 0 ? plus_inf_ : minus_inf_) = true; return; }
    std::size_t i = 0;
    for (double y : partials_) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y;
      const double lo = y - (hi - x);
      if (lo != 0.0) partials_[i++] = lo;
      x = hi;
    }
    partials_.resize(i);
    partials_.push_back(x);
  }
  double value() const {
    if (nan_ || (plus_inf_ && minus_inf_)) return std::numeric_limits<double>::quiet_NaN();
    if (plus_inf_) return std::numeric_limits<double>::infinity();
    if (minus_inf_) return -std::numeric_limits<double>::infinity();
    std::size_t n = partials_.size();
    if (n == 0) return 0.0;
    double hi = partials_[--n], lo = 0.0;
    while (n > 0) {
      const double x = hi, y = partials_[--n];
      hi = x + y;
      lo = y - (hi - x);
      if (lo != 0.0) break;
    }
    // Half-way between two doubles: the partials below decide the direction.
    if (n > 0 && ((lo < 0 && partials_[n - 1] < 0) || (lo > 0 && partials_[n - 1] > 0))) {
      const double y = lo * 2, x = hi + y;
      if (y == x - hi) hi = x;
    }
    return hi;
  }

 private:
  std::vector<double> partials_;
  bool nan_ = false, plus_inf_ = false, minus_inf_ = false;
};

/// Each cell's exact, correctly rounded sum of weights (1.0 without weights), and the flow.
inline result exact_fill(const std::vector<axis_model>& axes, const std::vector<tally::view>& columns,
                         const tally::view* weights) {
  result r = empty(axes, true);
  std::vector<exact_sum> sums(r.sums.size());
  const std::int64_t n = columns.at(0).size;
  r.samples = static_cast<std::uint64_t>(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t c = cell_of(r, axes, columns, i);
    if (c >= 0) sums[static_cast<std::size_t>(c)].add(weights ? weight_at(*weights, i) : 1.0);
  }
  for (std::size_t c = 0; c < sums.size(); ++c) r.sums[c] = sums[c].value();
  return r;
}

/// Bin widths as numpy computes them for density: np.diff(edges) in the edges' own float type,
/// then widened to double. Integer axes have width 1.
inline std::vector<double> widths(const axis_model& a) {
  std::vector<double> w(static_cast<std::size_t>(a.bins), 1.0);
  if (a.kind == tally::axis_kind::integer) return w;
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = round_to(a.edges[k + 1] - a.edges[k], a.edge_type);
  return w;
}

/// numpy.histogramdd's density: value / width_0 / width_1 / ... / total (1-D: numpy.histogram's
/// n / db / n.sum()). The total is summed in cell order: the tests use counts, or weights whose
/// sums are exact in any order.
inline std::vector<double> density(const result& r, const std::vector<axis_model>& axes) {
  std::vector<double> v = r.values();
  double total = 0;
  if (r.weighted) {
    for (double x : v) total += x;
  } else {
    std::uint64_t t = 0;
    for (std::uint64_t c : r.counts) t += c;
    total = static_cast<double>(t);
  }
  std::vector<std::vector<double>> w;
  for (const auto& a : axes) w.push_back(widths(a));
  for (std::size_t c = 0; c < v.size(); ++c) {
    // Split the row-major cell index into per-axis bins, last axis fastest.
    std::vector<std::size_t> idx(axes.size());
    std::size_t rest = c;
    for (std::size_t d = axes.size(); d-- > 0;) {
      idx[d] = rest % static_cast<std::size_t>(axes[d].bins);
      rest /= static_cast<std::size_t>(axes[d].bins);
    }
    double x = v[c];
    for (std::size_t d = 0; d < axes.size(); ++d) x = x / w[d][idx[d]];
    v[c] = x / total;
  }
  return v;
}

}  // namespace ref

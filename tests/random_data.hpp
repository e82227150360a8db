// The one seeded generator of test inputs: sample values of five shapes, typed (and strided)
// sample columns, weights, and axis specs that build both a tally::axis and its reference model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {

using tally::dtype;

inline constexpr dtype all_dtypes[] = {dtype::u8,  dtype::i8,  dtype::u16, dtype::i16,
                                       dtype::u32, dtype::i32, dtype::u64, dtype::i64,
                                       dtype::f16, dtype::bf16, dtype::f32, dtype::f64};

inline bool floating(dtype t) {
  return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64;
}

/// Shapes of sample data.
enum class dist { uniform, one_bin, mostly_one_bin, sorted, normal };
inline constexpr dist all_dists[] = {dist::uniform, dist::one_bin, dist::mostly_one_bin,
                                     dist::sorted, dist::normal};

inline const char* name_of(dist d) {
  switch (d) {
    case dist::uniform: return "uniform";
    case dist::one_bin: return "one_bin";
    case dist::mostly_one_bin: return "mostly_one_bin";
    case dist::sorted: return "sorted";
    case dist::normal: return "normal";
  }
  return "?";
}

struct range {
  double lo = 0, hi = 1;
  double width() const { return hi - lo; }
  double at(double fraction) const { return lo + fraction * (hi - lo); }
};

/// The values a dtype can hold (finite part), as doubles.
inline range range_of(dtype t) {
  switch (t) {
    case dtype::u8: return {0, 255};
    case dtype::i8: return {-128, 127};
    case dtype::u16: return {0, 65535};
    case dtype::i16: return {-32768, 32767};
    case dtype::u32: return {0, 4294967295.0};
    case dtype::i32: return {-2147483648.0, 2147483647.0};
    case dtype::u64: return {0, 0x1p64};
    case dtype::i64: return {-0x1p63, 0x1p63};
    case dtype::f16: return {-65504, 65504};
    case dtype::bf16:
    case dtype::f32: return {-3.0e38, 3.0e38};
    case dtype::f64: return {-1.0e308, 1.0e308};
  }
  return {0, 1};
}

inline range intersect(range a, range b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }

/// n values of shape d around the body r:
///  uniform: over r widened by 10% each side (so some fall outside r);
///  one_bin: every value equal to a point 37% into r;
///  mostly_one_bin: 80% that point, the rest uniform;
///  sorted: uniform, ascending;
///  normal: mean mid r, sigma a quarter of r (about 5% outside).
/// With specials, about 3% of the positions become NaN, +inf or -inf.
inline std::vector<double> random_values(dist d, range r, std::int64_t n, std::uint64_t seed,
                                         bool specials) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> wide(r.lo - 0.1 * r.width(), r.hi + 0.1 * r.width());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::normal_distribution<double> gauss(r.at(0.5), r.width() / 4);
  const double point = r.at(0.37);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) {
    switch (d) {
      case dist::uniform:
      case dist::sorted: x = wide(gen); break;
      case dist::one_bin: x = point; break;
      case dist::mostly_one_bin: x = unit(gen) < 0.8 ? point : wide(gen); break;
      case dist::normal: x = gauss(gen); break;
    }
  }
  if (d == dist::sorted) std::sort(v.begin(), v.end());
  if (specials) {
    const double special[] = {std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity()};
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (unit(gen) < 0.03) v[i] = special[i % 3];
    }
  }
  return v;
}

/// Signed weights whose magnitudes span 2^-30 .. 2^30, so that any change of summation order
/// changes the bits of the sums.
inline std::vector<double> random_weights(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (double& x : w) x = std::ldexp(gauss(gen), exponent(gen));
  return w;
}

/// Weights whose f64 sums depend on the order: magnitudes 2^-60 .. 2^60 of both signs, one in
/// eight the negation of the one before (cancelling), and with `specials` two infinities and a
/// NaN at fixed places.
inline std::vector<double> spread_weights(std::int64_t n, std::uint64_t seed, bool specials) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-60, 60), sign(0, 1), cancel(0, 7);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = i > 0 && cancel(gen) == 0 ? -w[i - 1] : (sign(gen) ? -1 : 1) * std::ldexp(mantissa(gen), exponent(gen));
  if (specials && n >= 4) {
    w[static_cast<std::size_t>(n / 4)] = std::numeric_limits<double>::infinity();
    w[static_cast<std::size_t>(n / 2)] = -std::numeric_limits<double>::infinity();
    w[static_cast<std::size_t>(3 * n / 4)] = std::numeric_limits<double>::quiet_NaN();
  }
  return w;
}

/// x stored as T: integers rounded to nearest and saturated (NaN -> 0), floats rounded.
template <class T>
T convert(double x) {
  if constexpr (std::is_same_v<T, tally::half>) {
    return tally::to_half(x);
  } else if constexpr (std::is_same_v<T, tally::bfloat16>) {
    return tally::to_bfloat16(x);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(x);
  } else {
    if (std::isnan(x)) return T{0};
    const double r = std::nearbyint(x);
    // Compare against the powers of two bounding T, which doubles hold exactly.
    const double top = std::ldexp(1.0, std::numeric_limits<T>::digits);  // max + 1
    if (r >= top) return std::numeric_limits<T>::max();
    if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    return static_cast<T>(r);
  }
}

/// A typed sample column: n elements at stride `stride` (in elements); the gaps between them
/// hold a filler value, so a backend that reads a gap gets a wrong answer.
struct column {
  dtype type = dtype::f64;
  std::int64_t n = 0;
  std::int64_t stride = 1;
  std::vector<unsigned char> bytes;

  tally::view view() const { return tally::view{bytes.data(), n, stride, type}; }
};

/// Elements [begin, end) of a strided view.
inline tally::view slice(const tally::view& v, std::int64_t begin, std::int64_t end) {
  tally::view s = v;
  s.data = static_cast<const unsigned char*>(v.data) + begin * v.stride * ref::bytes_of(v.type);
  s.size = end - begin;
  return s;
}

/// Uneven chunk boundaries for n samples: 0 <= c_0 <= ... <= n, with chunks of 0, 1 and many.
inline std::vector<std::int64_t> uneven_cuts(std::int64_t n) {
  std::vector<std::int64_t> cuts = {0, n / 7, n / 7 + 1, n / 2, n};
  for (auto& c : cuts) c = std::min(c, n);
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

/// Channel k of interleaved samples with `channels` values per pixel.
inline tally::view channel_view(const tally::view& interleaved, int k, int channels) {
  tally::view c = slice(interleaved, k, interleaved.size);
  c.size = interleaved.size / channels;
  c.stride = interleaved.stride * channels;
  return c;
}

template <class T>
column typed_column(const std::vector<T>& values, std::int64_t stride = 1, T filler = T{}) {
  column c;
  c.type = tally::dtype_of<T>;
  c.n = static_cast<std::int64_t>(values.size());
  c.stride = stride;
  // At least one element, so that even an empty column has a non-null pointer.
  std::vector<T> spread(std::max<std::size_t>(1, values.size() * static_cast<std::size_t>(stride)),
                        filler);
  for (std::size_t i = 0; i < values.size(); ++i) spread[i * static_cast<std::size_t>(stride)] = values[i];
  c.bytes.resize(spread.size() * sizeof(T));
  std::memcpy(c.bytes.data(), spread.data(), c.bytes.size());
  return c;
}

template <class T>
column converted_column(const std::vector<double>& values, std::int64_t stride, double filler) {
  std::vector<T> typed(values.size());
  std::transform(values.begin(), values.end(), typed.begin(), convert<T>);
  return typed_column<T>(typed, stride, convert<T>(filler));
}

/// values stored as dtype t.
inline column make_column(dtype t, const std::vector<double>& values, std::int64_t stride = 1,
                          double filler = 0) {
  switch (t) {
    case dtype::u8: return converted_column<std::uint8_t>(values, stride, filler);
    case dtype::i8: return converted_column<std::int8_t>(values, stride, filler);
    case dtype::u16: return converted_column<std::uint16_t>(values, stride, filler);
    case dtype::i16: return converted_column<std::int16_t>(values, stride, filler);
    case dtype::u32: return converted_column<std::uint32_t>(values, stride, filler);
    case dtype::i32: return converted_column<std::int32_t>(values, stride, filler);
    case dtype::u64: return converted_column<std::uint64_t>(values, stride, filler);
    case dtype::i64: return converted_column<std::int64_t>(values, stride, filler);
    case dtype::f16: return converted_column<tally::half>(values, stride, filler);
    case dtype::bf16: return converted_column<tally::bfloat16>(values, stride, filler);
    case dtype::f32: return converted_column<float>(values, stride, filler);
    case dtype::f64: return converted_column<double>(values, stride, filler);
  }
  return {};
}

/// Random samples of dtype t and shape d over the body r (NaN/inf sprinkled in for floats);
/// stride gaps are filled with r's midpoint, which lies in a bin.
inline column random_column(dtype t, dist d, range r, std::int64_t n, std::uint64_t seed,
                            std::int64_t stride = 1) {
  return make_column(t, random_values(d, r, n, seed, floating(t)), stride, r.at(0.5));
}

/// An axis as parameters: builds the tally::axis and the reference's model of it.
struct axis_spec {
  tally::axis_kind kind = tally::axis_kind::regular;
  std::int64_t bins = 1;
  double lo = 0, hi = 1;           // regular
  dtype edge_type = dtype::f64;    // regular
  std::vector<double> edges;       // variable
  std::int64_t int_lo = 0;         // integer: [int_lo, int_lo + bins)
  bool exact_range = false;        // regular_exact over [range_lo, range_hi]
  tally::integer_value range_lo, range_hi;
  std::vector<std::int64_t> int_edges;  // variable_integers (bits, for unsigned ones)
  bool int_unsigned = false;

  tally::axis make() const {
    switch (kind) {
      case tally::axis_kind::regular:
        return exact_range ? tally::axis::regular_exact(bins, range_lo, range_hi)
                           : tally::axis::regular(bins, lo, hi, edge_type);
      case tally::axis_kind::variable:
        if (int_edges.empty()) return tally::axis::variable(edges);
        if (!int_unsigned) return tally::axis::variable_integers(int_edges);
        return tally::axis::variable_integers(std::vector<std::uint64_t>(int_edges.begin(), int_edges.end()));
      case tally::axis_kind::integer: return tally::axis::integer(int_lo, int_lo + bins);
    }
    throw std::logic_error("bad axis kind");
  }
  ref::axis_model model() const {
    ref::axis_model m;
    switch (kind) {
      case tally::axis_kind::regular:
        m = ref::regular(bins, lo, hi, edge_type);
        m.exact_range = exact_range;
        m.range_lo = range_lo;
        m.range_hi = range_hi;
        return m;
      case tally::axis_kind::variable:
        m = ref::variable(edges);
        m.int_edges = int_edges;
        m.int_unsigned = int_unsigned;
        return m;
      case tally::axis_kind::integer: return ref::integer(int_lo, int_lo + bins);
    }
    throw std::logic_error("bad axis kind");
  }
  /// The values covered by the bins.
  range body() const {
    switch (kind) {
      case tally::axis_kind::regular: return {lo, hi};
      case tally::axis_kind::variable: return {edges.front(), edges.back()};
      case tally::axis_kind::integer:
        return {static_cast<double>(int_lo), static_cast<double>(int_lo) + static_cast<double>(bins)};
    }
    return {};
  }
  std::string name() const {
    switch (kind) {
      case tally::axis_kind::regular:
        return "regular" + std::to_string(bins) + "_" + std::string(tally::name_of(edge_type));
      case tally::axis_kind::variable: return "variable" + std::to_string(bins);
      case tally::axis_kind::integer: return "integer" + std::to_string(bins);
    }
    return "?";
  }
};

inline axis_spec regular_spec(std::int64_t bins, double lo, double hi, dtype edge_type = dtype::f64) {
  axis_spec s;
  s.kind = tally::axis_kind::regular;
  s.bins = bins;
  s.lo = lo;
  s.hi = hi;
  s.edge_type = edge_type;
  return s;
}

/// An awkward range for the rule's random tests, round by round: a scale of 2^-40..2^40, a width
/// of up to 2^10 times it, every fifth range narrow and far from zero (3e-5 of its start).
inline std::pair<double, double> awkward_range(std::mt19937_64& gen, int round) {
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  const double scale = std::ldexp(1.0, exponent(gen));
  double lo = unit(gen) * scale, hi = lo + std::fabs(unit(gen)) * scale * std::ldexp(1.0, exponent(gen) / 4);
  if (round % 5 == 0) hi = lo + 3 * std::fabs(lo) * 1e-5;
  return {lo, hi};
}

/// `bins` bins over [lo, hi] with randomly jittered interior edges (strictly increasing).
inline axis_spec variable_spec(std::int64_t bins, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> jitter(0.1, 0.9);
  axis_spec s;
  s.kind = tally::axis_kind::variable;
  s.bins = bins;
  s.edges.resize(static_cast<std::size_t>(bins) + 1);
  s.edges.front() = lo;
  s.edges.back() = hi;
  for (std::int64_t k = 1; k < bins; ++k)
    s.edges[static_cast<std::size_t>(k)] = lo + (hi - lo) * ((k - 0.5 + jitter(gen)) / bins);
  return s;
}

/// The given edges (non-decreasing; the outer ones may be infinite).
inline axis_spec variable_spec_of(std::vector<double> edges) {
  axis_spec s;
  s.kind = tally::axis_kind::variable;
  s.bins = static_cast<std::int64_t>(edges.size()) - 1;
  s.edges = std::move(edges);
  return s;
}

/// `bins` bins over [lo, hi] whose interior edges stray from their even places by up to
/// `stray` of a bin (uniformly, either way; strictly increasing where stray < 1/2).
inline axis_spec near_line_spec(std::int64_t bins, double lo, double hi, double stray, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> jitter(-stray, stray);
  std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
  edges.front() = lo;
  edges.back() = hi;
  for (std::int64_t k = 1; k < bins; ++k)
    edges[static_cast<std::size_t>(k)] = lo + (hi - lo) * ((static_cast<double>(k) + jitter(gen)) / bins);
  return variable_spec_of(std::move(edges));
}

/// numpy.linspace(lo, hi, bins + 1) of float32 lo and hi, computed as numpy computes it in
/// float32 arithmetic (step = (hi - lo) / bins; edge k = k * step + lo, each step rounded to
/// float32; the last edge hi): the edges numpy.histogram gives float32 data whose range it
/// takes from the data.
inline axis_spec float32_linspace_spec(std::int64_t bins, float lo, float hi) {
  std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
  const float width = hi - lo;
  const float step = width / static_cast<float>(bins);
  for (std::int64_t k = 0; k < bins; ++k) {
    const float y = static_cast<float>(k) * step;
    edges[static_cast<std::size_t>(k)] = y + lo;
  }
  edges.back() = hi;
  return variable_spec_of(std::move(edges));
}

/// `bins` equal bins over the integers [lo, hi], kept exactly (axis::regular_exact).
inline axis_spec regular_exact_spec(std::int64_t bins, tally::integer_value lo, tally::integer_value hi) {
  const auto as_double = [](tally::integer_value v) {
    return v.negative ? -static_cast<double>(v.magnitude) : static_cast<double>(v.magnitude);
  };
  axis_spec s = regular_spec(bins, as_double(lo), as_double(hi));
  s.exact_range = true;
  s.range_lo = lo;
  s.range_hi = hi;
  return s;
}

/// Integer edges (axis::variable_integers): signed, or unsigned (given by their bits).
inline axis_spec integer_edges_spec(std::vector<std::int64_t> edges, bool as_unsigned) {
  std::vector<double> rounded;
  for (std::int64_t e : edges)
    rounded.push_back(as_unsigned ? static_cast<double>(static_cast<std::uint64_t>(e)) : static_cast<double>(e));
  axis_spec s = variable_spec_of(std::move(rounded));
  s.int_edges = std::move(edges);
  s.int_unsigned = as_unsigned;
  return s;
}

inline axis_spec integer_spec(std::int64_t lo, std::int64_t bins) {
  axis_spec s;
  s.kind = tally::axis_kind::integer;
  s.bins = bins;
  s.int_lo = lo;
  return s;
}

/// The body where samples of dtype t and an axis overlap (samples outside it saturate).
inline range body_for(const axis_spec& a, dtype t) { return intersect(a.body(), range_of(t)); }

/// Random samples for axis a: shape d over the part of the axis that dtype t can hold.
inline column random_column_for(const axis_spec& a, dtype t, dist d, std::int64_t n,
                                std::uint64_t seed, std::int64_t stride = 1) {
  return random_column(t, d, body_for(a, t), n, seed, stride);
}

/// The samples of one 1-D fill: n values of `type` shaped `shape` over `axis`, at a stride.
struct sample_spec {
  dtype type = dtype::f64;
  axis_spec axis;
  dist shape = dist::uniform;
  std::int64_t n = 0;
  std::int64_t stride = 1;
  std::uint64_t seed = 0;

  column samples() const { return random_column_for(axis, type, shape, n, seed, stride); }
  std::string name() const {
    return std::string(tally::name_of(type)) + "_" + axis.name() + "_" + name_of(shape) + "_n" + std::to_string(n) +
           "_s" + std::to_string(stride);
  }
};

}  // namespace tally_test

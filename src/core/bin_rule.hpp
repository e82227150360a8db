// The one bin rule: maps a sample to a bin index, for every axis kind, on host and device.
//
// Edges e_0 < ... < e_B; bin k holds e_k <= x < e_(k+1); the last bin also holds x == e_B.
// x < e_0 -> underflow, x > e_B -> overflow, NaN -> nan. Hot loop: measure changes.
#pragma once

#include <math.h>

#include <cstdint>
#include <limits>  // is_signed only: constexpr data, usable on the device
#include <type_traits>

#include "core/float_format.hpp"
#include "base/hd.hpp"
#include "tally/dtype.hpp"

namespace tally::detail {

/// Negative indices say why a sample is dropped.
enum : std::int64_t { bin_underflow = -1, bin_overflow = -2, bin_nan = -3 };

/// The cell of index k on an axis of `bins` bins with flow bins (options::flow_bins): underflow
/// 0, the bins 1..bins, overflow bins + 1, NaN bins + 2.
TALLY_HD constexpr std::int64_t flow_bin_of(std::int64_t k, std::int64_t bins) {
  return k >= 0 ? k + 1 : k == bin_underflow ? 0 : k == bin_overflow ? bins + 1 : bins + 2;
}

enum class edge_rounding : std::uint8_t { f64, f32, f16, bf16 };

TALLY_HD double round_edge(double e, edge_rounding r) {
  switch (r) {
    case edge_rounding::f32: return static_cast<double>(static_cast<float>(e));
    case edge_rounding::f16: return round_to_format(e, f16_format);
    case edge_rounding::bf16: return round_to_format(e, bf16_format);
    default: return e;
  }
}

/// Which 64-bit integer samples a regular axis keeps: those in [lo, hi] of their own type, or
/// none, where the range lies beyond the type (none_s, none_u: why every sample is dropped).
/// numpy compares integer samples with the range before rounding them; a kept sample rounds to
/// within [first, last], so the f64 rule then bins it.
struct integer_keep {
  std::int64_t lo_s = 0, hi_s = -1;
  std::uint64_t lo_u = 1, hi_u = 0;
  std::int64_t none_s = 0, none_u = 0;  // bin_underflow or bin_overflow where none is kept

  /// 0 where v is kept, else why it is dropped.
  template <class T> TALLY_HD_HOT std::int64_t drop(T v) const {
    const std::int64_t none = std::is_signed_v<T> ? none_s : none_u;
    if (none) return none;
    const bool below = std::is_signed_v<T> ? v < static_cast<T>(lo_s) : v < static_cast<T>(lo_u);
    const bool above = std::is_signed_v<T> ? v > static_cast<T>(hi_s) : v > static_cast<T>(hi_u);
    return below ? std::int64_t{bin_underflow} : above ? std::int64_t{bin_overflow} : 0;
  }
};

template <class T> constexpr bool is_wide_integer = std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t>;

/// Edges e_0 < ... < e_B that lie near the line e_0 + k / scale, and the index rule over them:
/// the bin is first estimated arithmetically and then corrected against the edges, so the answer
/// is exactly "the bin whose edges hold x", as numpy.histogram's correction step. The regular
/// rule's edges are linspace's; a variable axis' may be (numpy's float32 linspace, a user's
/// array), where variable_line measures how far they stray from the line.
struct line_rule {
  double first = 0, last = 0;  // e_0 and e_B
  double scale = 0;            // bins / (last - first): the estimate only
  std::int64_t bins = 0;
  /// How far, in bins, every edge may lie from its place on the line first + k / scale, plus the
  /// estimate's own rounding. An estimate whose fraction is further than this from both bin
  /// boundaries is the bin, with no edge looked at. 1 turns the shortcut off.
  double guard = 1.0;

  /// The bin of x, given an accessor for edges 0 .. bins - 1 (a table lookup or computed).
  template <class Edges> TALLY_HD_HOT std::int64_t locate(double x, const Edges& edge_at) const {
    if (!(x >= first)) return x != x ? bin_nan : bin_underflow;
    if (x > last) return bin_overflow;
    // The estimate, >= 0; NaN or inf where the range is so narrow that `scale` overflowed
    // (both fail the comparison, so never cast: the cast of either is undefined).
    const double t = (x - first) * scale;
    std::int64_t i = bins - 1;
    if (t < static_cast<double>(bins)) {
      i = static_cast<std::int64_t>(t);
      const double f = t - static_cast<double>(i);
      if (f > guard && f < 1.0 - guard) return i;  // edge_i < x < edge_(i+1), by the bound
    }
    // One step either way settles an estimate within a bin of the answer (every rule whose
    // scale is finite); a search settles any other.
    if (x < edge_at(i)) {  // i > 0: edge 0 is `first` <= x
      if (x >= edge_at(--i)) return i;
      return last_at_most(x, 0, i - 1, edge_at);
    }
    if (i == bins - 1 || x < edge_at(i + 1)) return i;
    if (++i == bins - 1 || x < edge_at(i + 1)) return i;
    return last_at_most(x, i + 1, bins - 1, edge_at);
  }
  /// The last k in [a, b] with edge k <= x, given edge a <= x (bisection).
  template <class Edges>
  TALLY_HD static std::int64_t last_at_most(double x, std::int64_t a, std::int64_t b, const Edges& edge_at) {
    while (a < b) {
      const std::int64_t mid = b - (b - a) / 2;  // > a
      if (x >= edge_at(mid)) a = mid;
      else b = mid - 1;
    }
    return a;
  }
};

/// numpy.linspace(lo, hi, bins + 1) rounded to the edge type, and the line rule over it.
struct regular_rule : line_rule {
  double lo = 0, hi = 0;  // the range as given (linspace's start and stop)
  double step = 0;        // (hi - lo) / bins, as linspace computes it
  edge_rounding rounding = edge_rounding::f64;
  bool step_is_zero = false;      // linspace's fallback for a step that underflows
  const double* table = nullptr;  // optional precomputed edges (bins + 1), same values
  /// f32 samples: the estimate in f32 arithmetic, where make_regular_rule can bound its error
  /// (fast32). first32 is `first` rounded up and last32 `last` rounded down to f32, so for an
  /// f32 x the comparisons are exact; an estimate whose fraction lies in (guard32, upper32) is
  /// the bin, anything else takes the f64 rule.
  bool fast32 = false;
  float first32 = 0, last32 = 0, scale32 = 0, guard32 = 1, upper32 = 0;
  /// Nonzero where lo = 0 and every edge k is exactly k / dyadic_scale32, a power of two (what
  /// linspace gives for a power-of-two step and bins <= 2^24): an f32 x in [0, last32] then
  /// lies in bin floor(x * dyadic_scale32), a product that is exact (locate_dyadic32).
  float dyadic_scale32 = 0;
  integer_keep keep;  // 64-bit integer samples: kept exactly, then binned as doubles

  /// The bin of a 64-bit integer sample: the exact range test, then the f64 rule.
  template <class T, class Edges> TALLY_HD std::int64_t locate_wide(T v, const Edges& edge_at) const {
    const std::int64_t dropped = keep.drop(v);
    return dropped ? dropped : locate(static_cast<double>(v), edge_at);
  }

  TALLY_HD double computed_edge(std::int64_t k) const {
    if (k == bins) return last;
    const double kd = static_cast<double>(k);
    // Two separate roundings, as numpy: y = arange * step; y += start. Never contracted.
    const double y = step_is_zero ? (kd / static_cast<double>(bins)) * (hi - lo) : kd * step;
    return round_edge(y + lo, rounding);
  }
  TALLY_HD_HOT double edge(std::int64_t k) const { return table ? table[k] : computed_edge(k); }

  TALLY_HD_HOT std::int64_t index_with_table(double x) const {
    return locate(x, [this](std::int64_t k) { return table[k]; });
  }
  TALLY_HD_HOT std::int64_t index(double x) const {
    if (table) return index_with_table(x);
    return locate(x, [this](std::int64_t k) { return computed_edge(k); });
  }
  template <class T, std::enable_if_t<is_wide_integer<T>, int> = 0> TALLY_HD std::int64_t index(T v) const {
    if (table) return locate_wide(v, [this](std::int64_t k) { return table[k]; });
    return locate_wide(v, [this](std::int64_t k) { return computed_edge(k); });
  }

  /// The bin of an f32 sample, given an accessor for the edges: the f32 rule where fast32 holds,
  /// else the f64 rule.
  template <class Edges> TALLY_HD_HOT std::int64_t locate32(float x, const Edges& edge_at) const {
    if (dyadic_scale32 != 0.0f) return locate_dyadic32(x);
    return fast32 ? locate_fast32(x, edge_at) : locate(static_cast<double>(x), edge_at);
  }
  /// The bin of an f32 x where the edges are exactly k / dyadic_scale32: no edge looked at.
  TALLY_HD_HOT std::int64_t locate_dyadic32(float x) const {
    if (!(x >= 0.0f)) return x != x ? bin_nan : bin_underflow;
    if (x > last32) return bin_overflow;
    const auto i = static_cast<std::int64_t>(x * dyadic_scale32);  // x == last32: bins, the last bin's end
    return i < bins ? i : bins - 1;
  }
  /// The f32 estimate (rules with fast32 set) of an f32 x: t32 = fl(fl(x - first32) * scale32),
  /// its integer part i (t32 < 2^30 where first32 <= x <= last32, make_regular_rule checks) and
  /// its fraction f (exact). For such x it lies within guard32 (< 1/8 bin) of x's place among
  /// the edges.
  TALLY_HD_HOT void estimate32(float x, int& i, float& f) const {
    const float t = (x - first32) * scale32;  // two roundings: the build never contracts them
    i = static_cast<int>(t);
    f = t - static_cast<float>(i);
  }
  /// A fraction in (guard32, upper32): the estimate's integer part is the bin, no edge needed.
  TALLY_HD_HOT bool decisive32(float f) const { return f > guard32 && f < upper32; }
  /// The bin of an f32 x in [first32, last32] from its estimate (i, f), looking at the one edge
  /// nearest the estimate: edge i where f <= 1/2 (the bin is i - 1 or i), else edge i + 1 (i or
  /// i + 1). Exact for every fraction, decisive or not; past the last bin (x == last), the last.
  template <class Edges> TALLY_HD_HOT std::int64_t settle32(float x, int i, float f, const Edges& edge_at) const {
    const std::int64_t j = i + (f > 0.5f ? 1 : 0);  // <= bins: x <= last keeps t32 below bins + guard32
    const std::int64_t k = static_cast<double>(x) < edge_at(j) ? j - 1 : j;  // edge 0 <= x: k >= 0
    return k < bins ? k : bins - 1;
  }
  /// The f32 rule (rules with fast32 set): the estimate where it is decisive, one edge where not.
  /// No f64 fallback: first32 is the least f32 >= first and last32 the greatest f32 <= last, so
  /// an f32 outside [first32, last32] is outside [first, last].
  template <class Edges> TALLY_HD_HOT std::int64_t locate_fast32(float x, const Edges& edge_at) const {
    if (!(x >= first32)) return x != x ? bin_nan : bin_underflow;
    if (x > last32) return bin_overflow;
    int i;
    float f;
    estimate32(x, i, f);
    return decisive32(f) ? i : settle32(x, i, f, edge_at);
  }
  TALLY_HD_HOT std::int64_t index_with_table(float x) const {
    return locate32(x, [this](std::int64_t k) { return table[k]; });
  }
  TALLY_HD_HOT std::int64_t index(float x) const {
    if (table) return index_with_table(x);
    return locate32(x, [this](std::int64_t k) { return computed_edge(k); });
  }
};

/// The bin of x among non-decreasing edges e[0..bins] of x's own type, compared exactly: the
/// last k < bins with e[k] <= x, x == e[bins] in the last bin.
template <class T> TALLY_HD std::int64_t exact_index(T x, const T* e, std::int64_t bins) {
  if (x < e[0]) return bin_underflow;
  if (x >= e[bins]) return x == e[bins] ? bins - 1 : bin_overflow;
  std::int64_t lo = 0, hi = bins;  // e[lo] <= x < e[hi]
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (x >= e[mid]) lo = mid;
    else hi = mid;
  }
  return lo;
}

/// Arbitrary non-decreasing edges (the outer ones may be infinite): binary search, narrowed
/// first by an optional bucket table over [e_0, e_B] where both are finite (bucket j holds the
/// bins of values near e_0 + j / bucket_scale). Equal edges need no care: the search finds the
/// last edge <= x, and x == e_B the last bin, which is numpy's rule for repeated edges. Many
/// edges near a line take the line rule instead (line_binner).
struct variable_rule {
  const double* edges = nullptr;  // bins + 1
  std::int64_t bins = 0;
  const std::int64_t* buckets = nullptr;  // bucket_count + 1 entries: the bin of each boundary
  std::int64_t bucket_count = 0;
  double bucket_scale = 0;  // bucket_count / (e_B - e_0)
  /// Integer edges (variable_integers), for 64-bit integer samples of their signedness.
  const std::int64_t* int_edges = nullptr;
  bool int_unsigned = false;

  template <class T, std::enable_if_t<is_wide_integer<T>, int> = 0> TALLY_HD std::int64_t index(T v) const {
    if (int_edges && int_unsigned == std::is_unsigned_v<T>)
      return exact_index(v, reinterpret_cast<const T*>(int_edges), bins);
    return index(static_cast<double>(v));
  }

  TALLY_HD_HOT std::int64_t index(double x) const {
    if (!(x >= edges[0])) return x != x ? bin_nan : bin_underflow;
    if (x >= edges[bins]) return x == edges[bins] ? bins - 1 : bin_overflow;
    std::int64_t lo = 0, hi = bins;  // invariant: edges[lo] <= x < edges[hi]
    if (buckets) {
      std::int64_t j = static_cast<std::int64_t>((x - edges[0]) * bucket_scale);
      if (j > bucket_count - 1) j = bucket_count - 1;
      lo = buckets[j];
      hi = buckets[j + 1] + 1;
      // The bucket estimate is rounded arithmetic: widen where it missed.
      if (x < edges[lo]) lo = 0;
      if (x >= edges[hi]) hi = bins;
    }
    // At most two candidates (a bucket within one bin or across one edge, the common case): one
    // comparison, no loop whose trip count would be mispredicted.
    // (edges[lo + 1] exists: lo < bins. Bitwise &, not &&: no branch on the comparison.)
    if (hi - lo <= 2) return lo + (static_cast<int>(hi - lo == 2) & static_cast<int>(x >= edges[lo + 1]));
    // Branch-free halving: the comparison picks the half without a jump to mispredict.
    const double* base = edges + lo;
    for (std::int64_t n = hi - lo; n > 1;) {
      const std::int64_t half = n / 2;
      base = x >= base[half] ? base + half : base;
      n -= half;
    }
    return base - edges;
  }
};

/// One bucket of variable_rule32: the bin of the bucket's least f32, and the edge that splits
/// the bucket where it holds two bins (+inf where it holds one; NaN where it holds more, which
/// are searched).
struct alignas(8) bucket32 {  // one 8-byte load
  std::int32_t lo = 0;
  float split = 0;
};

/// variable_rule for f32 samples, in f32 arithmetic and exact: each edge rounded up to an f32
/// (for every f32 x, x >= e <=> x >= the least f32 >= e) and the last edge also rounded down
/// (x > e_B <=> x > the greatest f32 <= e_B). Edges closer than an f32 spacing round to one
/// value: the bins between them are empty for f32 samples, as they are under the f64 rule.
/// The buckets are built (make_variable_rule32) by running bucket_of itself over the f32s, so
/// each bucket's bins are exactly those of the f32s that land in it: a bucket of one or two bins
/// is one 8-byte lookup and one comparison, with no edge to check the estimate against.
struct variable_rule32 {
  const float* edges = nullptr;  // bins + 1, each rounded up to an f32
  float first = 0, last = 0;     // edges[0]; e_B rounded down to an f32
  std::int64_t bins = 0;
  /// bucket_count + 1: the last one's lo is bins - 1, the end of the final bucket's search.
  const bucket32* buckets = nullptr;
  std::int32_t bucket_count = 0;
  float bucket_scale = 0;  // finite and > 0

  /// The bucket of an f32 x in [first, last] (monotone in x).
  TALLY_HD_HOT int bucket_of(float x) const {
    return static_cast<int>(fminf((x - first) * bucket_scale, static_cast<float>(bucket_count - 1)));
  }
  TALLY_HD_HOT std::int64_t index(float x) const {
    if (!(x >= first)) return x != x ? bin_nan : bin_underflow;
    if (x > last) return bin_overflow;
    const int j = bucket_of(x);
    const bucket32 b = buckets[j];
    if (b.split == b.split) return b.lo + static_cast<int>(x >= b.split);
    // More bins: the last k in [lo, the next bucket's lo] with edges[k] <= x, branch-free halving.
    const float* base = edges + b.lo;
    for (int n = buckets[j + 1].lo - b.lo + 1; n > 1;) {
      const int half = n / 2;
      base = x >= base[half] ? base + half : base;
      n -= half;
    }
    return base - edges;
  }
};

/// One bin per integer in [lo, lo + bins). Integers compare exactly; floats by floor(x).
/// `closed`: the last bin also holds lo + bins (a regular axis over the edges lo, lo + 1, ...,
/// lo + bins); only samples past the bins look at it.
struct integer_rule {
  std::int64_t lo = 0;
  std::int64_t bins = 0;
  bool closed = false;

  TALLY_HD_HOT std::int64_t index_signed(std::int64_t v) const {
    if (v < lo) return bin_underflow;
    // The unsigned difference is exact for v >= lo, even where v - lo overflows int64.
    const std::uint64_t d = static_cast<std::uint64_t>(v) - static_cast<std::uint64_t>(lo);
    if (d >= static_cast<std::uint64_t>(bins))
      return closed && d == static_cast<std::uint64_t>(bins) ? bins - 1 : std::int64_t{bin_overflow};
    return static_cast<std::int64_t>(d);
  }
  TALLY_HD_HOT std::int64_t index_unsigned(std::uint64_t v) const {
    if (v > static_cast<std::uint64_t>(INT64_MAX))
      return bin_overflow;
    return index_signed(static_cast<std::int64_t>(v));
  }
  TALLY_HD_HOT std::int64_t index_floating(double x) const {
    if (x != x) return bin_nan;
    const double f = ::floor(x);
    const double lo_d = static_cast<double>(lo);
    if (f < lo_d) return bin_underflow;
    if (f - lo_d >= static_cast<double>(bins))
      return closed && x == lo_d + static_cast<double>(bins) ? bins - 1 : std::int64_t{bin_overflow};
    return static_cast<std::int64_t>(f - lo_d);
  }
};

/// A sample as the rules see it: every type as a double (i64/u64 rounded, as numpy does).
template <class T> struct sample_traits {
  static constexpr bool is_integer = true;
  TALLY_HD_HOT static double to_value(T v) { return static_cast<double>(v); }
};
template <> struct sample_traits<float> {
  static constexpr bool is_integer = false;
  TALLY_HD_HOT static double to_value(float v) { return v; }
};
template <> struct sample_traits<double> {
  static constexpr bool is_integer = false;
  TALLY_HD_HOT static double to_value(double v) { return v; }
};
template <> struct sample_traits<half> {
  static constexpr bool is_integer = false;
  TALLY_HD_HOT static double to_value(half v) { return half_bits_to_double(v.bits); }
};
template <> struct sample_traits<bfloat16> {
  static constexpr bool is_integer = false;
  TALLY_HD_HOT static double to_value(bfloat16 v) { return bfloat16_bits_to_double(v.bits); }
};

/// The index of sample v on an integer axis, exact for every sample type.
template <class T> TALLY_HD_HOT std::int64_t integer_index(const integer_rule& r, T v) {
  if constexpr (!sample_traits<T>::is_integer) {
    return r.index_floating(sample_traits<T>::to_value(v));
  } else if constexpr (std::numeric_limits<T>::is_signed) {
    return r.index_signed(static_cast<std::int64_t>(v));
  } else {
    return r.index_unsigned(static_cast<std::uint64_t>(v));
  }
}

/// The rules as callables over samples of any type, shared by the backends' typed loops.
/// f32 samples take the regular rule's f32 estimate (regular_rule::index(float)).
struct regular_binner {
  regular_rule rule;
  template <class T> TALLY_HD_HOT std::int64_t operator()(T v) const {
    if constexpr (std::is_same_v<T, float> || is_wide_integer<T>) return rule.index(v);
    else return rule.index(sample_traits<T>::to_value(v));
  }
};
/// The same rule with its edges looked up in a table (rule.table set): no branch per sample.
struct regular_table_binner {
  regular_rule rule;
  template <class T> TALLY_HD_HOT std::int64_t operator()(T v) const {
    if constexpr (std::is_same_v<T, float>) return rule.index_with_table(v);
    else if constexpr (is_wide_integer<T>) return rule.locate_wide(v, [this](std::int64_t k) { return rule.table[k]; });
    else return rule.index_with_table(sample_traits<T>::to_value(v));
  }
};
/// The line rule over a variable axis whose edges lie near a line (variable_line), as a callable
/// over samples: edges of type E, the axis' f64 edges, or for f32 samples only their f32 copy
/// rounded up (variable_rule32's), with which an f32 compares exactly as with the f64 edges, so
/// the line's bound serves both. The backends choose it, rather than a branch in variable_rule:
/// beside a bucket search of a few bins, the line's code costs the GPU kernels registers.
template <class E> struct line_binner {
  line_rule line;
  const E* edges = nullptr;
  template <class T> TALLY_HD_HOT std::int64_t operator()(T v) const {
    return line.locate(sample_traits<T>::to_value(v), [this](std::int64_t k) { return static_cast<double>(edges[k]); });
  }
};
struct variable_binner {
  variable_rule rule;
  template <class T> TALLY_HD_HOT std::int64_t operator()(T v) const {
    if constexpr (is_wide_integer<T>) return rule.index(v);
    else return rule.index(sample_traits<T>::to_value(v));
  }
};
struct integer_binner {
  integer_rule rule;
  template <class T> TALLY_HD_HOT std::int64_t operator()(T v) const { return integer_index(rule, v); }
};

}  // namespace tally::detail

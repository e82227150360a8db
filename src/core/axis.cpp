// Axis construction and validation; edges exactly as the bin rule sees them.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <sstream>
#include <string>

#include "core/rules.hpp"
#include "tally/axis.hpp"
#include "tally/error.hpp"

namespace tally {
namespace detail {

edge_rounding rounding_of(dtype edge_type) {
  switch (edge_type) {
    case dtype::f64: return edge_rounding::f64;
    case dtype::f32: return edge_rounding::f32;
    case dtype::f16: return edge_rounding::f16;
    case dtype::bf16: return edge_rounding::bf16;
    default:
      throw error("regular axis: edge type must be f64, f32, f16 or bf16, got " +
                  std::string(name_of(edge_type)));
  }
}

namespace {

/// The spacing of the rounding format's values near magnitude m > 0 (an upper bound for all
/// magnitudes up to m).
double spacing_near(double m, edge_rounding r) {
  const int e = std::ilogb(m);
  switch (r) {
    case edge_rounding::f32: return std::ldexp(1.0, std::max(e, -126) - 23);
    case edge_rounding::f16: return std::ldexp(1.0, std::max(e, -14) - 10);
    case edge_rounding::bf16: return std::ldexp(1.0, std::max(e, -126) - 7);
    default: return std::ldexp(1.0, std::max(e, -1022) - 52);
  }
}

/// regular_rule::guard. Edge k is round(k * step + lo) (two f64 roundings, each within
/// 2^-53 of a magnitude <= 3m, then the edge type's rounding, within half its spacing), and
/// first/last are lo/hi rounded (half a spacing each): so every edge lies within
/// spacing + 12 * 2^-53 * m of the line first + k / scale. Doubled, in bins (times scale),
/// plus the estimate's rounding, under (bins + 2) * 2^-48.
double guard_of(const regular_rule& r) {
  const double m = std::max({std::fabs(r.lo), std::fabs(r.hi), std::fabs(r.first), std::fabs(r.last)});
  if (r.step_is_zero || !(m > 0) || !std::isfinite(r.scale)) return 1.0;
  const double edges = 2 * spacing_near(m, r.rounding) + 16 * std::ldexp(m, -52);
  const double guard = edges * r.scale + static_cast<double>(r.bins + 2) * std::ldexp(1.0, -48);
  return guard < 0.125 ? guard : 1.0;
}

/// How far, in bins, the edges e[0 .. bins] stray from the line first + k / scale, plus the
/// roundings of measuring that and of the rule's estimate (each within 2^-52 of a value at most
/// bins + 1: far under the (bins + 2) 2^-48 added). Returns 1, the shortcut off, where that
/// reaches a quarter bin.
double measured_guard(const line_rule& r, const double* e) {
  double stray = 0;
  for (std::int64_t k = 0; k <= r.bins; ++k)
    stray = std::max(stray, std::fabs((e[k] - r.first) * r.scale - static_cast<double>(k)));
  const double guard = stray + static_cast<double>(r.bins + 2) * std::ldexp(1.0, -48);
  return guard < 0.25 ? guard : 1.0;
}

/// regular_rule::fast32, where the f32 estimate t32 = fl(fl(x - first32) * scale32) of an f32
/// x in [first32, last32] has a bounded error. With t = (x - first) * scale, first32 - first
/// = d >= 0, and three roundings of relative error 2^-24 each (a subnormal difference is
/// exact): |t32 - t| <= d * scale * (1 + 2^-20) + t * 3.001 * 2^-24, t <= bins. The fraction
/// test adds that to `guard` (which bounds the edges' distance from their line), plus 2^-22 for
/// rounding the bounds themselves.
void set_fast32(regular_rule& r) {
  constexpr double big = std::numeric_limits<float>::max();
  if (!(r.guard < 0.125) || r.bins > (std::int64_t{1} << 22)) return;
  if (!(std::fabs(r.first) <= big && std::fabs(r.last) <= big)) return;
  float first32 = static_cast<float>(r.first);
  if (first32 < r.first) first32 = std::nextafter(first32, std::numeric_limits<float>::infinity());
  float last32 = static_cast<float>(r.last);
  if (last32 > r.last) last32 = std::nextafter(last32, -std::numeric_limits<float>::infinity());
  const auto scale32 = static_cast<float>(r.scale);
  if (!std::isnormal(scale32) || !(first32 <= last32)) return;
  if (!((last32 - first32) * scale32 < 0x1p30f)) return;  // the largest estimate (inf fails)
  const double error = (static_cast<double>(first32) - r.first) * r.scale * (1 + 0x1p-20) +
                       static_cast<double>(r.bins + 2) * 0x1p-22;
  const double guard = r.guard + error + 0x1p-22;
  if (!(guard < 0.125)) return;
  r.first32 = first32;
  r.last32 = last32;
  r.scale32 = scale32;
  r.guard32 = std::nextafter(static_cast<float>(guard), 1.0f);        // rounded up
  r.upper32 = std::nextafter(static_cast<float>(1.0 - guard), 0.0f);  // rounded down
  r.fast32 = true;
}

/// Sets the dyadic rule where it holds: lo = 0, a step that is a power of two with hi = bins x
/// step, edges in f32 or f64 and bins <= 2^24, so that every edge k * step is exact in both types
/// and an f32 x's bin is floor(x / step), computed exactly as x * (1 / step). f32 samples over
/// 2^20 bins of [0, 1) took 63 G samples/s through the fast32 or f64 rules' edge checks
/// (bench/PERFORMANCE.md, "Bin rules").
void set_dyadic32(regular_rule& r) {
  if (r.lo != 0.0 || !(r.hi > 0.0) || r.step_is_zero || r.bins > (std::int64_t{1} << 24)) return;
  if (r.rounding != edge_rounding::f32 && r.rounding != edge_rounding::f64) return;
  int exponent = 0;
  if (std::frexp(r.step, &exponent) != 0.5) return;          // a power of two
  if (r.step * static_cast<double>(r.bins) != r.hi) return;  // exact: an integer times a power of two
  const auto scale32 = static_cast<float>(1.0 / r.step);
  if (!std::isnormal(scale32) || static_cast<double>(scale32) * r.step != 1.0) return;
  const auto last32 = static_cast<float>(r.hi);
  if (r.first != 0.0 || r.last != r.hi || static_cast<double>(last32) != r.hi) return;
  r.dyadic_scale32 = scale32;
  r.last32 = last32;
}

/// The least v of I with pred(v), for a pred false then true over I's order, or none.
template <class I, class Pred> std::optional<I> least_with(Pred pred) {
  I lo = std::numeric_limits<I>::min(), hi = std::numeric_limits<I>::max();
  if (!pred(hi)) return std::nullopt;
  while (lo != hi) {  // pred(hi); the midpoint in unsigned arithmetic, which cannot overflow
    const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    const auto mid = static_cast<I>(static_cast<std::uint64_t>(lo) + span / 2);
    if (pred(mid)) hi = mid;
    else lo = static_cast<I>(mid + 1);
  }
  return lo;
}

/// The 64-bit integer samples of type I a regular axis keeps: (lo, hi, 0) for [lo, hi], or
/// (max, min, why) for none, `why` saying how every one is dropped: the range lies above the
/// type, or below it.
template <class I> using kept_range = std::tuple<I, I, std::int64_t>;
template <class I> kept_range<I> kept_none(std::int64_t why) {
  return {std::numeric_limits<I>::max(), std::numeric_limits<I>::min(), why};
}

/// The 64-bit integer samples of type I that compare with [first, last] after rounding to
/// double, as numpy compares them with a float range.
template <class I> kept_range<I> rounded_bounds(double first, double last) {
  const auto lo = least_with<I>([&](I v) { return static_cast<double>(v) >= first; });
  const auto above = least_with<I>([&](I v) { return static_cast<double>(v) > last; });
  if (!lo) return kept_none<I>(bin_underflow);
  if (above && *above == std::numeric_limits<I>::min()) return kept_none<I>(bin_overflow);
  return {*lo, above ? static_cast<I>(*above - 1) : std::numeric_limits<I>::max(), std::int64_t{0}};
}

/// An exact integer clamped into I's range: (value, below I's range, above it).
template <class I> I clamp_to(integer_value v, bool& below, bool& above) {
  below = above = false;
  if (v.negative) {
    if constexpr (std::is_unsigned_v<I>) {
      below = true;
      return 0;
    } else {
      if (v.magnitude > std::uint64_t{1} << 63) {
        below = true;
        return std::numeric_limits<I>::min();
      }
      return static_cast<I>(std::uint64_t{0} - v.magnitude);
    }
  }
  if (v.magnitude > static_cast<std::uint64_t>(std::numeric_limits<I>::max())) {
    above = true;
    return std::numeric_limits<I>::max();
  }
  return static_cast<I>(v.magnitude);
}

/// [lo, hi] within I (numpy's exact comparison of integer samples with an integer range).
template <class I> kept_range<I> exact_bounds(integer_value lo, integer_value hi) {
  bool lo_below, lo_above, hi_below, hi_above;
  const I l = clamp_to<I>(lo, lo_below, lo_above), h = clamp_to<I>(hi, hi_below, hi_above);
  if (lo_above) return kept_none<I>(bin_underflow);
  if (hi_below) return kept_none<I>(bin_overflow);
  return {l, h, std::int64_t{0}};
}

}  // namespace

void tighten_guard(regular_rule& r, const double* edges) {
  // f64 edges' bound is already far under anything the pass over the edges would find.
  if (r.step_is_zero || !std::isfinite(r.scale) || r.guard < 0x1p-20) return;
  r.guard = std::min(r.guard, measured_guard(r, edges));
  set_fast32(r);
}

regular_rule make_regular_rule(const axis& a, const double* table) {
  regular_rule r;
  r.lo = a.regular_lo();
  r.hi = a.regular_hi();
  r.bins = a.bins();
  r.rounding = rounding_of(a.edge_type());
  r.step = (r.hi - r.lo) / static_cast<double>(r.bins);
  r.step_is_zero = r.step == 0.0;
  r.first = r.computed_edge(0);
  r.last = round_edge(r.hi, r.rounding);
  r.scale = static_cast<double>(r.bins) / (r.last - r.first);
  r.table = table;
  r.guard = guard_of(r);
  if (table) tighten_guard(r, table);
  set_fast32(r);
  set_dyadic32(r);
  integer_keep& k = r.keep;
  if (a.has_exact_range()) {
    std::tie(k.lo_s, k.hi_s, k.none_s) = exact_bounds<std::int64_t>(a.exact_lo(), a.exact_hi());
    std::tie(k.lo_u, k.hi_u, k.none_u) = exact_bounds<std::uint64_t>(a.exact_lo(), a.exact_hi());
  } else {
    std::tie(k.lo_s, k.hi_s, k.none_s) = rounded_bounds<std::int64_t>(r.first, r.last);
    std::tie(k.lo_u, k.hi_u, k.none_u) = rounded_bounds<std::uint64_t>(r.first, r.last);
  }
  return r;
}

namespace {

/// Buckets narrow the search where the outer edges are finite and apart.
bool bucketed(const axis& a) {
  const auto& e = a.variable_edges();
  const double width = e.back() - e.front();
  return std::isfinite(width) && width > 0;
}

}  // namespace

namespace {

/// The line through a variable axis' outer edges and the measured guard of its edges (bins 0
/// where there is none: integer edges, an infinite or empty range, edges a quarter bin astray).
line_rule line_of(const axis& a) {
  if (!bucketed(a) || !a.integer_edges().empty()) return {};
  const std::vector<double>& e = a.variable_edges();
  line_rule r;
  r.first = e.front();
  r.last = e.back();
  r.bins = a.bins();
  r.scale = static_cast<double>(r.bins) / (r.last - r.first);
  if (!std::isfinite(r.scale)) return {};
  r.guard = measured_guard(r, e.data());
  return r.guard < 1.0 ? r : line_rule{};
}

}  // namespace

line_rule variable_line(const axis& a) { return a.bins() < kLineMinBins ? line_rule{} : line_of(a); }

regular_rule variable_line32(const axis& a) {
  regular_rule r;
  static_cast<line_rule&>(r) = line_of(a);
  if (r.bins) set_fast32(r);
  return r;
}

variable_rule make_variable_rule(const axis& a, const std::vector<std::int64_t>* buckets) {
  variable_rule r;
  r.edges = a.variable_edges().data();
  r.bins = a.bins();
  if (!a.integer_edges().empty()) {
    r.int_edges = a.integer_edges().data();
    r.int_unsigned = a.integer_edges_unsigned();
  }
  if (buckets && !buckets->empty()) {
    r.buckets = buckets->data();
    r.bucket_count = static_cast<std::int64_t>(buckets->size()) - 1;
    r.bucket_scale = static_cast<double>(r.bucket_count) / (r.edges[r.bins] - r.edges[0]);
  }
  return r;
}

std::vector<std::int64_t> variable_buckets(const axis& a) {
  if (!bucketed(a)) return {};
  const variable_rule exact = make_variable_rule(a);
  const std::int64_t count = variable_bucket_count(a.bins());
  const double lo = exact.edges[0], hi = exact.edges[exact.bins];
  std::vector<std::int64_t> buckets(static_cast<std::size_t>(count) + 1);
  for (std::int64_t j = 0; j <= count; ++j) {
    const double boundary = std::min(hi, lo + (hi - lo) * (static_cast<double>(j) / static_cast<double>(count)));
    buckets[static_cast<std::size_t>(j)] = exact.index(boundary);
  }
  return buckets;
}

namespace {

/// f32s as integers in their order (-0 and +0 as one): the keys of finite f32s.
std::int64_t key_of(float x) {
  std::int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits >= 0 ? bits : -static_cast<std::int64_t>(bits & 0x7FFFFFFF);
}
float float_of(std::int64_t key) {
  const auto bits = static_cast<std::uint32_t>(key >= 0 ? key : (-key) | 0x80000000);
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace

variable_rule32 make_variable_rule32(const axis& a, std::vector<float>& edges, std::vector<bucket32>& buckets) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  edges.clear();
  buckets.clear();
  if (!bucketed(a)) return {};  // bucket_count 0: not usable, the f64 rule serves
  const std::vector<double>& e = a.variable_edges();
  edges.resize(e.size());
  for (std::size_t k = 0; k < e.size(); ++k) {
    float up = static_cast<float>(e[k]);  // nearest; then the least f32 >= e[k]
    if (up < e[k]) up = std::nextafter(up, inf);
    edges[k] = up;
  }
  variable_rule32 r;
  r.edges = edges.data();
  r.first = edges.front();
  r.last = static_cast<float>(e.back());
  if (r.last > e.back()) r.last = std::nextafter(r.last, -inf);
  r.bins = a.bins();
  r.bucket_count = static_cast<std::int32_t>(variable_bucket_count(r.bins));
  const double width = static_cast<double>(r.last) - static_cast<double>(r.first);
  r.bucket_scale = width > 0 ? static_cast<float>(std::min<double>(r.bucket_count / width, FLT_MAX)) : FLT_MAX;

  // The bin of an f32 in [first, last] (the last k < bins with edges[k] <= x), for increasing x
  // from one cursor.
  const auto bin_of = [&](std::int64_t& cursor, float x) {
    while (cursor + 1 < r.bins && edges[static_cast<std::size_t>(cursor) + 1] <= x) ++cursor;
    return static_cast<std::int32_t>(cursor);
  };
  // at[j]: the key of the least f32 in [first, last] whose bucket is j or more (past `last`
  // where there is none): galloping out from its ideal place, then bisection.
  const std::int64_t from = key_of(r.first), to = key_of(r.last);
  const auto reaches = [&](std::int64_t key, int j) { return key > to || r.bucket_of(float_of(key)) >= j; };
  std::vector<std::int64_t> at(static_cast<std::size_t>(r.bucket_count) + 1, to + 1);
  for (int j = 0; j < r.bucket_count && from <= to; ++j) {
    std::int64_t lo = from - 1, hi = to + 1;  // !reaches(lo) (below every key), reaches(hi)
    const std::int64_t guess = key_of(static_cast<float>(r.first + j / static_cast<double>(r.bucket_scale)));
    const std::int64_t k = std::min(std::max(guess, from), to);
    const bool down = reaches(k, j);  // the answer is k or below; else above k
    (down ? hi : lo) = k;
    for (std::int64_t step = 1; hi - lo > 1; step *= 2) {
      const std::int64_t probe = down ? k - step : k + step;
      if (probe <= lo || probe >= hi) break;
      const bool r_probe = reaches(probe, j);
      (r_probe ? hi : lo) = probe;
      if (r_probe != down) break;  // the other side of the answer: bracketed
    }
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (reaches(mid, j) ? hi : lo) = mid;
    }
    at[static_cast<std::size_t>(j)] = hi;
  }
  buckets.assign(static_cast<std::size_t>(r.bucket_count) + 1, bucket32{});
  std::int64_t lo_cursor = 0, hi_cursor = 0;
  for (std::size_t j = 0; j < buckets.size(); ++j) {
    bucket32& b = buckets[j];
    b.lo = at[j] <= to ? bin_of(lo_cursor, float_of(at[j])) : static_cast<std::int32_t>(r.bins - 1);
    b.split = inf;
    if (j + 1 == buckets.size() || at[j] >= at[j + 1]) continue;  // the end, or no f32 in bucket j
    const std::int32_t hi = bin_of(hi_cursor, float_of(at[j + 1] - 1));  // the bin of its greatest f32
    if (hi == b.lo + 1) b.split = edges[static_cast<std::size_t>(hi)];
    if (hi > b.lo + 1) b.split = std::numeric_limits<float>::quiet_NaN();
  }
  r.buckets = buckets.data();
  return r;
}

integer_rule make_integer_rule(const axis& a) {
  if (a.kind() == axis_kind::regular) return integer_rule{static_cast<std::int64_t>(a.regular_lo()), a.bins(), true};
  return integer_rule{a.integer_lo(), a.bins(), false};
}

axis_kind rule_kind(const axis& a, dtype sample) {
  if (!a.unit_integer_edges() || is_floating(sample)) return a.kind();
  // A 64-bit sample beyond 2^53 is compared after rounding (unless the range is exact), and may
  // round onto an end of 2^53: the integer rule would drop it.
  const bool wide = sample == dtype::i64 || sample == dtype::u64;
  if (wide && !a.has_exact_range() && std::max(std::fabs(a.regular_lo()), std::fabs(a.regular_hi())) >= 0x1p53)
    return a.kind();
  return axis_kind::integer;
}

std::int64_t variable_bucket_count(std::int64_t bins) {
  return std::min<std::int64_t>(std::max<std::int64_t>(4 * bins, 64), 1 << 16);
}

std::int64_t table_bytes(const axis& a, dtype sample) {
  const auto edges = static_cast<std::int64_t>(sizeof(double)) * (a.bins() + 1);
  switch (rule_kind(a, sample)) {
    case axis_kind::regular: return edges;
    case axis_kind::variable:
      return edges * (a.integer_edges().empty() ? 1 : 2) +
             static_cast<std::int64_t>(sizeof(std::int64_t)) * (variable_bucket_count(a.bins()) + 1);
    case axis_kind::integer: return 0;
  }
  return 0;
}

std::string exact_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

}  // namespace detail

namespace {

double ulp(double x) {
  x = std::fabs(x);
  return std::nextafter(x, HUGE_VAL) - x;
}

/// Spacing of the edge type near magnitude x.
double edge_ulp(double x, dtype edge_type) {
  switch (edge_type) {
    case dtype::f32: { float f = static_cast<float>(std::fabs(x)); return std::nextafter(f, HUGE_VALF) - f; }
    case dtype::f16: return std::ldexp(1.0, std::max(std::ilogb(std::fabs(x)), -14) - 10);
    case dtype::bf16: return std::ldexp(1.0, std::max(std::ilogb(std::fabs(x)), -126) - 7);
    default: return ulp(x);
  }
}

}  // namespace

axis axis::regular(std::int64_t bins, double lo, double hi, dtype edge_type) {
  if (bins < 1) throw error("regular axis: bins must be >= 1, got " + std::to_string(bins));
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw error("regular axis: range must be finite, got [" + detail::exact_text(lo) + ", " + detail::exact_text(hi) + "]");
  if (!(lo < hi))
    throw error("regular axis: lo must be < hi, got [" + detail::exact_text(lo) + ", " + detail::exact_text(hi) + "]");
  axis a;
  a.kind_ = axis_kind::regular;
  a.bins_ = bins;
  a.lo_ = lo;
  a.hi_ = hi;
  a.edge_type_ = edge_type;
  const auto rule = detail::make_regular_rule(a);  // validates edge_type
  if (!std::isfinite(rule.first) || !std::isfinite(rule.last) || !std::isfinite(rule.step))
    throw error("regular axis: the range [" + detail::exact_text(lo) + ", " + detail::exact_text(hi) +
                "] overflows the edge type " + std::string(name_of(edge_type)));
  // Edges must be strictly increasing after rounding (numpy: "Too many bins for data range").
  // When the step exceeds every rounding error by far this holds without looking at each edge.
  const double magnitude = std::max(std::fabs(lo), std::fabs(hi));
  const double slack = ulp(hi - lo) + ulp(magnitude) + edge_ulp(magnitude, edge_type);
  if (!(rule.step > 4 * slack)) {
    // Bins within a few rounding errors of each other: check each edge, unless there are so
    // many that no storage could hold them (the check alone would take hours).
    if (bins > (std::int64_t{1} << 32))
      throw error("regular axis: too many bins for the range: " + std::to_string(bins) +
                  " bins over [" + detail::exact_text(lo) + ", " + detail::exact_text(hi) + "] are finer than " +
                  std::string(name_of(edge_type)) + " can tell apart");
    double previous = rule.edge(0);
    for (std::int64_t k = 1; k <= bins; ++k) {
      const double e = rule.edge(k);
      if (!(e > previous)) {
        throw error("regular axis: too many bins for the range: " + std::to_string(bins) +
                    " bins over [" + detail::exact_text(lo) + ", " + detail::exact_text(hi) + "] give equal " +
                    std::string(name_of(edge_type)) + " edges at bin " + std::to_string(k) +
                    "; use fewer bins, a wider range or a wider edge type");
      }
      previous = e;
    }
  }
  // Edges lo + k (step exactly 1, so linspace's k * step + lo is exact) while every integer of
  // the range is exact in the edge type, and below 2^53: a 64-bit integer sample just beyond an
  // edge of 2^53 rounds onto it, in the bins by the regular rule (and numpy's), out by v - lo.
  const double exact_to = edge_type == dtype::f16 ? 0x1p11 : edge_type == dtype::bf16 ? 0x1p8
                          : edge_type == dtype::f32 ? 0x1p24 : 0x1p53;
  a.unit_integers_ = std::floor(lo) == lo && std::floor(hi) == hi && magnitude <= exact_to && magnitude < 0x1p53 &&
                     static_cast<std::int64_t>(hi) - static_cast<std::int64_t>(lo) == bins;
  return a;
}

axis axis::regular_exact(std::int64_t bins, integer_value lo, integer_value hi) {
  const auto as_double = [](integer_value v) {
    const auto m = static_cast<double>(v.magnitude);
    return v.negative ? -m : m;
  };
  axis a = regular(bins, as_double(lo), as_double(hi));
  a.exact_range_ = true;
  a.exact_lo_ = lo;
  a.exact_hi_ = hi;
  return a;
}

axis axis::variable(std::vector<double> edges) {
  if (edges.size() < 2)
    throw error("variable axis: needs at least 2 edges, got " + std::to_string(edges.size()));
  for (std::size_t i = 0; i < edges.size(); ++i) {
    if (std::isnan(edges[i])) throw error("variable axis: edge " + std::to_string(i) + " is NaN");
    if (i > 0 && !(edges[i - 1] <= edges[i]))
      throw error("variable axis: edges must not decrease, but edge " + std::to_string(i - 1) + " = " +
                  detail::exact_text(edges[i - 1]) + " and edge " + std::to_string(i) + " = " + detail::exact_text(edges[i]));
  }
  axis a;
  a.kind_ = axis_kind::variable;
  a.bins_ = static_cast<std::int64_t>(edges.size()) - 1;
  a.edges_ = std::make_shared<const std::vector<double>>(std::move(edges));
  return a;
}

const std::vector<double>& axis::variable_edges() const {
  static const std::vector<double> none;
  return edges_ ? *edges_ : none;
}

template <class I> axis axis::integer_edged(const std::vector<I>& edges) {
  for (std::size_t i = 1; i < edges.size(); ++i)
    if (edges[i - 1] > edges[i])
      throw error("variable axis: edges must not decrease, but edge " + std::to_string(i - 1) + " = " +
                  std::to_string(edges[i - 1]) + " and edge " + std::to_string(i) + " = " + std::to_string(edges[i]));
  axis a = variable(std::vector<double>(edges.begin(), edges.end()));  // rounding keeps the order
  a.int_edges_.resize(edges.size());
  std::memcpy(a.int_edges_.data(), edges.data(), edges.size() * sizeof(I));
  a.int_edges_unsigned_ = std::is_unsigned_v<I>;
  return a;
}

axis axis::variable_integers(std::vector<std::int64_t> edges) { return integer_edged(edges); }
axis axis::variable_integers(std::vector<std::uint64_t> edges) { return integer_edged(edges); }

axis axis::integer(std::int64_t lo, std::int64_t hi) {
  if (!(lo < hi))
    throw error("integer axis: lo must be < hi, got [" + std::to_string(lo) + ", " +
                std::to_string(hi) + ")");
  const auto span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  if (span > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw error("integer axis: [" + std::to_string(lo) + ", " + std::to_string(hi) +
                ") has more bins than fit in memory");
  axis a;
  a.kind_ = axis_kind::integer;
  a.bins_ = static_cast<std::int64_t>(span);
  a.int_lo_ = lo;
  return a;
}

double axis::edge(std::int64_t k) const {
  if (k < 0 || k > bins_)
    throw error("axis edge index " + std::to_string(k) + " out of [0, " + std::to_string(bins_) + "]");
  switch (kind_) {
    case axis_kind::regular: return detail::make_regular_rule(*this).edge(k);
    case axis_kind::variable: return (*edges_)[static_cast<std::size_t>(k)];
    default: return static_cast<double>(int_lo_ + k);
  }
}

double axis::lo() const { return edge(0); }
double axis::hi() const { return edge(bins_); }

std::vector<double> axis::edges() const {
  if (kind_ == axis_kind::variable) return *edges_;
  std::vector<double> out(static_cast<std::size_t>(bins_) + 1);
  if (kind_ == axis_kind::regular) {
    const auto rule = detail::make_regular_rule(*this);
    for (std::int64_t k = 0; k <= bins_; ++k) out[static_cast<std::size_t>(k)] = rule.edge(k);
  } else {
    for (std::int64_t k = 0; k <= bins_; ++k)
      out[static_cast<std::size_t>(k)] = static_cast<double>(int_lo_ + k);
  }
  return out;
}

std::vector<double> axis::widths() const {
  const auto e = edges();
  const auto rounding = detail::rounding_of(edge_type_);
  std::vector<double> w(e.size() - 1);
  // numpy.diff of the edges, computed in the edges' own type.
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = detail::round_edge(e[k + 1] - e[k], rounding);
  return w;
}

namespace {

/// Doubles compared by their bits: -0.0 and 0.0 differ (numpy's edges show the sign).
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) { return same_bits(x, y); });
}
/// Copies of one axis share their edges: equal without a comparison of each.
bool same_edges(const std::shared_ptr<const std::vector<double>>& a, const std::shared_ptr<const std::vector<double>>& b) {
  if (a == b) return true;
  return a && b && same_bits(*a, *b);
}

}  // namespace

bool operator==(const axis& a, const axis& b) {
  return a.kind_ == b.kind_ && a.bins_ == b.bins_ && a.edge_type_ == b.edge_type_ && same_bits(a.lo_, b.lo_) &&
         same_bits(a.hi_, b.hi_) && same_edges(a.edges_, b.edges_) && a.int_lo_ == b.int_lo_ && a.int_edges_ == b.int_edges_ &&
         a.int_edges_unsigned_ == b.int_edges_unsigned_ && a.exact_range_ == b.exact_range_ &&
         a.exact_lo_ == b.exact_lo_ && a.exact_hi_ == b.exact_hi_;
}

}  // namespace tally

// numpy's estimators of a number of equal bins (tally/edges.hpp: estimate_bins), step for step
// as numpy.lib._histograms_impl computes them, each step in the dtype numpy computes it in.
//
// Values travel as doubles tagged with numpy's dtype: an operation of numpy's on two values of a
// float type is computed in double and rounded once to that type, which is exact for f16 and f32
// (double rounding is innocuous for +, -, *, / and sqrt where the wider type has at least
// 2p + 2 bits). Where numpy accumulates otherwise (float16 sums in float32, pairwise sums,
// OpenBLAS' dot product), the accumulation is numpy's own.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/float_format.hpp"
#include "tally/edges.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {

constexpr double kPi = 3.141592653589793;
using failure = bin_estimate::failure;

double to_double(integer_value v) {
  const double m = static_cast<double>(v.magnitude);
  return v.negative ? -m : m;
}

std::string text_of(integer_value v) { return (v.negative && v.magnitude ? "-" : "") + std::to_string(v.magnitude); }

// ---- numpy's types and promotion (NEP 50) ----

bool is_int(dtype t) { return !is_floating(t); }
int bits_of(dtype t) { return 8 * static_cast<int>(size_of(t)); }

dtype integer_type(bool is_signed, int bits) {
  switch (bits) {
    case 8: return is_signed ? dtype::i8 : dtype::u8;
    case 16: return is_signed ? dtype::i16 : dtype::u16;
    case 32: return is_signed ? dtype::i32 : dtype::u32;
    default: return is_signed ? dtype::i64 : dtype::u64;
  }
}

dtype float_type(int bits) { return bits <= 16 ? dtype::f16 : bits <= 32 ? dtype::f32 : dtype::f64; }

/// numpy's result type of two types (u8 .. i64, f16, f32, f64).
dtype promote(dtype a, dtype b) {
  if (a == b) return a;
  if (is_floating(a) && is_floating(b)) return bits_of(a) >= bits_of(b) ? a : b;
  if (is_floating(a) != is_floating(b)) {
    const dtype f = is_floating(a) ? a : b, i = is_floating(a) ? b : a;
    // The float type that holds the integer type's values: f16 for 8 bits, f32 for 16, else f64.
    const int need = bits_of(i) == 8 ? 16 : bits_of(i) == 16 ? 32 : 64;
    return float_type(std::max(need, bits_of(f)));
  }
  const bool sa = is_signed_integer(a), sb = is_signed_integer(b);
  if (sa == sb) return bits_of(a) >= bits_of(b) ? a : b;
  const dtype s = sa ? a : b, u = sa ? b : a;
  if (bits_of(s) > bits_of(u)) return s;
  if (bits_of(u) < 64) return integer_type(true, 2 * bits_of(u));
  return dtype::f64;  // uint64 with a signed type
}

/// numpy's result type of a range end with a value of (strong) type t.
dtype promote(const range_end& e, dtype t) {
  if (!e.weak) return promote(e.type, t);
  if (is_floating(e.type)) return is_floating(t) ? t : dtype::f64;  // a Python float
  return t;                                                        // a Python int takes t
}

/// numpy's result type of the two ends (their _unsigned_subtract's type, before it goes unsigned).
dtype promote(const range_end& a, const range_end& b) {
  if (a.weak && b.weak) return is_floating(a.type) || is_floating(b.type) ? dtype::f64 : dtype::i64;
  if (a.weak) return promote(a, b.type);
  if (b.weak) return promote(b, a.type);
  return promote(a.type, b.type);
}

/// x rounded to binary16 (to nearest, ties to even; +-inf beyond its range), as a double.
double round_half(double x) {
  if (!(x == x) || std::isinf(x)) return x;
  const double a = std::fabs(x);
  if (a >= 65520.0) return std::copysign(HUGE_VAL, x);
  if (a < 0x1p-14) return std::copysign((a + 0x1p28) - 0x1p28, x);  // subnormal: multiples of 2^-24
  std::uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  bits += ((std::uint64_t{1} << 41) - 1) + ((bits >> 42) & 1);  // 10 of the 52 fraction bits kept
  bits &= ~((std::uint64_t{1} << 42) - 1);
  double r;
  std::memcpy(&r, &bits, sizeof r);
  return std::copysign(r, x);
}

/// x rounded to the float type t (f16, f32, f64), as numpy casts a value to it.
double rounded(dtype t, double x) {
  switch (t) {
    case dtype::f16: return round_half(x);
    case dtype::f32:
      if (std::fabs(x) > static_cast<double>(std::numeric_limits<float>::max()))
        return detail::round_to_format(x, detail::f32_format);
      return static_cast<double>(static_cast<float>(x));
    default: return x;
  }
}

// ---- numpy's sums and statistics ----

/// numpy's pairwise sum of get(i0) .. get(i0 + n - 1) in the accumulator type Acc (add.reduce's
/// inner loop): fewer than 8 values in order, up to 128 in 8 interleaved partial sums, more
/// split in two at a multiple of 8.
template <class Acc, class Get>
Acc pairwise_sum(const Get& get, std::int64_t i0, std::int64_t n) {
  if (n < 8) {
    Acc r = 0;
    for (std::int64_t i = 0; i < n; ++i) r += get(i0 + i);
    return r;
  }
  if (n <= 128) {
    Acc r[8];
    for (int j = 0; j < 8; ++j) r[j] = get(i0 + j);
    std::int64_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] += get(i0 + i + j);
    Acc sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += get(i0 + i);
    return sum;
  }
  std::int64_t half = n / 2;
  half -= half % 8;
  return pairwise_sum<Acc>(get, i0, half) + pairwise_sum<Acc>(get, i0 + half, n - half);
}

/// numpy's add.reduce of v (values of the float type t) into Acc: one pairwise run, or where
/// numpy casts on the way (`buffered`: integers to float64, float16 to float32) one per
/// 8192-value buffer, the buffers' sums added in order.
template <class Acc>
Acc reduce_add(const std::vector<double>& v, bool buffered) {
  const auto get = [&v](std::int64_t i) { return static_cast<Acc>(v[static_cast<std::size_t>(i)]); };
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  Acc sum = 0;
  if (!buffered) return sum + pairwise_sum<Acc>(get, 0, n);
  constexpr std::int64_t kBuffer = 8192;
  for (std::int64_t k = 0; k < n; k += kBuffer) sum += pairwise_sum<Acc>(get, k, std::min(kBuffer, n - k));
  return sum;
}

/// numpy's sum of v, values of type t (f64: double; f32: float; f16: accumulated in float and
/// rounded to f16, as numpy's half add loop does), `buffered` as reduce_add's.
double sum_of(const std::vector<double>& v, dtype t, bool buffered) {
  if (t == dtype::f64) return reduce_add<double>(v, buffered);
  return rounded(t, static_cast<double>(reduce_add<float>(v, buffered)));
}

/// The values numpy's statistics read: a float array of type `type` (f16, f32, f64), or an
/// integer array cast to float64 (`from_integers`: numpy's reductions cast it through buffers).
struct float_array {
  std::vector<double> v;
  dtype type = dtype::f64;
  bool from_integers = false;
};

/// numpy.mean: float16 summed as float32 through buffers, integers as float64 through buffers,
/// the sum divided in float64 and rounded to the array's type.
double numpy_mean(const float_array& a) {
  const double n = static_cast<double>(a.v.size());
  if (a.type == dtype::f16) return rounded(dtype::f16, static_cast<double>(reduce_add<float>(a.v, true)) / n);
  return rounded(a.type, sum_of(a.v, a.type, a.from_integers) / n);
}

/// numpy.std (ddof 0) in the array's type (float64 for integers): the mean (its sum in the
/// array's own type, divided in float64), the squared deviations in the array's type, their sum
/// divided in float64, and the root.
double numpy_std(const float_array& a) {
  const double n = static_cast<double>(a.v.size());
  const dtype t = a.type;
  const double mean = rounded(t, sum_of(a.v, t, a.from_integers) / n);
  std::vector<double> squares(a.v.size());
  for (std::size_t i = 0; i < a.v.size(); ++i) {
    const double d = rounded(t, a.v[i] - mean);
    squares[i] = rounded(t, d * d);
  }
  const double variance = rounded(t, sum_of(squares, t, false) / n);
  return rounded(t, std::sqrt(variance));
}

/// numpy.power(v, 3) in type t: the C library's pow (numpy's float16 loop computes in float32).
double cube(dtype t, double v) {
  if (t == dtype::f64) return std::pow(v, 3.0);
  return rounded(t, static_cast<double>(std::pow(static_cast<float>(v), 3.0f)));
}

/// numpy's p.dot(p) for float64 p: OpenBLAS' ddot as its SkylakeX kernel orders it (fused
/// multiply-adds into 4 x 8 lanes over blocks of 32, folded to 4 x 4 lanes for the remaining
/// blocks of 16, the lanes summed, then the last n % 16 terms in order).
double blas_dot(const std::vector<double>& p) {
  const std::size_t n = p.size(), n16 = n & ~std::size_t{15}, n32 = n16 & ~std::size_t{31};
  double dot = 0;
  if (n16) {
    double wide[4][8] = {}, lanes[4][4];
    std::size_t i = 0;
    for (; i < n32; i += 32)
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 8; ++l) {
          const double x = p[i + 8 * k + l];
          wide[k][l] = std::fma(x, x, wide[k][l]);
        }
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 4; ++l) lanes[k][l] = wide[k][l] + wide[k][l + 4];
    for (; i < n16; i += 16)
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 4; ++l) {
          const double x = p[i + 4 * k + l];
          lanes[k][l] = std::fma(x, x, lanes[k][l]);
        }
    double s[4];
    for (int l = 0; l < 4; ++l) s[l] = ((lanes[0][l] + lanes[1][l]) + lanes[2][l]) + lanes[3][l];
    dot = (s[0] + s[2]) + (s[1] + s[3]);
  }
  for (std::size_t i = n16; i < n; ++i) dot = std::fma(p[i], p[i], dot);
  return 0.0 + dot;
}

// ---- the range ----

/// numpy's comparison of a sample of type `sample` with a range end: exactly for integers with
/// integers, else both in the promoted float type.
struct end_test {
  bool exact = false;
  double value = 0;  // the end in the comparison's float type
  integer_value integer{};
  bool beyond = false;
};

end_test test_for(const range_end& e, dtype sample) {
  end_test t;
  if (is_int(sample) && is_int(e.type)) {
    t.exact = true;
    t.integer = e.integer;
    t.beyond = e.beyond;
    return t;
  }
  t.value = rounded(promote(e, sample), e.value);
  return t;
}

/// -1, 0, 1 as the integer x is below, equal to or above the end.
template <class T>
int compare_exact(T x, const end_test& e) {
  if (e.beyond) return e.integer.negative ? 1 : -1;
  const bool xneg = x < 0;
  const bool eneg = e.integer.negative && e.integer.magnitude != 0;
  if (xneg != eneg) return xneg ? -1 : 1;
  const std::uint64_t xm = xneg ? std::uint64_t{0} - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
  if (xm == e.integer.magnitude) return 0;
  return (xm < e.integer.magnitude) != xneg ? -1 : 1;
}

/// Whether x >= first and x <= last as numpy compares them (NaN is neither).
template <class T>
bool in_range(T x, const end_test& first, const end_test& last) {
  if constexpr (std::is_integral_v<T>) {
    const bool above = first.exact ? compare_exact(x, first) >= 0 : static_cast<double>(x) >= first.value;
    const bool below = last.exact ? compare_exact(x, last) <= 0 : static_cast<double>(x) <= last.value;
    return above && below;
  } else {
    const double v = static_cast<double>(x);
    return v >= first.value && v <= last.value;
  }
}

/// numpy's _unsigned_subtract(last, first): its type (unsigned for signed integers) and value,
/// or the OverflowError of a Python int beyond the type the two ends promote to.
struct delta_of_range {
  dtype type = dtype::f64;
  double value = 0;
  failure failed = failure::none;
  std::string message;
};

bool fits(const range_end& e, dtype t) {
  if (e.beyond) return false;
  const integer_value v = e.integer;
  if (!is_signed_integer(t)) return !(v.negative && v.magnitude) && (bits_of(t) == 64 || v.magnitude >> bits_of(t) == 0);
  const std::uint64_t limit = std::uint64_t{1} << (bits_of(t) - 1);  // |min|; max is limit - 1
  return v.negative ? v.magnitude <= limit : v.magnitude < limit;
}

/// The end's value as the bits-wide two's complement integer numpy casts it to.
std::uint64_t wrapped(const range_end& e, int bits) {
  std::uint64_t u = e.integer.negative ? std::uint64_t{0} - e.integer.magnitude : e.integer.magnitude;
  return bits == 64 ? u : u & ((std::uint64_t{1} << bits) - 1);
}

delta_of_range range_delta(const range_end& first, const range_end& last) {
  delta_of_range d;
  const dtype t = promote(first, last);
  if (is_floating(t)) {
    d.type = t;
    d.value = rounded(t, rounded(t, last.value) - rounded(t, first.value));
    return d;
  }
  for (const range_end* e : {&last, &first})  // numpy converts `last` first
    if (e->weak && !fits(*e, t)) {
      d.failed = failure::overflow_error;
      d.message = "Python integer " + (e->beyond ? std::string(e->integer.negative ? "-" : "") + "beyond 2**64"
                                                 : text_of(e->integer)) +
                  " out of bounds for " + std::string(numpy_name_of(t));
      return d;
    }
  const int bits = bits_of(t);
  std::uint64_t diff = wrapped(last, bits) - wrapped(first, bits);
  if (bits < 64) diff &= (std::uint64_t{1} << bits) - 1;
  d.type = integer_type(false, bits);
  d.value = static_cast<double>(diff);
  return d;
}

/// The shortest text that reads back as x (the messages' numbers).
std::string text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  char buffer[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, x);
    if (std::strtod(buffer, nullptr) == x) break;
  }
  return buffer;
}

// ---- the estimators ----

/// A width and numpy's type of it (0: numpy's falsy width, one bin).
struct width {
  double value = 0;
  dtype type = dtype::f64;
};

/// The samples one estimate reads: those within the range, in order, as numpy's dtype `type`
/// (T the values' C++ type: float for f16 and f32 samples, the integer types, double).
template <class T>
class estimator {
 public:
  estimator(std::vector<T> x, dtype type, range_end first, range_end last)
      : x_(std::move(x)), type_(type), first_(first), last_(last) {
    const auto [lo, hi] = std::minmax_element(x_.begin(), x_.end());
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      const U span = static_cast<U>(static_cast<U>(*hi) - static_cast<U>(*lo));
      ptp_ = static_cast<double>(span);  // numpy's unsigned ptp, rounded where it divides in float64
    } else {
      ptp_ = rounded(type, static_cast<double>(*hi) - static_cast<double>(*lo));
    }
  }

  bin_estimate run(bin_estimator e) {
    bin_estimate out;
    const width w = width_of(e, out);
    if (out.failed != failure::none || w.value == 0) return out;
    out.width = w.value;
    const delta_of_range delta = range_delta(first_, last_);
    if (delta.failed != failure::none) return fail(out, delta.failed, delta.message);
    // A width below 1 is numpy's Python int 1 for integer samples.
    const bool one = is_int(type_) && w.value < 1;
    const dtype q = one ? (is_floating(delta.type) ? delta.type : dtype::f64) : promote(delta.type, w.type);
    out.estimate = std::ceil(rounded(q, delta.value / (one ? 1.0 : w.value)));
    if (std::isnan(out.estimate)) return fail(out, failure::value_error, "cannot convert float NaN to integer");
    if (std::isinf(out.estimate)) return fail(out, failure::overflow_error, "cannot convert float infinity to integer");
    constexpr double kLimit = 0x1p63;
    out.bins = out.estimate >= kLimit    ? std::numeric_limits<std::int64_t>::max()
               : out.estimate < -kLimit ? std::numeric_limits<std::int64_t>::min()
                                        : static_cast<std::int64_t>(out.estimate);
    return out;
  }

 private:
  static bin_estimate& fail(bin_estimate& out, failure f, std::string message) {
    out.failed = f;
    out.message = std::move(message);
    out.bins = 0;
    out.estimate = std::numeric_limits<double>::quiet_NaN();
    return out;
  }

  double n() const { return static_cast<double>(x_.size()); }
  /// The type numpy's statistics come out in: the samples' for floats, f64 for integers.
  dtype float_type_of() const { return is_int(type_) ? dtype::f64 : type_; }

  float_array as_floats() const {
    float_array a;
    a.v.reserve(x_.size());
    for (const T v : x_) a.v.push_back(static_cast<double>(v));  // int64: rounded, as numpy casts
    a.type = float_type_of();
    a.from_integers = is_int(type_);
    return a;
  }

  /// ptp / k for a whole number k (numpy's weak int: the samples' float type, f64 for integers).
  double ptp_over(double k) const {
    const dtype t = float_type_of();
    return rounded(t, ptp_ / rounded(t, k));
  }

  double sqrt_width() const { return ptp_ / std::sqrt(n()); }
  double sturges_width() const { return ptp_ / (std::log2(n()) + 1.0); }

  double fd_width() {
    const double iqr = percentile(0.75) - percentile(0.25);
    return 2.0 * iqr * std::pow(n(), -1.0 / 3.0);
  }

  /// numpy.percentile(x, 100 q) (linear): the order statistics at floor((n - 1) q) and the next
  /// (the last for both where (n - 1) q reaches n - 1), their difference in the samples' type
  /// (integers wrap), interpolated in float64 as numpy's _lerp (from the upper one for t >= 0.5).
  double percentile(double q) {
    if (scratch_.empty()) scratch_ = x_;
    const std::int64_t count = static_cast<std::int64_t>(scratch_.size());
    const double at = static_cast<double>(count - 1) * q;
    double below = std::floor(at);
    std::int64_t k = static_cast<std::int64_t>(below);
    if (at >= static_cast<double>(count - 1)) {
      k = count - 1;
      below = -1;  // numpy's index -1, from which its weight is then taken
    }
    std::nth_element(scratch_.begin(), scratch_.begin() + k, scratch_.end());
    const T a = scratch_[static_cast<std::size_t>(k)];
    const T b = k + 1 < count && below >= 0 ? *std::min_element(scratch_.begin() + k + 1, scratch_.end()) : a;
    double diff;
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      diff = static_cast<double>(static_cast<T>(static_cast<U>(static_cast<U>(b) - static_cast<U>(a))));
    } else {
      diff = rounded(type_, static_cast<double>(b) - static_cast<double>(a));
    }
    const double t = at - below;
    return t >= 0.5 ? static_cast<double>(b) - diff * (1 - t) : static_cast<double>(a) + diff * t;
  }

  width width_of(bin_estimator e, bin_estimate& out) {
    switch (e) {
      case bin_estimator::sqrt: return {sqrt_width(), dtype::f64};
      case bin_estimator::sturges: return {sturges_width(), dtype::f64};
      case bin_estimator::rice: {
        const dtype t = float_type_of();
        return {rounded(t, ptp_ / rounded(t, 2.0 * std::pow(n(), 1.0 / 3))), t};
      }
      case bin_estimator::scott: {
        const dtype t = float_type_of();
        const double factor = std::pow(24.0 * std::pow(kPi, 0.5) / n(), 1.0 / 3.0);
        return {rounded(t, rounded(t, factor) * numpy_std(as_floats())), t};
      }
      case bin_estimator::fd: return {fd_width(), dtype::f64};
      case bin_estimator::automatic: {
        const double fd = fd_width(), sturges = sturges_width(), half_sqrt = sqrt_width() / 2;
        const double corrected = half_sqrt > fd ? half_sqrt : fd;  // Python's max and min keep
        return {sturges < corrected ? sturges : corrected, dtype::f64};  // the first unless beaten
      }
      case bin_estimator::doane: return {doane_width(), dtype::f64};
      case bin_estimator::stone: return stone_width(out);
    }
    return {};
  }

  double doane_width() const {
    if (x_.size() <= 2) return 0;
    const double sg1 = std::sqrt(6.0 * (n() - 2) / ((n() + 1.0) * (n() + 3)));
    float_array a = as_floats();
    const double sigma = numpy_std(a);
    if (!(sigma > 0.0)) return 0;
    const double mean = numpy_mean(a);
    const dtype t = a.type;
    for (double& v : a.v) v = cube(t, rounded(t, rounded(t, v - mean) / sigma));
    a.from_integers = false;  // the cubes are a float64 array
    const double g1 = numpy_mean(a);
    return ptp_ / (1.0 + std::log2(n()) + std::log2(1.0 + std::fabs(g1) / sg1));
  }

  /// stone's width: the candidate count in 1 .. max(100, sqrt(n)) whose leave-one-out estimate
  /// of the integrated squared error is least (the first of equals), each candidate's histogram
  /// numpy.histogram's over the range.
  width stone_width(bin_estimate& out) {
    const std::int64_t count = static_cast<std::int64_t>(x_.size());
    if (count <= 1 || ptp_ == 0) return {};
    const delta_of_range delta = range_delta(first_, last_);
    const std::int64_t bound = std::max<std::int64_t>(100, static_cast<std::int64_t>(std::sqrt(n())));
    std::vector<T> sorted = x_;
    std::sort(sorted.begin(), sorted.end());
    // numpy.histogram's types: the edges' (result_type(first, last, x), float64 for integers),
    // linspace's arithmetic, x - first's, and (x - first) / (last - first)'s.
    dtype edge = promote(last_, promote(first_, type_));
    if (is_int(edge)) edge = dtype::f64;
    const dtype ends = promote(first_, last_);
    const dtype arithmetic = is_floating(ends) ? ends : dtype::f64;
    const dtype difference = promote(first_, edge);
    const dtype ratio = promote(difference, delta.type);
    const double first = rounded(difference, first_.value), denominator = rounded(ratio, delta.value);
    std::int64_t best = 1;
    double best_score = 0;
    std::vector<std::int64_t> counts;
    std::vector<double> p;
    for (std::int64_t bins = 1; bins <= bound; ++bins) {
      const std::vector<double> e = linspace_edges(bins, first_.value, last_.value, arithmetic, edge);
      for (std::size_t k = 0; k + 1 < e.size(); ++k)
        if (e[k] >= e[k + 1]) {
          fail(out, failure::value_error,
               "Too many bins for data range. Cannot create " + std::to_string(bins) + " finite-sized bins.");
          return {};
        }
      if (delta.failed != failure::none) {  // numpy's histogram subtracts the ends after its edges
        fail(out, delta.failed, delta.message);
        return {};
      }
      const double scale = rounded(ratio, static_cast<double>(bins));
      const std::int64_t size = bins + 1;
      // numpy's fast path: the index (x - first) / (last - first) * bins, truncated, moved down
      // from bins, then one down where x is below its edge and one up where it reaches the next.
      // Monotonic in x: its failures show at the extremes, its bins' bounds by bisection.
      const auto edge_at = [&](std::int64_t i) { return e[static_cast<std::size_t>(i < 0 ? i + size : i)]; };
      const auto valid = [&](std::int64_t i) { return i >= -size && i < size; };
      std::string error;
      failure kind = failure::none;
      const auto index = [&](T sample) -> std::int64_t {
        const double x = rounded(edge, static_cast<double>(sample));
        const double f = rounded(ratio, rounded(ratio, rounded(difference, x - first) / denominator) * scale);
        std::int64_t i = f == f && std::fabs(f) < 0x1p63 ? static_cast<std::int64_t>(f)
                                                         : std::numeric_limits<std::int64_t>::min();
        if (i == bins) i -= 1;
        if (!valid(i)) {
          kind = failure::index_error;
          error = "index " + std::to_string(i) + " is out of bounds for axis 0 with size " + std::to_string(size);
          return 0;
        }
        if (x < edge_at(i)) i -= 1;
        if (!valid(i + 1)) {
          kind = failure::index_error;
          error = "index " + std::to_string(i + 1) + " is out of bounds for axis 0 with size " + std::to_string(size);
          return 0;
        }
        if (x >= edge_at(i + 1) && i != bins - 1) i += 1;
        return i;
      };
      const std::int64_t low = index(sorted.front());
      const std::int64_t high = kind == failure::none ? index(sorted.back()) : 0;
      if (kind == failure::none && low < 0) {
        kind = failure::value_error;
        error = "'list' argument must have no negative elements";
      } else if (kind == failure::none && high >= bins) {
        kind = failure::value_error;
        error = "operands could not be broadcast together with shapes (" + std::to_string(bins) + ",) (" +
                std::to_string(high + 1) + ",) (" + std::to_string(bins) + ",) ";
      }
      if (kind != failure::none) {
        fail(out, kind, error);
        return {};
      }
      counts.assign(static_cast<std::size_t>(bins), 0);
      auto from = sorted.begin();
      for (std::int64_t k = 0; k < bins; ++k) {
        const auto to = k + 1 == bins ? sorted.end()
                                      : std::partition_point(from, sorted.end(), [&](T v) { return index(v) <= k; });
        counts[static_cast<std::size_t>(k)] = to - from;
        from = to;
      }
      p.resize(counts.size());
      for (std::size_t k = 0; k < counts.size(); ++k) p[k] = static_cast<double>(counts[k]) / n();
      const double score = (2 - static_cast<double>(count + 1) * blas_dot(p)) / ptp_over(static_cast<double>(bins));
      if (bins == 1 || score < best_score) best = bins, best_score = score;
    }
    out.at_search_bound = best == bound;
    return {ptp_over(static_cast<double>(best)), float_type_of()};
  }

  std::vector<T> x_;
  std::vector<T> scratch_;  // the percentiles' partially ordered copy
  dtype type_;
  range_end first_, last_;
  double ptp_ = 0;
};

/// The samples of view v as T values (float for f16 and bf16 samples, exactly).
template <class Raw, class T, class Convert>
std::vector<T> read(const view& v, Convert convert) {
  std::vector<T> out(static_cast<std::size_t>(v.size));
  const char* base = static_cast<const char*>(v.data);
  for (std::int64_t i = 0; i < v.size; ++i) {
    Raw raw;
    std::memcpy(&raw, base + i * v.stride * static_cast<std::int64_t>(sizeof(Raw)), sizeof raw);
    out[static_cast<std::size_t>(i)] = convert(raw);
  }
  return out;
}

template <class T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x);
  return false;
}

/// The estimate for samples x of numpy's type `type`.
template <class T>
bin_estimate estimate_typed(bin_estimator e, std::vector<T> x, dtype type,
                            const std::optional<std::pair<range_end, range_end>>& range) {
  range_end first, last;
  if (range) {
    first = range->first;
    last = range->second;
    const end_test lo = test_for(first, type), hi = test_for(last, type);
    x.erase(std::remove_if(x.begin(), x.end(), [&](T v) { return !in_range(v, lo, hi); }), x.end());
  } else {
    // numpy's range from the data: min and max as scalars of their type, widened by 0.5 each
    // side where equal (in the samples' float type, in float64 for integers).
    x.erase(std::remove_if(x.begin(), x.end(), [](T v) { return is_nan(v); }), x.end());
    if (x.empty()) return {};
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    const T min = *lo, max = *hi;
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(min) || !std::isfinite(max)) {
        bin_estimate out;
        out.failed = failure::value_error;
        out.message = "autodetected range of [" + text(min) + ", " + text(max) + "] is not finite";
        out.bins = 0;
        out.estimate = std::numeric_limits<double>::quiet_NaN();
        return out;
      }
      first = range_end::of_float(type, min == max ? rounded(type, min - 0.5) : min);
      last = range_end::of_float(type, min == max ? rounded(type, max + 0.5) : max);
    } else if (min == max) {
      first = range_end::of_float(dtype::f64, static_cast<double>(min) - 0.5);
      last = range_end::of_float(dtype::f64, static_cast<double>(max) + 0.5);
    } else {
      first = range_end::of_integer(type, min);
      last = range_end::of_integer(type, max);
    }
  }
  if (x.empty()) return {};
  return estimator<T>(std::move(x), type, first, last).run(e);
}

}  // namespace

range_end range_end::python_float(double v) {
  range_end r;
  r.type = dtype::f64;
  r.weak = true;
  r.value = v;
  return r;
}

range_end range_end::python_int(integer_value v) {
  range_end r;
  r.type = dtype::i64;
  r.weak = true;
  r.integer = v;
  r.value = to_double(v);
  return r;
}

range_end range_end::python_int_beyond(double v) {
  range_end r = python_int(integer_value(std::numeric_limits<std::uint64_t>::max()));
  r.integer.negative = v < 0;
  r.value = v;
  r.beyond = true;
  return r;
}

range_end range_end::of_float(dtype t, double v) {
  if (t != dtype::f16 && t != dtype::f32 && t != dtype::f64)
    throw error("tally: a range end of a float type is f16, f32 or f64, not " + std::string(name_of(t)));
  range_end r;
  r.type = t;
  r.weak = false;
  r.value = v;
  return r;
}

range_end range_end::of_integer(dtype t, integer_value v) {
  if (!is_int(t)) throw error("tally: a range end of an integer type is u8 .. i64, not " + std::string(name_of(t)));
  range_end r;
  r.type = t;
  r.weak = false;
  r.integer = v;
  r.value = to_double(v);
  return r;
}

std::optional<bin_estimator> bin_estimator_from_name(std::string_view name) {
  for (bin_estimator e : {bin_estimator::automatic, bin_estimator::fd, bin_estimator::doane, bin_estimator::rice,
                          bin_estimator::scott, bin_estimator::sqrt, bin_estimator::stone, bin_estimator::sturges})
    if (name == name_of(e)) return e;
  return std::nullopt;
}

const char* name_of(bin_estimator e) {
  switch (e) {
    case bin_estimator::automatic: return "auto";
    case bin_estimator::fd: return "fd";
    case bin_estimator::doane: return "doane";
    case bin_estimator::rice: return "rice";
    case bin_estimator::scott: return "scott";
    case bin_estimator::sqrt: return "sqrt";
    case bin_estimator::stone: return "stone";
    case bin_estimator::sturges: return "sturges";
  }
  return "?";
}

bin_estimate estimate_bins(bin_estimator e, const view& samples,
                           const std::optional<std::pair<range_end, range_end>>& range) {
  if (samples.size < 0 || (samples.size > 0 && (samples.data == nullptr || samples.stride < 1)))
    throw error("tally: estimate_bins needs a view of size >= 0 and stride >= 1");
  const auto same = [](auto v) { return v; };
  switch (samples.type) {
    case dtype::u8: return estimate_typed(e, read<std::uint8_t, std::uint8_t>(samples, same), samples.type, range);
    case dtype::i8: return estimate_typed(e, read<std::int8_t, std::int8_t>(samples, same), samples.type, range);
    case dtype::u16: return estimate_typed(e, read<std::uint16_t, std::uint16_t>(samples, same), samples.type, range);
    case dtype::i16: return estimate_typed(e, read<std::int16_t, std::int16_t>(samples, same), samples.type, range);
    case dtype::u32: return estimate_typed(e, read<std::uint32_t, std::uint32_t>(samples, same), samples.type, range);
    case dtype::i32: return estimate_typed(e, read<std::int32_t, std::int32_t>(samples, same), samples.type, range);
    case dtype::u64: return estimate_typed(e, read<std::uint64_t, std::uint64_t>(samples, same), samples.type, range);
    case dtype::i64: return estimate_typed(e, read<std::int64_t, std::int64_t>(samples, same), samples.type, range);
    case dtype::f16:
      return estimate_typed(e, read<half, float>(samples, [](half h) {
        return static_cast<float>(detail::half_bits_to_double(h.bits));
      }), dtype::f16, range);
    case dtype::bf16:  // numpy has no bfloat16: the estimate of the samples as float32 values
      return estimate_typed(e, read<bfloat16, float>(samples, [](bfloat16 b) {
        return static_cast<float>(detail::bfloat16_bits_to_double(b.bits));
      }), dtype::f32, range);
    case dtype::f32: return estimate_typed(e, read<float, float>(samples, same), dtype::f32, range);
    case dtype::f64: return estimate_typed(e, read<double, double>(samples, same), dtype::f64, range);
  }
  throw error("tally: estimate_bins: unknown sample type");
}

}  // namespace tally

// The parallel patterns (elementwise, reduction, matmul) on every backend against f64 references
// on seeded random data: empty, one element, odd sizes, misaligned starts, strided and broadcast
// views; and every argument error. The CUDA cases take host memory (the backend stages it through
// device copies that keep the address modulo 256) and are skipped, never passed, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "tally/patterns/elementwise.hpp"
#include "tally/error.hpp"
#include "tally/patterns/matmul.hpp"
#include "tally/patterns/ops.hpp"
#include "tally/patterns/reduce.hpp"

namespace tally_test {
namespace {

using tally::backend;
using tally::dtype;

class Patterns : public ::testing::TestWithParam<backend> {
 protected:
  void SetUp() override {
    if (GetParam() == backend::cuda && !cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }
  tally::run_options run() const {
    tally::run_options o;
    o.backend = GetParam();
    return o;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, Patterns, ::testing::Values(backend::cpu, backend::cuda),
                         [](const auto& info) { return std::string(tally::name_of(info.param)); });

// ---- element types and values ---------------------------------------------------------------

double ulp_of(double r) {  // f32's ulp at |r| (2^-149 among subnormals)
  const double a = std::fabs(r);
  if (a < 0x1p-126) return 0x1p-149;
  int e = 0;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 24);
}

/// Stores doubles as elements of t (rounded to nearest) and reads them back exactly.
struct buffer {
  dtype type;
  std::vector<std::uint64_t> words;  // 8-byte aligned storage
  explicit buffer(dtype t, std::size_t n) : type(t), words(n * tally::size_of(t) / 8 + 2) {}
  char* bytes() { return reinterpret_cast<char*>(words.data()); }
  void* at(std::int64_t i) { return bytes() + i * static_cast<std::int64_t>(tally::size_of(type)); }
  template <class T> static void put(void* p, double v) {
    const auto k = static_cast<T>(v);
    std::memcpy(p, &k, sizeof k);
  }
  template <class T> static double take(const void* p) {
    T k;
    std::memcpy(&k, p, sizeof k);
    return static_cast<double>(k);
  }
  void set(std::int64_t i, double v) {
    void* p = at(i);
    switch (type) {
      case dtype::f32: return put<float>(p, v);
      case dtype::f16: { const auto h = tally::to_half(v); std::memcpy(p, &h, 2); break; }
      case dtype::bf16: { const auto h = tally::to_bfloat16(v); std::memcpy(p, &h, 2); break; }
      case dtype::u8: return put<std::uint8_t>(p, v);
      case dtype::i8: return put<std::int8_t>(p, v);
      case dtype::u16: return put<std::uint16_t>(p, v);
      case dtype::i16: return put<std::int16_t>(p, v);
      case dtype::u32: return put<std::uint32_t>(p, v);
      case dtype::i32: return put<std::int32_t>(p, v);
      case dtype::u64: return put<std::uint64_t>(p, v);
      case dtype::i64: return put<std::int64_t>(p, v);
      default: FAIL() << "unexpected dtype";
    }
  }
  double get(std::int64_t i) {
    const void* p = at(i);
    switch (type) {
      case dtype::f32: return take<float>(p);
      case dtype::f16: { tally::half h; std::memcpy(&h, p, 2); return tally::to_double(h); }
      case dtype::bf16: { tally::bfloat16 h; std::memcpy(&h, p, 2); return tally::to_double(h); }
      case dtype::f64: return take<double>(p);
      case dtype::u8: return take<std::uint8_t>(p);
      case dtype::i8: return take<std::int8_t>(p);
      case dtype::u16: return take<std::uint16_t>(p);
      case dtype::i16: return take<std::int16_t>(p);
      case dtype::u32: return take<std::uint32_t>(p);
      case dtype::i32: return take<std::int32_t>(p);
      case dtype::u64: return take<std::uint64_t>(p);
      case dtype::i64: return take<std::int64_t>(p);
      default: ADD_FAILURE() << "unexpected dtype"; return 0;
    }
  }
};

/// Random values never 0: uniform in (-w, w), and the same with magnitudes spread over decades.
double draw(std::mt19937_64& g, double width, bool decades) {
  std::uniform_real_distribution<double> u(-1, 1);
  for (;;) {
    double v = u(g);
    if (decades) v = std::copysign(std::pow(10.0, (std::fabs(v) - 1) * 8), v);  // 1e-8 .. 1
    if (v != 0) return v * width;
  }
}

// ---- activations -----------------------------------------------------------------------------

double sigmoid64(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }

struct activation {
  tally::unary_op op;
  std::function<double(double)> exact;
  double ulps;  // bound in f32 ulps of the exact value
  /// The error allowed for the function's own ill-conditioning: the inner argument (2u for
  /// gelu_tanh, x/sqrt 2 for gelu_erf) rounded to f32 moves the result by up to this much.
  std::function<double(double)> argument_error;
};

const std::vector<activation>& activations() {
  static const std::vector<activation> list = {
      // Measured on the CPU over 4e6 points in [-120, 120]: sigmoid 0.96, silu 1.38 ulp; the
      // formula uses only IEEE operations and fma, so the GPU gives the same bits.
      {tally::unary_op::sigmoid, sigmoid64, 1.5, nullptr},
      {tally::unary_op::relu, [](double x) { return x > 0 ? x : 0.0; }, 0, nullptr},
      {tally::unary_op::silu, [](double x) { return x * sigmoid64(x); }, 2, nullptr},
      // tanhf: glibc measured 2.14 ulp; CUDA documents 2.
      {tally::unary_op::tanh, [](double x) { return std::tanh(x); }, 3, nullptr},
      {tally::unary_op::gelu_tanh,
       [](double x) { return x * sigmoid64(2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)); }, 4,
       [](double x) {
         const double t = 2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x), s = sigmoid64(t);
         return std::fabs(x * s * (1 - s) * t) * 4 * 0x1p-24;
       }},
      // erfcf: CUDA documents 4 ulp, hence 6 here.
      {tally::unary_op::gelu_erf, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, 6,
       [](double x) {
         const double t = x / std::sqrt(2.0);
         return std::fabs(0.5 * x * 2 / std::sqrt(M_PI) * std::exp(-t * t) * t) * 4 * 0x1p-24;
       }},
  };
  return list;
}

/// The tolerance of an f32 result for input x.
double f32_tolerance(const activation& a, double x) {
  const double exact = a.exact(x);
  return a.ulps * ulp_of(exact) + (a.argument_error ? a.argument_error(x) : 0.0);
}

/// Whether y is an acceptable result for x: for f32 within the tolerance; for f16 and bf16 the
/// correct rounding of some f32 value within it (rounding is monotonic: between the roundings of
/// the interval's ends).
bool acceptable(const activation& a, dtype t, double x, double y) {
  const double exact = a.exact(x), tol = f32_tolerance(a, x);
  if (std::isnan(exact)) return std::isnan(y);
  if (t == dtype::f32) return std::fabs(y - exact) <= tol;
  buffer lo(t, 1), hi(t, 1);
  lo.set(0, exact - tol);
  hi.set(0, exact + tol);
  return lo.get(0) <= y && y <= hi.get(0);
}

TEST(PatternsBounds, APerturbedResultFailsTheCheck) {
  const activation& s = activations()[0];
  for (double x : {-30.0, -3.0, 0.25, 4.0}) {
    const float y = static_cast<float>(s.exact(x));
    EXPECT_TRUE(acceptable(s, dtype::f32, x, y));
    EXPECT_FALSE(acceptable(s, dtype::f32, x, std::nextafter(std::nextafter(y, 2.0f), 2.0f)));
    EXPECT_FALSE(acceptable(s, dtype::f16, x, y * (1 + 0x1p-8)));
  }
}

TEST_P(Patterns, ActivationsWithinTheirBoundsForEveryTypeSizeAndAlignment) {
  std::mt19937_64 g(5);
  for (const auto& a : activations()) {
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
      for (std::int64_t n : {0, 1, 7, 64, 1031}) {
        for (std::int64_t offset : {0, 1, 3, 7}) {
          SCOPED_TRACE(std::string(tally::name_of(a.op)) + " " + std::string(tally::name_of(t)) + " n=" +
                       std::to_string(n) + " offset=" + std::to_string(offset));
          const double width = t == dtype::f16 ? 12 : 120;
          buffer x(t, n + 8), y(t, n + 8), in_place(t, n + 8);
          for (std::int64_t i = 0; i < n; ++i) {
            const double v = draw(g, (i % 3 == 0) ? width : 8, i % 3 == 1);
            x.set(offset + i, v);
            in_place.set(offset + i, v);
          }
          // The output starts at another offset, so that input and output disagree modulo 16.
          const std::int64_t out_offset = (offset + n % 3) % 8;
          tally::unary(a.op, t, x.at(offset), y.at(out_offset), n, run());
          tally::unary(a.op, t, in_place.at(offset), in_place.at(offset), n, run());
          int bad = 0;
          for (std::int64_t i = 0; i < n && bad < 5; ++i) {
            const double xi = x.get(offset + i), yi = y.get(out_offset + i);
            if (!acceptable(a, t, xi, yi)) {
              ++bad;
              ADD_FAILURE() << "x=" << xi << " y=" << yi << " exact=" << a.exact(xi) << " tol=" << f32_tolerance(a, xi);
            }
            EXPECT_EQ(yi, in_place.get(offset + i)) << "in place differs at " << i;
          }
        }
      }
    }
  }
}

/// Every value of a 16-bit type (f16 or bf16) as f32, in the order of their bits.
std::vector<float> every_16bit_value(dtype t) {
  std::vector<float> v(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    if (t == dtype::f16) {
      tally::half h;
      std::memcpy(&h, &bits, 2);
      v[b] = static_cast<float>(tally::to_double(h));
    } else {
      const std::uint32_t w = b << 16;
      std::memcpy(&v[b], &w, 4);
    }
  }
  return v;
}

/// The premise of the CUDA backend's fast 16-bit path for the sigmoid family (sigmoid_family_fast
/// in src/patterns/cuda/elementwise.cu): on every f16 and bf16 input, the accurate f32 formula is
/// within 2^-23 (relative) of s * sigmoid(t), t and s as the functor computes them in f32,
/// wherever that value is at least 2^-125 (below, the fast path needs no bound: its f16 results
/// round to zero, its bf16 ones take the accurate formula). Measured: 0.59 to 0.75 times 2^-23.
TEST(PatternsBounds, SigmoidFamilyWithinTwoToTheMinus23OnEvery16BitInput) {
  auto check = [](const char* name, auto op) {
    for (dtype t : {dtype::f16, dtype::bf16}) {
      double worst = 0;
      for (float x : every_16bit_value(t)) {
        if (!std::isfinite(x)) continue;
        const tally::ops::detail::sigmoid_args a = op.args(x);
        const double exact = a.s * sigmoid64(a.t);
        if (std::fabs(exact) < 0x1p-125) continue;
        worst = std::max(worst, std::fabs(op(x) - exact) / std::fabs(exact));
      }
      EXPECT_LE(worst, 0x1p-23) << name << " " << tally::name_of(t);
    }
  };
  check("sigmoid", tally::ops::sigmoid{});
  check("silu", tally::ops::silu{});
  check("gelu_tanh", tally::ops::gelu_tanh{});
}

/// The premise of the CUDA backend's fast 16-bit gelu_erf (gelu_erf_fast in
/// src/patterns/cuda/elementwise.cu): its formula, ops::detail::gelu_erf_estimate, with exact
/// 2^u and 1/v (correctly rounded) in place of the GPU's approximations, is within 6 * 2^-23
/// (relative; 5.9 by the comment's count) of 0.5 x erfc(z), z = -x / sqrt 2 rounded to f32 as
/// ops::gelu_erf rounds it, on every finite f16 and bf16 input whose value is at least 2^-122
/// (below, the fast path needs no bound: its f16 results round to zero, its bf16 ones take the
/// accurate formula). Measured: 2.4 (f16) and 2.2 (bf16) times 2^-23.
TEST(PatternsBounds, GeluErfEstimateWithinSixTimesTwoToTheMinus23OnEvery16BitInput) {
  const auto ex2 = [](float u) { return static_cast<float>(std::exp2(static_cast<double>(u))); };
  const auto rcp = [](float v) { return 1.0f / v; };
  for (dtype t : {dtype::f16, dtype::bf16}) {
    double worst = 0;
    for (float x : every_16bit_value(t)) {
      if (!std::isfinite(x)) continue;
      const float z = -x * 0.70710678118654752f;
      const long double exact = 0.5L * x * std::erfc(static_cast<long double>(z));
      if (std::fabs(exact) < 0x1p-122L) continue;
      const float y = tally::ops::detail::gelu_erf_estimate(x, ex2, rcp);
      worst = std::max(worst, static_cast<double>(std::fabs(y - exact) / std::fabs(exact)));
    }
    EXPECT_LE(worst, 6 * 0x1p-23) << tally::name_of(t);
  }
}

/// Every f16 and bf16 input of gelu_erf: the 16-bit result is, bit for bit, the f32 result of the
/// same input on the same backend rounded to the type (NaN: both NaN), and within the
/// activation's bound (finite inputs). On the CUDA backend this checks the fast 16-bit path's
/// claim of rounding exactly as the accurate formula.
TEST_P(Patterns, GeluErfOfEvery16BitInputIsItsF32ResultRounded) {
  const activation& a = activations().back();
  ASSERT_EQ(a.op, tally::unary_op::gelu_erf);
  for (dtype t : {dtype::f16, dtype::bf16}) {
    SCOPED_TRACE(std::string(tally::name_of(t)));
    std::vector<std::uint16_t> x(65536), y(65536);
    for (std::uint32_t b = 0; b < 65536; ++b) x[b] = static_cast<std::uint16_t>(b);
    tally::unary(a.op, t, x.data(), y.data(), 65536, run());
    const std::vector<float> xf = every_16bit_value(t);
    std::vector<float> yf(xf.size());
    tally::unary(a.op, dtype::f32, xf.data(), yf.data(), static_cast<std::int64_t>(xf.size()), run());
    buffer got(t, 1), want(t, 1);
    int bad = 0;
    for (std::uint32_t b = 0; b < 65536 && bad < 5; ++b) {
      std::memcpy(got.at(0), &y[b], 2);
      want.set(0, yf[b]);
      std::uint16_t want_bits;
      std::memcpy(&want_bits, want.at(0), 2);
      const double yi = got.get(0);
      const bool same = y[b] == want_bits || (std::isnan(yi) && std::isnan(yf[b]));
      const bool within = !std::isfinite(xf[b]) || acceptable(a, t, xf[b], yi);
      if (!same || !within) {
        ++bad;
        ADD_FAILURE() << "x=" << xf[b] << " (bits " << x[b] << ") y=" << yi << " (bits " << y[b] << ") f32 " << yf[b]
                      << " rounded bits " << want_bits << " exact=" << a.exact(xf[b]);
      }
    }
  }
}

/// Every f16 and bf16 input of the sigmoid family: within the activation's bound (finite inputs)
/// and bit for bit the CPU backend's result (NaN: both NaN). On the CUDA backend this checks
/// the fast 16-bit path's claim of rounding exactly as the accurate formula; the f32 results
/// of the same inputs must match the CPU's bits as well (one formula of IEEE operations).
TEST_P(Patterns, SigmoidFamilyOfEvery16BitInputIsTheCpuBackendsBits) {
  tally::run_options cpu;
  cpu.backend = backend::cpu;
  for (const auto& a : activations()) {
    if (a.op != tally::unary_op::sigmoid && a.op != tally::unary_op::silu && a.op != tally::unary_op::gelu_tanh) continue;
    for (dtype t : {dtype::f16, dtype::bf16}) {
      SCOPED_TRACE(std::string(tally::name_of(a.op)) + " " + std::string(tally::name_of(t)));
      std::vector<std::uint16_t> x(65536), y(65536), want(65536);
      for (std::uint32_t b = 0; b < 65536; ++b) x[b] = static_cast<std::uint16_t>(b);
      tally::unary(a.op, t, x.data(), y.data(), 65536, run());
      tally::unary(a.op, t, x.data(), want.data(), 65536, cpu);
      buffer in(t, 1), got(t, 1), ref(t, 1);
      int bad = 0;
      for (std::uint32_t b = 0; b < 65536 && bad < 5; ++b) {
        std::memcpy(in.at(0), &x[b], 2);
        std::memcpy(got.at(0), &y[b], 2);
        std::memcpy(ref.at(0), &want[b], 2);
        const double xi = in.get(0), yi = got.get(0);
        const bool same = y[b] == want[b] || (std::isnan(yi) && std::isnan(ref.get(0)));
        const bool within = !std::isfinite(xi) || acceptable(a, t, xi, yi);
        if (!same || !within) {
          ++bad;
          ADD_FAILURE() << "x=" << xi << " (bits " << x[b] << ") y=" << yi << " (bits " << y[b] << ") cpu bits " << want[b]
                        << " exact=" << a.exact(xi);
        }
      }
      const std::vector<float> xf = every_16bit_value(t);
      std::vector<float> yf(xf.size()), wantf(xf.size());
      const auto n = static_cast<std::int64_t>(xf.size());
      tally::unary(a.op, dtype::f32, xf.data(), yf.data(), n, run());
      tally::unary(a.op, dtype::f32, xf.data(), wantf.data(), n, cpu);
      for (std::size_t i = 0; i < xf.size() && bad < 10; ++i) {
        std::uint32_t got_bits, want_bits;
        std::memcpy(&got_bits, &yf[i], 4);
        std::memcpy(&want_bits, &wantf[i], 4);
        if (got_bits != want_bits && !(std::isnan(yf[i]) && std::isnan(wantf[i]))) {
          ++bad;
          ADD_FAILURE() << "f32 x=" << xf[i] << " y=" << yf[i] << " cpu " << wantf[i];
        }
      }
    }
  }
}

TEST_P(Patterns, ActivationsOfExtremesAreFiniteAndExact) {
  const std::vector<float> xs = {-FLT_MAX, -1e30f, -104.0f, -103.0f, -89.0f, -88.0f, -20.0f, -1e-30f, 1e-30f,
                                 1e-45f,   20.0f,  88.0f,   89.0f,   1e30f,  FLT_MAX};
  std::vector<float> y(xs.size());
  const auto n = static_cast<std::int64_t>(xs.size());
  tally::sigmoid(xs.data(), y.data(), n, run());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_TRUE(std::isfinite(y[i])) << xs[i];
    EXPECT_TRUE(acceptable(activations()[0], dtype::f32, xs[i], y[i])) << xs[i] << " -> " << y[i];
  }
  EXPECT_EQ(y.front(), 0.0f);
  EXPECT_EQ(y.back(), 1.0f);
  for (const auto& a : activations()) {
    std::vector<float> out(xs.size());
    tally::unary(a.op, dtype::f32, xs.data(), out.data(), n, run());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      EXPECT_FALSE(std::isnan(out[i])) << tally::name_of(a.op) << "(" << xs[i] << ")";
      EXPECT_TRUE(acceptable(a, dtype::f32, xs[i], out[i])) << tally::name_of(a.op) << "(" << xs[i] << ") = " << out[i];
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float r = 0;
  tally::relu(&nan, &r, 1, run());
  EXPECT_TRUE(std::isnan(r));
  tally::sigmoid(&nan, &r, 1, run());
  EXPECT_TRUE(std::isnan(r));
}

TEST_P(Patterns, UnaryRejectsBadArguments) {
  std::vector<float> x(16, 1.0f);
  std::vector<std::int32_t> k(4);
  EXPECT_THROW(tally::unary(tally::unary_op::sigmoid, dtype::f64, x.data(), x.data(), 4, run()), tally::error);
  EXPECT_THROW(tally::unary(tally::unary_op::sigmoid, dtype::f32, x.data(), x.data() + 1, 8, run()), tally::error);
  EXPECT_THROW(tally::unary(tally::unary_op::sigmoid, dtype::f32, x.data(), x.data(), -1, run()), tally::error);
  EXPECT_THROW(tally::unary(tally::unary_op::sigmoid, dtype::f32, nullptr, x.data(), 4, run()), tally::error);
  EXPECT_THROW(tally::unary(tally::unary_op::relu, dtype::f32, reinterpret_cast<char*>(x.data()) + 1, x.data() + 8, 4,
                            run()),
               tally::error);
  EXPECT_THROW(tally::unary(static_cast<tally::unary_op>(99), dtype::f32, x.data(), x.data(), 4, run()), tally::error);
  for (float v : x) EXPECT_EQ(v, 1.0f);  // nothing ran
}

/// The CUDA backend's map strategies (tally::unary_options::strategy) give automatic's bits for
/// every activation, f16 and bf16 input (every 16-bit pattern) and f32 input, at three
/// misalignments; the CPU backend takes automatic only, and no backend an unknown strategy.
TEST_P(Patterns, UnaryStrategiesGiveTheAutomaticBits) {
  using tally::map_strategy;
  tally::unary_options o;
  static_cast<tally::run_options&>(o) = run();
  const std::vector<map_strategy> all = {map_strategy::automatic, map_strategy::scalar,    map_strategy::x2,
                                         map_strategy::x4,        map_strategy::x8,        map_strategy::packed128,
                                         map_strategy::packed128_resident};
  std::vector<float> xf(70001 + 3), want(xf.size()), got(xf.size());
  std::mt19937_64 g(17);
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  for (auto& v : xf) v = u(g);
  o.strategy = static_cast<map_strategy>(99);
  EXPECT_THROW(tally::unary(tally::unary_op::sigmoid, dtype::f32, xf.data(), got.data(), 4, o), tally::error);
  if (GetParam() == backend::cpu) {
    for (auto s : all) {
      o.strategy = s;
      if (s == map_strategy::automatic) EXPECT_NO_THROW(tally::unary(tally::unary_op::tanh, dtype::f32, xf.data(),
                                                                     got.data(), 4, o));
      else EXPECT_THROW(tally::unary(tally::unary_op::tanh, dtype::f32, xf.data(), got.data(), 4, o), tally::error);
    }
    return;
  }
  // Every 16-bit pattern (40503 is odd: b * 40503 runs over them all), then a few more.
  std::vector<std::uint16_t> x16(65536 + 3), want16(x16.size()), got16(x16.size());
  for (std::uint32_t b = 0; b < x16.size(); ++b) x16[b] = static_cast<std::uint16_t>(b * 40503u);
  for (const auto& a : activations()) {
    for (std::int64_t offset : {0, 1, 3}) {
      SCOPED_TRACE(std::string(tally::name_of(a.op)) + " offset " + std::to_string(offset));
      const auto n = static_cast<std::int64_t>(xf.size()) - offset, n16 = static_cast<std::int64_t>(x16.size()) - offset;
      o.strategy = map_strategy::automatic;
      std::fill(want.begin(), want.end(), 0.0f);
      tally::unary(a.op, dtype::f32, xf.data() + offset, want.data() + offset, n, o);
      for (auto s : all) {
        o.strategy = s;
        std::fill(got.begin(), got.end(), 0.0f);
        tally::unary(a.op, dtype::f32, xf.data() + offset, got.data() + offset, n, o);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << "f32 " << tally::name_of(s);
      }
      for (dtype t : {dtype::f16, dtype::bf16}) {
        o.strategy = map_strategy::automatic;
        std::fill(want16.begin(), want16.end(), std::uint16_t{0});
        tally::unary(a.op, t, x16.data() + offset, want16.data() + offset, n16, o);
        for (auto s : all) {
          o.strategy = s;
          std::fill(got16.begin(), got16.end(), std::uint16_t{0});
          tally::unary(a.op, t, x16.data() + offset, got16.data() + offset, n16, o);
          // The same bits, or NaN both (a NaN's payload is not the activation's).
          const std::uint16_t exponent = t == dtype::f16 ? 0x7c00 : 0x7f80;
          const auto nan = [&](std::uint16_t v) { return (v & exponent) == exponent && (v & ~exponent & 0x7fff); };
          std::size_t differ = 0;
          for (std::size_t i = 0; i < got16.size(); ++i)
            differ += got16[i] != want16[i] && !(nan(got16[i]) && nan(want16[i]));
          EXPECT_EQ(differ, 0u) << tally::name_of(t) << " " << tally::name_of(s);
        }
      }
    }
  }
}

// ---- binary arithmetic ------------------------------------------------------------------------

struct operand {
  buffer data;
  std::vector<std::int64_t> shape, strides;
  std::int64_t offset;  // elements from the buffer's start to element 0
  tally::array view() { return {data.at(offset), data.type, shape, strides}; }
  tally::out_array out_view() { return {data.at(offset), data.type, shape, strides}; }
  double get(const std::vector<std::int64_t>& index) {
    std::int64_t at = offset;
    for (std::size_t d = 0; d < index.size(); ++d) at += index[d] * strides[d];
    return data.get(at);
  }
};

/// An operand of `shape` whose layout is given by `strides` (empty: contiguous) inside a buffer
/// filled with random nonzero values; `offset` extra elements in front (also where negative
/// strides need room).
operand make_operand(dtype t, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides, std::int64_t offset,
                     std::mt19937_64& g) {
  if (strides.empty()) {
    strides.assign(shape.size(), 1);
    for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  }
  std::int64_t lo = 0, hi = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) continue;
    (strides[d] < 0 ? lo : hi) += (shape[d] - 1) * strides[d];
  }
  const std::int64_t size = offset - lo + hi + 1;
  operand o{buffer(t, static_cast<std::size_t>(size)), shape, strides, offset - lo};
  for (std::int64_t i = 0; i < size; ++i) o.data.set(i, draw(g, 100, i % 2 == 0));
  return o;
}

double exact_op(tally::binary_op op, double a, double b) {
  switch (op) {
    case tally::binary_op::add: return a + b;
    case tally::binary_op::sub: return a - b;
    case tally::binary_op::mul: return a * b;
    case tally::binary_op::div: return a / b;
  }
  return 0;
}

/// Checks out == round(a op b) for every index of out's shape (broadcasting a and b).
void expect_exact(tally::binary_op op, operand& a, operand& b, operand& out) {
  const std::size_t rank = out.shape.size();
  std::int64_t count = 1;
  for (auto s : out.shape) count *= s;
  buffer round(out.data.type, 1);
  int bad = 0;
  std::vector<std::int64_t> index(rank, 0), ia, ib;
  for (std::int64_t flat = 0; flat < count && bad < 5; ++flat) {
    std::int64_t rest = flat;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      index[d] = rest % out.shape[d];
      rest /= out.shape[d];
    }
    auto project = [&](const operand& x) {
      std::vector<std::int64_t> i(x.shape.size());
      for (std::size_t d = 0; d < x.shape.size(); ++d)
        i[d] = x.shape[d] == 1 ? 0 : index[rank - x.shape.size() + d];
      return i;
    };
    // The f64 result rounded once to the output type (f64 holds f32 products and quotients to
    // within far less than half an f32 ulp: the double rounding is innocuous).
    round.set(0, exact_op(op, a.get(project(a)), b.get(project(b))));
    const double want = round.get(0), got = out.get(index);
    if (!(want == got || (std::isnan(want) && std::isnan(got)))) {
      ++bad;
      ADD_FAILURE() << "at flat index " << flat << ": got " << got << ", want " << want;
    }
  }
}

struct binary_case {
  std::vector<std::int64_t> a_shape, a_strides, b_shape, b_strides, out_strides;
};

TEST_P(Patterns, BinaryBroadcastsOverStridedViewsExactly) {
  std::mt19937_64 g(11);
  const std::vector<binary_case> cases = {
      {{1031}, {}, {1031}, {}, {}},                     // same shape, odd length
      {{64, 36}, {}, {64, 1}, {}, {}},                  // a + b[:, None]
      {{5, 7}, {}, {7}, {}, {}},                        // a row broadcast
      {{}, {}, {3, 4}, {}, {}},                         // a scalar
      {{0, 5}, {}, {5}, {}, {}},                        // empty
      {{1}, {}, {1}, {}, {}},                           // one element
      {{3, 5, 9}, {1, 3, 15}, {9}, {-2}, {}},           // transposed a, reversed and strided b
      {{2, 1, 4, 1, 3}, {}, {3, 1, 6, 1}, {}, {}},      // 5-D, ones on both sides
      {{6, 8}, {}, {6, 8}, {}, {16, 2}},                // strided output
      {{2, 2, 2, 2, 2, 2, 2, 3}, {}, {3}, {}, {}},      // 8 dimensions
  };
  const std::vector<std::pair<dtype, dtype>> types = {
      {dtype::f32, dtype::f32}, {dtype::f16, dtype::f16}, {dtype::bf16, dtype::bf16},
      {dtype::f16, dtype::f32}, {dtype::bf16, dtype::f16}};
  for (const auto& c : cases) {
    for (auto [ta, tb] : types) {
      for (auto op : {tally::binary_op::add, tally::binary_op::sub, tally::binary_op::mul, tally::binary_op::div}) {
        const std::int64_t offset = static_cast<std::int64_t>(g() % 8);
        SCOPED_TRACE(std::string(tally::name_of(op)) + " " + std::string(tally::name_of(ta)) + "," +
                     std::string(tally::name_of(tb)) + " case " + std::to_string(&c - cases.data()) + " offset " +
                     std::to_string(offset));
        operand a = make_operand(ta, c.a_shape, c.a_strides, offset, g);
        operand b = make_operand(tb, c.b_shape, c.b_strides, (offset + 3) % 8, g);
        const auto shape = tally::broadcast_shape(c.a_shape, c.b_shape);
        operand out = make_operand(tally::promote(ta, tb), shape, c.out_strides, (offset + 5) % 8, g);
        tally::binary(op, a.view(), b.view(), out.out_view(), run());
        expect_exact(op, a, b, out);
      }
    }
  }
}

TEST_P(Patterns, BinaryInPlaceAndTheLargeBroadcastShape) {
  std::mt19937_64 g(3);
  operand a = make_operand(dtype::f32, {300, 260}, {}, 1, g);
  operand b = make_operand(dtype::f32, {300, 1}, {}, 0, g);
  operand before = a;
  tally::add(a.view(), b.view(), a.out_view(), run());  // a += b[:, None]
  expect_exact(tally::binary_op::add, before, b, a);
}

TEST_P(Patterns, BinaryRejectsBadArguments) {
  std::vector<float> x(64, 1.0f), y(64, 2.0f);
  auto arr = [](std::vector<float>& v, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides = {}) {
    return tally::make_array(v.data(), std::move(shape), std::move(strides));
  };
  auto out = [](std::vector<float>& v, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides = {}) {
    return tally::make_out_array(v.data(), std::move(shape), std::move(strides));
  };
  const auto o = run();
  std::vector<float> r(64, 0.0f);
  EXPECT_THROW(tally::add(arr(x, {3, 4}), arr(y, {5}), out(r, {3, 4}), o), tally::error);  // no broadcast
  EXPECT_THROW(tally::add(arr(x, {3, 4}), arr(y, {4}), out(r, {3, 5}), o), tally::error);  // wrong out shape
  EXPECT_THROW(tally::add(arr(x, {4}), arr(y, {4}), tally::out_array{r.data(), dtype::f16, {4}, {}}, o),
               tally::error);  // wrong out dtype
  EXPECT_THROW(tally::add(tally::array{x.data(), dtype::i32, {4}, {}}, arr(y, {4}), out(r, {4}), o),
               tally::error);  // unsupported dtype
  EXPECT_THROW(tally::add(arr(x, {8}), arr(y, {8}), out(x, {8}, {-1}), o), tally::error);  // overlap, reversed
  EXPECT_THROW(tally::add(arr(x, {4, 4}), arr(y, {4}), tally::out_array{x.data() + 1, dtype::f32, {4, 4}, {}}, o),
               tally::error);  // overlap, shifted
  EXPECT_THROW(tally::add(arr(x, {4}), arr(y, {4, 4}), out(x, {4, 4}), o), tally::error);  // out aliases a broadcast a
  EXPECT_THROW(tally::add(arr(x, {4, 4}), arr(y, {4}), out(r, {4, 4}, {0, 1}), o), tally::error);  // stride-0 output
  EXPECT_THROW(tally::add(arr(x, {4, 4}), arr(y, {4}), out(r, {4, 4}, {1}), o), tally::error);  // strides count
  EXPECT_THROW(tally::add(arr(x, {1, 1, 1, 1, 1, 1, 1, 1, 2}), arr(y, {2}), out(r, {1, 1, 1, 1, 1, 1, 1, 1, 2}), o),
               tally::error);  // 9 dimensions
  EXPECT_THROW(tally::add(arr(x, {-1}), arr(y, {1}), out(r, {-1}), o), tally::error);
  EXPECT_THROW(tally::binary(static_cast<tally::binary_op>(9), arr(x, {4}), arr(y, {4}), out(r, {4}), o), tally::error);
  for (float v : r) EXPECT_EQ(v, 0.0f);  // nothing ran
  for (float v : x) EXPECT_EQ(v, 1.0f);
}

// ---- reductions -------------------------------------------------------------------------------

struct reduce_types {
  tally::reduce_op op;
  dtype in, out;
};

/// The reference: the exact sum in long double (64-bit significand; the inputs are few and of
/// bounded range), min and max exactly.
double reference(tally::reduce_op op, buffer& x, std::int64_t first, std::int64_t n) {
  long double sum = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x.get(first + i);
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  switch (op) {
    case tally::reduce_op::sum: return static_cast<double>(sum);
    case tally::reduce_op::mean: return static_cast<double>(sum / n);
    case tally::reduce_op::min: return lo;
    case tally::reduce_op::max: return hi;
  }
  return 0;
}

/// Sums accumulate in out's type: at most n - 1 roundings of partial sums of |x| (the classic
/// bound), plus the final division of a mean.
double tolerance(const reduce_types& t, buffer& x, std::int64_t first, std::int64_t n) {
  if (t.op == tally::reduce_op::min || t.op == tally::reduce_op::max || !floating(t.in)) return 0;
  double abs_sum = 0;
  for (std::int64_t i = 0; i < n; ++i) abs_sum += std::fabs(x.get(first + i));
  const double eps = t.out == dtype::f32 ? 0x1p-24 : 0x1p-53;
  const double bound = (n + 1) * eps * abs_sum;
  return t.op == tally::reduce_op::mean ? bound / n + eps * abs_sum / n : bound;
}

const std::vector<reduce_types>& all_reduce_types() {
  static const std::vector<reduce_types> list = [] {
    std::vector<reduce_types> l;
    for (auto op : {tally::reduce_op::sum, tally::reduce_op::mean})
      for (dtype in : {dtype::f32, dtype::f16, dtype::bf16})
        for (dtype out : {dtype::f32, dtype::f64}) l.push_back({op, in, out});
    l.push_back({tally::reduce_op::sum, dtype::i32, dtype::i64});
    l.push_back({tally::reduce_op::mean, dtype::i32, dtype::f64});
    for (auto op : {tally::reduce_op::min, tally::reduce_op::max})
      for (dtype in : {dtype::f32, dtype::f16, dtype::bf16, dtype::u8, dtype::i8, dtype::u16, dtype::i16, dtype::u32,
                       dtype::i32, dtype::u64, dtype::i64})
        l.push_back({op, in, in});
    return l;
  }();
  return list;
}

/// Floats from draw; i32 large and nonzero; other integers over their type's whole range (64-bit
/// ones in steps of 2^11, exact in the buffer's doubles).
void fill_reduce_input(buffer& x, std::int64_t count, dtype t, std::mt19937_64& g) {
  const int bits = static_cast<int>(8 * tally::size_of(t));
  const bool is_signed = t == dtype::i8 || t == dtype::i16 || t == dtype::i32 || t == dtype::i64;
  for (std::int64_t i = 0; i < count; ++i) {
    if (floating(t)) {
      x.set(i, draw(g, t == dtype::f16 ? 100 : 1e4, i % 2 == 0));
    } else if (t == dtype::i32) {
      x.set(i, static_cast<double>(static_cast<std::int32_t>(g() >> 33) | 1));  // large, nonzero
    } else if (bits == 64) {
      const std::uint64_t r = g() >> 11;
      x.set(i, is_signed ? std::ldexp(static_cast<double>(static_cast<std::int64_t>(r) - (std::int64_t{1} << 52)), 11)
                         : std::ldexp(static_cast<double>(r), 11));
    } else {
      const auto r = static_cast<std::int64_t>(g() >> (64 - bits));
      x.set(i, static_cast<double>(is_signed ? r - (std::int64_t{1} << (bits - 1)) : r));
    }
  }
}

/// A whole-array reduction of n fresh elements from `offset` against the reference, then again:
/// the same bits.
void expect_reduces(const reduce_types& t, std::int64_t n, std::int64_t offset, std::mt19937_64& g,
                    const tally::run_options& on) {
  buffer x(t.in, n + 8), result(t.out, 2);
  fill_reduce_input(x, n + 8, t.in, g);
  tally::reduce(t.op, t.in, x.at(offset), n, t.out, result.at(0), on);
  const double first = result.get(0);
  EXPECT_NEAR(first, reference(t.op, x, offset, n), tolerance(t, x, offset, n));
  tally::reduce(t.op, t.in, x.at(offset), n, t.out, result.at(0), on);
  EXPECT_EQ(result.get(0), first) << "not the same bits on a second run";
}

TEST_P(Patterns, ReduceWholeArraysOfEverySizeAndType) {
  std::mt19937_64 g(17);
  for (const auto& t : all_reduce_types()) {
    for (std::int64_t n : {1, 2, 15, 1000, 70001}) {
      const std::int64_t offset = static_cast<std::int64_t>(g() % 8);
      SCOPED_TRACE(std::string(tally::name_of(t.op)) + " " + std::string(tally::name_of(t.in)) + "->" +
                   std::string(tally::name_of(t.out)) + " n=" + std::to_string(n) + " offset=" + std::to_string(offset));
      expect_reduces(t, n, offset, g, run());
    }
  }
}

TEST_P(Patterns, ReduceLargeArraysWithManyChunks) {
  // More chunks of 64 KiB than the CUDA kernel has blocks: blocks claim chunks as they finish them.
  // The i32 sum is exact, so a chunk lost or counted twice shows.
  std::mt19937_64 g(29);
  const std::int64_t n = (std::int64_t{1} << 24) + 3, offset = 3;
  for (const reduce_types& t : {reduce_types{tally::reduce_op::sum, dtype::f32, dtype::f32},
                                reduce_types{tally::reduce_op::max, dtype::f32, dtype::f32},
                                reduce_types{tally::reduce_op::sum, dtype::i32, dtype::i64}}) {
    SCOPED_TRACE(std::string(tally::name_of(t.op)) + " " + std::string(tally::name_of(t.in)));
    expect_reduces(t, n, offset, g, run());
  }
}

TEST_P(Patterns, ReduceRowsOfEveryShape) {
  std::mt19937_64 g(19);
  const std::vector<std::array<std::int64_t, 3>> shapes = {{1, 1, 1}, {3, 5, 7}, {33, 100, 101}, {4, 3000, 3003}, {2, 0, 4}};
  for (const auto& t : all_reduce_types()) {
    for (auto [rows, cols, stride] : shapes) {
      if (cols == 0 && (t.op == tally::reduce_op::min || t.op == tally::reduce_op::max)) continue;
      SCOPED_TRACE(std::string(tally::name_of(t.op)) + " " + std::string(tally::name_of(t.in)) + "->" +
                   std::string(tally::name_of(t.out)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
      buffer x(t.in, rows * stride + 8), result(t.out, rows + 1);
      fill_reduce_input(x, rows * stride + 8, t.in, g);
      tally::reduce_rows(t.op, t.in, x.at(1), rows, cols, stride, t.out, result.at(0), run());
      for (std::int64_t r = 0; r < rows; ++r) {
        const double want = reference(t.op, x, 1 + r * stride, cols);
        if (cols == 0 && t.op == tally::reduce_op::mean) EXPECT_TRUE(std::isnan(result.get(r)));
        else EXPECT_NEAR(result.get(r), want, tolerance(t, x, 1 + r * stride, cols)) << "row " << r;
      }
    }
  }
}

TEST_P(Patterns, ReduceEdgeCases) {
  const auto o = run();
  std::vector<float> x = {3.0f, std::numeric_limits<float>::quiet_NaN(), -2.0f, 5.0f};
  float r = 0;
  tally::reduce(tally::reduce_op::min, dtype::f32, x.data(), 4, dtype::f32, &r, o);
  EXPECT_TRUE(std::isnan(r));
  tally::reduce(tally::reduce_op::max, dtype::f32, x.data(), 1, dtype::f32, &r, o);
  EXPECT_EQ(r, 3.0f);
  double d = 1;
  tally::reduce(tally::reduce_op::sum, dtype::f32, x.data(), 0, dtype::f64, &d, o);
  EXPECT_EQ(d, 0.0);
  tally::reduce(tally::reduce_op::mean, dtype::f32, x.data(), 0, dtype::f64, &d, o);
  EXPECT_TRUE(std::isnan(d));
  // Integer extremes at their type's limits: the fold starts from the other limit.
  const std::vector<std::uint64_t> u64 = {5, ~std::uint64_t{0}, std::uint64_t{1} << 63};
  std::uint64_t u = 0;
  tally::reduce(tally::reduce_op::min, dtype::u64, u64.data(), 3, dtype::u64, &u, o);
  EXPECT_EQ(u, 5u);
  tally::reduce(tally::reduce_op::max, dtype::u64, u64.data(), 3, dtype::u64, &u, o);
  EXPECT_EQ(u, ~std::uint64_t{0});
  const std::vector<std::int64_t> i64 = {std::numeric_limits<std::int64_t>::min() + 1, -3,
                                         std::numeric_limits<std::int64_t>::max()};
  std::int64_t k = 0;
  tally::reduce(tally::reduce_op::min, dtype::i64, i64.data(), 3, dtype::i64, &k, o);
  EXPECT_EQ(k, std::numeric_limits<std::int64_t>::min() + 1);
  tally::reduce(tally::reduce_op::max, dtype::i64, i64.data(), 2, dtype::i64, &k, o);
  EXPECT_EQ(k, -3);
  const std::vector<std::uint8_t> all255(37, 255);
  std::uint8_t b = 0;
  tally::reduce(tally::reduce_op::min, dtype::u8, all255.data(), 37, dtype::u8, &b, o);
  EXPECT_EQ(b, 255);
  const std::vector<std::int8_t> i8 = {-128, 127, 0};
  std::int8_t c = 0;
  tally::reduce(tally::reduce_op::max, dtype::i8, i8.data(), 3, dtype::i8, &c, o);
  EXPECT_EQ(c, 127);
  tally::reduce(tally::reduce_op::min, dtype::i8, i8.data(), 3, dtype::i8, &c, o);
  EXPECT_EQ(c, -128);
  std::vector<std::int32_t> big(1000, 2000000000);
  std::int64_t s = 0;
  tally::reduce(tally::reduce_op::sum, dtype::i32, big.data(), 1000, dtype::i64, &s, o);
  EXPECT_EQ(s, 2000000000000LL);  // past 2^31: accumulated in 64 bits
}

TEST_P(Patterns, ReduceRejectsBadArguments) {
  const auto o = run();
  std::vector<float> x(8, 1.0f);
  float r = 7;
  double d = 7;
  EXPECT_THROW(tally::reduce(tally::reduce_op::min, dtype::f32, x.data(), 0, dtype::f32, &r, o), tally::error);
  EXPECT_THROW(tally::reduce(tally::reduce_op::sum, dtype::f32, x.data(), 8, dtype::i64, &r, o), tally::error);
  EXPECT_THROW(tally::reduce(tally::reduce_op::sum, dtype::u8, x.data(), 8, dtype::f64, &d, o), tally::error);
  EXPECT_THROW(tally::reduce(tally::reduce_op::min, dtype::f64, x.data(), 4, dtype::f64, &d, o), tally::error);
  EXPECT_THROW(tally::reduce(tally::reduce_op::max, dtype::f32, x.data(), 8, dtype::f64, &d, o), tally::error);
  EXPECT_THROW(tally::reduce(tally::reduce_op::sum, dtype::f32, x.data(), -1, dtype::f32, &r, o), tally::error);
  EXPECT_THROW(tally::reduce(tally::reduce_op::sum, dtype::f32, x.data(), 8, dtype::f32, x.data() + 2, o),
               tally::error);  // the result overlaps the input
  EXPECT_THROW(tally::reduce_rows(tally::reduce_op::sum, dtype::f32, x.data(), 2, 4, 3, dtype::f32, &r, o),
               tally::error);  // row stride < cols
  EXPECT_THROW(tally::reduce_rows(tally::reduce_op::max, dtype::f32, x.data(), 2, 0, 0, dtype::f32, &r, o),
               tally::error);
  EXPECT_THROW(tally::reduce(tally::reduce_op::sum, dtype::f32, nullptr, 8, dtype::f32, &r, o), tally::error);
  EXPECT_EQ(r, 7.0f);
  EXPECT_EQ(d, 7.0);
}

TEST(PatternsCpu, ReduceHasTheSameBitsForAnyThreadCount) {
  std::mt19937_64 g(23);
  std::vector<float> x(300001);
  for (auto& v : x) v = static_cast<float>(draw(g, 1e3, false));
  float one = 0, two = 0;
  tally::run_options o;
  o.backend = backend::cpu;
  o.threads = 1;
  tally::reduce(tally::reduce_op::sum, dtype::f32, x.data(), static_cast<std::int64_t>(x.size()), dtype::f32, &one, o);
  o.threads = 2;
  tally::reduce(tally::reduce_op::sum, dtype::f32, x.data(), static_cast<std::int64_t>(x.size()), dtype::f32, &two, o);
  EXPECT_EQ(std::memcmp(&one, &two, sizeof one), 0);
}

// ---- matmul -----------------------------------------------------------------------------------

void check_matmul(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t offset, const tally::matmul_options& o,
                  std::mt19937_64& g) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " offset " +
               std::to_string(offset) + " " + std::string(tally::name_of(o.strategy)));
  std::vector<float> a(static_cast<std::size_t>(m * k + offset)), b(static_cast<std::size_t>(k * n + offset)),
      c(static_cast<std::size_t>(m * n + offset), -1.0f);
  for (auto& v : a) v = static_cast<float>(draw(g, 2, false));
  for (auto& v : b) v = static_cast<float>(draw(g, 2, false));
  const float* pa = a.data() + offset;
  const float* pb = b.data() + offset;
  float* pc = c.data() + offset;
  tally::matmul(pa, pb, pc, m, n, k, o);
  int bad = 0;
  for (std::int64_t i = 0; i < m && bad < 5; ++i) {
    for (std::int64_t j = 0; j < n && bad < 5; ++j) {
      double exact = 0, magnitude = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        exact += static_cast<double>(pa[i * k + p]) * pb[p * n + j];
        magnitude += std::fabs(static_cast<double>(pa[i * k + p]) * pb[p * n + j]);
      }
      // k roundings of partial sums and products in f32 (gamma_k |A||B|).
      const double tol = (k + 1) * 0x1p-24 * magnitude;
      if (std::fabs(pc[i * n + j] - exact) > tol) {
        ++bad;
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << pc[i * n + j] << ", exact " << exact << ", tolerance " << tol;
      }
    }
  }
}

TEST_P(Patterns, MatmulAnyShapeAgainstF64) {
  std::mt19937_64 g(29);
  // Single elements and vectors; sizes off every tile side (7, 129, 257) and on them (128, 256);
  // k of one partial tile, of several pipeline stages, of none. Offset 1 misaligns all three.
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {1, 1, 1},     {1, 7, 3},      {7, 1, 129},    {17, 33, 65},   {64, 128, 8}, {130, 129, 257},
      {128, 256, 36}, {257, 130, 67}, {300, 516, 20}, {256, 260, 48}, {5, 3, 0}};
  // Every strategy, and warptiled with every tiling the CUDA backend compiles.
  std::vector<tally::matmul_options> runs(1);
  if (GetParam() == backend::cuda) {
    for (auto s : {tally::matmul_strategy::tiled16, tally::matmul_strategy::blocked128, tally::matmul_strategy::warptiled})
      runs.emplace_back().strategy = s;
    for (int t = 0; t < static_cast<int>(tally::matmul_tilings().size()); ++t) {
      auto& o = runs.emplace_back();
      o.strategy = tally::matmul_strategy::warptiled;
      o.tiling = t;
    }
  }
  for (auto& o : runs) {
    o.backend = GetParam();
    SCOPED_TRACE(o.tiling < 0 ? std::string("default tiling")
                              : "tiling " + tally::name_of(tally::matmul_tilings()[static_cast<std::size_t>(o.tiling)]));
    for (auto [m, n, k] : shapes)
      for (std::int64_t offset : {0, 1}) check_matmul(m, n, k, offset, o, g);
  }
}

TEST_P(Patterns, MatmulRejectsBadArguments) {
  tally::matmul_options o;
  o.backend = GetParam();
  std::vector<float> a(64, 1.0f), b(64, 1.0f);
  EXPECT_THROW(tally::matmul(a.data(), b.data(), a.data() + 4, 4, 4, 4, o), tally::error);  // c overlaps a
  EXPECT_THROW(tally::matmul(a.data(), b.data(), nullptr, 4, 4, 4, o), tally::error);
  EXPECT_THROW(tally::matmul(a.data(), b.data(), b.data() + 32, -1, 4, 4, o), tally::error);
  std::vector<float> c(16, 2.0f);
  if (GetParam() == backend::cpu) {
    for (auto s : {tally::matmul_strategy::tiled16, tally::matmul_strategy::warptiled}) {
      o.strategy = s;
      EXPECT_THROW(tally::matmul(a.data(), b.data(), c.data(), 4, 4, 4, o), tally::error);  // CUDA strategies
    }
  }
  const auto tilings = static_cast<int>(tally::matmul_tilings().size());
  for (int t : {-2, tilings, 1 << 30}) {  // not an index into the tilings
    o.strategy = tally::matmul_strategy::warptiled;
    o.tiling = t;
    EXPECT_THROW(tally::matmul(a.data(), b.data(), c.data(), 4, 4, 4, o), tally::error);
  }
  for (auto s : {tally::matmul_strategy::automatic, tally::matmul_strategy::blocked128}) {  // a tiling, not warptiled
    o.strategy = s;
    o.tiling = 0;
    EXPECT_THROW(tally::matmul(a.data(), b.data(), c.data(), 4, 4, 4, o), tally::error);
  }
  for (float v : a) EXPECT_EQ(v, 1.0f);
  for (float v : c) EXPECT_EQ(v, 2.0f);
}

TEST(PatternsApi, MatmulTilingsAreNamedAndTheDefaultIsOne) {
  const auto& tilings = tally::matmul_tilings();
  ASSERT_FALSE(tilings.empty());
  EXPECT_GE(tally::matmul_default_tiling(), 0);
  EXPECT_LT(tally::matmul_default_tiling(), static_cast<int>(tilings.size()));
  EXPECT_EQ(tally::name_of(tally::matmul_tiling{128, 256, 16, 64, 32, 8, 4, 3, 2}), "128x256x16 w64x32 t8x4 s3");
  for (std::size_t i = 0; i < tilings.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(tally::name_of(tilings[i]), tally::name_of(tilings[j]));
  EXPECT_EQ(tally::name_of(tally::matmul_strategy::warptiled), "warptiled");
}

TEST(PatternsApi, PromotionAndBroadcastShapes) {
  EXPECT_EQ(tally::promote(dtype::f16, dtype::f16), dtype::f16);
  EXPECT_EQ(tally::promote(dtype::f16, dtype::bf16), dtype::f32);
  EXPECT_EQ(tally::promote(dtype::bf16, dtype::f32), dtype::f32);
  EXPECT_THROW(tally::promote(dtype::f64, dtype::f32), tally::error);
  EXPECT_EQ(tally::broadcast_shape({8, 1, 6, 1}, {7, 1, 5}), (std::vector<std::int64_t>{8, 7, 6, 5}));
  EXPECT_EQ(tally::broadcast_shape({}, {3}), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(tally::broadcast_shape({0}, {1}), (std::vector<std::int64_t>{0}));
  EXPECT_THROW(tally::broadcast_shape({2, 3}, {3, 2}), tally::error);
}

}  // namespace
}  // namespace tally_test

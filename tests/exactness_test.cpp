// The bin rule at its corners, on every backend: ranges of every scale (subnormal, narrow, huge),
// 64-bit integer samples against integer ranges and integer edges (compared exactly, as numpy
// compares them), and repeated and infinite edges. Each case is checked against the brute-force
// reference (tests/reference.hpp) and, where the issue that found it gave numpy's answer, against
// that answer too. The CUDA cases skip where no GPU is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::axis;
using tally::backend;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::int64_t T = 1'700'000'000'000'000'000;  // nanoseconds: 2023, spaced 256 as doubles

class Exactness : public ::testing::TestWithParam<backend> {
 protected:
  void SetUp() override {
    if (GetParam() == backend::cuda && !cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }
  tally::options opts(bool weighted = false) const {
    tally::options o = cpu_options();
    o.backend = GetParam();
    o.weighted = weighted;
    return o;
  }
  /// Fills a fresh histogram over `spec` with `samples` (and weights) and compares it with the
  /// reference; returns its values.
  std::vector<double> check(const axis_spec& spec, const tally::view& samples, const tally::view* weights = nullptr) {
    tally::histogram h(spec.make(), opts(weights != nullptr));
    fill_both(h, spec, samples, weights);
    return h.values();
  }
};

/// Every edge, its neighbours on both sides, and random values across the range.
std::vector<double> probes(const axis& a, std::uint64_t seed) {
  std::vector<double> v;
  for (double e : a.edges()) {
    v.push_back(e);
    v.push_back(std::nextafter(e, inf));
    v.push_back(std::nextafter(e, -inf));
  }
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> unit(-0.1, 1.1);
  const double lo = a.lo(), hi = a.hi();
  for (int i = 0; i < 2000; ++i) v.push_back(lo + (hi - lo) * unit(gen));
  for (int i = 0; i < 200; ++i) v.push_back(lo * unit(gen) + hi * unit(gen));  // where hi - lo overflows
  return v;
}

// bins / (hi - lo) overflows to inf for ranges this narrow: the estimate is NaN or inf, and the
// rule must still settle every sample by the edges (it read past the edge table, or gave 0).
TEST_P(Exactness, RegularRangesOfEveryScaleBinByTheEdges) {
  const std::vector<axis_spec> specs = {
      regular_spec(10, 0, 1e-308),          regular_spec(1, 1e-320, 3e-320),
      regular_spec(3, 5e-324, 2e-323),      regular_spec(7, -1e-310, 1e-310),
      regular_spec(1000, 0, 1e-300),        regular_spec(4, 1e308, 1.7e308),
      regular_spec(5, -8e307, 8e307),       regular_spec(65536, 1.0, 1.0 + 0x1p-30),
      regular_spec(3, 1e-40, 3e-40, tally::dtype::f32), regular_spec(2, 1e-7, 3e-7, tally::dtype::f16)};
  std::uint64_t seed = 1;
  for (const axis_spec& spec : specs) {
    SCOPED_TRACE(spec.name() + " over [" + std::to_string(spec.lo) + ", " + std::to_string(spec.hi) + "]");
    const axis a = spec.make();
    const std::vector<double> values = probes(a, seed++);
    for (tally::dtype t : {tally::dtype::f64, tally::dtype::f32}) {  // f32: many round to 0 or inf
      const column data = make_column(t, values);
      tally::histogram h(a, opts());
      const auto want = fill_both(h, spec, data.view());
      if (t == tally::dtype::f64) {
        EXPECT_GT(binned(want), 0u);
      }
    }
  }
  // numpy.histogram([1e-320, 2e-320, 3e-320], bins=1) -> [3]; with weights, 100 a bin.
  const std::vector<double> tiny{1e-320, 2e-320, 3e-320};
  EXPECT_EQ(check(regular_spec(1, 1e-320, 3e-320), tally::make_view(tiny.data(), 3)), std::vector<double>{3});
  std::vector<double> line(1000), ones(1000, 1.0);
  for (int i = 0; i < 1000; ++i) line[i] = 1e-308 * i / 999.0;
  const auto w = tally::make_view(ones.data(), 1000);
  EXPECT_EQ(check(regular_spec(10, 0, line.back()), tally::make_view(line.data(), 1000), &w),
            std::vector<double>(10, 100.0));
}

// numpy compares 64-bit integer samples with an integer range before rounding them:
// ts = [T+1, T+300, T+600], bins=2, range=(T+2, T+599) -> [0, 1] (rounded first: [1, 2]).
TEST_P(Exactness, IntegerRangeKeepsWideIntegersExactly) {
  const std::vector<std::int64_t> ts{T + 1, T + 300, T + 600};
  EXPECT_EQ(check(regular_exact_spec(2, T + 2, T + 599), tally::make_view(ts.data(), 3)), (std::vector<double>{0, 1}));

  std::mt19937_64 gen(5);
  struct exact_range {
    std::int64_t bins;
    tally::integer_value lo, hi;
  };
  const std::vector<exact_range> ranges = {
      {2, T + 2, T + 599},
      {7, -T, T},
      {7, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()},
      {7, std::uint64_t{1} << 63, std::numeric_limits<std::uint64_t>::max() - 1},
      {7, -5, std::uint64_t{1} << 62}};
  for (const auto& [bins, lo, hi] : ranges) {
    const axis_spec spec = regular_exact_spec(bins, lo, hi);
    SCOPED_TRACE(std::to_string(spec.lo) + " .. " + std::to_string(spec.hi));
    // Samples at, next to and between the range's ends, and across the whole type.
    std::vector<std::int64_t> s;
    std::vector<std::uint64_t> u;
    for (const tally::integer_value end : {lo, hi}) {
      for (int d = -300; d <= 300; d += (d > -3 && d < 3) ? 1 : 37) {
        const std::uint64_t bits = (end.negative ? std::uint64_t{0} - end.magnitude : end.magnitude) + static_cast<std::uint64_t>(d);
        s.push_back(static_cast<std::int64_t>(bits));
        u.push_back(bits);
      }
    }
    for (int i = 0; i < 3000; ++i) {
      s.push_back(static_cast<std::int64_t>(gen()));
      u.push_back(gen() >> (i % 3));
    }
    tally::histogram hs(spec.make(), opts()), hu(spec.make(), opts());
    const auto ws = fill_both(hs, spec, tally::make_view(s.data(), static_cast<std::int64_t>(s.size())));
    const auto wu = fill_both(hu, spec, tally::make_view(u.data(), static_cast<std::int64_t>(u.size())));
    EXPECT_GT(binned(ws) + binned(wu), 0u);
  }
}

// Integer edges compare exactly with integer samples of their signedness (numpy's searchsorted
// in int64 or uint64), and after rounding with others (numpy's float64).
TEST_P(Exactness, IntegerEdgesCompareWideIntegersExactly) {
  const std::vector<std::int64_t> ts{T + 1, T + 300, T + 600};
  EXPECT_EQ(check(integer_edges_spec({T - 1000, T + 2, T + 1000}, false), tally::make_view(ts.data(), 3)),
            (std::vector<double>{1, 2}));
  const std::vector<std::uint64_t> top{std::numeric_limits<std::uint64_t>::max()};
  const auto top_edges = integer_edges_spec({0, static_cast<std::int64_t>(std::numeric_limits<std::uint64_t>::max() - 1)}, true);
  EXPECT_EQ(check(top_edges, tally::make_view(top.data(), 1)), std::vector<double>{0});

  std::mt19937_64 gen(9);
  for (bool as_unsigned : {false, true}) {
    // Edges a few apart (one double apart at T is 256), repeated ones among them.
    std::vector<std::int64_t> edges{T - 3, T - 1, T, T, T + 1, T + 2, T + 200, T + 257, T + 257};
    const axis_spec spec = integer_edges_spec(edges, as_unsigned);
    std::vector<std::int64_t> s;
    for (int i = 0; i < 4000; ++i) s.push_back(T - 10 + static_cast<std::int64_t>(gen() % 280));
    s.push_back(std::numeric_limits<std::int64_t>::min());
    s.push_back(std::numeric_limits<std::int64_t>::max());
    std::vector<std::uint64_t> u(s.begin(), s.end());
    std::vector<double> d(s.begin(), s.end());
    tally::histogram hs(spec.make(), opts()), hu(spec.make(), opts()), hd(spec.make(), opts());
    SCOPED_TRACE(as_unsigned ? "unsigned edges" : "signed edges");
    EXPECT_GT(binned(fill_both(hs, spec, tally::make_view(s.data(), static_cast<std::int64_t>(s.size())))), 0u);
    EXPECT_GT(binned(fill_both(hu, spec, tally::make_view(u.data(), static_cast<std::int64_t>(u.size())))), 0u);
    EXPECT_GT(binned(fill_both(hd, spec, tally::make_view(d.data(), static_cast<std::int64_t>(d.size())))), 0u);
  }
}

// numpy allows repeated edges (empty bins; a last bin [e, e] holds the values equal to e) and
// infinite outer edges (whose bins hold the infinities, with their weights).
TEST_P(Exactness, RepeatedAndInfiniteEdgesBinAsNumpy) {
  const double above_one = std::nextafter(1.0, 2.0);
  const std::vector<double> one_up{above_one, 1.0, 0.5};
  EXPECT_EQ(check(variable_spec_of({0, 1, 1}), tally::make_view(one_up.data(), 3)), (std::vector<double>{1, 1}));

  const std::vector<double> x{inf}, minus5{-5.0};
  const auto w = tally::make_view(minus5.data(), 1);
  EXPECT_EQ(check(variable_spec_of({0, inf}), tally::make_view(x.data(), 1), &w), std::vector<double>{-5.0});

  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> unit(-3, 3);
  for (const std::vector<double>& edges :
       {std::vector<double>{-inf, -1, 0, 0, 2, inf}, std::vector<double>{-inf, -inf, 0, inf, inf},
        std::vector<double>{inf, inf}, std::vector<double>{-inf, -inf}, std::vector<double>{1, 1},
        std::vector<double>{0, 0, 0, 1, 1, 1}}) {
    std::vector<double> s{-inf, inf, -1, 0, 1, 2, std::nan("")};
    for (int i = 0; i < 500; ++i) s.push_back(std::round(unit(gen) * 2) / 2);
    std::vector<double> ws(s.size());
    for (double& v : ws) v = std::round(unit(gen) * 4);  // integers: exact sums in any order
    const axis_spec spec = variable_spec_of(edges);
    for (tally::dtype t : {tally::dtype::f64, tally::dtype::f32}) {
      const column data = make_column(t, s), weights = make_column(tally::dtype::f64, ws);
      const tally::view wv = weights.view();
      check(spec, data.view());
      check(spec, data.view(), &wv);
    }
  }
}

// A regular range whose edges are the integers lo, lo + 1, ..., hi bins integer samples by the
// integer rule (v - lo, the value hi in the last bin), which must give the edges' own bins: every
// integer type, ranges at the types' limits and at 2^53, the edge types' exact limits, stride 1
// (the typed kernels) and 2 (the generic ones), counts and weights, against the reference.
TEST_P(Exactness, UnitIntegerEdgesBinIntegersAsTheEdges) {
  using tally::dtype;
  const std::vector<axis_spec> specs = {
      regular_spec(256, 0, 256),           regular_spec(10, -5, 5),
      regular_spec(1, 7, 8),               regular_spec(255, 0, 255),
      regular_spec(255, -128, 127),        regular_spec(300, -150, 150),
      regular_spec(65535, -32768, 32767),  regular_spec(64, 2147483583.0, 2147483647.0),
      regular_spec(64, 4294967232.0, 4294967296.0), regular_spec(64, 0x1p53 - 65, 0x1p53 - 1),
      regular_spec(10, -0x1p53 + 1, -0x1p53 + 11), regular_spec(16, 0x1p24 - 16, 0x1p24, dtype::f32),
      regular_spec(16, 2032, 2048, dtype::f16), regular_spec(256, 0, 256, dtype::bf16)};
  const dtype types[] = {dtype::u8, dtype::i8, dtype::u16, dtype::i16, dtype::u32,
                         dtype::i32, dtype::u64, dtype::i64};
  std::mt19937_64 gen(13);
  for (const axis_spec& spec : specs) {
    const axis a = spec.make();
    SCOPED_TRACE(std::to_string(spec.bins) + " bins over [" + std::to_string(spec.lo) + ", " + std::to_string(spec.hi) + "]");
    EXPECT_TRUE(a.unit_integer_edges());
    // Every integer from lo - 3 to hi + 3, the types' extremes, and random values around the range.
    std::vector<double> values;
    const auto lo = static_cast<std::int64_t>(spec.lo);
    for (std::int64_t k = -3; k <= spec.bins + 3; ++k) values.push_back(static_cast<double>(lo + k));
    for (double v : {-1e30, 1e30, 0.0, -1.0}) values.push_back(v);
    std::uniform_int_distribution<std::int64_t> near(-2 * spec.bins - 8, 3 * spec.bins + 8);
    for (int i = 0; i < 3000; ++i) values.push_back(spec.lo + static_cast<double>(near(gen)));
    std::vector<double> ws(values.size());
    for (double& w : ws) w = static_cast<double>(near(gen) % 9);  // integers: exact sums in any order
    std::uint64_t in_bins = 0;
    for (dtype t : types) {
      SCOPED_TRACE(tally::name_of(t));
      for (std::int64_t stride : {1, 2}) {
        const column data = make_column(t, values, stride), weights = make_column(dtype::f64, ws);
        const tally::view wv = weights.view();
        tally::histogram h(a, opts());
        in_bins += binned(fill_both(h, spec, data.view()));
        tally::histogram hw(a, opts(true));
        fill_both(hw, spec, data.view(), &wv);
      }
    }
    EXPECT_GT(in_bins, 0u);
  }
  // 64-bit samples beyond 2^53 are compared after rounding where the range is not an integer
  // one, as numpy: 2^53 + 1 rounds onto the end 2^53 and counts; an integer range drops it.
  const std::int64_t top = std::int64_t{1} << 53;
  const std::vector<std::int64_t> wide{top + 1, top, top - 7, top - 8};
  const auto wide_view = tally::make_view(wide.data(), 4);
  EXPECT_EQ(check(regular_spec(7, 0x1p53 - 7, 0x1p53), wide_view), (std::vector<double>{1, 0, 0, 0, 0, 0, 2}));
  EXPECT_EQ(check(regular_exact_spec(7, top - 7, top), wide_view), (std::vector<double>{1, 0, 0, 0, 0, 0, 1}));
  // Not unit integer edges: a half-integer end, a width of 2, half-integer edges.
  EXPECT_FALSE(axis::regular(256, 0, 256.5).unit_integer_edges());
  EXPECT_FALSE(axis::regular(128, 0, 256).unit_integer_edges());
  EXPECT_FALSE(axis::regular(4, 0x1p53, 0x1p53 + 8).unit_integer_edges());
  // An end at +-2^53, onto which 64-bit samples beyond it round: the regular rule, as numpy.
  EXPECT_FALSE(axis::regular(64, 0x1p53 - 64, 0x1p53).unit_integer_edges());
  EXPECT_FALSE(axis::regular(10, -0x1p53, -0x1p53 + 10).unit_integer_edges());
  EXPECT_EQ(check(regular_exact_spec(1, top - 1, top + 1), wide_view), (std::vector<double>{2}));
  EXPECT_FALSE(axis::regular(4, 0.5, 4.5).unit_integer_edges());
}

// The planner plans integer samples on unit integer edges as on the integer axis of those bins
// (no edge table).
TEST(UnitIntegerEdges, PlannedAsTheIntegerAxis) {
  for (tally::backend b : {backend::cpu, backend::cuda}) {
    if (b == backend::cuda && !cuda_usable()) continue;
    for (std::int64_t bins : {std::int64_t{256}, std::int64_t{65536}, std::int64_t{1} << 20}) {
      tally::options o = cpu_options();
      o.backend = b;
      const tally::histogram regular(axis::regular(bins, 0, static_cast<double>(bins)), o);
      const tally::histogram integer(axis::integer(0, bins), o);
      const tally::policy p = regular.plan_for(tally::dtype::i32, std::int64_t{1} << 26);
      const tally::policy q = integer.plan_for(tally::dtype::i32, std::int64_t{1} << 26);
      EXPECT_EQ(p.chosen, q.chosen) << bins;
      EXPECT_EQ(p.shared_bytes, q.shared_bytes) << bins;
      EXPECT_FALSE(p.edge_table) << bins;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Exactness, ::testing::Values(backend::cpu, backend::cuda),
                         [](const ::testing::TestParamInfo<backend>& info) {
                           return std::string(tally::name_of(info.param));
                         });

}  // namespace
}  // namespace tally_test

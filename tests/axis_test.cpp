// Axes: edges (numpy.linspace rounded to the edge type), widths, equality, and the bin rule on
// and next to every edge, for integer axes exactly (64-bit samples) and by floor for floats.
#include <gtest/gtest.h>

#include <random>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "core/rules.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::axis;
using tally::axis_kind;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t i64min = std::numeric_limits<std::int64_t>::min();

std::vector<axis_spec> regular_specs() {
  std::vector<axis_spec> specs;
  for (std::int64_t bins : {1, 2, 3, 10, 255, 256, 257, 4096, 65536}) {
    specs.push_back(regular_spec(bins, -1.3, 2.7));
    specs.push_back(regular_spec(bins, 0, 0.3));
    specs.push_back(regular_spec(bins, -1e18, 3e18 + 7));
    specs.push_back(regular_spec(bins, -1.3, 2.7, dtype::f32));
    if (bins <= 1024) specs.push_back(regular_spec(bins, -1.3, 2.7, dtype::f16));
    if (bins <= 128) specs.push_back(regular_spec(bins, -1.3, 2.7, dtype::bf16));
  }
  specs.push_back(regular_spec(7, 1e-310, 5e-310));  // subnormal range
  specs.push_back(regular_spec(100, 60000, 65504, dtype::f16));  // f16 spacing 32 here
  return specs;
}

TEST(Axis, RegularEdgesAreNumpyLinspaceRoundedToTheEdgeType) {
  for (const axis_spec& s : regular_specs()) {
    SCOPED_TRACE(s.name() + " over [" + std::to_string(s.lo) + ", " + std::to_string(s.hi) + "]");
    const axis a = s.make();
    const ref::axis_model m = s.model();
    EXPECT_EQ(a.kind(), axis_kind::regular);
    EXPECT_EQ(a.bins(), s.bins);
    EXPECT_EQ(a.edge_type(), s.edge_type);
    EXPECT_TRUE(same_elements(a.edges(), m.edges));
    EXPECT_EQ(bits_of(a.lo()), bits_of(m.edges.front()));
    EXPECT_EQ(bits_of(a.hi()), bits_of(m.edges.back()));
    for (std::int64_t k = 0; k <= s.bins; k += std::max<std::int64_t>(1, s.bins / 97)) {
      EXPECT_EQ(bits_of(a.edge(k)), bits_of(m.edges[static_cast<std::size_t>(k)])) << "edge " << k;
    }
    EXPECT_TRUE(same_elements(a.widths(), ref::widths(m)));
  }
}

TEST(Axis, VariableAndIntegerAxesReportTheirEdges) {
  const axis_spec v = variable_spec(9, -4.5, 1e3, 3);
  const axis va = v.make();
  EXPECT_EQ(va.kind(), axis_kind::variable);
  EXPECT_EQ(va.bins(), 9);
  EXPECT_TRUE(same_elements(va.edges(), v.edges));
  EXPECT_TRUE(same_elements(va.variable_edges(), v.edges));
  EXPECT_EQ(va.lo(), -4.5);
  EXPECT_EQ(va.hi(), 1e3);
  EXPECT_EQ(va.edge(4), v.edges[4]);
  EXPECT_TRUE(same_elements(va.widths(), ref::widths(v.model())));

  const axis ia = axis::integer(-3, 4);
  EXPECT_EQ(ia.kind(), axis_kind::integer);
  EXPECT_EQ(ia.bins(), 7);
  EXPECT_EQ(ia.integer_lo(), -3);
  EXPECT_EQ(ia.lo(), -3.0);
  EXPECT_EQ(ia.hi(), 4.0);
  EXPECT_EQ(ia.edges(), (std::vector<double>{-3, -2, -1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(ia.widths(), std::vector<double>(7, 1.0));
}

TEST(Axis, EqualityComparesKindParametersAndEdgeType) {
  EXPECT_TRUE(axis::regular(10, 0, 1) == axis::regular(10, 0, 1));
  EXPECT_TRUE(axis::regular(10, 0, 1) != axis::regular(11, 0, 1));
  EXPECT_TRUE(axis::regular(10, 0, 1) != axis::regular(10, 0, 2));
  EXPECT_TRUE(axis::regular(10, 0, 1) != axis::regular(10, 0, 1, dtype::f32));
  EXPECT_TRUE(axis::variable({0, 1, 3}) == axis::variable({0, 1, 3}));
  EXPECT_TRUE(axis::variable({0, 1, 3}) != axis::variable({0, 2, 3}));
  EXPECT_TRUE(axis::integer(0, 5) == axis::integer(0, 5));
  EXPECT_TRUE(axis::integer(0, 5) != axis::integer(1, 6));
  EXPECT_TRUE(axis::integer(0, 5) != axis::regular(5, 0, 5));
}

// ---- the bin rule on and beside every edge ----

/// The values of a 16-bit float format, ascending (every finite bit pattern, -0 dropped).
std::vector<double> all_values_of(dtype t) {
  std::vector<double> v;
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const double x = t == dtype::f16 ? tally::to_double(tally::half{b}) : tally::to_double(tally::bfloat16{b});
    if (std::isfinite(x)) v.push_back(x);
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

/// The neighbour of x (a value of format t) towards +inf or -inf, in format t.
double neighbour(dtype t, double x, bool up) {
  switch (t) {
    case dtype::f64:
      return std::nextafter(x, up ? inf : -inf);
    case dtype::f32:
      return std::nextafter(static_cast<float>(x), up ? std::numeric_limits<float>::infinity()
                                                      : -std::numeric_limits<float>::infinity());
    case dtype::f16:
    case dtype::bf16: {
      static const std::vector<double> f16 = all_values_of(dtype::f16), bf16 = all_values_of(dtype::bf16);
      const std::vector<double>& values = t == dtype::f16 ? f16 : bf16;
      if (up) return *std::upper_bound(values.begin(), values.end(), x);
      return *(std::lower_bound(values.begin(), values.end(), x) - 1);
    }
    default:
      return x;
  }
}

struct edge_case {
  axis_spec axis;
  dtype sample;
  bool edges_representable;  // every edge is a value of the sample type
  bool floating_neighbours;  // nextafter in the sample type makes sense
};

void PrintTo(const edge_case& c, std::ostream* os) {
  *os << c.axis.name() << " with " << tally::name_of(c.sample) << " samples";
}

class EdgeValues : public ::testing::TestWithParam<edge_case> {};

/// Fills every edge, every edge's upper neighbour, every edge's lower neighbour (three fills)
/// and checks them against the reference and, where edges are sample values, against the rule
/// written out: e_k lands in bin k (e_B in the last bin), above(e_k) in bin k (above(e_B)
/// overflows), below(e_k) in bin k-1 (below(e_0) underflows).
TEST_P(EdgeValues, OnAndBesideEveryEdge) {
  const edge_case& c = GetParam();
  const ref::axis_model m = c.axis.model();
  const auto bins = static_cast<std::size_t>(c.axis.bins);
  std::vector<double> on = m.edges, above, below;
  for (double e : on) {
    above.push_back(neighbour(c.sample, e, true));
    below.push_back(neighbour(c.sample, e, false));
  }
  std::vector<std::pair<std::string, std::vector<double>>> groups = {{"on", on}};
  if (c.floating_neighbours) {
    groups.push_back({"above", above});
    groups.push_back({"below", below});
  }
  for (const auto& [label, values] : groups) {
    SCOPED_TRACE(label);
    const column data = make_column(c.sample, values);
    tally::histogram h(c.axis.make(), cpu_options());
    fill_both(h, c.axis, data.view());
    if (!c.edges_representable) continue;
    std::vector<std::uint64_t> expected(bins, 1);
    tally::flow_counts flow;
    if (label == "on") expected.back() = 2;
    if (label == "above") flow.overflow = 1;
    if (label == "below") flow.underflow = 1;
    EXPECT_EQ(h.counts(), expected);
    EXPECT_TRUE(same_flow(h.flow(), flow));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Axes, EdgeValues,
    ::testing::Values(edge_case{regular_spec(10, 0, 1), dtype::f64, true, true},
                      edge_case{regular_spec(3, 0, 0.3), dtype::f64, true, true},
                      edge_case{regular_spec(4096, -1.3, 2.7), dtype::f64, true, true},
                      edge_case{regular_spec(257, -1.3, 2.7, dtype::f32), dtype::f32, true, true},
                      edge_case{regular_spec(255, -1.3, 2.7, dtype::f16), dtype::f16, true, true},
                      edge_case{regular_spec(64, -1.3, 2.7, dtype::bf16), dtype::bf16, true, true},
                      edge_case{variable_spec(50, -1.3, 2.7, 4), dtype::f64, true, true},
                      edge_case{regular_spec(256, 0, 256), dtype::i32, true, false},
                      edge_case{regular_spec(200, -100, 100), dtype::i8, true, false},
                      edge_case{regular_spec(257, -1.3, 2.7), dtype::f32, false, true},
                      edge_case{regular_spec(255, -1.3, 2.7, dtype::f32), dtype::f16, false, true},
                      edge_case{regular_spec(300, -1e15, 1e18), dtype::i64, false, false}),
    [](const ::testing::TestParamInfo<edge_case>& info) {
      return std::to_string(info.index) + "_" + info.param.axis.name() + "_" +
             std::string(tally::name_of(info.param.sample));
    });

/// The regular rule skips the edge lookups when its estimate is far from both boundaries
/// (regular_rule::guard): on random awkward ranges, every edge, its neighbours and random
/// values between must still land where the edges say.
TEST(RegularAxis, ShortcutAgreesWithTheEdgesOnRandomRanges) {
  std::mt19937_64 gen(77);
  std::uniform_int_distribution<int> bins_of(1, 3000);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int round = 0; round < 200; ++round) {
    const dtype edge_type = round % 2 ? dtype::f32 : dtype::f64;
    auto [lo, hi] = awkward_range(gen, round);
    if (edge_type == dtype::f32) {
      lo = static_cast<float>(lo);
      hi = static_cast<float>(hi);
    }
    axis_spec a = regular_spec(bins_of(gen), lo, hi, edge_type);
    tally::axis made = tally::axis::regular(1, 0, 1);
    try {
      made = a.make();
    } catch (const tally::error&) {
      continue;  // too many bins for the range in this edge type: not a regular axis
    }
    SCOPED_TRACE(a.name() + " over [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    std::vector<double> values;
    for (double e : made.edges()) {
      values.push_back(e);
      values.push_back(std::nextafter(e, HUGE_VAL));
      values.push_back(std::nextafter(e, -HUGE_VAL));
    }
    for (int i = 0; i < 3000; ++i) values.push_back(lo + (hi - lo) * (0.5 + 0.55 * unit(gen)));
    const column data = make_column(dtype::f64, values);
    tally::histogram h(made, cpu_options());
    ASSERT_GT(binned(fill_both(h, a, data.view())), 0u);
  }
}

/// f32 samples take an f32 estimate first (regular_rule::fast32): on random awkward ranges with
/// f64 and f32 edges, every edge rounded to f32, its f32 neighbours and random f32 values between
/// must land where the edges say (the reference searches the edges).
TEST(RegularAxis, FloatEstimateAgreesWithTheEdgesOnRandomRanges) {
  std::mt19937_64 gen(78);
  std::uniform_int_distribution<int> exponent(-30, 30), bins_of(1, 5000);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  int fast = 0;
  for (int round = 0; round < 300; ++round) {
    const dtype edge_type = round % 2 ? dtype::f32 : dtype::f64;
    const double scale = std::ldexp(1.0, exponent(gen));
    double lo = unit(gen) * scale, hi = lo + std::fabs(unit(gen)) * scale * std::ldexp(1.0, exponent(gen) / 4);
    if (round % 5 == 0) hi = lo + 3 * std::fabs(lo) * 1e-4;  // a narrow range far from zero
    if (round % 7 == 0) lo = 0;
    axis_spec a = regular_spec(bins_of(gen), lo, hi, edge_type);
    tally::axis made = tally::axis::regular(1, 0, 1);
    try {
      made = a.make();
    } catch (const tally::error&) {
      continue;  // too many bins for the range in this edge type
    }
    fast += tally::detail::make_regular_rule(made).fast32;
    SCOPED_TRACE(a.name() + " over [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    std::vector<double> values;
    for (double e : made.edges()) {
      const float f = static_cast<float>(e);
      values.push_back(f);
      values.push_back(std::nextafter(f, HUGE_VALF));
      values.push_back(std::nextafter(f, -HUGE_VALF));
    }
    for (int i = 0; i < 5000; ++i) values.push_back(static_cast<float>(lo + (hi - lo) * (0.5 + 0.55 * unit(gen))));
    const column data = make_column(dtype::f32, values);
    tally::histogram h(made, cpu_options());
    ASSERT_GT(binned(fill_both(h, a, data.view())), 0u);
  }
  EXPECT_GT(fast, 150);  // the f32 estimate was in use for most ranges
}

/// Ranges from 0 whose step is a power of two (regular_rule::dyadic_scale32): every edge, its f32
/// neighbours, random values and the ends land where the edges say (the CUDA kernel's binner:
/// python/tests/test_exactness.py with torch CUDA tensors); ranges that
/// are not of that form keep the checked rules.
TEST(RegularAxis, DyadicRangesBinByTheExactProduct) {
  std::mt19937_64 gen(80);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  struct range { std::int64_t bins; int exponent; dtype edge_type; };
  for (const range r : {range{1 << 20, -20, dtype::f32}, range{256, -8, dtype::f64}, range{64, 0, dtype::f32},
                        range{1024, -11, dtype::f64}, range{1024, -70, dtype::f32}, range{3, 4, dtype::f64},
                        range{1 << 24, -24, dtype::f32}}) {
    const double step = std::ldexp(1.0, r.exponent), hi = step * static_cast<double>(r.bins);
    axis_spec a = regular_spec(r.bins, 0.0, hi, r.edge_type);
    const tally::axis made = a.make();
    SCOPED_TRACE(a.name());
    EXPECT_EQ(tally::detail::make_regular_rule(made).dyadic_scale32, static_cast<float>(1.0 / step));
    std::vector<double> values;
    const std::vector<double> edges = made.edges();
    for (std::size_t k = 0; k < edges.size(); k += edges.size() > 5000 ? 211 : 1) {
      const float f = static_cast<float>(edges[k]);
      for (float v : {f, std::nextafter(f, HUGE_VALF), std::nextafter(f, -HUGE_VALF)}) values.push_back(v);
    }
    for (int i = 0; i < 5000; ++i) values.push_back(static_cast<float>(hi * (1.1 * unit(gen) - 0.05)));
    for (double v : {-0.0, 0x1p-149, -0x1p-149, hi, HUGE_VAL, -HUGE_VAL, std::nan("")}) values.push_back(v);
    const column data = make_column(dtype::f32, values);
    tally::histogram h(made, cpu_options());
    ASSERT_GT(binned(fill_both(h, a, data.view())), 0u);
  }
  for (const tally::axis& other : {tally::axis::regular(1000, 0.0, 1.0, dtype::f32), tally::axis::regular(256, 0.25, 1.25),
                                   tally::axis::regular(256, -1.0, 1.0), tally::axis::regular(256, 0.0, 1.0, dtype::f16)})
    EXPECT_EQ(tally::detail::make_regular_rule(other).dyadic_scale32, 0.0f);
}

/// The f32 form of the variable rule (variable_rule32, the CUDA typed kernel's for f32 samples)
/// bins every f32 as the f64 rule does: random edges at random scales, some closer together
/// than an f32 spacing; every edge's f32 neighbours, random values, infinities and NaN.
TEST(VariableAxis, FloatRuleAgreesWithTheDoubleRule) {
  std::mt19937_64 gen(79);
  std::uniform_int_distribution<int> exponent(-20, 20), bins_of(1, 700);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int round = 0; round < 200; ++round) {
    const double scale = std::ldexp(1.0, exponent(gen));
    std::vector<double> edges{(unit(gen) - 0.5) * scale};
    const int bins = bins_of(gen);
    for (int k = 0; k < bins; ++k) {
      const double step = round % 3 == 0 && k % 4 == 1 ? std::fabs(edges.back()) * 1e-10 + 1e-300 : unit(gen) * scale;
      edges.push_back(edges.back() + std::max(step, std::fabs(edges.back()) * 1e-15 + 1e-300));
    }
    const tally::axis made = tally::axis::variable(edges);
    const std::vector<std::int64_t> buckets = tally::detail::variable_buckets(made);
    std::vector<float> edges32;
    std::vector<tally::detail::bucket32> buckets32;
    const auto exact = tally::detail::make_variable_rule(made, &buckets);
    const auto fast = tally::detail::make_variable_rule32(made, edges32, buckets32);
    std::vector<float> xs = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN()};
    for (double e : edges) {
      const float f = static_cast<float>(e);
      xs.insert(xs.end(), {f, std::nextafter(f, HUGE_VALF), std::nextafter(f, -HUGE_VALF)});
    }
    for (int i = 0; i < 2000; ++i)
      xs.push_back(static_cast<float>(edges.front() + (edges.back() - edges.front()) * (1.2 * unit(gen) - 0.1)));
    // Near the buckets' boundaries, where the bucket arithmetic rounds either way.
    for (int j = 0; j <= fast.bucket_count; j += 1 + j % 7) {
      float x = static_cast<float>(fast.first + j / static_cast<double>(fast.bucket_scale));
      for (int step = 0; step < 4; ++step) x = std::nextafter(x, -HUGE_VALF);
      for (int step = 0; step < 8; ++step, x = std::nextafter(x, HUGE_VALF)) xs.push_back(x);
    }
    for (float x : xs) ASSERT_EQ(fast.index(x), exact.index(static_cast<double>(x))) << "x = " << x << ", round " << round;
  }
}

/// Many edges near a line take the line rule (variable_line): numpy's float32 linspace over
/// ranges such as data give, and edges strayed by up to a fifth of a bin; a quarter bin or more,
/// or fewer than kLineMinBins bins, keep the bucket search. Every edge, its f64 and f32
/// neighbours and random values land where the edges say: through the CPU backend, and by the
/// line rule over the f64 edges and over their f32 copy against the variable rule's search.
TEST(VariableAxis, EdgesNearALineTakeTheLineRule) {
  using tally::detail::kLineMinBins;
  struct near_line { axis_spec spec; bool line; };
  const std::vector<near_line> cases = {
      {float32_linspace_spec(std::int64_t{1} << 20, -4.8130383f, 5.0404344f), true},
      {float32_linspace_spec(std::int64_t{1} << 20, 1.2628321e-06f, 0.9999968f), true},
      {float32_linspace_spec(kLineMinBins + 3, -1000.25f, 3.5e6f), true},
      {near_line_spec(kLineMinBins, -2.5, 250.5, 0.2, 31), true},
      {near_line_spec(kLineMinBins, -2.5, 250.5, 0.3, 32), false},
      {near_line_spec(kLineMinBins - 1, -2.5, 250.5, 0.0, 33), false},
  };
  std::mt19937_64 gen(81);
  std::uniform_real_distribution<double> unit(-0.05, 1.05);
  for (const near_line& c : cases) {
    SCOPED_TRACE(c.spec.name() + " from " + std::to_string(c.spec.edges.front()));
    const tally::axis made = c.spec.make();
    const std::vector<std::int64_t> buckets = tally::detail::variable_buckets(made);
    std::vector<float> edges32;
    std::vector<tally::detail::bucket32> buckets32;
    const tally::detail::variable_binner exact{tally::detail::make_variable_rule(made, &buckets)};
    tally::detail::make_variable_rule32(made, edges32, buckets32);
    const tally::detail::line_rule line = tally::detail::variable_line(made);
    ASSERT_EQ(line.bins != 0, c.line);
    if (c.line) {
      EXPECT_LT(line.guard, 0.25);
    }
    // Where there is no line, the binners below take a guard of 1: the estimate checked always.
    const tally::detail::line_rule any_line = c.line ? line : tally::detail::line_rule{
        c.spec.edges.front(), c.spec.edges.back(),
        static_cast<double>(c.spec.bins) / (c.spec.edges.back() - c.spec.edges.front()), c.spec.bins, 1.0};
    const tally::detail::line_binner<double> line64{any_line, c.spec.edges.data()};
    const tally::detail::line_binner<float> line32{any_line, edges32.data()};
    std::vector<double> values;
    for (double e : c.spec.edges) {
      const auto f = static_cast<float>(e);
      values.insert(values.end(), {e, std::nextafter(e, HUGE_VAL), std::nextafter(e, -HUGE_VAL), f,
                                   std::nextafter(f, HUGE_VALF), std::nextafter(f, -HUGE_VALF)});
    }
    const double lo = c.spec.edges.front(), hi = c.spec.edges.back();
    for (int i = 0; i < 20000; ++i) values.push_back(lo + (hi - lo) * unit(gen));
    values.insert(values.end(), {HUGE_VAL, -HUGE_VAL, std::nan("")});
    tally::histogram h(made, cpu_options());
    ASSERT_GT(binned(fill_both(h, c.spec, make_column(dtype::f64, values).view())), 0u);
    tally::histogram h32(made, cpu_options());
    ASSERT_GT(binned(fill_both(h32, c.spec, make_column(dtype::f32, values).view())), 0u);
    // The line rule over the f64 edges and over their f32 copy (the CUDA kernels', f32 samples)
    // against the variable rule's search, sample by sample.
    for (double v : values) {
      ASSERT_EQ(line64(v), exact(v)) << "x = " << v;
      const auto x = static_cast<float>(v);
      ASSERT_EQ(line32(x), exact(x)) << "x = " << x;
      ASSERT_EQ(line64(x), exact(x)) << "x = " << x;
    }
  }
}

/// A regular axis measures its edges' distance from its line where it has them as a table
/// (tighten_guard): f32 edges at 2^20 bins, whose rounding alone allowed no shortcut, then look
/// at an edge for few samples. The tightened rule bins every edge, its f64 and f32 neighbours
/// and random values as the rule that always looks at the edges.
TEST(RegularAxis, MeasuredGuardAgreesWithTheEdges) {
  std::mt19937_64 gen(82);
  std::uniform_real_distribution<double> unit(-0.05, 1.05);
  struct range { std::int64_t bins; double lo, hi; dtype edge_type; };
  for (const range r : {range{1 << 20, 1.2628321e-06, 0.9999968, dtype::f32}, range{1 << 20, -4.8130383, 5.0404344, dtype::f32},
                        range{1 << 18, -1000.25, 3.5e6, dtype::f32}, range{1000, -1.3, 2.7, dtype::f16}}) {
    const tally::axis made = tally::axis::regular(r.bins, r.lo, r.hi, r.edge_type);
    SCOPED_TRACE(std::to_string(r.bins) + " bins over [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]");
    const std::vector<double> edges = made.edges();
    const auto loose = tally::detail::make_regular_rule(made, nullptr);
    auto always = tally::detail::make_regular_rule(made, edges.data());
    const auto tight = always;
    always.guard = 1.0;  // every estimate checked against the edges
    always.fast32 = false;
    if (r.lo > 0) {
      EXPECT_EQ(loose.guard, 1.0);  // the rounding's bound at the range's magnitude: none
    }
    EXPECT_LE(tight.guard, loose.guard);
    if (r.edge_type == dtype::f32) {
      EXPECT_LT(tight.guard, 0.25);  // f16 edges at 1000 bins stray further: the shortcut stays off
    }
    std::vector<double> values;
    for (double e : edges) {
      const auto f = static_cast<float>(e);
      values.insert(values.end(), {e, std::nextafter(e, HUGE_VAL), std::nextafter(e, -HUGE_VAL), f,
                                   std::nextafter(f, HUGE_VALF), std::nextafter(f, -HUGE_VALF)});
    }
    for (int i = 0; i < 20000; ++i) values.push_back(r.lo + (r.hi - r.lo) * unit(gen));
    std::int64_t inside = 0;
    for (double v : values) {
      ASSERT_EQ(tight.index(v), always.index(v)) << "x = " << v;
      const auto x = static_cast<float>(v);
      ASSERT_EQ(tight.index(x), always.index(static_cast<double>(x))) << "x = " << x;
      inside += always.index(v) >= 0;
    }
    EXPECT_GT(inside, static_cast<std::int64_t>(edges.size()));
  }
}

// ---- integer axes ----

TEST(IntegerAxis, SixtyFourBitSamplesCompareExactly) {
  // Near 2^63 every one of these samples rounds to the same double; the axis must not round.
  const axis_spec top = integer_spec(i64max - 10, 10);  // bins hold i64max-10 .. i64max-1
  std::vector<std::int64_t> s;
  for (std::int64_t v = i64max - 11; v < i64max; ++v) s.push_back(v);
  s.push_back(i64max);
  tally::histogram h(top.make(), cpu_options());
  fill_both(h, top, typed_column(s).view());
  EXPECT_EQ(h.counts(), std::vector<std::uint64_t>(10, 1));
  EXPECT_TRUE(same_flow(h.flow(), {1, 1, 0}));

  const axis_spec bottom = integer_spec(i64min, 4);
  tally::histogram hb(bottom.make(), cpu_options());
  fill_both(hb, bottom, typed_column<std::int64_t>({i64min, i64min + 3, i64min + 4, i64min + 1, 0}).view());
  EXPECT_EQ(hb.counts(), (std::vector<std::uint64_t>{1, 1, 0, 1}));
  EXPECT_TRUE(same_flow(hb.flow(), {0, 2, 0}));

  const std::uint64_t two63 = std::uint64_t{1} << 63;
  const axis_spec unsigned_top = integer_spec(i64max - 3, 3);
  tally::histogram hu(unsigned_top.make(), cpu_options());
  fill_both(hu, unsigned_top,
            typed_column<std::uint64_t>({two63 - 4, two63 - 3, two63 - 2, two63 - 1, two63, ~std::uint64_t{0}, 7})
                .view());
  EXPECT_EQ(hu.counts(), (std::vector<std::uint64_t>{1, 1, 1}));
  EXPECT_TRUE(same_flow(hu.flow(), {1, 3, 0}));
}

TEST(IntegerAxis, FloatSamplesCountInBinFloorOfX) {
  const axis_spec a = integer_spec(-2, 5);  // integers -2 .. 2
  const std::vector<double> x = {-2.0, -1.5, -0.5, -0.0, 0.0, 0.999, 1.0, 2.5, 2.999,  // in bins
                                 -2.0001, -inf, 3.0, 3.5, 1e300, inf, nan};
  // floor: -2 -2 -1 -0 0 0 1 2 2 -> bins 0 0 1 2 2 2 3 4 4; then 2 under, 4 over, 1 nan.
  const std::vector<std::uint64_t> expected = {2, 1, 3, 1, 2};
  for (dtype t : {dtype::f64, dtype::f32, dtype::f16, dtype::bf16}) {
    SCOPED_TRACE(std::string(tally::name_of(t)));
    // 0.999, 2.999, -2.0001 and 1e300 round in the narrow formats; put in their rounded neighbours
    // by hand so that the expectation stays the same: values strictly inside (k, k+1) stay there.
    std::vector<double> xt = x;
    if (t != dtype::f64) {
      xt[5] = 0.75;
      xt[8] = 2.75;
      xt[9] = -2.25;
      xt[13] = 1000;
    }
    tally::histogram h(a.make(), cpu_options());
    fill_both(h, a, make_column(t, xt).view());
    EXPECT_EQ(h.counts(), expected);
    EXPECT_TRUE(same_flow(h.flow(), {2, 4, 1}));
  }
}

TEST(IntegerAxis, IntegerSamplesOfEveryWidth) {
  const axis_spec a = integer_spec(-1, 4);  // -1 .. 2
  const std::vector<double> x = {-2, -1, 0, 1, 1, 2, 2, 2, 3, 100};
  for (dtype t : all_dtypes) {
    SCOPED_TRACE(std::string(tally::name_of(t)));
    tally::histogram h(a.make(), cpu_options());
    fill_both(h, a, make_column(t, x).view());
    if (tally::is_signed_integer(t) || floating(t)) {
      EXPECT_EQ(h.counts(), (std::vector<std::uint64_t>{1, 1, 2, 3}));
      EXPECT_TRUE(same_flow(h.flow(), {1, 2, 0}));
    } else {  // -2 and -1 saturate to 0
      EXPECT_EQ(h.counts(), (std::vector<std::uint64_t>{0, 3, 2, 3}));
      EXPECT_TRUE(same_flow(h.flow(), {0, 2, 0}));
    }
  }
}

TEST(RegularAxis, WideIntegerSamplesRoundToDoubleFirst) {
  // numpy converts int64/uint64 samples to float64 before comparing with the edges.
  const std::int64_t two53 = std::int64_t{1} << 53;
  const axis_spec a = regular_spec(1, 0, 0x1p53);
  tally::histogram h(a.make(), cpu_options());
  // 2^53 + 1 rounds (to even) to 2^53, the closed last edge; 2^53 + 2 is above it.
  fill_both(h, a, typed_column<std::int64_t>({two53 + 1, two53 + 2, -1, 0}).view());
  EXPECT_EQ(h.counts(), std::vector<std::uint64_t>{2});
  EXPECT_TRUE(same_flow(h.flow(), {1, 1, 0}));

  const axis_spec u = regular_spec(2, 0, 0x1p64);
  tally::histogram hu(u.make(), cpu_options());
  // 2^64 - 1 rounds to 2^64, the closed last edge.
  fill_both(hu, u, typed_column<std::uint64_t>({~std::uint64_t{0}, std::uint64_t{1} << 63, 5}).view());
  EXPECT_EQ(hu.counts(), (std::vector<std::uint64_t>{1, 2}));
}

}  // namespace
}  // namespace tally_test

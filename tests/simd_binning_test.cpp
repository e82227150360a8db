// The CPU backend's SIMD bin indices (src/cpu/simd_binning.hpp) against its scalar rule: on every
// target this CPU runs, each sample's code (bin, underflow, overflow, NaN) equals the scalar
// path's, for every axis kind and sample type, on the bin rule's edge cases and random data; and
// whole fills (1-D, N-D, threads, strides) give the scalar path's cells.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/type_dispatch.hpp"
#include "check.hpp"
#include "core/rules.hpp"
#include "cpu/simd_binning.hpp"
#include "random_data.hpp"
#include "tally/tally.hpp"

namespace {

using namespace tally_test;
using tally::detail::cpu_bin_codes_of;
using tally::detail::simd_targets;
using tally::detail::use_simd_target;

/// Restores the target in use when a test ends.
class simd_target_guard {
 public:
  simd_target_guard() : was_(tally::detail::simd_target()) {}
  ~simd_target_guard() { use_simd_target(was_); }

 private:
  std::string was_;
};

/// The SIMD targets this CPU runs (none where tally was built without Highway).
std::vector<std::string> vector_targets() {
  std::vector<std::string> t = simd_targets();
  t.pop_back();  // "scalar"
  return t;
}

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

/// Edges a few ulps either side of the bucket tables' boundaries (the rule's, variable_buckets,
/// and the kernel's, twice as many): samples on them are where the rule's rounded estimate misses
/// and widens its search, and where the kernel's table must split a bucket at the right f64.
axis_spec edges_beside_bucket_boundaries() {
  const double lo = 0.1, hi = 1.7;
  const std::int64_t bins = 1000, buckets = tally::detail::variable_bucket_count(bins);
  std::vector<double> edges = {lo};
  for (std::int64_t k = 1; k < bins; ++k) {
    double e = lo + (hi - lo) * (static_cast<double>(k * buckets / bins) / static_cast<double>(buckets));
    for (std::int64_t step = 0; step < (k / 2) % 4 + 1; ++step) e = std::nextafter(e, k % 2 ? inf : -inf);
    edges.push_back(e);
  }
  edges.push_back(hi);
  return variable_spec_of(edges);
}

/// The axes of the bin rule's tests: awkward ranges, edge types, dyadic and closed integer
/// ranges, flows of every kind, repeated and infinite edges, edges near a line.
std::vector<axis_spec> edge_case_axes() {
  std::vector<axis_spec> axes = {
      regular_spec(10, 0, 1),
      regular_spec(3, 0, 0.3),
      regular_spec(4096, -1.3, 2.7),
      regular_spec(257, -1.3, 2.7, dtype::f32),
      regular_spec(255, -1.3, 2.7, dtype::f16),
      regular_spec(64, -1.3, 2.7, dtype::bf16),
      regular_spec(256, 0, 1),               // dyadic for f32 samples
      regular_spec(1000, 0, 1, dtype::f32),  // f32 edges, fast32
      regular_spec(256, 0, 256),             // unit integer edges: the closed integer rule
      regular_spec(200, -100, 100),
      regular_spec(300, -1e15, 1e18),
      regular_spec(10, -20, -10),            // unsigned samples: none kept
      regular_spec(10, 1e19, 1.8e19),        // signed 64-bit samples: none kept; u64 above INT64_MAX
      regular_spec(16, 1e6, 1e6 + 1e-4),     // narrow, far from zero: most estimates near an edge
      regular_spec(7, -1e300, 1e300),
      regular_spec(4, 0, 4e-320),            // subnormal edges
      regular_spec(std::int64_t{1} << 20, -2.0, 3.0),
      variable_spec(50, -1.3, 2.7, 4),
      variable_spec(256, 0, 1, 9),
      variable_spec_of({0, 1, 1, 2, 3, 3, 3, 5}),  // repeated edges
      edges_beside_bucket_boundaries(),
      variable_spec_of({-inf, -1, 0, 1, inf}),     // infinite outer edges: no bucket table
      variable_spec_of({-1e300, -1e-300, 0, 1e-300, 1e300}),
      near_line_spec(std::int64_t{1} << 16, -1.0, 1.0, 0.2, 5),  // the line rule
      float32_linspace_spec(1000, -0.75f, 2.5f),                 // f32 samples: the f32 line rule
      integer_edges_spec({-5, 0, 3, 100, 1 << 20}, false),
      integer_spec(-3, 7),
      integer_spec(0, 256),
      integer_spec(250, 10),
      integer_spec(-(std::int64_t{1} << 62), 100),
      integer_spec(std::numeric_limits<std::int64_t>::max() - 50, 50),
  };
  return axes;
}

/// Values of type t on and beside every edge of `a` (neighbours in f64 and f32, integers either
/// side), the type's extremes and specials, random values of every shape around the bins, and
/// random bit patterns of the float types (subnormals, huge values, NaNs).
std::vector<double> edge_case_values(const tally::axis& a, const axis_spec& spec, dtype t, std::uint64_t seed) {
  std::vector<double> v;
  std::vector<double> edges = a.edges();
  if (edges.size() > 4096) edges.resize(4096);  // the first edges of a huge axis
  for (double e : edges) {
    v.insert(v.end(), {e, std::nextafter(e, inf), std::nextafter(e, -inf), std::floor(e) - 1, std::floor(e) + 1});
    const float f = static_cast<float>(e);
    v.insert(v.end(), {f, std::nextafter(f, HUGE_VALF), std::nextafter(f, -HUGE_VALF)});
  }
  if (a.kind() == tally::axis_kind::variable && std::isfinite(edges.front()) && std::isfinite(a.variable_edges().back())) {
    // The bucket table's boundaries and their neighbours: where its rounded estimate may miss.
    const double lo = edges.front(), width = a.variable_edges().back() - lo;
    const std::int64_t buckets = tally::detail::variable_bucket_count(a.bins());
    for (std::int64_t k = 0; k <= std::min<std::int64_t>(buckets, 4096); ++k) {
      const double b = lo + width * static_cast<double>(k) / static_cast<double>(buckets);
      v.insert(v.end(), {b, std::nextafter(b, inf), std::nextafter(b, -inf)});
    }
  }
  v.insert(v.end(), {nan, inf, -inf, 0.0, -0.0, 4.9e-324, -4.9e-324, 1e-310, 1.4e-45, 1e308, -1e308, 3.4e38, -3.4e38,
                     0x1p63, -0x1p63, 0x1p64, 9007199254740993.0, -1e300, 1e300});
  std::mt19937_64 gen(seed);
  for (dist d : all_dists) {
    const auto r = random_values(d, spec.body(), 600, gen(), floating(t));
    v.insert(v.end(), r.begin(), r.end());
  }
  const auto full = random_values(dist::uniform, range_of(t), 600, gen(), false);
  v.insert(v.end(), full.begin(), full.end());
  for (int i = 0; i < 600; ++i) {
    const std::uint64_t bits = gen();
    if (t == dtype::f32) {
      float f;
      const auto low = static_cast<std::uint32_t>(bits);
      std::memcpy(&f, &low, sizeof f);
      v.push_back(f);
    } else {
      double d;
      std::memcpy(&d, &bits, sizeof d);
      v.push_back(d);
    }
  }
  std::shuffle(v.begin(), v.end(), gen);
  return v;
}

/// Sample j of a contiguous column, with every digit.
std::string sample_text(const column& c, std::size_t j) {
  double x = 0;
  tally::detail::with_sample_type(c.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, c.bytes.data() + j * sizeof(T), sizeof v);
    x = tally::detail::sample_traits<T>::to_value(v);
  });
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

/// The sample types of the kernels (simd_binning.hpp): f16 and bf16 take the scalar rule, as do
/// 64-bit integers on variable axes.
bool kernel_expected(const tally::axis& a, dtype t) {
  if (t == dtype::f16 || t == dtype::bf16) return false;
  if (tally::detail::rule_kind(a, t) != tally::axis_kind::variable) return true;
  if (t == dtype::i64 || t == dtype::u64) return false;
  const auto& e = a.variable_edges();  // the bucket table needs finite outer edges
  return std::isfinite(e.front()) && std::isfinite(e.back());
}

TEST(SimdBinning, EveryTargetGivesTheScalarRulesCodes) {
  const std::vector<std::string> targets = vector_targets();
  if (targets.empty()) GTEST_SKIP() << "built without Highway, or no SIMD target runs here";
  simd_target_guard guard;
  std::uint64_t seed = 1;
  for (const axis_spec& spec : edge_case_axes()) {
    const tally::axis a = spec.make();
    for (dtype t : all_dtypes) {
      const column data = make_column(t, edge_case_values(a, spec, t, ++seed));
      for (bool edge_table : {false, true}) {
        SCOPED_TRACE(spec.name() + " with " + std::string(tally::name_of(t)) + " samples" +
                     (edge_table ? ", edge table" : ""));
        ASSERT_TRUE(use_simd_target("scalar"));
        const auto expected = cpu_bin_codes_of(a, data.view(), edge_table);
        ASSERT_EQ(expected.simd_settled, 0);
        for (const std::string& target : targets) {
          SCOPED_TRACE(target);
          ASSERT_TRUE(use_simd_target(target));
          const auto got = cpu_bin_codes_of(a, data.view(), edge_table);
          ASSERT_EQ(got.codes.size(), expected.codes.size());
          for (std::size_t j = 0; j < got.codes.size(); ++j)
            ASSERT_EQ(got.codes[j], expected.codes[j]) << "sample " << j << ": " << sample_text(data, j);
          // (Where a kernel exists, KernelsSettleMostLanesOfSpreadData checks that it runs.)
          if (!kernel_expected(a, t)) {
            EXPECT_EQ(got.simd_settled, 0);
          }
        }
      }
    }
  }
}

/// On data spread over the bins, away from the edges' neighbourhoods, the kernels settle nearly
/// every lane themselves: the scalar rule is the exception, not the path.
TEST(SimdBinning, KernelsSettleMostLanesOfSpreadData) {
  const std::vector<std::string> targets = vector_targets();
  if (targets.empty()) GTEST_SKIP() << "built without Highway, or no SIMD target runs here";
  simd_target_guard guard;
  const std::vector<dtype> narrow = {dtype::u8, dtype::i8, dtype::u16, dtype::i16, dtype::u32, dtype::i32};
  std::vector<dtype> converted = narrow;  // the kernels that convert samples to f64
  converted.insert(converted.end(), {dtype::f32, dtype::f64});
  std::vector<dtype> integer_rule = converted;
  integer_rule.insert(integer_rule.end(), {dtype::u64, dtype::i64});
  // Integer samples never on an edge (.5 edges): the estimate decides every one. The line rule's
  // edges stray by a fifth of a bin, so its estimate decides only about half.
  struct settle_case {
    axis_spec axis;
    std::vector<dtype> types;
    std::int64_t at_least;  // of 10000
  };
  const std::vector<settle_case> cases = {
      {regular_spec(256, 0, 1), {dtype::f64, dtype::f32}, 9000},                  // f32: dyadic
      {regular_spec(100, -1.3, 2.7, dtype::f32), {dtype::f64, dtype::f32}, 9000},  // f32: fast32
      {regular_spec(101, -100.5, 100.5), integer_rule, 9000},
      {variable_spec(256, -100.5, 100.5, 3), converted, 9000},
      {near_line_spec(std::int64_t{1} << 16, -100.5, 100.5, 0.2, 4), converted, 2000},
      {integer_spec(-5, 100), integer_rule, 9000},
  };
  std::uint64_t seed = 50;
  for (const auto& c : cases) {
    for (dtype t : c.types) {
      const column x = random_column(t, dist::uniform, c.axis.body(), 10000, ++seed);
      for (const std::string& target : targets) {
        SCOPED_TRACE(c.axis.name() + " with " + std::string(tally::name_of(t)) + " samples on " + target);
        ASSERT_TRUE(use_simd_target(target));
        EXPECT_GE(cpu_bin_codes_of(c.axis.make(), x.view(), true).simd_settled, c.at_least);
      }
    }
  }
}

/// Random axes of awkward ranges (as the rule's own tests draw them): every edge, its neighbours
/// and random values, f64 and f32 samples, on every target.
TEST(SimdBinning, RandomRangesAgreeWithTheScalarRule) {
  const std::vector<std::string> targets = vector_targets();
  if (targets.empty()) GTEST_SKIP() << "built without Highway, or no SIMD target runs here";
  simd_target_guard guard;
  std::mt19937_64 gen(79);
  std::uniform_int_distribution<int> bins_of(1, 3000);
  for (int round = 0; round < 120; ++round) {
    const dtype edge_type = round % 2 ? dtype::f32 : dtype::f64;
    auto [lo, hi] = awkward_range(gen, round);
    if (round % 7 == 0) lo = 0;
    const axis_spec spec = round % 3 == 2 ? variable_spec(bins_of(gen), lo, hi, gen()) : regular_spec(bins_of(gen), lo, hi, edge_type);
    tally::axis a = tally::axis::regular(1, 0, 1);
    try {
      a = spec.make();
    } catch (const tally::error&) {
      continue;  // too many bins for the range in this edge type
    }
    for (dtype t : {dtype::f64, dtype::f32}) {
      SCOPED_TRACE(spec.name() + " over [" + std::to_string(lo) + ", " + std::to_string(hi) + "], " +
                   std::string(tally::name_of(t)));
      const column data = make_column(t, edge_case_values(a, spec, t, gen()));
      ASSERT_TRUE(use_simd_target("scalar"));
      const auto expected = cpu_bin_codes_of(a, data.view(), true);
      for (const std::string& target : targets) {
        ASSERT_TRUE(use_simd_target(target));
        EXPECT_EQ(cpu_bin_codes_of(a, data.view(), true).codes, expected.codes) << target;
      }
    }
  }
}

/// Fills x into a histogram over `spec`, and (y, x) into one over two such axes, on the scalar
/// path and then on each target: the same cells and flows.
void expect_fills_as_scalar(const std::vector<std::string>& targets, const axis_spec& spec, const tally::options& o,
                            const column& x, const column& y) {
  const auto fill = [&] {
    tally::histogram one(spec.make(), o);
    one.fill(x.view());
    tally::histogram two({spec.make(), spec.make()}, o);
    two.fill({y.view(), x.view()});
    return std::make_pair(one, two);
  };
  ASSERT_TRUE(use_simd_target("scalar"));
  const auto expected = fill();
  for (const std::string& target : targets) {
    ASSERT_TRUE(use_simd_target(target));
    const auto got = fill();
    EXPECT_EQ(got.first.counts(), expected.first.counts()) << target << ", 1-D";
    EXPECT_TRUE(same_flow(got.first.flow(), expected.first.flow())) << target << ", 1-D";
    EXPECT_EQ(got.second.counts(), expected.second.counts()) << target << ", 2-D";
    EXPECT_TRUE(same_flow(got.second.flow(), expected.second.flow())) << target << ", 2-D";
  }
}

/// Whole fills through the public API on each target against the scalar path: 1-D counts (one
/// thread and two, replicas or not), strided columns, N-D with and without flow bins.
TEST(SimdBinning, FillsGiveTheScalarPathsCells) {
  const std::vector<std::string> targets = vector_targets();
  if (targets.empty()) GTEST_SKIP() << "built without Highway, or no SIMD target runs here";
  simd_target_guard guard;
  const std::vector<axis_spec> axes = {regular_spec(256, -1.3, 2.7), regular_spec(100, 0, 1, dtype::f32),
                                       variable_spec(256, 0, 1, 3), integer_spec(-10, 64)};
  std::uint64_t seed = 100;
  for (const axis_spec& spec : axes) {
    for (dtype t : {dtype::f64, dtype::f32, dtype::i32, dtype::u8, dtype::i64}) {
      for (dist d : all_dists) {
        for (std::int64_t stride : {1, 3}) {
          const column x = random_column(t, d, spec.body(), 20011, ++seed, stride);
          const column y = random_column(t, dist::uniform, spec.body(), 20011, ++seed, 1);
          for (int threads : {1, 2}) {
            for (bool flow_bins : {false, true}) {
              SCOPED_TRACE(spec.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " stride " +
                           std::to_string(stride) + " threads " + std::to_string(threads) + (flow_bins ? " flow bins" : ""));
              tally::options o = cpu_options();
              o.threads = threads;
              o.flow_bins = flow_bins;
              expect_fills_as_scalar(targets, spec, o, x, y);
            }
          }
        }
      }
    }
  }
}

/// Variable axes: fills of enough samples to build the kernel's bucket table, against the scalar
/// path, 1-D and as the second axis of a 2-D fill.
TEST(SimdBinning, LargeVariableFillsGiveTheScalarPathsCells) {
  const std::vector<std::string> targets = vector_targets();
  if (targets.empty()) GTEST_SKIP() << "built without Highway, or no SIMD target runs here";
  simd_target_guard guard;
  const std::int64_t n = std::int64_t{1} << 18;
  std::uint64_t seed = 300;
  for (const axis_spec& spec : {variable_spec(256, 0, 1, 3), variable_spec(1000, -5, 5, 4), edges_beside_bucket_boundaries()}) {
    for (dtype t : {dtype::f64, dtype::f32, dtype::i16}) {
      for (dist d : {dist::uniform, dist::mostly_one_bin, dist::normal}) {
        SCOPED_TRACE(spec.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d));
        const column x = random_column(t, d, spec.body(), n, ++seed);
        const column y = random_column(t, dist::uniform, spec.body(), n, ++seed);
        tally::options o = cpu_options();
        o.threads = 1;
        expect_fills_as_scalar(targets, spec, o, x, y);
      }
    }
  }
}

TEST(SimdBinning, TargetsCanBeChosenAndUnknownOnesAreRefused) {
  simd_target_guard guard;
  const std::vector<std::string> all = simd_targets();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.back(), "scalar");
  for (const std::string& t : all) {
    ASSERT_TRUE(use_simd_target(t));
    EXPECT_EQ(tally::detail::simd_target(), t);
  }
  const std::string before = tally::detail::simd_target();
  EXPECT_FALSE(use_simd_target("no such target"));
  EXPECT_EQ(tally::detail::simd_target(), before);
}

}  // namespace

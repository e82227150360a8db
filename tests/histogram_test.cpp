// 1-D counting on the CPU backend against the reference: every sample type, axis kind, bin count,
// data shape, size, count type, thread count and stride; chunked fills, reset, density, storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::axis_kind;
using tally::count_type;

struct fill_case {
  sample_spec in;
  count_type counts = count_type::u64;
  int threads = 0;
  bool flow = true;
  std::string name;
};

/// The axis range for samples of type t: a float range for floats, most of the type's range
/// (at uneven points) for integers.
range axis_body(dtype t) {
  if (floating(t)) return {-1.3, 2.7};
  const range r = range_of(t);
  return {r.at(0.05) + 0.3, r.at(0.95) - 0.7};
}

/// An axis of the given kind and bin count that samples of type t fill.
axis_spec axis_for(dtype t, axis_kind kind, std::int64_t bins, std::uint64_t seed) {
  const range body = axis_body(t);
  switch (kind) {
    case axis_kind::regular: {
      // Float samples get the edges numpy uses for their type; 16-bit edges need fewer bins to
      // stay strictly increasing after rounding.
      switch (t) {
        case dtype::f16: return regular_spec(std::min<std::int64_t>(bins, 1024), body.lo, body.hi, dtype::f16);
        case dtype::bf16: return regular_spec(std::min<std::int64_t>(bins, 128), body.lo, body.hi, dtype::bf16);
        case dtype::f32: return regular_spec(bins, body.lo, body.hi, dtype::f32);
        default: return regular_spec(bins, body.lo, body.hi);
      }
    }
    case axis_kind::variable:
      return variable_spec(bins, body.lo, body.hi, seed);
    case axis_kind::integer: {
      // Centred in the body, below 2^40 so that the generated doubles are exact integers.
      const double centre = std::min(body.at(0.5), 0x1p40);
      return integer_spec(static_cast<std::int64_t>(std::floor(centre)) - bins / 2, bins);
    }
  }
  return {};
}

std::string case_name(const fill_case& c, std::size_t index) {
  return std::to_string(index) + "_" + c.in.name() + "_" + std::string(tally::name_of(c.counts)) + "_t" +
         std::to_string(c.threads) + (c.flow ? "_flow" : "");
}

/// Every value of every dimension, not their product: each sample type with each axis kind, and
/// the other dimensions rotated so that each of their values occurs several times.
std::vector<fill_case> rotated_cases() {
  const std::int64_t bins[] = {1, 2, 255, 256, 257, 4096, 65536};
  const std::int64_t sizes[] = {1000, 7, 20011, 0, 1000, 1, 4099, 65537};
  const int threads[] = {0, 1, 2, 3, 8};
  const axis_kind kinds[] = {axis_kind::regular, axis_kind::variable, axis_kind::integer};
  std::vector<fill_case> cases;
  std::uint64_t k = 0;
  for (dtype t : all_dtypes) {
    for (axis_kind kind : kinds) {
      const std::uint64_t seed = 1000 + k;
      const sample_spec in{t, axis_for(t, kind, bins[k % 7], seed), all_dists[k % 5], sizes[k % 8],
                           1 + static_cast<std::int64_t>((k / 4) % 3), seed};
      cases.push_back({in, (k / 2) % 2 ? count_type::u32 : count_type::u64, threads[(k / 3) % 5], k % 4 != 3, ""});
      ++k;
    }
  }
  // Edge types that differ from the sample type, and large inputs on a few combinations.
  auto add = [&](dtype t, axis_spec a, dist d, std::int64_t n, count_type ct, int th, std::int64_t stride) {
    cases.push_back({{t, std::move(a), d, n, stride, 5000 + cases.size()}, ct, th, true, ""});
  };
  const std::int64_t big = (std::int64_t{1} << 20) + 3;
  add(dtype::f32, regular_spec(257, -1.3, 2.7, dtype::f64), dist::uniform, 20011, count_type::u64, 0, 1);
  add(dtype::f64, regular_spec(255, -1.3, 2.7, dtype::f32), dist::normal, 20011, count_type::u32, 2, 1);
  add(dtype::f64, regular_spec(256, -1.3, 2.7, dtype::f16), dist::uniform, 20011, count_type::u64, 3, 2);
  add(dtype::i16, regular_spec(200, -300.5, 900.25, dtype::f16), dist::uniform, 20011, count_type::u64, 0, 1);
  add(dtype::u16, regular_spec(4096, 10.5, 60000.5, dtype::f32), dist::sorted, 20011, count_type::u32, 1, 3);
  add(dtype::f64, regular_spec(4096, -1.3, 2.7), dist::uniform, big, count_type::u64, 0, 1);
  add(dtype::u8, integer_spec(0, 256), dist::mostly_one_bin, big, count_type::u32, 3, 1);
  add(dtype::f32, regular_spec(65536, -1.3, 2.7, dtype::f32), dist::normal, big, count_type::u64, 8, 2);
  add(dtype::i16, variable_spec(257, -30000.5, 30000.5, 77), dist::one_bin, big, count_type::u32, 0, 1);
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].name = case_name(cases[i], i);
  return cases;
}

void PrintTo(const fill_case& c, std::ostream* os) { *os << c.name; }

class Fill1D : public ::testing::TestWithParam<fill_case> {};

TEST_P(Fill1D, MatchesReferenceInOneFillAndInChunks) {
  const fill_case& c = GetParam();
  const column data = c.in.samples();
  tally::options o = cpu_options();
  o.counts = c.counts;
  o.threads = c.threads;
  o.flow = c.flow;

  tally::histogram h(c.in.axis.make(), o);
  const ref::result want = fill_both(h, c.in.axis, data.view());
  if (c.in.n >= 1000) {
    ASSERT_GT(binned(want), 0u) << "test data must land in the bins";
  }

  // The same samples in unequal chunks: the counts add up to the one-fill counts.
  tally::histogram chunked(c.in.axis.make(), o);
  const std::vector<std::int64_t> cuts = uneven_cuts(c.in.n);
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) chunked.fill(slice(data.view(), cuts[i], cuts[i + 1]));
  expect_matches(chunked, want);
}

INSTANTIATE_TEST_SUITE_P(Rotated, Fill1D, ::testing::ValuesIn(rotated_cases()),
                         [](const ::testing::TestParamInfo<fill_case>& info) { return info.param.name; });

TEST(Histogram, ShapeAxesAndOptionsAreKept) {
  const axis_spec a = regular_spec(7, -2.5, 3.5);
  tally::options o = cpu_options();
  o.counts = count_type::u32;
  o.threads = 3;
  const tally::histogram h(a.make(), o);
  EXPECT_EQ(h.shape(), std::vector<std::int64_t>{7});
  EXPECT_EQ(h.size(), 7);
  ASSERT_EQ(h.axes().size(), 1u);
  EXPECT_TRUE(h.axes()[0] == a.make());
  EXPECT_EQ(h.opts().counts, count_type::u32);
  EXPECT_EQ(h.opts().threads, 3);
  EXPECT_FALSE(h.weighted());
  EXPECT_EQ(h.samples(), 0u);
  EXPECT_EQ(h.counts(), std::vector<std::uint64_t>(7, 0));
}

TEST(Histogram, StoragePointerMatchesCountType) {
  const axis_spec a = regular_spec(16, 0, 16);
  const column data = random_column_for(a, dtype::f64, dist::uniform, 500, 11);
  for (count_type ct : {count_type::u32, count_type::u64}) {
    tally::options o = cpu_options();
    o.counts = ct;
    tally::histogram h(a.make(), o);
    ASSERT_GT(binned(fill_both(h, a, data.view())), 0u);
    EXPECT_EQ(h.counts_u32() != nullptr, ct == count_type::u32);
    EXPECT_EQ(h.counts_u64() != nullptr, ct == count_type::u64);
  }
  tally::options w = cpu_options();
  w.weighted = true;
  const tally::histogram weighted(a.make(), w);
  EXPECT_EQ(weighted.counts_u32(), nullptr);
  EXPECT_EQ(weighted.counts_u64(), nullptr);
}

TEST(Histogram, ResetZeroesCellsFlowAndSamples) {
  const axis_spec a = variable_spec(33, -1.3, 2.7, 5);
  const column first = random_column_for(a, dtype::f32, dist::uniform, 3000, 21);
  const column second = random_column_for(a, dtype::f32, dist::normal, 2000, 22);
  for (count_type ct : {count_type::u32, count_type::u64}) {
    tally::options o = cpu_options();
    o.counts = ct;
    tally::histogram h(a.make(), o);
    h.fill(first.view());
    ASSERT_GT(h.samples(), 0u);
    h.reset();
    expect_matches(h, ref::empty({a.model()}, false));
    h.fill(second.view());
    ref::result want = ref::empty({a.model()}, false);
    ref::fill(want, a.model(), second.view());
    ASSERT_GT(binned(want), 0u);
    expect_matches(h, want);
  }
}

TEST(Histogram, DefaultBackendAndExplicitStrategyOnHostMemory) {
  const axis_spec a = regular_spec(100, -1.3, 2.7);
  const column data = random_column_for(a, dtype::f64, dist::normal, 10007, 31);
  ref::result want = ref::empty({a.model()}, false);
  ref::fill(want, a.model(), data.view());
  ASSERT_GT(binned(want), 0u);

  tally::histogram automatic(a.make());  // backend automatic, strategy automatic: host data -> cpu
  automatic.fill(data.view());
  EXPECT_TRUE(same_elements(automatic.counts(), want.counts));

  tally::options o = cpu_options();
  o.strategy = tally::strategy::cpu_private;
  tally::histogram private_(a.make(), o);
  fill_both(private_, a, data.view());
}

TEST(Histogram, RepeatedFillsAccumulateAcrossCountTypes) {
  const axis_spec a = integer_spec(-5, 40);
  const column data = random_column_for(a, dtype::i8, dist::uniform, 999, 41, 2);
  for (count_type ct : {count_type::u32, count_type::u64}) {
    tally::options o = cpu_options();
    o.counts = ct;
    tally::histogram h(a.make(), o);
    ref::result want = ref::empty({a.model()}, false);
    for (int round = 0; round < 3; ++round) {
      h.fill(data.view());
      ref::fill(want, a.model(), data.view());
    }
    ASSERT_GT(binned(want), 0u);
    expect_matches(h, want);
  }
}

/// A caller's own OpenMP threads each filling a histogram of one thread: the fill's region is its
/// own (a one-thread fill runs its body directly only outside any region), so u32 private copies
/// (replicas), weighted partials and direct counts all count every sample.
TEST(Histogram, OneThreadFillsInsideACallersParallelRegion) {
  const axis_spec a = integer_spec(0, 100);
  const column data = random_column_for(a, dtype::i32, dist::mostly_one_bin, 200000, 7, 2);
  ref::result want = ref::empty({a.model()}, false);
  ref::fill(want, a.model(), data.view());
  ASSERT_GT(binned(want), 0u);
  std::vector<double> ones(static_cast<std::size_t>(data.view().size), 1.0);
  const tally::view weights = tally::make_view(ones.data(), static_cast<std::int64_t>(ones.size()));
  int failures = 0;
#pragma omp parallel num_threads(4) reduction(+ : failures)
  for (count_type ct : {count_type::u32, count_type::u64}) {
    tally::options o = cpu_options();
    o.counts = ct;
    o.threads = 1;
    tally::histogram h(a.make(), o);
    h.fill(data.view());
    tally::options w = cpu_options();
    w.weighted = true;
    w.threads = 1;
    tally::histogram s(a.make(), w);
    s.fill(data.view(), weights);
    const std::vector<std::uint64_t> counts = h.counts();
    for (std::size_t k = 0; k < counts.size(); ++k)
      failures += counts[k] != want.counts[k] || s.sums_data()[k] != static_cast<double>(want.counts[k]);
  }
  EXPECT_EQ(failures, 0);
}

/// numpy's density for several axes: n / width / total, widths as numpy's np.diff of the edges
/// in their own type (f32 and f16 edges give differences rounded to that type).
TEST(Histogram, DensityFollowsNumpyFormula) {
  const std::vector<std::pair<axis_spec, dtype>> axes = {
      {regular_spec(10, 0, 1), dtype::f64},
      {regular_spec(3, -1.3, 0.7, dtype::f32), dtype::f32},  // f32 widths differ from f64 widths
      {regular_spec(37, -1.3, 2.7, dtype::f32), dtype::f32},
      {regular_spec(20, -1.3, 2.7, dtype::f16), dtype::f16},
      {variable_spec(50, -1.3, 2.7, 9), dtype::f64},
      {integer_spec(-3, 10), dtype::i32},
  };
  for (const auto& [a, t] : axes) {
    SCOPED_TRACE(a.name());
    const column data = random_column_for(a, t, dist::uniform, 5000, 51);
    tally::histogram h(a.make(), cpu_options());
    const ref::result want = fill_both(h, a, data.view());
    EXPECT_TRUE(same_elements(h.density(), ref::density(want, {a.model()})));
    EXPECT_TRUE(same_elements(h.axes()[0].widths(), ref::widths(a.model())));
  }
}

}  // namespace
}  // namespace tally_test

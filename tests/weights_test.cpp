// Weighted sums against the reference bit for bit: the documented order (blocks of 65536 samples,
// per-block partials added in block order) for f32 and f64 weights, any thread count, run to run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

constexpr std::int64_t big = (std::int64_t{1} << 20) + 3;

struct weight_case {
  sample_spec in;
  dtype weight = dtype::f64;
  std::int64_t weight_stride = 1;
  std::string name;
};

std::vector<weight_case> weight_cases() {
  std::vector<weight_case> cases;
  auto add = [&](std::string name, dtype t, axis_spec a, dist d, std::int64_t n, dtype w, std::int64_t ss = 1,
                 std::int64_t ws = 1) {
    cases.push_back({{t, std::move(a), d, n, ss, 2024 + cases.size()}, w, ws, std::move(name)});
  };
  add("f64_regular257_uniform_big_w64", dtype::f64, regular_spec(257, -1.3, 2.7), dist::uniform, big, dtype::f64);
  add("f32_regular4096f32_mostly_big_w32", dtype::f32, regular_spec(4096, -1.3, 2.7, dtype::f32),
      dist::mostly_one_bin, big, dtype::f32);
  add("i32_integer256_one_bin_w64", dtype::i32, integer_spec(-100, 256), dist::one_bin, 200003, dtype::f64);
  add("u8_variable255_sorted_w32_strided", dtype::u8, variable_spec(255, 0.5, 250.5, 3), dist::sorted, 131073,
      dtype::f32, 3, 2);
  add("f16_regular1f16_normal_w64", dtype::f16, regular_spec(1, -1.3, 2.7, dtype::f16), dist::normal, 1000,
      dtype::f64);
  add("bf16_regular64bf16_uniform_n7_w64", dtype::bf16, regular_spec(64, -1.3, 2.7, dtype::bf16), dist::uniform,
      7, dtype::f64, 2, 1);
  add("i64_regular65536_uniform_oneblock_w64", dtype::i64, regular_spec(65536, -1e18, 1e18), dist::uniform,
      65536, dtype::f64, 1, 3);
  add("u16_integer65536_normal_w32", dtype::u16, integer_spec(0, 65536), dist::normal, 70001, dtype::f32);
  add("i16_regular2_uniform_n1_w32", dtype::i16, regular_spec(2, -1000.5, 1000.5), dist::uniform, 1, dtype::f32);
  add("u64_variable256_normal_w64", dtype::u64, variable_spec(256, 1e3, 1e19, 8), dist::normal, 100003,
      dtype::f64);
  add("i8_regular255_uniform_empty_w64", dtype::i8, regular_spec(255, -100, 100), dist::uniform, 0, dtype::f64);
  add("u32_integer4096_mostly_w64", dtype::u32, integer_spec(1000, 4096), dist::mostly_one_bin, 9999, dtype::f64);
  return cases;
}

struct weighted_input {
  column samples;
  column weights;
};

weighted_input make_input(const sample_spec& in, dtype weight, std::int64_t weight_stride = 1) {
  // Weight gaps of strided views hold 1e30: reading one would wreck the sums.
  return {in.samples(), make_column(weight, random_weights(in.n, in.seed + 1), weight_stride, 1e30)};
}

tally::options weighted_options(int threads = 0) {
  tally::options o = cpu_options();
  o.weighted = true;
  o.threads = threads;
  return o;
}

void PrintTo(const weight_case& c, std::ostream* os) { *os << c.name; }

class Weighted : public ::testing::TestWithParam<weight_case> {};

TEST_P(Weighted, SumsAreBitIdenticalToReferenceForAnyThreadCountRunToRun) {
  const weight_case& c = GetParam();
  const weighted_input in = make_input(c.in, c.weight, c.weight_stride);
  const tally::view w = in.weights.view();
  const axis_spec& a = c.in.axis;
  ref::result want = ref::empty({a.model()}, true);
  ref::fill(want, a.model(), in.samples.view(), &w);
  if (c.in.n >= 1000) {
    ASSERT_GT(binned(want), 0u);
  }
  if (c.in.n > ref::block) {
    // The data tell the documented order from one sequential pass: the test can see a wrong order.
    ref::result sequential = ref::empty({a.model()}, true);
    ref::fill(sequential, {a.model()}, {in.samples.view()}, &w, c.in.n);
    ASSERT_FALSE(same_elements(sequential.sums, want.sums));
  }
  for (int threads : {1, 2, 3, 8}) {
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE("threads " + std::to_string(threads) + ", run " + std::to_string(run));
      tally::histogram h(a.make(), weighted_options(threads));
      h.fill(in.samples.view(), w);
      expect_matches(h, want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Weighted, ::testing::ValuesIn(weight_cases()),
                         [](const ::testing::TestParamInfo<weight_case>& info) { return info.param.name; });

/// options::sum_block 0: one block, every weight added in input order (numpy.bincount's), for
/// any thread count asked for.
TEST(Weighted, SumBlockZeroAddsInInputOrder) {
  const axis_spec a = integer_spec(0, 64);
  const sample_spec spec{dtype::i32, a, dist::mostly_one_bin, 3 * ref::block + 5, 1, 64};
  const weighted_input in = make_input(spec, dtype::f64);
  const tally::view w = in.weights.view();
  ref::result want = ref::empty({a.model()}, true);
  ref::fill(want, {a.model()}, {in.samples.view()}, &w, spec.n);  // one sequential pass
  ref::result blocks = ref::empty({a.model()}, true);
  ref::fill(blocks, a.model(), in.samples.view(), &w);
  ASSERT_FALSE(same_elements(blocks.sums, want.sums));  // the data tell the two orders apart
  for (int threads : {0, 1, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    tally::options o = weighted_options(threads);
    o.sum_block = 0;
    tally::histogram h(a.make(), o);
    h.fill(in.samples.view(), w);
    expect_matches(h, want);
  }
  tally::options bad = weighted_options();
  bad.sum_block = -1;
  EXPECT_THROW(tally::histogram(a.make(), bad), tally::error);
}

TEST(Weighted, UnweightedFillAddsOnePerSample) {
  const axis_spec a = regular_spec(300, -1.3, 2.7);
  const column data = random_column_for(a, dtype::f32, dist::normal, 200001, 61);
  tally::histogram h(a.make(), weighted_options());
  const ref::result want = fill_both(h, a, data.view());
  ASSERT_GT(binned(want), 0u);
}

TEST(Weighted, WeightedAndUnweightedFillsMix) {
  const axis_spec a = integer_spec(-20, 60);
  const sample_spec spec{dtype::i16, a, dist::uniform, 70000, 1, 62};
  const weighted_input in = make_input(spec, dtype::f64);
  const tally::view w = in.weights.view();
  tally::histogram h(a.make(), weighted_options());
  ref::result want = ref::empty({a.model()}, true);
  h.fill(in.samples.view(), w);
  ref::fill(want, a.model(), in.samples.view(), &w);
  h.fill(in.samples.view());
  ref::fill(want, a.model(), in.samples.view());
  h.fill(in.samples.view(), w);
  ref::fill(want, a.model(), in.samples.view(), &w);
  ASSERT_GT(binned(want), 0u);
  expect_matches(h, want);
}

/// Each fill call sums its own samples in blocks from its first sample, and adds the block
/// partials to the running sums; chunks on block boundaries and elsewhere.
TEST(Weighted, ChunkedFillsAddBlockPartialsInOrder) {
  const axis_spec a = regular_spec(65, -1.3, 2.7);
  const std::int64_t n = 5 * ref::block + 11;
  const sample_spec spec{dtype::f64, a, dist::mostly_one_bin, n, 1, 63};
  const weighted_input in = make_input(spec, dtype::f64);
  const std::vector<std::vector<std::int64_t>> cut_lists = {
      {0, ref::block, 3 * ref::block, n},
      {0, 1000, ref::block + 17, 4 * ref::block - 5, n},
  };
  for (const auto& cuts : cut_lists) {
    tally::histogram h(a.make(), weighted_options());
    ref::result want = ref::empty({a.model()}, true);
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const tally::view s = slice(in.samples.view(), cuts[i], cuts[i + 1]);
      const tally::view w = slice(in.weights.view(), cuts[i], cuts[i + 1]);
      h.fill(s, w);
      ref::fill(want, a.model(), s, &w);
    }
    ASSERT_GT(binned(want), 0u);
    expect_matches(h, want);
  }
}

TEST(Weighted, DensityWithExactlySummableWeights) {
  // Weights k/4, |k| < 64: every partial sum is exact, so the total does not depend on its order.
  const axis_spec a = variable_spec(40, -1.3, 2.7, 64);
  const std::int64_t n = 100000;
  std::vector<double> w = random_weights(n, 65);
  for (double& x : w) x = std::nearbyint(std::fmod(x * 1e6, 64.0)) / 4 + 0.25 * (x > 0);
  const column data = random_column_for(a, dtype::f64, dist::normal, n, 66);
  const column weights = make_column(dtype::f64, w, 1);
  const tally::view wv = weights.view();
  tally::histogram h(a.make(), weighted_options());
  const ref::result want = fill_both(h, a, data.view(), &wv);
  ASSERT_GT(binned(want), 0u);
  EXPECT_TRUE(same_elements(h.density(), ref::density(want, {a.model()})));
}

TEST(Weighted, PlannerBlockIsTheDocumentedBlock) {
  const tally::histogram h(regular_spec(100, 0, 1).make(), weighted_options());
  for (dtype t : {dtype::f64, dtype::f32, dtype::u8}) {
    EXPECT_EQ(h.plan_for(t, big).block, ref::block);
  }
}

}  // namespace
}  // namespace tally_test

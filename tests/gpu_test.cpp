// The CUDA backend against the same reference (host-memory inputs, options.backend = cuda); each
// case is skipped, never passed, where tally::backends() reports CUDA not usable.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& b : tally::backends()) {
      if (b.which == tally::backend::cuda && b.usable) return;
    }
    GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }

  static tally::options cuda_options(bool weighted = false,
                                     tally::strategy s = tally::strategy::automatic) {
    tally::options o = cpu_options();
    o.backend = tally::backend::cuda;
    o.weighted = weighted;
    o.strategy = s;
    return o;
  }
};

constexpr std::int64_t big = (std::int64_t{1} << 20) + 3;

TEST_F(Cuda, DevicesAreDescribed) {
  for (const auto& b : tally::backends()) {
    if (b.which != tally::backend::cuda) continue;
    EXPECT_TRUE(b.compiled);
    EXPECT_NE(b.detail.find("sm_"), std::string::npos) << b.detail;
    EXPECT_NE(b.detail.find("SMs"), std::string::npos) << b.detail;
  }
}


TEST_F(Cuda, CountsMatchReferenceAcrossTypesAndAxes) {
  const std::vector<std::pair<axis_spec, dtype>> cases = {
      {regular_spec(257, -1.3, 2.7), dtype::f64},
      {regular_spec(4096, -1.3, 2.7, dtype::f32), dtype::f32},
      {regular_spec(255, -1.3, 2.7, dtype::f16), dtype::f16},
      {variable_spec(65536, 0.5, 60000.5, 3), dtype::u16},
      {integer_spec(0, 256), dtype::u8},
  };
  std::uint64_t seed = 300;
  for (const auto& [a, t] : cases) {
    for (dist d : {dist::uniform, dist::one_bin}) {
      SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d));
      ++seed;
      const column data = random_column_for(a, t, d, big, seed, 1 + static_cast<std::int64_t>(seed % 2));
      for (tally::strategy s : {tally::strategy::automatic, tally::strategy::global_atomic,
                                tally::strategy::warp_aggregated, tally::strategy::shared}) {
        if (s == tally::strategy::shared && a.make().bins() > 50000) continue;  // beyond shared memory
        SCOPED_TRACE(std::string(tally::name_of(s)));
        tally::histogram h(a.make(), cuda_options(false, s));
        ASSERT_GT(binned(fill_both(h, a, data.view())), 0u);
      }
    }
  }
}

// Weighted sums on the GPU wait for the CUDA engine's deterministic path: disabled until then,
// which ctest reports as "Not Run (Disabled)", never as passed.
TEST_F(Cuda, DISABLED_WeightedSumsAreBitIdenticalToReference) {
  const axis_spec a = regular_spec(1000, -1.3, 2.7);
  const column data = random_column_for(a, dtype::f32, dist::normal, big, 310);
  const column weights = make_column(dtype::f64, random_weights(big, 311));
  const tally::view w = weights.view();
  for (int run = 0; run < 2; ++run) {
    tally::histogram h(a.make(), cuda_options(true));
    ASSERT_GT(binned(fill_both(h, a, data.view(), &w)), 0u);
  }
}

TEST_F(Cuda, TwoDimensionsAndChannels) {
  const std::vector<axis_spec> specs = {regular_spec(64, -1.3, 2.7), integer_spec(-10, 30)};
  const column x = random_column_for(specs[0], dtype::f64, dist::uniform, big, 320);
  const column y = random_column_for(specs[1], dtype::i32, dist::normal, big, 321);
  tally::histogram h(std::vector<tally::axis>{specs[0].make(), specs[1].make()}, cuda_options());
  h.fill({x.view(), y.view()});
  ref::result want = ref::empty({specs[0].model(), specs[1].model()}, false);
  ref::fill(want, {specs[0].model(), specs[1].model()}, {x.view(), y.view()});
  ASSERT_GT(binned(want), 0u);
  expect_matches(h, want);

  const axis_spec c = integer_spec(0, 256);
  const column rgba = random_column_for(c, dtype::u8, dist::uniform, 4 * 100003, 322);
  std::vector<tally::histogram> hs;
  for (int k = 0; k < 3; ++k) hs.emplace_back(c.make(), cuda_options());
  tally::fill_channels(hs, rgba.view(), 4);
  for (int k = 0; k < 3; ++k) {
    ref::result r = ref::empty({c.model()}, false);
    ref::fill(r, c.model(), channel_view(rgba.view(), k, 4));
    expect_matches(hs[static_cast<std::size_t>(k)], r);
  }
}

}  // namespace
}  // namespace tally_test

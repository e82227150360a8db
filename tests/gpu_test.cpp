// The CUDA backend against the independent reference (host-memory inputs, options.backend =
// cuda; the backend's device copy keeps the host address modulo 16, so offsets exercise the
// kernels' unaligned heads and tails). Each case is skipped, never passed, where
// tally::backends() reports CUDA not usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include "check.hpp"
#include "partition_limit.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::strategy;

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& b : tally::backends()) {
      if (b.which == tally::backend::cuda && b.usable) return;
    }
    GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }

  static tally::options cuda_options(bool weighted = false, strategy s = strategy::automatic) {
    tally::options o = cpu_options();
    o.backend = tally::backend::cuda;
    o.weighted = weighted;
    o.strategy = s;
    return o;
  }

  /// Fills a histogram over `a` with `samples` by every count strategy that applies, compares
  /// each with the reference, and returns the reference.
  static ref::result every_strategy_matches(const axis_spec& a, const tally::view& samples);
};

constexpr strategy count_strategies[] = {strategy::automatic,        strategy::global_atomic,
                                         strategy::global_atomic_vec, strategy::warp_aggregated,
                                         strategy::shared,            strategy::shared_replicated,
                                         strategy::cluster,           strategy::registers,
                                         strategy::partitioned};

/// Whether strategy s can run this fill (shared copies must fit, as 16-bit counters for one
/// contiguous column of samples wider than 8 bits; vector loads need a
/// contiguous column aligned to its type; clusters and partitions take samples wider than 8 bits,
/// partitions at most 256 buckets of 2^15 slots; registers at most 29 bins).
bool applies(strategy s, std::int64_t cells, const tally::view& v) {
  const bool contiguous = v.stride == 1 && reinterpret_cast<std::uintptr_t>(v.data) % tally::size_of(v.type) == 0;
  const bool packed = contiguous && tally::size_of(v.type) > 1 && cells <= 100000;  // 16-bit counters
  if ((s == strategy::shared || s == strategy::shared_replicated) && cells > 50000 && !packed) return false;
  if (s == strategy::global_atomic_vec && !contiguous) return false;
  if (s == strategy::cluster && (!contiguous || tally::size_of(v.type) == 1 || cells > 200000)) return false;
  if (s == strategy::registers && (!contiguous || cells + 3 > 32)) return false;
  if (s == strategy::partitioned && (!contiguous || tally::size_of(v.type) == 1 || cells > 8000000)) return false;
  return true;
}

/// Samples [offset, offset + n) of a column of n + 3: 0-3 elements past the allocation's
/// alignment, so that the kernels' scalar head and tail take part.
struct offset_column {
  column data;
  std::int64_t offset;
  tally::view view() const { return slice(data.view(), offset, data.n - 3 + offset); }
};

ref::result Cuda::every_strategy_matches(const axis_spec& a, const tally::view& samples) {
  ref::result want = ref::empty({a.model()}, false);
  ref::fill(want, a.model(), samples);
  for (strategy s : count_strategies) {
    if (!applies(s, a.bins, samples)) continue;
    SCOPED_TRACE(std::string(tally::name_of(s)));
    tally::histogram h(a.make(), cuda_options(false, s));
    h.fill(samples);
    expect_matches(h, want);
  }
  return want;
}

/// Sums equal bit for bit, any NaN equal to any NaN (the device's arithmetic makes its own).
::testing::AssertionResult same_sums(const std::vector<double>& got, const std::vector<double>& want) {
  std::vector<double> g = got, w = want;
  for (auto* v : {&g, &w})
    for (double& x : *v)
      if (std::isnan(x)) x = std::numeric_limits<double>::quiet_NaN();
  return same_elements(g, w);
}

offset_column offset_samples(const axis_spec& a, dtype t, dist d, std::int64_t n, std::uint64_t seed) {
  return {random_column_for(a, t, d, n + 3, seed), static_cast<std::int64_t>(seed % 4)};
}

axis_spec axis_for(tally::axis_kind kind, dtype t, std::uint64_t seed) {
  switch (kind) {
    case tally::axis_kind::regular:
      // Float samples get edges of their own type, as numpy.histogram computes them.
      return regular_spec(257, -1.3, 2.7, floating(t) && t != dtype::f64 ? t : dtype::f64);
    case tally::axis_kind::variable: return variable_spec(255, -2.5, 250.5, seed);
    case tally::axis_kind::integer: return integer_spec(-50, 256);
  }
  return {};
}

TEST_F(Cuda, DevicesAreDescribed) {
  for (const auto& b : tally::backends()) {
    if (b.which != tally::backend::cuda) continue;
    EXPECT_TRUE(b.compiled);
    EXPECT_NE(b.detail.find("sm_"), std::string::npos) << b.detail;
    EXPECT_NE(b.detail.find("SMs"), std::string::npos) << b.detail;
  }
}

TEST_F(Cuda, EveryStrategyTypeAxisAndDistributionMatchesReference) {
  std::uint64_t seed = 1000;
  for (dtype t : all_dtypes) {
    for (auto kind : {tally::axis_kind::regular, tally::axis_kind::variable, tally::axis_kind::integer}) {
      for (dist d : all_dists) {
        ++seed;
        const axis_spec a = axis_for(kind, t, seed);
        const offset_column data = offset_samples(a, t, d, (1 << 16) + 3, seed);
        SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " offset " +
                     std::to_string(data.offset));
        ASSERT_GT(binned(every_strategy_matches(a, data.view())), 0u);
      }
    }
  }
}

// Every kernel once on small inputs: the set compute-sanitizer runs (scripts/gpu_check).
TEST_F(Cuda, EveryKernelOnSmallInputs) {
  std::uint64_t seed = 1500;
  for (dtype t : {dtype::u8, dtype::i8, dtype::i16, dtype::i32, dtype::u64, dtype::f16, dtype::f32, dtype::f64}) {
    for (auto kind : {tally::axis_kind::regular, tally::axis_kind::variable, tally::axis_kind::integer}) {
      ++seed;
      const axis_spec a = axis_for(kind, t, seed);
      const offset_column data = offset_samples(a, t, dist::mostly_one_bin, 5003, seed);
      SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)));
      const ref::result want = every_strategy_matches(a, data.view());
      ASSERT_GT(binned(want), 0u);
      const column w = make_column(dtype::f32, random_weights(5003, seed));
      tally::histogram h(a.make(), cuda_options(true));
      h.fill(data.view(), w.view());
      EXPECT_EQ(h.samples(), want.samples);
      EXPECT_TRUE(same_flow(h.flow(), want.flow));
    }
  }
}

// At most 29 bins (the register strategy's limit), every sample type and axis kind, small enough
// for the sanitizer set.
TEST_F(Cuda, FewBinsEveryTypeAndAxis) {
  std::uint64_t seed = 1600;
  for (dtype t : all_dtypes) {
    for (const axis_spec& a : {regular_spec(29, -1.3, 2.7), variable_spec(29, -2.5, 25.5, seed), integer_spec(-5, 29),
                               integer_spec(3, 1)}) {
      for (dist d : {dist::uniform, dist::mostly_one_bin, dist::sorted}) {
        ++seed;
        const offset_column data = offset_samples(a, t, d, 5003, seed);
        SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " offset " +
                     std::to_string(data.offset));
        every_strategy_matches(a, data.view());
      }
    }
  }
}

// f32 samples on variable edges take an f32 copy of the edges, each rounded up to an f32: edges
// closer than an f32 spacing, edges exactly on f32 values and between them, and f32 samples on
// and beside each edge.
TEST_F(Cuda, FloatSamplesOnEdgesCloserThanTheirSpacing) {
  const float one = 1.0f, up = std::nextafter(one, 2.0f), down = std::nextafter(one, 0.0f);
  const std::vector<double> edges = {-3.0, down, 1.0 - 1e-12, 1.0, 1.0 + 1e-12, 1.0 + 2e-12, up, 1.5, 2.0 + 1e-9};
  axis_spec a;
  a.kind = tally::axis_kind::variable;
  a.bins = static_cast<std::int64_t>(edges.size()) - 1;
  a.edges = edges;
  std::vector<double> values;
  for (double e : edges)
    for (float x : {static_cast<float>(e), std::nextafter(static_cast<float>(e), -10.0f),
                    std::nextafter(static_cast<float>(e), 10.0f)})
      values.push_back(x);
  values.push_back(std::nan(""));
  std::vector<double> many;
  for (int r = 0; r < 5000; ++r) many.insert(many.end(), values.begin(), values.end());
  const column data = make_column(dtype::f32, many);
  ASSERT_GT(binned(every_strategy_matches(a, data.view())), 0u);
}

// Integer axes of integer samples up to 32 bits take a 32-bit rule where the axis lies within the
// sample type, and the 64-bit rule where it does not: axes at each end of the type, one inside
// and one a value past it.
TEST_F(Cuda, IntegerAxesAtTheEdgesOfTheSampleType) {
  std::uint64_t seed = 1700;
  constexpr std::int64_t bins = 300;
  for (dtype t : {dtype::u8, dtype::i8, dtype::u16, dtype::i16, dtype::u32, dtype::i32}) {
    const range r = range_of(t);
    const auto lowest = static_cast<std::int64_t>(r.lo), highest = static_cast<std::int64_t>(r.hi);
    for (std::int64_t lo : {lowest, lowest - 1, highest - bins + 1, highest - bins + 2}) {
      for (dist d : {dist::uniform, dist::mostly_one_bin}) {
        ++seed;
        const axis_spec a = integer_spec(lo, bins);
        const offset_column data = offset_samples(a, t, d, 20000, seed);
        SCOPED_TRACE(std::string(tally::name_of(t)) + " lo " + std::to_string(lo) + " " + name_of(d));
        ASSERT_GT(binned(every_strategy_matches(a, data.view())), 0u);
      }
    }
  }
}

// 65536 bins take one shared copy of 16-bit counters, two per word, whose wraps go to device
// memory. Two neighbouring bins (both halves of one word) take 60% of 2^25 samples, over 2^16
// per block and half, so that both halves wrap, the low one carrying into the high one.
TEST_F(Cuda, PackedCountersCarryTheirWrapsToDeviceMemory) {
  const axis_spec a = integer_spec(-1000, 65536);
  const std::int64_t n = (std::int64_t{1} << 25) + 12345;
  std::vector<double> values(static_cast<std::size_t>(n));
  std::uint64_t state = 88172645463325252ull;
  for (auto& x : values) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    const auto r = static_cast<std::int64_t>(state % 100);
    x = r < 35 ? 24000 : r < 60 ? 24001 : static_cast<double>(static_cast<std::int64_t>(state >> 8) % 70000 - 3000);
  }
  const column data = make_column(dtype::i32, values);
  ref::result want = ref::empty({a.model()}, false);
  ref::fill(want, a.model(), data.view());
  ASSERT_GT(want.flow.total(), 0u);
  for (strategy s : {strategy::automatic, strategy::shared, strategy::shared_replicated}) {
    SCOPED_TRACE(std::string(tally::name_of(s)));
    tally::histogram h(a.make(), cuda_options(false, s));
    h.fill(data.view());
    expect_matches(h, want);
  }
  EXPECT_EQ(tally::histogram(a.make(), cuda_options()).plan_for(dtype::i32, n).counter_bits, 16);
}

TEST_F(Cuda, BinCountsFromOneToSixteenMillion) {
  const std::int64_t bin_counts[] = {1, 2, 16, 255, 256, 257, 4096, 65536, 1 << 20, 1 << 24};
  std::uint64_t seed = 2000;
  for (std::int64_t bins : bin_counts) {
    for (const auto& [a, t] : {std::pair{integer_spec(0, bins), dtype::i32},
                               std::pair{regular_spec(bins, 0.0, 1.0, dtype::f32), dtype::f32}}) {
      for (dist d : {dist::uniform, dist::one_bin, dist::mostly_one_bin}) {
        ++seed;
        const offset_column data = offset_samples(a, t, d, (1 << 20) + 3, seed);
        SCOPED_TRACE(a.name() + " " + name_of(d));
        ref::result want = ref::empty({a.model()}, false);
        ref::fill(want, a.model(), data.view());
        ASSERT_GT(binned(want), 0u);
        for (strategy s : count_strategies) {
          if (!applies(s, bins, data.view())) continue;
          SCOPED_TRACE(std::string(tally::name_of(s)));
          tally::options o = cuda_options(false, s);
          o.counts = seed % 2 ? tally::count_type::u32 : tally::count_type::u64;
          tally::histogram h(a.make(), o);
          h.fill(data.view());
          expect_matches(h, want);
        }
      }
    }
  }
}

/// 2^20 bins whose edges lie near a line but not on tally's regular one: numpy's float32 linspace
/// (a variable axis' line rule) and regular edges over ranges as data give (the regular rule's
/// guard measured from its table; f32 samples compute the edges they check), for f32 and f64
/// samples of each spread and on every edge, by every count strategy that applies.
TEST_F(Cuda, EdgesNearALineAtTwoToTheTwentyBins) {
  std::uint64_t seed = 2100;
  const std::int64_t bins = std::int64_t{1} << 20;
  for (const axis_spec& a : {float32_linspace_spec(bins, -4.8130383f, 5.0404344f),
                             regular_spec(bins, 1.2628321e-06, 0.9999968, dtype::f32),
                             regular_spec(bins, -4.8130383, 5.0404344, dtype::f64)}) {
    for (dtype t : {dtype::f32, dtype::f64}) {
      for (dist d : {dist::uniform, dist::normal, dist::one_bin}) {
        SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d));
        const offset_column data = offset_samples(a, t, d, (1 << 20) + 3, ++seed);
        ASSERT_GT(binned(every_strategy_matches(a, data.view())), 0u);
      }
      std::vector<double> on;
      for (double e : a.model().edges) {
        const auto f = static_cast<float>(e);
        on.insert(on.end(), {e, f, std::nextafter(f, HUGE_VALF), std::nextafter(f, -HUGE_VALF)});
      }
      SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " on the edges");
      ASSERT_GT(binned(every_strategy_matches(a, make_column(t, on).view())), 0u);
    }
  }
}

TEST_F(Cuda, SmallSizesAndRepeatedFillsAccumulate) {
  const axis_spec a = integer_spec(0, 256);
  for (std::int64_t n : {0, 1, 31, 33}) {
    for (dtype t : {dtype::u8, dtype::i32}) {
      const offset_column data = offset_samples(a, t, dist::uniform, n, 3000 + n);
      for (strategy s : count_strategies) {
        if (!applies(s, a.bins, data.view())) continue;
        SCOPED_TRACE(std::to_string(n) + " " + std::string(tally::name_of(t)) + " " + std::string(tally::name_of(s)));
        tally::histogram h(a.make(), cuda_options(false, s));
        ref::result want = ref::empty({a.model()}, false);
        for (int round = 0; round < 2; ++round) {
          h.fill(data.view());
          ref::fill(want, a.model(), data.view());
        }
        expect_matches(h, want);
      }
    }
  }
}

TEST_F(Cuda, StridedColumnsUseTheGenericKernels) {
  const axis_spec a = regular_spec(100, -1.3, 2.7, dtype::f32);
  const column data = random_column_for(a, dtype::f32, dist::normal, 100003, 3100, 3);
  ASSERT_GT(binned(every_strategy_matches(a, data.view())), 0u);
}

TEST_F(Cuda, WeightedSumsAreReproducibleAndExactWhereTheSumsAre) {
  std::uint64_t seed = 4000;
  for (const auto& [a, t] : {std::pair{regular_spec(256, -1.3, 2.7), dtype::f32},
                             std::pair{integer_spec(0, 256), dtype::i32},
                             std::pair{variable_spec(5000, -2.5, 250.5, 17), dtype::f64},
                             std::pair{integer_spec(0, 40000), dtype::i32}}) {  // f64: wide words
    for (dtype wt : {dtype::f32, dtype::f64}) {
      for (dist d : {dist::uniform, dist::one_bin, dist::normal}) {
        ++seed;
        SCOPED_TRACE(a.name() + " weights " + std::string(tally::name_of(wt)) + " " + name_of(d));
        const std::int64_t n = (1 << 20) + 3;
        const column data = random_column_for(a, t, d, n, seed);
        const auto w = random_weights(n, seed + 1);
        const column weights = make_column(wt, w);
        const tally::view wv = weights.view();
        const weighted_reference r = weighted_reference_of(a.model(), data.view(), wv);
        const ref::result& want = r.want;
        ASSERT_GT(binned(want), 0u);
        tally::histogram first(a.make(), cuda_options(true)), second(a.make(), cuda_options(true));
        first.fill(data.view(), wv);
        second.fill(data.view(), wv);
        EXPECT_TRUE(same_elements(first.sums(), second.sums())) << "two runs differ";
        expect_within_summation_error(first.sums(), r);
        // f32 weights sum exactly, then round once; so do f64 ones over cells beyond the windows.
        if (wt == dtype::f32 || first.plan_for(t, n, wt).exact_wide) {
          EXPECT_TRUE(same_sums(first.sums(), ref::exact_fill({a.model()}, {data.view()}, &wv).sums));
        }
        EXPECT_TRUE(same_flow(first.flow(), want.flow));
        EXPECT_EQ(first.samples(), want.samples);

        // Integer weights: every partial sum is exact, so any order gives the reference's bits.
        std::vector<double> small(w.size());
        for (std::size_t i = 0; i < w.size(); ++i) small[i] = std::round(std::ldexp(w[i], -20));
        const column integral = make_column(wt, small);
        const tally::view iv = integral.view();
        tally::histogram exact(a.make(), cuda_options(true));
        ASSERT_GT(binned(fill_both(exact, a, data.view(), &iv)), 0u);
      }
    }
  }
}

/// f32 weights over every kernel of the exact sums (the typed loop with each 32-bit rule, its
/// groups through the ring of 4, 8 and 16 bytes or loaded directly where the words leave no room,
/// the generic loop, words in shared or device memory), each distribution: every cell's sum is the
/// correctly rounded sum of its weights. A third of the weights are 2^100 times larger, so a sum
/// of the same weights in another order would round differently; a few are subnormal, infinite
/// or NaN.
TEST_F(Cuda, F32WeightsSumExactlyThenRoundOnce) {
  std::uint64_t seed = 4200;
  for (const auto& [a, t] : {std::pair{integer_spec(-50, 256), dtype::i32},  // 32-bit integer rule
                             std::pair{integer_spec(0, 256), dtype::u8},
                             std::pair{integer_spec(-7, 300), dtype::u16},  // 8-byte groups
                             std::pair{integer_spec(0, 2000), dtype::i32},  // no room for the ring
                             std::pair{integer_spec(-4, 4125), dtype::i32},  // the most cells a block holds
                             std::pair{regular_spec(256, -1.3, 2.7, dtype::f32), dtype::f32},  // f32 rules
                             std::pair{variable_spec(200, -2.5, 250.5, 5), dtype::f32},
                             std::pair{regular_spec(100, -1.3, 2.7), dtype::f64},  // the generic loop
                             std::pair{integer_spec(-3, 5000), dtype::i32}}) {     // words in device memory
    for (dist d : all_dists) {
      ++seed;
      const offset_column data = offset_samples(a, t, d, (1 << 18) + 3, seed);
      const tally::view samples = data.view();
      std::vector<double> w = random_weights(samples.size, seed + 1);
      for (std::size_t i = 0; i < w.size(); i += 3) w[i] = std::ldexp(w[i], 100);
      w[7] = 1e-42;
      if (d == dist::one_bin) {  // every special in the one cell: NaN
        w[100] = std::numeric_limits<double>::infinity();
        w[2000] = -std::numeric_limits<double>::infinity();
      } else if (d == dist::sorted) {
        w[5000] = std::numeric_limits<double>::quiet_NaN();
        w[w.size() - 1] = -std::numeric_limits<double>::infinity();
      }
      const column weights = make_column(dtype::f32, w);
      const tally::view wv = weights.view();
      const ref::result want = ref::exact_fill({a.model()}, {samples}, &wv);
      ASSERT_GT(binned(want), 0u);
      for (strategy s : {strategy::automatic, strategy::shared, strategy::global_atomic}) {
        if (s == strategy::shared && a.bins > 4128) continue;  // the windows do not fit a block
        SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " " +
                     std::string(tally::name_of(s)));
        tally::histogram h(a.make(), cuda_options(true, s));
        h.fill(samples, wv);
        EXPECT_TRUE(same_sums(h.sums(), want.sums));
        EXPECT_TRUE(same_flow(h.flow(), want.flow));
      }
    }
  }
}

/// Enough samples that every thread of the exact kernel drains its block's counters more than
/// once (88 samples per thread between drains, about 135k threads on an H100), signed weights
/// with the hot cell's digits summing below zero and above between drains. Then weights whose
/// terms are the largest of a digit (-(2^24 - 1) << 15), so that a thread's run of the hot cell
/// reaches the kernel's limit on a run's sum (2^45) every 64 samples.
TEST_F(Cuda, F32WeightsSumExactlyAcrossDrains) {
  const axis_spec a = integer_spec(-50, 256);
  std::uint64_t seed = 4300;
  for (const auto& [d, largest] : {std::pair{dist::one_bin, false}, std::pair{dist::uniform, false},
                                   std::pair{dist::one_bin, true}}) {
    ++seed;
    const offset_column data = offset_samples(a, dtype::i32, d, (1 << 24) + 3, seed);
    const tally::view samples = data.view();
    std::vector<double> w = random_weights(samples.size, seed + 1);
    if (largest) std::fill(w.begin(), w.end(), static_cast<double>(-0x1.fffffep17f));
    const column weights = make_column(dtype::f32, w);
    const tally::view wv = weights.view();
    const ref::result want = ref::exact_fill({a.model()}, {samples}, &wv);
    ASSERT_GT(binned(want), 0u);
    SCOPED_TRACE(std::string(name_of(d)) + (largest ? ", the largest terms" : ""));
    tally::histogram h(a.make(), cuda_options(true, strategy::shared));
    h.fill(samples, wv);
    EXPECT_TRUE(same_sums(h.sums(), want.sums));
    EXPECT_TRUE(same_flow(h.flow(), want.flow));
  }
}

/// Each block keeps a window of 6 digits of its cells' sums in shared memory (runs at 4 digits: 64
/// binades of f32 values), the one that holds most of its first weights, moved at a drain after an
/// epoch in which more than half of its samples fell outside it on one side; terms outside add to
/// the device words. Weights whose magnitudes rise from 2^-120 to 2^120 along the column (the
/// window climbs); first weights 2^100 times the rest (it must come down); every fourth weight
/// 2^80 times the others (the window holds the others, and the large ones, which decide the
/// sums, all go outside). 2^25 samples, so that every block drains (and may move) its window
/// several times (45056 samples a block's epoch): 1000 cells of u16 samples (through the ring),
/// 4000 cells of i32 (no room for it) and partitions of 65536 cells, every sum the correctly
/// rounded sum of its weights.
TEST_F(Cuda, F32WeightsSumExactlyWhereTheirMagnitudesLeaveTheWindow) {
  std::uint64_t seed = 4350;
  enum class shape { rising, high_start, quarter_large };
  for (const auto& [a, t, s] : {std::tuple{integer_spec(0, 1000), dtype::u16, strategy::shared},
                                std::tuple{integer_spec(-3, 4000), dtype::i32, strategy::shared},
                                std::tuple{integer_spec(-3, 65536), dtype::i32, strategy::partitioned}}) {
    for (dist d : {dist::uniform, dist::sorted}) {
      ++seed;
      const offset_column data = offset_samples(a, t, d, (1 << 25) + 3, seed);
      const tally::view samples = data.view();
      for (shape form : {shape::rising, shape::high_start, shape::quarter_large}) {
        std::mt19937_64 gen(seed * 3 + static_cast<int>(form));
        std::vector<double> w(static_cast<std::size_t>(samples.size));
        for (std::size_t i = 0; i < w.size(); ++i) {
          const std::uint64_t bits = gen();  // a sign and a mantissa in [1, 2)
          const double x = (bits >> 63 ? -1.0 : 1.0) * (1.0 + static_cast<double>(bits & 0xFFFFFF) * 0x1p-24);
          if (form == shape::rising) w[i] = std::ldexp(x, -120 + static_cast<int>(240 * i / w.size()));
          else if (form == shape::high_start) w[i] = i < (1u << 18) ? std::ldexp(x, 100) : x;
          else w[i] = i % 4 == 1 ? std::ldexp(x, 80) : x;
        }
        const column weights = make_column(dtype::f32, w);
        const tally::view wv = weights.view();
        const ref::result want = ref::exact_fill({a.model()}, {samples}, &wv);
        ASSERT_GT(binned(want), 0u);
        SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " form " +
                     std::to_string(static_cast<int>(form)));
        tally::histogram h(a.make(), cuda_options(true, s));
        h.fill(samples, wv);
        EXPECT_TRUE(same_sums(h.sums(), want.sums));
        EXPECT_TRUE(same_flow(h.flow(), want.flow));
      }
    }
  }
}

/// The partitioned exact sums (pairs sorted by buckets of 2^10 or 2^11 cells, then summed in shared copies
/// of the buckets' words) against the words in device memory (global_atomic) and the exact
/// reference, bit for bit: 4500, 8192, 65536 and 2^20 bins of every distribution, signed weights
/// of many magnitudes (a third 2^100 times larger) with a subnormal, infinite and NaN ones, in
/// passes of 1 and 5 tiles of 8192 samples and the planner's own. Then f32 samples, 64-bit and
/// 16-bit samples, strided weights and a fill without weights.
TEST_F(Cuda, F32WeightsSumExactlyInPartitions) {
  std::uint64_t seed = 4400;
  for (std::int64_t bins : {4500, 8192, 65536, 1 << 20}) {
    const axis_spec a = integer_spec(-5, bins);
    for (dist d : {dist::uniform, dist::one_bin, dist::mostly_one_bin, dist::sorted}) {
      ++seed;
      const offset_column data = offset_samples(a, dtype::i32, d, (1 << 19) + 3, seed);
      const tally::view samples = data.view();
      std::vector<double> w = random_weights(samples.size, seed + 1);
      for (std::size_t i = 0; i < w.size(); i += 3) w[i] = std::ldexp(w[i], 100);
      w[7] = 1e-42;
      w[100] = std::numeric_limits<double>::infinity();
      w[5000] = std::numeric_limits<double>::quiet_NaN();
      w[w.size() - 2] = -std::numeric_limits<double>::infinity();
      const column weights = make_column(dtype::f32, w);
      const tally::view wv = weights.view();
      const ref::result want = ref::exact_fill({a.model()}, {samples}, &wv);
      ASSERT_GT(binned(want), 0u);
      tally::histogram device(a.make(), cuda_options(true, strategy::global_atomic));
      device.fill(samples, wv);
      for (std::int64_t tiles : {1, 5, 0}) {
        SCOPED_TRACE(std::to_string(bins) + " bins " + name_of(d) + ", passes of " + std::to_string(tiles) + " tiles");
        const partition_pass_limit limit(tiles);
        tally::histogram h(a.make(), cuda_options(true));
        EXPECT_EQ(h.plan_for(dtype::i32, samples.size, dtype::f32).chosen, strategy::partitioned);
        h.fill(samples, wv);
        EXPECT_TRUE(same_sums(h.sums(), want.sums));
        EXPECT_TRUE(same_sums(h.sums(), device.sums()));
        EXPECT_TRUE(same_flow(h.flow(), want.flow));
      }
    }
  }
  const partition_pass_limit limit(2);
  for (const auto& [a, t] : {std::pair{regular_spec(65536, -1.3, 2.7, dtype::f32), dtype::f32},  // f32 rules
                             std::pair{integer_spec(-70000, 140000), dtype::i64},
                             std::pair{integer_spec(0, 4096), dtype::u16},
                             std::pair{regular_spec(3000, -1.3, 2.7), dtype::f64}}) {
    for (dist d : {dist::uniform, dist::mostly_one_bin}) {
      ++seed;
      const offset_column data = offset_samples(a, t, d, (1 << 17) + 3, seed);
      const tally::view samples = data.view();
      std::vector<double> w = random_weights(samples.size, seed + 1);
      for (std::size_t i = 0; i < w.size(); i += 5) w[i] = -std::ldexp(w[i], -60);
      // Every third of a column: strided weights; then unit-stride ones one place into theirs, so
      // that their alignment differs from the samples'.
      const column strided = make_column(dtype::f32, w, 3);
      std::vector<double> shifted = w;
      shifted.insert(shifted.begin(), 0.5);
      const column unit = make_column(dtype::f32, shifted);
      for (const tally::view& wv : {strided.view(), slice(unit.view(), 1, unit.n)}) {
        SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " weight stride " +
                     std::to_string(wv.stride));
        const ref::result want = ref::exact_fill({a.model()}, {samples}, &wv);
        ASSERT_GT(binned(want), 0u);
        tally::histogram h(a.make(), cuda_options(true, strategy::partitioned));
        h.fill(samples, wv);
        EXPECT_TRUE(same_sums(h.sums(), want.sums));
        EXPECT_TRUE(same_flow(h.flow(), want.flow));
      }
      SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " without weights");
      tally::histogram ones(a.make(), cuda_options(true, strategy::partitioned));
      ASSERT_GT(binned(fill_both(ones, a, samples)), 0u);
    }
  }
}

TEST_F(Cuda, UnweightedFillOfWeightedHistogramAddsOnes) {
  const axis_spec a = integer_spec(0, 64);
  const column data = random_column_for(a, dtype::i16, dist::mostly_one_bin, 70001, 4100);
  tally::histogram h(a.make(), cuda_options(true));
  ASSERT_GT(binned(fill_both(h, a, data.view())), 0u);
}

TEST_F(Cuda, TwoDimensionsAndChannels) {
  const std::vector<axis_spec> specs = {regular_spec(64, -1.3, 2.7), integer_spec(-10, 30)};
  const column x = random_column_for(specs[0], dtype::f64, dist::uniform, (1 << 20) + 3, 320);
  const column y = random_column_for(specs[1], dtype::i32, dist::normal, (1 << 20) + 3, 321);
  const column w = make_column(dtype::f32, random_weights((1 << 20) + 3, 322));
  for (strategy s : count_strategies) {
    if (s == strategy::global_atomic_vec || s == strategy::cluster || s == strategy::registers ||
        s == strategy::partitioned)
      continue;  // two columns: one sample per load
    SCOPED_TRACE(std::string(tally::name_of(s)));
    tally::histogram h(std::vector<tally::axis>{specs[0].make(), specs[1].make()}, cuda_options(false, s));
    h.fill({x.view(), y.view()});
    ref::result want = ref::empty({specs[0].model(), specs[1].model()}, false);
    ref::fill(want, {specs[0].model(), specs[1].model()}, {x.view(), y.view()});
    ASSERT_GT(binned(want), 0u);
    expect_matches(h, want);
  }
  tally::histogram a(std::vector<tally::axis>{specs[0].make(), specs[1].make()}, cuda_options(true));
  tally::histogram b(std::vector<tally::axis>{specs[0].make(), specs[1].make()}, cuda_options(true));
  a.fill({x.view(), y.view()}, w.view());
  b.fill({x.view(), y.view()}, w.view());
  EXPECT_TRUE(same_elements(a.sums(), b.sums()));
  const tally::view wv = w.view();
  EXPECT_TRUE(same_sums(a.sums(), ref::exact_fill({specs[0].model(), specs[1].model()}, {x.view(), y.view()}, &wv).sums))
      << "f32 weights over two axes: exact sums";

  const axis_spec c = integer_spec(0, 256);
  for (int channels : {1, 3, 4, 5}) {
    const column pixels = random_column_for(c, dtype::u8, dist::uniform, channels * 100003, 322 + channels);
    std::vector<tally::histogram> hs;
    for (int k = 0; k < std::min(channels, 3); ++k) hs.emplace_back(c.make(), cuda_options());
    tally::fill_channels(hs, pixels.view(), channels);
    for (int k = 0; k < std::min(channels, 3); ++k) {
      expect_matches(hs[static_cast<std::size_t>(k)], channel_reference(c, pixels.view(), k, channels, 1));
    }
  }
}

TEST_F(Cuda, InterleavedEightBitChannelsInOnePass) {
  // 2-4 channels of 8-bit samples take one pass with a value table per channel; each channel
  // keeps its own axis (and flow), a channel without a histogram is skipped, and the pixels may
  // start anywhere (the head before the first 16-byte boundary).
  std::uint64_t seed = 5000;
  for (dtype t : {dtype::u8, dtype::i8}) {
    const std::int64_t lo = t == dtype::u8 ? 0 : -128;
    const std::vector<axis_spec> specs = {integer_spec(lo, 256), regular_spec(17, lo + 10.5, lo + 200.0),
                                          variable_spec(40, lo + 3.5, lo + 250.5, 11), integer_spec(lo + 100, 7)};
    for (int channels : {2, 3, 4}) {
      for (dist d : {dist::uniform, dist::one_bin, dist::mostly_one_bin, dist::sorted}) {
        ++seed;
        const int active = static_cast<int>(seed % 2) ? channels : channels - 1;
        const std::int64_t offset = static_cast<std::int64_t>(seed % 4) * channels;
        const column pixels = random_column_for(specs[0], t, d, channels * 200001 + offset, seed);
        const tally::view v = slice(pixels.view(), offset, pixels.n);
        SCOPED_TRACE(std::string(tally::name_of(t)) + " " + std::to_string(channels) + " channels, " +
                     std::to_string(active) + " active, " + name_of(d) + ", offset " + std::to_string(offset));
        std::vector<tally::histogram> hs;
        for (int k = 0; k < active; ++k) hs.emplace_back(specs[static_cast<std::size_t>(k)].make(), cuda_options());
        tally::fill_channels(hs, v, channels);
        tally::fill_channels(hs, v, channels);  // accumulates
        for (int k = 0; k < active; ++k) {
          SCOPED_TRACE("channel " + std::to_string(k));
          const ref::result r = channel_reference(specs[static_cast<std::size_t>(k)], v, k, channels, 2);
          ASSERT_GT(binned(r), 0u);
          expect_matches(hs[static_cast<std::size_t>(k)], r);
        }
      }
    }
  }
}

/// Three passes of the partitioned strategy (2^26 samples each, the last one short): each pass's
/// bucket totals are zeroed by the one before, and its tiles counted by blocks shared out by them.
TEST_F(Cuda, PartitionedCountsAcrossPasses) {
  const axis_spec a = integer_spec(-1000, (1 << 20) - 1000);
  const std::int64_t n = (std::int64_t{2} << 26) + 4097;
  std::uint64_t seed = 5100;
  for (dist d : {dist::normal, dist::mostly_one_bin, dist::sorted}) {
    ++seed;
    const offset_column data = offset_samples(a, dtype::i32, d, n, seed);
    SCOPED_TRACE(name_of(d));
    ref::result want = ref::empty({a.model()}, false);
    ref::fill(want, a.model(), data.view());
    ASSERT_GT(binned(want), 0u);
    if (d == dist::normal) {
      ASSERT_GT(want.flow.total(), 0u);
    }
    tally::histogram h(a.make(), cuda_options(false, strategy::partitioned));
    EXPECT_EQ(h.plan_for(dtype::i32, n).partition_chunk, std::int64_t{1} << 26);
    h.fill(data.view());
    expect_matches(h, want);
  }
}

TEST_F(Cuda, MoreThanTwoToThe31Samples) {
  // 2^31 + 5 bytes: value i mod 251, so value v occurs floor((n - 1 - v) / 251) + 1 times.
  const std::int64_t n = (std::int64_t{1} << 31) + 5;
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i % 251);
  for (strategy s : {strategy::automatic, strategy::global_atomic_vec}) {
    SCOPED_TRACE(std::string(tally::name_of(s)));
    tally::histogram h(tally::axis::integer(0, 256), cuda_options(false, s));
    h.fill(tally::make_view(bytes.data(), n));
    const auto counts = h.counts();
    for (std::int64_t v = 0; v < 256; ++v) {
      const std::uint64_t want = v < 251 ? static_cast<std::uint64_t>((n - 1 - v) / 251 + 1) : 0;
      ASSERT_EQ(counts[static_cast<std::size_t>(v)], want) << "value " << v;
    }
  }
}

/// options::exact_sums on the GPU: the f32 kernel's words widened (f32 weights, shared or device
/// memory) and the wide atomics (f64 weights), each equal to the CPU backend's words; fills split
/// between the backends and merged in any order equal one CPU fill bit for bit.
TEST_F(Cuda, ExactSumsSplitAcrossBackendsEqualOneCpuFillBitForBit) {
  std::mt19937_64 gen(3301);
  const std::vector<std::pair<axis_spec, dtype>> cases = {{regular_spec(64, -1.3, 2.7, dtype::f32), dtype::f32},
                                                          {integer_spec(-7, 30), dtype::i32},
                                                          {variable_spec(23, -1.3, 2.7, 11), dtype::f64},
                                                          {regular_spec(5000, -1.3, 2.7), dtype::f64}};
  std::uint64_t seed = 0;
  for (const auto& [a, type] : cases) {
    for (dtype wt : {dtype::f32, dtype::f64}) {
      for (strategy s : {strategy::automatic, strategy::global_atomic}) {
        for (std::int64_t stride : {1, 2}) {
          ++seed;
          SCOPED_TRACE(std::string(tally::name_of(type)) + " samples, " + std::to_string(a.bins) + " bins, " +
                       std::string(tally::name_of(wt)) + " weights, " + std::string(tally::name_of(s)) + ", stride " +
                       std::to_string(stride));
          const std::int64_t n = 300000;
          const column data = random_column_for(a, type, all_dists[seed % 5], n, 3400 + seed, stride);
          const column weights = make_column(wt, spread_weights(n, 3500 + seed, seed % 2 == 0));
          const tally::view x = data.view(), w = weights.view();
          tally::options exact = cpu_options();
          exact.weighted = exact.exact_sums = true;
          tally::histogram cpu(a.make(), exact);
          cpu.fill(x, w);
          const ref::result want = ref::exact_fill({a.model()}, {x}, &w);
          expect_matches(cpu, want);
          ASSERT_GT(binned(want), 0u);
          tally::options on_gpu = cuda_options(true, s);
          on_gpu.exact_sums = true;
          tally::histogram gpu(a.make(), on_gpu);
          gpu.fill(x, w);
          EXPECT_TRUE(gpu == cpu) << "the GPU's words differ from the CPU's";
          expect_matches(gpu, want);

          const int k = 2 + static_cast<int>(seed % 4);
          std::vector<std::int64_t> cuts = {0, n};
          for (int i = 1; i < k; ++i) cuts.push_back(std::uniform_int_distribution<std::int64_t>(0, n)(gen));
          std::sort(cuts.begin(), cuts.end());
          std::vector<tally::histogram> parts;
          for (int i = 0; i < k; ++i) {
            parts.emplace_back(a.make(), i % 2 ? exact : on_gpu);
            parts.back().fill(slice(x, cuts[i], cuts[i + 1]), slice(w, cuts[i], cuts[i + 1]));
          }
          std::shuffle(parts.begin(), parts.end(), gen);
          tally::histogram merged = parts[0];
          for (std::size_t i = 1; i < parts.size(); ++i) merged += parts[i];
          EXPECT_TRUE(merged == cpu);
        }
      }
    }
  }
  // A 2-D fill (the generic kernels) and unweighted fills adding ones.
  const axis_spec ax = regular_spec(30, -1.3, 2.7), ay = integer_spec(-7, 30);
  const column xs = random_column_for(ax, dtype::f64, dist::normal, 200000, 3601);
  const column ys = random_column_for(ay, dtype::i64, dist::uniform, 200000, 3602);
  const column ws = make_column(dtype::f64, spread_weights(200000, 3603, true));
  const tally::view w = ws.view();
  tally::options exact = cpu_options();
  exact.weighted = exact.exact_sums = true;
  tally::options on_gpu = cuda_options(true);
  on_gpu.exact_sums = true;
  tally::histogram cpu({ax.make(), ay.make()}, exact), gpu({ax.make(), ay.make()}, on_gpu);
  cpu.fill({xs.view(), ys.view()}, w);
  gpu.fill({xs.view(), ys.view()}, w);
  EXPECT_TRUE(gpu == cpu);
  expect_matches(gpu, ref::exact_fill({ax.model(), ay.model()}, {xs.view(), ys.view()}, &w));
  cpu.fill({xs.view(), ys.view()});
  gpu.fill({xs.view(), ys.view()});
  EXPECT_TRUE(gpu == cpu);
}

}  // namespace
}  // namespace tally_test

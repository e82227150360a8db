// Merging (+=), comparing (==), copying and serialising histograms: histograms filled with parts
// of the data and merged in any order equal one fill of all of it (counts exactly, sums where
// exact and otherwise as the documented f64 additions), and bytes round-trip, with every bad
// input rejected by a tally::error.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::count_type;
using tally::dtype;

/// An axis and the sample type that fills it.
struct axis_case {
  axis_spec axis;
  dtype type;
  std::string name;
};

/// Every axis kind: regular (f64 and f32 edges, unit-integer edges), regular_exact, variable,
/// variable_integers (signed and unsigned) and integer.
std::vector<axis_case> every_axis_kind() {
  return {
      {regular_spec(37, -1.3, 2.7), dtype::f64, "regular"},
      {regular_spec(50, -1.3, 2.7, dtype::f32), dtype::f32, "regular_f32_edges"},
      {regular_spec(20, -5, 15), dtype::i32, "regular_unit_integer_edges"},
      {regular_exact_spec(16, std::int64_t{-1000}, std::int64_t{3000}), dtype::i64, "regular_exact"},
      {variable_spec(23, -1.3, 2.7, 11), dtype::f32, "variable"},
      {integer_edges_spec({-50, -10, 0, 3, 3, 40, 100}, false), dtype::i64, "variable_integers"},
      {integer_edges_spec({0, 5, 17, 100, 1000}, true), dtype::u64, "variable_integers_unsigned"},
      {integer_spec(-7, 30), dtype::i16, "integer"},
  };
}

/// k - 1 random cut points in [0, n] (sorted; parts may be empty) around k parts.
std::vector<std::int64_t> random_cuts(std::int64_t n, int k, std::mt19937_64& gen) {
  std::uniform_int_distribution<std::int64_t> at(0, n);
  std::vector<std::int64_t> cuts = {0, n};
  for (int i = 1; i < k; ++i) cuts.push_back(at(gen));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

/// The parts [cuts[i], cuts[i+1]) in a random order.
std::vector<std::size_t> random_order(std::size_t parts, std::mt19937_64& gen) {
  std::vector<std::size_t> order(parts);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), gen);
  return order;
}

tally::options options_with(count_type counts, bool flow, bool weighted = false) {
  tally::options o = cpu_options();
  o.counts = counts;
  o.flow = flow;
  o.weighted = weighted;
  return o;
}

TEST(Merge, PartsInAnyOrderEqualOneFillForEveryAxisKindCountTypeAndFlow) {
  std::mt19937_64 gen(2101);
  std::uint64_t seed = 0;
  for (const auto& c : every_axis_kind()) {
    for (count_type counts : {count_type::u64, count_type::u32}) {
      for (bool flow : {true, false}) {
        for (int k = 2; k <= 5; ++k) {
          ++seed;
          const dist shape = all_dists[seed % 5];
          SCOPED_TRACE(c.name + " " + std::string(tally::name_of(counts)) + (flow ? " flow" : "") + " k=" +
                       std::to_string(k) + " " + name_of(shape));
          const std::int64_t n = 3000 + static_cast<std::int64_t>(seed % 7) * 331;
          const column samples = random_column_for(c.axis, c.type, shape, n, 5000 + seed);
          const tally::options o = options_with(counts, flow);
          tally::histogram whole(c.axis.make(), o);
          const ref::result want = fill_both(whole, c.axis, samples.view());
          ASSERT_GT(binned(want), 0u);

          const auto cuts = random_cuts(n, k, gen);
          std::vector<tally::histogram> parts;
          for (int i = 0; i < k; ++i) {
            parts.emplace_back(c.axis.make(), o);
            parts.back().fill(slice(samples.view(), cuts[i], cuts[i + 1]));
          }
          const auto order = random_order(parts.size(), gen);
          tally::histogram merged = parts[order[0]];
          for (std::size_t i = 1; i < order.size(); ++i) merged += parts[order[i]];
          EXPECT_TRUE(merged == whole);
          expect_matches(merged, want);
        }
      }
    }
  }
}

TEST(Merge, NDPartsEqualOneFill) {
  std::mt19937_64 gen(2102);
  const auto kinds = every_axis_kind();
  for (int dims : {2, 3}) {
    for (int k = 2; k <= 5; ++k) {
      // Axes of several kinds, each filled by f64 samples over its body.
      std::vector<axis_spec> specs;
      std::vector<tally::axis> axes;
      std::vector<ref::axis_model> models;
      for (int d = 0; d < dims; ++d) {
        const auto& spec = kinds[static_cast<std::size_t>(k * 3 + d * 2) % kinds.size()].axis;
        specs.push_back(spec);
        axes.push_back(spec.make());
        models.push_back(spec.model());
      }
      const std::int64_t n = 5000;
      std::vector<column> cols;
      std::vector<tally::view> views;
      for (int d = 0; d < dims; ++d) {
        cols.push_back(random_column_for(specs[static_cast<std::size_t>(d)], dtype::f64,
                                         all_dists[static_cast<std::size_t>(d + k) % 5], n, 600 + 10 * k + d));
      }
      for (const auto& c : cols) views.push_back(c.view());
      for (bool weighted : {false, true}) {
        SCOPED_TRACE(std::to_string(dims) + "-D k=" + std::to_string(k) + (weighted ? " weighted" : ""));
        const tally::options o = options_with(count_type::u64, true, weighted);
        tally::histogram whole(axes, o);
        whole.fill(views);
        ref::result want = ref::empty(models, weighted);
        ref::fill(want, models, views, nullptr);
        expect_matches(whole, want);
        ASSERT_GT(binned(want), 0u);

        const auto cuts = random_cuts(n, k, gen);
        std::vector<tally::histogram> parts;
        for (int i = 0; i < k; ++i) {
          std::vector<tally::view> part;
          for (const auto& v : views) part.push_back(slice(v, cuts[i], cuts[i + 1]));
          parts.emplace_back(axes, o);
          parts.back().fill(part);
        }
        tally::histogram merged(axes, o);
        for (std::size_t i : random_order(parts.size(), gen)) merged += parts[i];
        // Unweighted fills of a weighted histogram add 1s: the sums are integers, exact in f64.
        EXPECT_TRUE(merged == whole);
      }
    }
  }
}

/// Weights that are multiples of 2^-8 below 2^8 in magnitude: every sum of a few thousand of them
/// is exact in f64 (and in f32 for the f32 weights' conversion), in any order.
std::vector<double> dyadic_weights(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> units(-(1 << 16), 1 << 16);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (double& x : w) x = std::ldexp(units(gen), -8);
  return w;
}

TEST(Merge, WeightedSumsAreTheF64SumsOfThePartsAndExactWhereThePartsAre) {
  std::mt19937_64 gen(2103);
  std::uint64_t seed = 0;
  for (const auto& c : every_axis_kind()) {
    for (dtype weight_type : {dtype::f64, dtype::f32}) {
      for (bool exact : {true, false}) {
        for (int k = 2; k <= 5; ++k) {
          ++seed;
          SCOPED_TRACE(c.name + " weights " + std::string(tally::name_of(weight_type)) +
                       (exact ? " dyadic" : " wide") + " k=" + std::to_string(k));
          const std::int64_t n = 4000;
          const column samples = random_column_for(c.axis, c.type, all_dists[seed % 5], n, 7000 + seed);
          const auto values = exact ? dyadic_weights(n, 8000 + seed) : random_weights(n, 8000 + seed);
          const column weights = make_column(weight_type, values);
          const tally::options o = options_with(count_type::u64, true, true);
          tally::histogram whole(c.axis.make(), o);
          const tally::view w = weights.view();
          const ref::result want = fill_both(whole, c.axis, samples.view(), &w);
          ASSERT_GT(binned(want), 0u);

          const auto cuts = random_cuts(n, k, gen);
          std::vector<tally::histogram> parts;
          for (int i = 0; i < k; ++i) {
            parts.emplace_back(c.axis.make(), o);
            parts.back().fill(slice(samples.view(), cuts[i], cuts[i + 1]), slice(w, cuts[i], cuts[i + 1]));
          }
          const auto order = random_order(parts.size(), gen);
          tally::histogram merged = parts[order[0]];
          std::vector<double> folded = parts[order[0]].sums();
          for (std::size_t i = 1; i < order.size(); ++i) {
            merged += parts[order[i]];
            const auto add = parts[order[i]].sums();
            for (std::size_t j = 0; j < folded.size(); ++j) folded[j] += add[j];
          }
          // Always: each merged cell is the f64 sum of the parts' cells, in merge order.
          EXPECT_TRUE(same_elements(merged.sums(), folded));
          EXPECT_EQ(merged.samples(), whole.samples());
          EXPECT_TRUE(same_flow(merged.flow(), whole.flow()));
          // Where every partial sum is exact, that is one fill's sums, bit for bit.
          if (exact) {
            EXPECT_TRUE(merged == whole);
          }
        }
      }
    }
  }
}

tally::options exact_options(int threads = 1) {
  tally::options o = options_with(count_type::u64, true, true);
  o.exact_sums = true;
  o.threads = threads;
  return o;
}

TEST(ExactSums, PartsInAnyOrderAndOnAnyThreadsEqualOneFillBitForBitAndTheExactSums) {
  std::mt19937_64 gen(2111);
  std::uint64_t seed = 0;
  int order_dependent = 0;  // cases where plain f64 sums of the same parts differ from one fill
  for (const auto& c : every_axis_kind()) {
    for (dtype weight_type : {dtype::f64, dtype::f32}) {
      for (int k = 2; k <= 5; ++k) {
        ++seed;
        const bool specials = k % 2 == 0;
        SCOPED_TRACE(c.name + " weights " + std::string(tally::name_of(weight_type)) + " k=" + std::to_string(k) +
                     (specials ? " with inf/NaN" : ""));
        const std::int64_t n = 4000;
        const column samples = random_column_for(c.axis, c.type, all_dists[seed % 5], n, 9000 + seed);
        const column weights = make_column(weight_type, spread_weights(n, 9500 + seed, specials));
        const tally::view w = weights.view();
        tally::histogram whole(c.axis.make(), exact_options(1 + static_cast<int>(seed % 2)));
        whole.fill(samples.view(), w);
        const ref::result want = ref::exact_fill({c.axis.model()}, {samples.view()}, &w);
        expect_matches(whole, want);
        ASSERT_GT(binned(want), 0u);

        const auto cuts = random_cuts(n, k, gen);
        std::vector<tally::histogram> parts;
        tally::options plain = options_with(count_type::u64, true, true);
        tally::histogram plain_whole(c.axis.make(), plain), plain_merged(c.axis.make(), plain);
        plain_whole.fill(samples.view(), w);
        for (int i = 0; i < k; ++i) {
          parts.emplace_back(c.axis.make(), exact_options(1 + i % 2));
          parts.back().fill(slice(samples.view(), cuts[i], cuts[i + 1]), slice(w, cuts[i], cuts[i + 1]));
          tally::histogram p(c.axis.make(), plain);
          p.fill(slice(samples.view(), cuts[i], cuts[i + 1]), slice(w, cuts[i], cuts[i + 1]));
          plain_merged += p;
        }
        order_dependent += plain_merged == plain_whole ? 0 : 1;
        const auto order = random_order(parts.size(), gen);
        tally::histogram merged = parts[order[0]];
        for (std::size_t i = 1; i < order.size(); ++i) merged += parts[order[i]];
        EXPECT_TRUE(merged == whole);
        expect_matches(merged, want);
      }
    }
  }
  EXPECT_GT(order_dependent, 0) << "the weights never made f64 sums depend on the order";
}

TEST(ExactSums, SummedDigitsOfPartsAssignedEqualOneFill) {
  // What an all-reduce of exact_digits does: the parts' digits added word by word, with no carry,
  // then assigned, equal one fill of all the data (infinities and NaNs among the weights).
  std::mt19937_64 gen(2113);
  std::uint64_t seed = 0;
  for (const auto& c : every_axis_kind()) {
    for (dtype weight_type : {dtype::f64, dtype::f32}) {
      ++seed;
      const int k = 2 + static_cast<int>(seed % 4);
      SCOPED_TRACE(c.name + " weights " + std::string(tally::name_of(weight_type)) + " k=" + std::to_string(k));
      const std::int64_t n = 3000;
      const column samples = random_column_for(c.axis, c.type, all_dists[seed % 5], n, 9700 + seed);
      const column weights = make_column(weight_type, spread_weights(n, 9800 + seed, seed % 2 == 0));
      const tally::view w = weights.view();
      tally::histogram whole(c.axis.make(), exact_options());
      whole.fill(samples.view(), w);
      ASSERT_GT(binned(ref::exact_fill({c.axis.model()}, {samples.view()}, &w)), 0u);

      const auto cuts = random_cuts(n, k, gen);
      std::vector<std::uint64_t> digits;
      tally::flow_counts flow;
      std::uint64_t samples_seen = 0;
      for (int i = 0; i < k; ++i) {
        tally::histogram part(c.axis.make(), exact_options());
        part.fill(slice(samples.view(), cuts[i], cuts[i + 1]), slice(w, cuts[i], cuts[i + 1]));
        const std::vector<std::uint64_t> d = part.exact_digits();
        ASSERT_EQ(d.size(), static_cast<std::size_t>(part.size()) * tally::exact_digits_per_cell);
        if (digits.empty()) digits.assign(d.size(), 0);
        for (std::size_t j = 0; j < d.size(); ++j) digits[j] += d[j];
        flow.underflow += part.flow().underflow;
        flow.overflow += part.flow().overflow;
        flow.nan += part.flow().nan;
        samples_seen += part.samples();
      }
      tally::histogram reduced(c.axis.make(), exact_options());
      reduced.assign_exact_digits(digits, flow, samples_seen);
      EXPECT_TRUE(reduced == whole);
      EXPECT_TRUE(same_elements(reduced.sums(), whole.sums()));
    }
  }
}

TEST(ExactSums, DigitsNeedExactSumsAndTheirCount) {
  tally::histogram exact(tally::axis::regular(8, 0.0, 1.0), exact_options());
  const std::vector<std::uint64_t> digits = exact.exact_digits();
  EXPECT_EQ(digits.size(), 8u * tally::exact_digits_per_cell);
  expect_error([&] { exact.assign_exact_digits(std::vector<std::uint64_t>(digits.size() - 1), {}, 0); },
               "71 a cell");
  tally::histogram plain(tally::axis::regular(8, 0.0, 1.0), options_with(count_type::u64, true, true));
  expect_error([&] { (void)plain.exact_digits(); }, "keeps no exact sums");
  expect_error([&] { plain.assign_exact_digits(digits, {}, 0); }, "keeps no exact sums");
}

TEST(ExactSums, NDPartsEqualOneFill) {
  std::mt19937_64 gen(2112);
  const auto kinds = every_axis_kind();
  for (int dims : {2, 3}) {
    for (dtype weight_type : {dtype::f64, dtype::f32}) {
      const int k = dims + (weight_type == dtype::f32 ? 2 : 0);
      std::vector<axis_spec> specs;
      std::vector<tally::axis> axes;
      std::vector<ref::axis_model> models;
      for (int d = 0; d < dims; ++d) {
        specs.push_back(kinds[static_cast<std::size_t>(k * 3 + d * 2) % kinds.size()].axis);
        axes.push_back(specs.back().make());
        models.push_back(specs.back().model());
      }
      SCOPED_TRACE(std::to_string(dims) + "-D weights " + std::string(tally::name_of(weight_type)));
      const std::int64_t n = 6000;
      std::vector<column> cols;
      std::vector<tally::view> views;
      for (int d = 0; d < dims; ++d)
        cols.push_back(random_column_for(specs[static_cast<std::size_t>(d)], dtype::f64,
                                         all_dists[static_cast<std::size_t>(d + k) % 5], n, 700 + 10 * k + d));
      for (const auto& c : cols) views.push_back(c.view());
      const column weights = make_column(weight_type, spread_weights(n, 800 + k, k % 2 == 1));
      const tally::view w = weights.view();
      tally::histogram whole(axes, exact_options(2));
      whole.fill(views, w);
      const ref::result want = ref::exact_fill(models, views, &w);
      expect_matches(whole, want);
      ASSERT_GT(binned(want), 0u);

      const auto cuts = random_cuts(n, k, gen);
      tally::histogram merged(axes, exact_options());
      std::vector<tally::histogram> parts;
      for (int i = 0; i < k; ++i) {
        std::vector<tally::view> part;
        for (const auto& v : views) part.push_back(slice(v, cuts[i], cuts[i + 1]));
        parts.emplace_back(axes, exact_options(1 + i % 2));
        parts.back().fill(part, slice(w, cuts[i], cuts[i + 1]));
      }
      for (std::size_t i : random_order(parts.size(), gen)) merged += parts[i];
      EXPECT_TRUE(merged == whole);
      expect_matches(merged, want);
    }
  }
}

TEST(ExactSums, ThreadsAddIntoTheSameWordsAtomicallyAndAgree) {
  const axis_spec spec = regular_spec(5, -1.3, 2.7);
  const std::int64_t n = 400000;  // several 65536-sample shares: the planner gives each thread one
  for (dist shape : {dist::uniform, dist::mostly_one_bin}) {
    SCOPED_TRACE(name_of(shape));
    const column samples = random_column_for(spec, dtype::f64, shape, n, 48);
    const column weights = make_column(dtype::f64, spread_weights(n, 49, true));
    tally::histogram one(spec.make(), exact_options(1)), two(spec.make(), exact_options(2));
    ASSERT_EQ(two.plan_for(dtype::f64, n).threads, 2);
    one.fill(samples.view(), weights.view());
    two.fill(samples.view(), weights.view());
    EXPECT_TRUE(one == two);
    const tally::view w = weights.view();
    expect_matches(two, ref::exact_fill({spec.model()}, {samples.view()}, &w));
  }
}

TEST(ExactSums, SelfMergeUnweightedFillsAndAssignStayExact) {
  const axis_spec spec = variable_spec(17, -1.3, 2.7, 3);
  const column samples = random_column_for(spec, dtype::f64, dist::normal, 3000, 43);
  const column weights = make_column(dtype::f64, spread_weights(3000, 44, false));
  tally::histogram h(spec.make(), exact_options(2)), twice(spec.make(), exact_options());
  h.fill(samples.view(), weights.view());
  twice.fill(samples.view(), weights.view());
  twice.fill(samples.view(), weights.view());
  h += h;
  EXPECT_TRUE(h == twice);
  EXPECT_EQ(h.samples(), 6000u);

  // A fill without weights adds 1 per sample.
  tally::histogram ones(spec.make(), exact_options());
  ones.fill(samples.view());
  ref::result counted = ref::empty({spec.model()}, true);
  ref::fill(counted, spec.model(), samples.view());
  expect_matches(ones, counted);

  // assign keeps each sum exactly (they are representable), including the non-finite ones; a
  // merge after it is exact too.
  std::vector<double> sums = spread_weights(spec.bins, 45, true);
  tally::histogram assigned(spec.make(), exact_options());
  assigned.assign(sums, {1, 2, 3}, 7);
  EXPECT_TRUE(same_elements(assigned.sums(), sums));
  tally::histogram negated(spec.make(), exact_options());
  std::vector<double> minus(sums.size());
  for (std::size_t i = 0; i < sums.size(); ++i) minus[i] = std::isfinite(sums[i]) ? -sums[i] : 0.0;
  negated.assign(minus, {}, 0);
  assigned += negated;
  for (std::size_t i = 0; i < sums.size(); ++i)
    EXPECT_TRUE(std::isfinite(sums[i]) ? assigned.sums()[i] == 0.0 && !std::signbit(assigned.sums()[i])
                                       : bits_of(assigned.sums()[i]) == bits_of(sums[i]))
        << "cell " << i;
}

TEST(ExactSums, TheRoundedSumIsTheNearestDoubleEvenWhereF64AdditionOverflows) {
  const double big = std::numeric_limits<double>::max();
  const std::vector<double> w = {big, big, -big, 0x1p-1074, -0x1p-1074, 1.0, 0x1p-53, 0x1p-60};
  const std::vector<std::int64_t> x = {0, 0, 0, 0, 0, 1, 1, 1};
  tally::histogram h(tally::axis::integer(0, 2), exact_options());
  h.fill(typed_column(x).view(), make_column(dtype::f64, w).view());
  EXPECT_EQ(bits_of(h.sums()[0]), bits_of(big));  // left to right in f64: inf
  // Just above the tie 1 + 2^-53, which left to right in f64 rounds down to 1.
  EXPECT_EQ(bits_of(h.sums()[1]), bits_of(1.0 + 0x1p-52));
  tally::histogram over(tally::axis::integer(0, 1), exact_options());
  over.fill(typed_column(std::vector<std::int64_t>{0, 0}).view(), make_column(dtype::f64, {big, big}).view());
  EXPECT_EQ(over.sums()[0], std::numeric_limits<double>::infinity());
}

TEST(ExactSums, ExactAndPlainSumsDoNotMix) {
  const axis_spec spec = regular_spec(8, 0, 1);
  tally::histogram exact(spec.make(), exact_options()), plain(spec.make(), options_with(count_type::u64, true, true));
  try {
    exact += plain;
    ADD_FAILURE() << "no error";
  } catch (const tally::error& e) {
    EXPECT_NE(std::string(e.what()).find("exact sums of weights against f64 sums of weights"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(plain += exact, tally::error);
  EXPECT_FALSE(exact == plain);
  EXPECT_FALSE(plain == exact);
  tally::options unweighted = exact_options();
  unweighted.weighted = false;
  try {
    tally::histogram h(spec.make(), unweighted);
    ADD_FAILURE() << "no error";
  } catch (const tally::error& e) {
    EXPECT_NE(std::string(e.what()).find("exact_sums keeps sums of weights"), std::string::npos) << e.what();
  }
}

TEST(Merge, ChannelHistogramsMergePerChannel) {
  std::mt19937_64 gen(2104);
  const axis_spec spec = regular_spec(64, 0, 256);
  for (int channels : {1, 3, 4}) {
    for (int k = 2; k <= 5; ++k) {
      const std::int64_t pixels = 3001;
      const column interleaved = random_column(dtype::u8, all_dists[static_cast<std::size_t>(k) % 5], {0, 255},
                                               pixels * channels, 900 + static_cast<std::uint64_t>(k * channels));
      const tally::options o = options_with(count_type::u32, true);
      std::vector<tally::histogram> whole(static_cast<std::size_t>(channels), tally::histogram(spec.make(), o));
      tally::fill_channels(whole, interleaved.view(), channels);
      for (int ch = 0; ch < channels; ++ch)
        expect_matches(whole[static_cast<std::size_t>(ch)],
                       channel_reference(spec, interleaved.view(), ch, channels, 1));

      const auto cuts = random_cuts(pixels, k, gen);
      std::vector<std::vector<tally::histogram>> parts;
      for (int i = 0; i < k; ++i) {
        parts.emplace_back(static_cast<std::size_t>(channels), tally::histogram(spec.make(), o));
        tally::fill_channels(parts.back(), slice(interleaved.view(), cuts[i] * channels, cuts[i + 1] * channels),
                             channels);
      }
      std::vector<tally::histogram> merged(static_cast<std::size_t>(channels), tally::histogram(spec.make(), o));
      for (std::size_t i : random_order(parts.size(), gen))
        for (std::size_t ch = 0; ch < merged.size(); ++ch) merged[ch] += parts[i][ch];
      for (std::size_t ch = 0; ch < merged.size(); ++ch) EXPECT_TRUE(merged[ch] == whole[ch]) << "channel " << ch;
    }
  }
}

TEST(Merge, SelfMergeDoublesEverything) {
  const axis_spec spec = variable_spec(17, -1.3, 2.7, 3);
  const column samples = random_column_for(spec, dtype::f64, dist::normal, 2000, 41);
  for (bool weighted : {false, true}) {
    tally::histogram h(spec.make(), options_with(count_type::u32, true, weighted));
    h.fill(samples.view());
    tally::histogram twice(spec.make(), options_with(count_type::u32, true, weighted));
    twice.fill(samples.view());
    twice.fill(samples.view());
    h += h;
    EXPECT_TRUE(h == twice);
    EXPECT_EQ(h.samples(), 4000u);
  }
}

TEST(Merge, ExecutionOptionsMayDifferAndTheLeftOnesAreKept) {
  const axis_spec spec = integer_spec(0, 10);
  const column samples = random_column_for(spec, dtype::i32, dist::uniform, 500, 43);
  tally::options a = options_with(count_type::u64, false);
  a.threads = 1;
  tally::options b = a;
  b.threads = 3;
  b.backend = tally::backend::automatic;
  b.strategy = tally::strategy::cpu_private;
  tally::histogram ha(spec.make(), a), hb(spec.make(), b);
  ha.fill(samples.view());
  hb.fill(samples.view());
  EXPECT_TRUE(ha == hb);
  ha += hb;
  EXPECT_EQ(ha.opts().threads, 1);
  EXPECT_EQ(ha.opts().backend, tally::backend::cpu);
  EXPECT_EQ(ha.samples(), 1000u);
}

TEST(Merge, MismatchedAxesOrOptionsThrowAndChangeNothing) {
  const auto make = [](tally::axis a, tally::options o = options_with(count_type::u64, true)) {
    return tally::histogram(std::move(a), o);
  };
  tally::histogram h = make(tally::axis::regular(10, 0.0, 1.0));
  const std::vector<double> v = random_values(dist::uniform, {0, 1}, 300, 47, true);
  const column c = make_column(dtype::f64, v);
  h.fill(c.view());
  const snapshot before(h);
  std::vector<double> edges = tally::axis::regular(10, 0.0, 1.0).edges();
  edges[4] = std::nextafter(edges[4], 1.0);  // one ulp
  std::vector<double> signed_zero = tally::axis::regular(10, 0.0, 1.0).edges();
  signed_zero[0] = -0.0;
  const struct {
    tally::histogram other;
    const char* expect;
  } cases[] = {
      {make(tally::axis::regular(11, 0.0, 1.0)), "axis 0 differs"},
      {make(tally::axis::regular(10, 0.0, 1.0, dtype::f32)), "axis 0 differs"},
      {make(tally::axis::variable(tally::axis::regular(10, 0.0, 1.0).edges())), "axis 0 differs"},
      {make(tally::axis::variable(edges)), "axis 0 differs"},
      {make(tally::axis::integer(0, 10)), "axis 0 differs"},
      {make(tally::axis::regular_exact(10, 0, 1)), "axis 0 differs"},
      {tally::histogram(std::vector<tally::axis>{tally::axis::regular(10, 0.0, 1.0), tally::axis::integer(0, 2)},
                        options_with(count_type::u64, true)),
       "1 axes against 2"},
      {make(tally::axis::regular(10, 0.0, 1.0), options_with(count_type::u32, true)), "u64 counts against u32 counts"},
      {make(tally::axis::regular(10, 0.0, 1.0), options_with(count_type::u64, true, true)),
       "u64 counts against f64 sums of weights"},
      {make(tally::axis::regular(10, 0.0, 1.0), options_with(count_type::u64, false)), "flow counters on against off"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.expect);
    EXPECT_FALSE(h == k.other);
    try {
      h += k.other;
      ADD_FAILURE() << "no error";
    } catch (const tally::error& e) {
      EXPECT_NE(std::string(e.what()).find("merge: the histograms differ: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(k.expect), std::string::npos) << e.what();
    }
    expect_unchanged(h, before);
  }
  // Variable edges that differ from 0.0 only in the sign of zero are a different axis too.
  tally::histogram v0 = make(tally::axis::variable(tally::axis::regular(10, 0.0, 1.0).edges()));
  EXPECT_THROW(v0 += make(tally::axis::variable(signed_zero)), tally::error);
}

/// A copy of h (counts) with cell i set to `value`, through assign (serialized bytes with such
/// a count are rejected: their samples() would not match, and counts stop below 2^63).
tally::histogram with_cell(const tally::histogram& h, std::size_t i, std::uint64_t value) {
  tally::histogram out = h;
  std::vector<std::uint64_t> counts = h.counts();
  counts[i] = value;
  out.assign(counts, h.opts().flow ? h.flow() : tally::flow_counts{}, h.samples());
  return out;
}

TEST(Merge, CountsThatWouldOverflowThrowBeforeAnythingChanges) {
  for (count_type counts : {count_type::u32, count_type::u64}) {
    SCOPED_TRACE(std::string(tally::name_of(counts)));
    const std::uint64_t max = counts == count_type::u32 ? 0xFFFFFFFFull : ~0ull;
    tally::histogram base(tally::axis::integer(0, 4), options_with(counts, true));
    const std::vector<std::int32_t> one_each = {0, 1, 2, 3, 3};
    const column c = typed_column(one_each);
    base.fill(c.view());
    tally::histogram full = with_cell(base, 2, max - 1);
    EXPECT_EQ(full.counts()[2], max - 1);
    tally::histogram ok = with_cell(base, 2, 1);
    full += ok;  // max - 1 + 1 fits
    EXPECT_EQ(full.counts()[2], max);
    EXPECT_EQ(full.counts()[3], 4u);
    const snapshot at_max(full);
    try {
      full += base;
      ADD_FAILURE() << "no error";
    } catch (const tally::error& e) {
      EXPECT_NE(std::string(e.what()).find("merge: bin 2 would overflow"), std::string::npos) << e.what();
    }
    expect_unchanged(full, at_max);
  }
}

TEST(Histogram, CopiesAreEqualAndIndependent) {
  for (const auto& c : every_axis_kind()) {
    SCOPED_TRACE(c.name);
    const column samples = random_column_for(c.axis, c.type, dist::mostly_one_bin, 1500, 53);
    tally::histogram h(c.axis.make(), options_with(count_type::u32, true));
    h.fill(samples.view());
    tally::histogram copy = h;
    EXPECT_TRUE(copy == h);
    copy.fill(samples.view());
    EXPECT_FALSE(copy == h);
    EXPECT_EQ(h.samples(), 1500u);
    tally::histogram assigned(tally::axis::integer(0, 1));
    assigned = copy;
    EXPECT_TRUE(assigned == copy);
    EXPECT_EQ(assigned.opts().counts, count_type::u32);
  }
}

TEST(Histogram, EqualityComparesCellsSamplesAndFlow) {
  const axis_spec spec = regular_spec(8, 0, 1);
  tally::histogram a(spec.make(), options_with(count_type::u64, true));
  tally::histogram b(spec.make(), options_with(count_type::u64, true));
  EXPECT_TRUE(a == b);
  const std::vector<double> in = {0.5}, out = {2.0}, empty_fill = {};
  a.fill(make_column(dtype::f64, in).view());
  EXPECT_TRUE(a != b);  // a cell
  b.fill(make_column(dtype::f64, in).view());
  EXPECT_TRUE(a == b);
  a.fill(make_column(dtype::f64, out).view());
  b.fill(make_column(dtype::f64, std::vector<double>{-2.0}).view());
  EXPECT_TRUE(a != b);  // the same cells and samples, another flow reason
  tally::histogram c(spec.make(), options_with(count_type::u64, true));
  c.fill(make_column(dtype::f64, std::vector<double>{0.5, 2.0}).view());
  EXPECT_TRUE(a == c);
}

TEST(Histogram, AssignSetsCellsFlowAndSamplesOrThrowsChangingNothing) {
  const std::vector<tally::axis> axes = {tally::axis::integer(0, 2), tally::axis::regular(3, 0.0, 1.0)};
  tally::histogram h(axes, options_with(count_type::u32, true));
  const std::vector<std::uint64_t> counts = {5, 0, 7, 1, 0xFFFFFFFFull, 2};
  h.assign(counts, {1, 2, 3}, 0xFFFFFFFFull + 21);
  EXPECT_TRUE(same_elements(h.counts(), counts));
  EXPECT_TRUE(same_flow(h.flow(), {1, 2, 3}));
  EXPECT_EQ(h.samples(), 0xFFFFFFFFull + 21);
  const snapshot before(h);
  auto big = counts;
  big[3] = 0x100000000ull;
  EXPECT_THROW(h.assign(big, {}, 0), tally::error);
  EXPECT_THROW(h.assign(std::vector<std::uint64_t>(5, 1), {}, 5), tally::error);
  EXPECT_THROW(h.assign(std::vector<double>(6, 1.0), {}, 6), tally::error);
  expect_unchanged(h, before);
  tally::histogram w(axes, options_with(count_type::u64, false, true));
  const std::vector<double> sums = {0.5, -1.25, 0, 3, 1e300, -0.0};
  w.assign(sums, {}, 9);
  EXPECT_TRUE(same_elements(w.sums(), sums));
  EXPECT_THROW(w.assign(sums, {0, 1, 0}, 9), tally::error);  // no flow counters
  EXPECT_THROW(w.assign(counts, {}, 9), tally::error);
  // An assigned histogram merges like a filled one.
  tally::histogram twice = h;
  EXPECT_THROW(twice += h, tally::error);  // 2^32 - 1 twice overflows u32
}

// ---- serialisation ----

/// Histograms of every axis kind, storage and flow option, 1-D and 3-D, filled with data.
std::vector<tally::histogram> filled_histograms() {
  std::vector<tally::histogram> out;
  std::uint64_t seed = 100;
  for (const auto& c : every_axis_kind()) {
    for (int storage = 0; storage < 4; ++storage) {  // u64, u32, f64 sums, exact sums
      tally::options o = options_with(storage == 1 ? count_type::u32 : count_type::u64, storage != 1, storage >= 2);
      o.exact_sums = storage == 3;
      o.threads = storage % 3;
      o.strategy = storage == 0 ? tally::strategy::automatic : tally::strategy::cpu_private;
      tally::histogram h(c.axis.make(), o);
      ++seed;
      const column s = random_column_for(c.axis, c.type, all_dists[seed % 5], 1000, seed);
      if (o.weighted) {
        const column w = make_column(dtype::f64, random_weights(1000, ++seed));
        h.fill(s.view(), w.view());
      } else {
        h.fill(s.view());
      }
      out.push_back(std::move(h));
    }
  }
  const auto kinds = every_axis_kind();
  std::vector<tally::axis> axes = {kinds[1].axis.make(), kinds[4].axis.make(), kinds[7].axis.make()};
  tally::histogram nd(axes, options_with(count_type::u64, true, true));
  std::vector<column> cols;
  std::vector<tally::view> views;
  for (std::size_t d : {1u, 4u, 7u}) cols.push_back(random_column_for(kinds[d].axis, dtype::f64, dist::normal, 3000, ++seed));
  for (const auto& c : cols) views.push_back(c.view());
  nd.fill(views, make_column(dtype::f32, random_weights(3000, ++seed)).view());
  out.push_back(std::move(nd));
  return out;
}

/// The hardware threads a deserialized histogram's thread count is capped at.
int hardware_threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

TEST(Serialize, RoundTripsEveryAxisKindStorageOptionAndCells) {
  for (const auto& h : filled_histograms()) {
    const auto bytes = tally::serialize(h);
    const tally::histogram back = tally::deserialize(bytes);
    EXPECT_TRUE(back == h);
    EXPECT_GT(h.samples(), 0u);
    ASSERT_EQ(back.axes().size(), h.axes().size());
    for (std::size_t d = 0; d < h.axes().size(); ++d) {
      const auto& a = back.axes()[d];
      const auto& b = h.axes()[d];
      EXPECT_TRUE(a == b);
      EXPECT_TRUE(same_elements(a.edges(), b.edges()));
      EXPECT_EQ(a.unit_integer_edges(), b.unit_integer_edges());
      EXPECT_EQ(a.has_exact_range(), b.has_exact_range());
      EXPECT_EQ(a.integer_edges_unsigned(), b.integer_edges_unsigned());
    }
    EXPECT_EQ(back.opts().threads, std::min(h.opts().threads, hardware_threads()));
    EXPECT_EQ(back.opts().strategy, h.opts().strategy);
    EXPECT_EQ(back.opts().backend, h.opts().backend);
    EXPECT_EQ(back.opts().counts, h.opts().counts);
    EXPECT_TRUE(tally::serialize(back) == bytes);
  }
  EXPECT_TRUE(tally::axis::regular(20, -5, 15).unit_integer_edges());
}

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

TEST(Serialize, BytesFollowTheDocumentedFormat) {
  tally::options o;
  o.counts = count_type::u32;
  o.flow = true;
  o.backend = tally::backend::cpu;
  o.threads = 2;
  tally::histogram h(tally::axis::integer(-1, 1), o);
  const std::vector<std::int32_t> s = {-1, 0, 0, 5, -3, 0};
  h.fill(typed_column(s).view());
  const auto want = bytes_of({
      'T', 'A', 'L', 'L', 'Y', 'H', 'S', 'T', 1, 0, 0, 0,  // magic, version 1
      1, 1,                                                  // u32 counts, flow
      3, 'c', 'p', 'u',                                      // backend
      9, 'a', 'u', 't', 'o', 'm', 'a', 't', 'i', 'c',        // strategy
      2, 0, 0, 0,                                            // threads
      6, 0, 0, 0, 0, 0, 0, 0,                                // samples
      1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,        // underflow, overflow
      0, 0, 0, 0, 0, 0, 0, 0,                                // nan
      1, 0, 0, 0,                                            // one axis
      5, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,     // integer, lo = -1
      1, 0, 0, 0, 0, 0, 0, 0,                                // hi = 1
      2, 0, 0, 0, 0, 0, 0, 0,                                // two cells
      1, 0, 0, 0, 3, 0, 0, 0});                              // counts
  EXPECT_TRUE(tally::serialize(h) == want);
  EXPECT_TRUE(tally::deserialize(want) == h);  // version 1 bytes load
  // A regular axis: bins, lo and hi as IEEE-754 bits, the edge type's name.
  tally::histogram r(tally::axis::regular(3, 0.5, 2.0, dtype::f32));
  const auto bytes = tally::serialize(r);
  const auto axis_at = bytes.end() - 8 - 3 * 8 - (1 + 8 + 8 + 8 + 4);
  EXPECT_TRUE(std::vector<std::byte>(axis_at, axis_at + 29) ==
              bytes_of({0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xE0, 0x3F, 0, 0, 0, 0, 0, 0, 0, 0x40, 3,
                        'f', '3', '2'}));
}

void expect_rejected(const std::vector<std::byte>& bytes, const std::string& message) {
  try {
    tally::deserialize(bytes.data(), bytes.size());
    ADD_FAILURE() << "no error for " << message;
  } catch (const tally::memory_error& e) {
    ADD_FAILURE() << "memory_error: " << e.what();
  } catch (const tally::error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("deserialize: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(Serialize, TruncatedInputIsAnErrorAtEveryLength) {
  for (const auto& h : filled_histograms()) {
    const auto bytes = tally::serialize(h);
    // Every prefix of the header and axes, and a sample of the cells' lengths.
    for (std::size_t n = 0; n < bytes.size(); n += n < 400 ? 1 : 97)
      expect_rejected(std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)),
                      "truncated input");
    auto longer = bytes;
    longer.push_back(std::byte{0});
    expect_rejected(longer, "1 bytes after the end");
  }
  EXPECT_THROW(tally::deserialize(nullptr, 3), tally::error);
  EXPECT_THROW(tally::deserialize(nullptr, 0), tally::error);
}

TEST(Serialize, CorruptHeadersAreClearErrors) {
  tally::histogram h(tally::axis::variable({0.0, 1.0, 4.0}), options_with(count_type::u64, false));
  const auto good = tally::serialize(h);
  const auto patched = [&](std::size_t at, std::initializer_list<int> v) {
    auto b = good;
    for (int x : v) b[at++] = static_cast<std::byte>(x);
    return b;
  };
  expect_rejected(patched(0, {'X'}), "wrong magic");
  expect_rejected(patched(8, {4}), "format version 4 is not supported");
  expect_rejected(patched(8, {2}), "format version 2 for a histogram that version 1 holds");
  expect_rejected(patched(8, {3}), "format version 3 for a histogram that version 1 holds");
  expect_rejected(patched(8, {0}), "format version 0 is not supported");
  expect_rejected(patched(12, {3}), "unknown storage code 3 in format version 1");
  expect_rejected(patched(8, {2, 0, 0, 0, 4}), "unknown storage code 4 in format version 2");
  expect_rejected(patched(13, {2}), "flow flag must be 0 or 1");  // flow bins need version 3
  expect_rejected(patched(8, {3, 0, 0, 0, 0, 4}), "flow flag must be 0 or 1 (plus 2 for flow bins), got 4");
  expect_rejected(patched(8, {3, 0, 0, 0, 2, 2}), "flow bins given for a histogram of sums");
  expect_rejected(patched(15, {'x'}), "backend");
  // Names are printable ASCII: other bytes quoted would make the message other than text.
  expect_rejected(patched(16, {0xC3}), "the backend name holds byte 195 at 1, not printable ASCII");
  expect_rejected(patched(20, {0}), "the strategy name holds byte 0 at 1, not printable ASCII");
  const std::size_t flow_at = 14 + 1 + 3 + 1 + 9 + 4 + 8;  // backend "cpu", strategy "automatic"
  expect_rejected(patched(flow_at, {1}), "flow counts given for a histogram without flow counters");
  const std::size_t axes_at = flow_at + 24;
  expect_rejected(patched(axes_at, {0}), "needs at least one axis");
  expect_rejected(patched(axes_at + 4, {9}), "unknown axis tag 9");
  // An edge count far beyond the input: an error, not an allocation.
  expect_rejected(patched(axes_at + 5, {0, 0, 0, 0, 0, 0, 0, 0x10}), "truncated input");
  // Edges the variable axis rejects (decreasing, NaN).
  expect_rejected(patched(axes_at + 13, {0, 0, 0, 0, 0, 0, 0x14, 0x40}), "variable axis");
  expect_rejected(patched(axes_at + 21, {0, 0, 0, 0, 0, 0, 0xF8, 0x7F}), "variable axis: edge 1 is NaN");
  // A cell count that is not the product of the bins.
  expect_rejected(patched(good.size() - 2 * 8 - 8, {3}), "truncated input");
  auto short_cells = good;
  short_cells[good.size() - 2 * 8 - 8] = std::byte{1};
  short_cells.resize(good.size() - 8);
  expect_rejected(short_cells, "1 cells stored for axes of 2 cells");

  // Huge bin counts are refused before an axis is built (its constructor would check each edge).
  tally::histogram r(tally::axis::regular(2, 0.0, 1.0), options_with(count_type::u64, false));
  auto huge = tally::serialize(r);
  const std::size_t bins_at = axes_at + 5;
  for (int b = 0; b < 8; ++b) huge[bins_at + b] = std::byte{0};
  huge[bins_at + 4] = std::byte{1};  // 2^32 bins
  expect_rejected(huge, "axis 0 of 1 (4294967296 bins) makes more cells than the");
  auto nan_lo = tally::serialize(r);
  nan_lo[bins_at + 8 + 6] = std::byte{0xF8};
  nan_lo[bins_at + 8 + 7] = std::byte{0x7F};
  expect_rejected(nan_lo, "regular axis: range must be finite");
  tally::histogram i(tally::axis::integer(0, 2), options_with(count_type::u64, false));
  auto wide = tally::serialize(i);
  wide[bins_at + 8 + 7] = std::byte{0x7F};  // hi near 2^63
  expect_rejected(wide, "bins) makes more cells than the");
}

/// Serialized bytes built field by field, for inputs serialize never writes.
struct byte_builder {
  std::vector<std::byte> bytes;
  /// v as n little-endian bytes, as the format has it.
  void put(std::uint64_t v, int n) {
    for (int b = 0; b < n; ++b) bytes.push_back(static_cast<std::byte>((v >> (8 * b)) & 0xFF));
  }
  void f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    put(bits, 8);
  }
  void str(const std::string& s) {
    put(s.size(), 1);
    for (char c : s) bytes.push_back(static_cast<std::byte>(c));
  }
  /// The header up to the axes: version 1, `storage`, no flow, backend cpu, strategy automatic,
  /// 1 thread, no samples; then the axis count.
  void header(std::uint8_t storage, std::uint32_t dims) {
    for (char c : std::string("TALLYHST")) bytes.push_back(static_cast<std::byte>(c));
    put(1, 4);
    put(storage, 1);
    put(0, 1);
    str("cpu");
    str("automatic");
    put(1, 4);
    for (int k = 0; k < 4; ++k) put(0, 8);  // samples, underflow, overflow, nan
    put(dims, 4);
  }
  void regular(std::int64_t bins, double lo, double hi) {
    put(0, 1);
    put(static_cast<std::uint64_t>(bins), 8);
    f64(lo);
    f64(hi);
    str("f64");
  }
};

/// Milliseconds that f takes.
template <class F> double milliseconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

TEST(Serialize, ManyAxesOfManyBinsAreRejectedAtTheAxisThatOutgrowsTheInput) {
  // 1 MiB: 17,241 regular axes of 124,984 bins whose edges are close enough to be checked one by
  // one, then filler. Each axis alone fits the u32 cells the bytes left could hold; checked one
  // at a time against those bytes, every axis was built (2 * 10^9 edge checks, 3.3 s). The cells
  // so far are kept against the bytes left: the second axis is refused, before it is built.
  constexpr std::uint32_t dims = 17241;
  constexpr std::int64_t bins = 124984;
  byte_builder b;
  b.header(1, dims);
  for (std::uint32_t d = 0; d < dims; ++d) b.regular(bins, 1e15, 1e15 + 0.5 * bins);
  b.bytes.resize(std::size_t{1} << 20);
  const double ms = milliseconds([&] {
    expect_rejected(b.bytes, "axis 1 of 17241 (124984 bins) makes more cells than the 1048450 bytes left");
  });
  EXPECT_LT(ms, 1000.0) << "a denial-of-service guard: linear time is about 1 ms here";
  // Axes of 2 bins double the cells at each axis: refused at the axis that passes the bytes.
  byte_builder pairs;
  pairs.header(0, 40);
  for (int d = 0; d < 40; ++d) pairs.regular(2, 0.0, 1.0);
  pairs.bytes.resize(pairs.bytes.size() + 8 + 8 * 1024);
  expect_rejected(pairs.bytes, "axis 10 of 40 (2 bins) makes more cells");
  // And accepted in linear time too: 36,000 axes of one bin each (a 1 MiB histogram of one cell).
  byte_builder ones;
  ones.header(0, 36000);
  for (int d = 0; d < 36000; ++d) ones.regular(1, 1e15, 1e15 + 0.5);
  ones.put(1, 8);  // one cell, of count 0
  ones.put(0, 8);
  EXPECT_LT(milliseconds([&] { EXPECT_EQ(tally::deserialize(ones.bytes).axes().size(), 36000u); }), 1000.0);
}

/// Where serialize puts samples(): after the magic, version, codes, names and threads.
std::size_t samples_offset(const tally::histogram& h) {
  return 14 + 1 + tally::name_of(h.opts().backend).size() + 1 + tally::name_of(h.opts().strategy).size() + 4;
}

/// Bytes with the u64 at `at` set to v.
std::vector<std::byte> with_u64(std::vector<std::byte> bytes, std::size_t at, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) bytes[at + b] = static_cast<std::byte>((v >> (8 * b)) & 0xFF);
  return bytes;
}

TEST(Serialize, SamplesAndFlowCountsMustBeWhatFillsGiveTheCells) {
  const std::vector<double> x = {0.5, 0.25, -3.0, 7.0, std::nan(""), 0.75, 0.5};  // 4 in, 3 dropped
  const std::vector<double> w = {1.5, -2.0, 1.0, 1.0, 1.0, 0.25, 4.0};
  for (int storage = 0; storage < 3; ++storage) {  // u64, u32, f64 sums
    for (bool flow : {false, true}) {
      SCOPED_TRACE("storage " + std::to_string(storage) + (flow ? ", flow" : ""));
      tally::histogram h(tally::axis::regular(4, 0.0, 1.0),
                         options_with(storage == 1 ? count_type::u32 : count_type::u64, flow, storage == 2));
      if (storage == 2) h.fill(make_column(dtype::f64, x).view(), make_column(dtype::f64, w).view());
      else h.fill(make_column(dtype::f64, x).view());
      const auto bytes = tally::serialize(h);
      const std::size_t at = samples_offset(h);
      EXPECT_TRUE(tally::deserialize(with_u64(bytes, at, 7)) == h);
      if (storage == 2) {  // sums: samples() counts the samples, whatever their weights
        EXPECT_EQ(tally::deserialize(with_u64(bytes, at, 1000)).samples(), 1000u);
        if (flow) expect_rejected(with_u64(bytes, at, 2), "samples() 2 is fewer than the 3 samples the flow counters dropped");
        continue;
      }
      if (flow) {  // every sample is in a cell or dropped under one reason
        expect_rejected(with_u64(bytes, at, 8), "samples() 8 is not the cells' 4 counts plus the 3 dropped samples");
        expect_rejected(with_u64(bytes, at, 6), "samples() 6 is not the cells' 4 counts plus the 3 dropped samples");
        // Flow counts whose total wraps past 2^64.
        auto wrapped = with_u64(with_u64(bytes, at + 8, ~0ull), at + 16, 2);
        expect_rejected(wrapped, "the flow counts pass 2^64 - 1");
      } else {  // the dropped samples are not counted anywhere
        EXPECT_EQ(tally::deserialize(with_u64(bytes, at, 8)).samples(), 8u);
        expect_rejected(with_u64(bytes, at, 3), "samples() 3 is fewer than the cells' 4 counts");
        // Flow counts of a histogram without flow counters, totalling 2^64: 0 once wrapped.
        auto wrapped = with_u64(with_u64(bytes, at + 8, 1ull << 63), at + 16, 1ull << 63);
        expect_rejected(wrapped, "flow counts given for a histogram without flow counters");
      }
      // A cell changed alone (a bit flipped) no longer matches samples().
      auto cell = bytes;
      cell[bytes.size() - 1 - (storage == 1 ? 12 : 24)] ^= std::byte{0x01};
      expect_rejected(cell, "samples() 7");
    }
  }
}

TEST(Serialize, CountsOf2To63OrMoreAreRejected) {
  // numpy reads the counts as int64: 2^63 would show as a negative count. No fill or merge gets
  // near; bytes that say so are corrupt.
  tally::histogram h(tally::axis::integer(0, 3), options_with(count_type::u64, true));
  const auto bytes = tally::serialize(h);
  const std::size_t at = samples_offset(h), cells_at = bytes.size() - 3 * 8;
  const auto with_count = [&](std::uint64_t count) { return with_u64(with_u64(bytes, cells_at + 8, count), at, count); };
  EXPECT_EQ(tally::deserialize(with_count((1ull << 63) - 1)).counts()[1], (1ull << 63) - 1);
  expect_rejected(with_count(1ull << 63), "cell 1's count 9223372036854775808 is 2^63 or more");
  expect_rejected(with_count(~0ull), "cell 1's count 18446744073709551615 is 2^63 or more");
  // Counts each below 2^63 whose sum passes 2^64.
  auto two = with_u64(with_u64(bytes, cells_at, (1ull << 63) - 1), cells_at + 8, (1ull << 63) - 1);
  expect_rejected(with_u64(two, cells_at + 16, 5), "the cells' counts pass 2^64 - 1");
}

TEST(Serialize, ThreadsAreNeverNegativeAndAtMostTheMachines) {
  tally::options o = options_with(count_type::u64, false);
  o.threads = 1;
  const tally::histogram h(tally::axis::integer(0, 3), o);
  const auto bytes = tally::serialize(h);
  const std::size_t at = samples_offset(h) - 4;
  const auto with_threads = [&](std::uint32_t t) {
    auto b = bytes;
    for (int k = 0; k < 4; ++k) b[at + k] = static_cast<std::byte>((t >> (8 * k)) & 0xFF);
    return b;
  };
  EXPECT_EQ(tally::deserialize(with_threads(0)).opts().threads, 0);  // 0: all
  EXPECT_EQ(tally::deserialize(with_threads(1)).opts().threads, 1);
  EXPECT_EQ(tally::deserialize(with_threads(0x7FFFFFFF)).opts().threads, hardware_threads());
  expect_rejected(with_threads(0x80000000u), "threads must be >= 0 (0: all), got -2147483648");
  expect_rejected(with_threads(0xFFFFFFFFu), "threads must be >= 0 (0: all), got -1");
}

TEST(Serialize, RandomByteFlipsNeverCrash) {
  // Each flip gives an error or a histogram (a flipped edge or thread count may still be one):
  // never a crash or an out-of-bounds read (the ASan preset runs this).
  std::mt19937_64 gen(2105);
  std::size_t rejected = 0, accepted = 0;
  for (const auto& h : filled_histograms()) {
    const auto bytes = tally::serialize(h);
    std::uniform_int_distribution<std::size_t> at(0, std::min<std::size_t>(bytes.size() - 1, 300));
    for (int t = 0; t < 40; ++t) {
      auto b = bytes;
      b[at(gen)] ^= static_cast<std::byte>(1 << (t % 8));
      try {
        const tally::histogram back = tally::deserialize(b);
        ++accepted;
        EXPECT_EQ(back.size(), static_cast<std::int64_t>(back.values().size()));
      } catch (const tally::error&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(accepted, 0u);
}

TEST(ExactSums, SerializeKeepsTheWordsInVersion2) {
  const axis_spec spec = integer_spec(-7, 30);
  const column samples = random_column_for(spec, dtype::i16, dist::mostly_one_bin, 5000, 46);
  const column weights = make_column(dtype::f32, spread_weights(5000, 47, true));
  tally::histogram h(spec.make(), exact_options());
  h.fill(samples.view(), weights.view());
  const auto bytes = tally::serialize(h);
  EXPECT_EQ(bytes[8], std::byte{2});   // version 2
  EXPECT_EQ(bytes[12], std::byte{3});  // exact sums
  const tally::histogram back = tally::deserialize(bytes);
  EXPECT_TRUE(back == h);
  EXPECT_TRUE(back.opts().exact_sums);
  EXPECT_TRUE(same_elements(back.sums(), h.sums()));
  // Merging after the round trip is still exact.
  tally::histogram merged = back;
  merged += h;
  tally::histogram twice(spec.make(), exact_options());
  twice.fill(samples.view(), weights.view());
  twice.fill(samples.view(), weights.view());
  EXPECT_TRUE(merged == twice);
  // Flags beyond +inf, -inf and NaN are corrupt.
  auto corrupt = bytes;
  corrupt[bytes.size() - 8] = std::byte{8};
  expect_rejected(corrupt, "exact-sum flags 8");
  // So is a sum of 2^2162 units or more, beyond fewer than 2^64 doubles: its top limb's highest
  // 14 bits are not all its sign.
  const std::size_t top_limb = bytes.size() - 2 * 8;  // the last cell's limb 33, before its flags
  for (const std::uint64_t top : {std::uint64_t{1} << 50, std::uint64_t{0xBFFF} << 48, std::uint64_t{1} << 63})
    expect_rejected(with_u64(bytes, top_limb, top), "cell " + std::to_string(h.size() - 1) + "'s exact sum reaches 2^2162");
  // A sum just within, either sign, is one.
  for (const std::uint64_t top : {(std::uint64_t{1} << 50) - 1, ~std::uint64_t{0} << 50})
    EXPECT_NO_THROW(tally::deserialize(with_u64(bytes, top_limb, top)));
}

}  // namespace
}  // namespace tally_test

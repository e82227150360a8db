// The fixed-point sum of f32 values (src/core/exact_sum.hpp, the CUDA backend's weighted sums)
// against an independent correctly rounded sum (ref::exact_sum, Shewchuk's partials), and its
// independence of the order of the values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/exact_sum.hpp"
#include "reference.hpp"

namespace {

using tally::detail::exact_term_of;
using tally::detail::kExactWords;

struct words {
  std::uint64_t w[kExactWords] = {};
  unsigned flags = 0;
  void add(float x) {
    const auto t = exact_term_of(x);
    flags |= t.flag;
    if (!t.flag)
      tally::detail::add_exact_at_digit(w, t.digit, t.value, [](std::uint64_t* p, std::uint64_t v) {
        const std::uint64_t old = *p;
        *p += v;
        return old;
      });
  }
  double value() const { return tally::detail::exact_value(w, flags); }
};

double reference_sum(const std::vector<float>& xs) {
  ref::exact_sum s;
  for (float x : xs) s.add(x);
  return s.value();
}

float from_bits(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

/// Sums xs in three orders; all must give the same words and the reference's value.
void expect_exact(std::vector<float> xs, std::uint64_t seed) {
  const double want = reference_sum(xs);
  words forward;
  for (float x : xs) forward.add(x);
  std::mt19937_64 gen(seed);
  for (int round = 0; round < 2; ++round) {
    std::shuffle(xs.begin(), xs.end(), gen);
    words shuffled;
    for (float x : xs) shuffled.add(x);
    ASSERT_EQ(0, std::memcmp(forward.w, shuffled.w, sizeof forward.w)) << "the order changed the words";
  }
  const double got = forward.value();
  EXPECT_TRUE(same_bits(got, want)) << std::hexfloat << "got " << got << ", correctly rounded " << want;
}

TEST(ExactSum, AnyFiniteFloatsGiveTheCorrectlyRoundedSum) {
  std::mt19937_64 gen(71);
  for (int trial = 0; trial < 200; ++trial) {
    // Random bit patterns (every exponent, subnormals, both signs), or a narrower spread.
    const int spread = trial % 4 == 0 ? 254 : trial % 4 == 1 ? 40 : trial % 4 == 2 ? 8 : 1;
    std::uniform_int_distribution<std::uint32_t> mantissa(0, 0x7FFFFF), sign(0, 1);
    std::uniform_int_distribution<std::uint32_t> exponent(0, static_cast<std::uint32_t>(spread - 1));
    const std::uint32_t base = trial % 4 == 0 ? 0 : 100 + static_cast<std::uint32_t>(trial % 50);
    std::vector<float> xs(1 + trial * 7 % 1000);
    for (float& x : xs) x = from_bits(sign(gen) << 31 | (base + exponent(gen)) << 23 | mantissa(gen));
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_exact(xs, static_cast<std::uint64_t>(trial));
  }
}

TEST(ExactSum, CarriesAndBorrowsAcrossWords) {
  // m = 2^24 - 1 at the top of a word (s mod 32 = 31): each value adds ~2^55 to one word, so a
  // word wraps every ~2^9 values; the negative run then borrows all of it back but one value.
  const float big = from_bits((32u + 31u + 1u) << 23 | 0x7FFFFFu);  // s = 63: word 1, shift 31
  std::vector<float> xs(5000, big);
  expect_exact(xs, 1);
  std::vector<float> mixed(xs);
  mixed.insert(mixed.end(), 4999, -big);
  mixed.push_back(1e-30f);
  expect_exact(mixed, 2);
  std::vector<float> negative(3000, -big);
  negative.push_back(from_bits(1));  // the smallest subnormal
  expect_exact(negative, 3);
  std::vector<float> largest(1 << 12, from_bits(0x7F7FFFFFu));  // the largest finite f32
  expect_exact(largest, 4);
  for (float& x : largest) x = -x;
  expect_exact(largest, 5);
}

TEST(ExactSum, TiesRoundToEvenAndStickyBitsBreakThem) {
  const float one = 1.0f, half_ulp = std::ldexp(1.0f, -53), ulp = std::ldexp(1.0f, -52);
  expect_exact({one, half_ulp}, 6);                       // a tie: stays at 1 (even)
  expect_exact({one, ulp, half_ulp}, 7);                  // a tie: goes up to even
  expect_exact({one, half_ulp, std::ldexp(1.0f, -120)}, 8);  // above the tie: up
  expect_exact({one, half_ulp, -std::ldexp(1.0f, -120)}, 9); // below the tie: down
  expect_exact({-one, -half_ulp}, 10);
  expect_exact({std::ldexp(1.0f, 100), -std::ldexp(1.0f, 100), 3.0f}, 11);  // cancellation
  EXPECT_TRUE(same_bits(words{}.value(), 0.0));
}

TEST(ExactSum, InfinitiesAndNanAsIeeeAdditionGivesThem) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  expect_exact({1.0f, inf, 2.0f}, 12);
  expect_exact({1.0f, -inf}, 13);
  expect_exact({inf, -inf}, 14);
  expect_exact({nan, 1.0f}, 15);
  expect_exact({-inf, nan, inf}, 16);
}

/// A wide sum (units of 2^-1074) and its flags.
struct wide {
  std::uint64_t w[tally::detail::kWideCellWords] = {};
  void add(double x) { w[tally::detail::kWideWords] |= tally::detail::add_wide(w, x, tally::detail::plain_fetch_add{}); }
  double value() const {
    return tally::detail::exact_value<tally::detail::wide_exact>(w, static_cast<unsigned>(w[tally::detail::kWideWords]));
  }
  bool operator==(const wide& o) const { return std::memcmp(w, o.w, sizeof w) == 0; }
};

double from_bits64(std::uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

TEST(ExactSum, WideSumsOfAnyDoublesInAnyOrderAreCorrectlyRounded) {
  std::mt19937_64 gen(72);
  for (int trial = 0; trial < 200; ++trial) {
    // Exponents over most of the range (the reference's partials must not overflow), narrower
    // spreads, subnormals, both signs, and cancelling pairs.
    const int spread = trial % 4 == 0 ? 1900 : trial % 4 == 1 ? 120 : trial % 4 == 2 ? 8 : 1;
    const std::uint64_t base = trial % 4 == 0 ? 0 : 900 + static_cast<std::uint64_t>(trial % 100);
    std::uniform_int_distribution<std::uint64_t> mantissa(0, (std::uint64_t{1} << 52) - 1), sign(0, 1);
    std::uniform_int_distribution<std::uint64_t> exponent(0, static_cast<std::uint64_t>(spread - 1));
    std::vector<double> xs(1 + trial * 7 % 1000);
    for (std::size_t i = 0; i < xs.size(); ++i)
      xs[i] = i % 9 == 8 ? -xs[i - 1] : from_bits64(sign(gen) << 63 | (base + exponent(gen)) << 52 | mantissa(gen));
    SCOPED_TRACE("trial " + std::to_string(trial));
    ref::exact_sum r;
    wide forward;
    for (double x : xs) {
      r.add(x);
      forward.add(x);
    }
    for (int round = 0; round < 2; ++round) {
      std::shuffle(xs.begin(), xs.end(), gen);
      wide shuffled;
      for (double x : xs) shuffled.add(x);
      ASSERT_TRUE(shuffled == forward) << "the order changed the words";
    }
    EXPECT_TRUE(same_bits(forward.value(), r.value())) << std::hexfloat << "got " << forward.value() << ", correctly rounded "
                                                       << r.value();
  }
}

TEST(ExactSum, WideRunsAddTheWordsTheirTermsAdd) {
  // The GPU's wide kernel adds each thread's terms through wide_runs (two runs of one cell and
  // limb, at most kWideRunTerms terms each): into four cells, the words equal those of the terms
  // added one at a time. Sequences: one cell's largest doubles of one sign (runs at their bound),
  // 80% in one cell with the rest elsewhere (the hot run kept between), and any cell with
  // exponents over three limbs, subnormals, signed zeros and mixed signs.
  namespace d = tally::detail;
  std::mt19937_64 gen(74);
  const double big = std::numeric_limits<double>::max();
  std::uniform_int_distribution<std::uint64_t> mantissa(0, (std::uint64_t{1} << 52) - 1), bit(0, 1);
  std::uniform_int_distribution<int> any_cell(0, 3), percent(0, 99);
  for (int trial = 0; trial < 60; ++trial) {
    const int kind = trial % 3;
    std::vector<std::pair<int, double>> terms;
    for (int i = 0; i < 3000; ++i) {
      if (kind == 0) {
        terms.emplace_back(2, i < 1500 ? big : -big);
        continue;
      }
      const int cell = kind == 1 && percent(gen) < 80 ? 2 : any_cell(gen);
      const std::uint64_t exponent = kind == 1 ? 1000 + bit(gen) : std::uniform_int_distribution<std::uint64_t>(0, 191)(gen);
      const double x = i % 13 == 0 ? (bit(gen) ? -0.0 : 0.0) : from_bits64(bit(gen) << 63 | exponent << 52 | mantissa(gen));
      terms.emplace_back(cell, x);
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    wide one_by_one[4], runs[4];
    d::wide_runs pending;
    int flushes = 0;
    const auto flush = [&](std::int64_t cell, const d::wide_run& run) {
      d::add_wide_run(runs[cell].w, run, d::plain_fetch_add{});
      ++flushes;
    };
    for (const auto& [cell, x] : terms) {
      one_by_one[cell].add(x);
      std::uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      pending.take(cell, d::wide_term_of_finite(bits), flush);
    }
    pending.finish(flush);
    for (int c = 0; c < 4; ++c) ASSERT_TRUE(runs[c] == one_by_one[c]) << "cell " << c << ": the runs' words differ";
    if (kind == 0) {
      EXPECT_EQ(flushes, (3000 + d::kWideRunTerms - 1) / d::kWideRunTerms) << "full runs go to the words";
      EXPECT_EQ(runs[2].value(), 0.0) << "1500 largest doubles less as many, exactly";
    } else if (kind == 1) {
      EXPECT_LT(flushes, 1000) << "the hot cell's run stays while other cells' terms come between";
    }
  }
}

TEST(ExactSum, WideSumsOverflowOnlyWhereTheRoundedSumDoes) {
  const double big = std::numeric_limits<double>::max();
  wide w;
  for (double x : {big, big, -big}) w.add(x);  // in f64 left to right: inf
  EXPECT_EQ(w.value(), big);
  w.add(big);
  EXPECT_EQ(w.value(), std::numeric_limits<double>::infinity());
  wide n;
  for (double x : {-big, -big}) n.add(x);
  EXPECT_EQ(n.value(), -std::numeric_limits<double>::infinity());
  wide flags;
  flags.add(1.0);
  flags.add(-std::numeric_limits<double>::infinity());
  EXPECT_EQ(flags.value(), -std::numeric_limits<double>::infinity());
  flags.add(std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(flags.value()));
}

TEST(ExactSum, F32WordsWidenToTheWideWordsOfTheSameValues) {
  std::mt19937_64 gen(73);
  for (int trial = 0; trial < 200; ++trial) {
    std::uniform_int_distribution<std::uint32_t> mantissa(0, 0x7FFFFF), sign(0, 1), exponent(0, 253);
    std::vector<float> xs(1 + trial * 13 % 500);
    for (float& x : xs) x = from_bits(sign(gen) << 31 | exponent(gen) << 23 | mantissa(gen));
    if (trial % 5 == 0) xs.push_back(std::numeric_limits<float>::quiet_NaN());
    if (trial % 7 == 0) xs.push_back(-std::numeric_limits<float>::infinity());
    words narrow;
    wide direct;
    for (float x : xs) {
      narrow.add(x);
      direct.add(x);
    }
    wide widened;
    widened.add(static_cast<double>(xs[0]));  // widening adds into a sum that is not empty
    widened.add(-static_cast<double>(xs[0]));
    tally::detail::add_f32_words_to_wide(widened.w, narrow.w, tally::detail::plain_fetch_add{});
    widened.w[tally::detail::kWideWords] = narrow.flags;
    SCOPED_TRACE("trial " + std::to_string(trial));
    EXPECT_TRUE(widened == direct) << "the widened words differ";
    EXPECT_TRUE(same_bits(widened.value(), narrow.value()));
  }
}

}  // namespace

// Inputs longer than 2^31 elements are counted whole (a 2 GiB buffer of known, non-zero data).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tally/tally.hpp"

namespace {

constexpr std::int64_t kN = (std::int64_t{1} << 31) + 5;

/// Mostly 7 (one hot bin), with every 1000th sample spread over 0..199: known counts.
const std::vector<std::uint8_t>& big() {
  static const std::vector<std::uint8_t> data = [] {
    std::vector<std::uint8_t> d(static_cast<std::size_t>(kN), 7);
    for (std::int64_t i = 0; i < kN; i += 1000) d[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((i / 1000) % 200);
    return d;
  }();
  return data;
}

std::vector<std::uint64_t> expected_counts() {
  std::vector<std::uint64_t> c(256, 0);
  c[7] = static_cast<std::uint64_t>(kN);
  for (std::int64_t i = 0; i < kN; i += 1000) {
    --c[7];
    ++c[static_cast<std::size_t>((i / 1000) % 200)];
  }
  return c;
}

TEST(Large, MoreThan2To31SamplesAreAllCounted) {
  tally::options o;
  o.flow = true;
  tally::histogram h(tally::axis::integer(0, 256), o);
  h.fill(tally::make_view(big().data(), kN));
  EXPECT_EQ(h.counts(), expected_counts());
  EXPECT_EQ(h.flow().total(), 0u);
  EXPECT_EQ(h.samples(), static_cast<std::uint64_t>(kN));
}

}  // namespace

// Inputs longer than 2^31 elements are counted whole (a 2 GiB buffer of known, non-zero data).
#include <gtest/gtest.h>

#include <sys/resource.h>

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

namespace {

std::int64_t peak_resident_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

// A huge histogram that a fill touches in a few places costs memory for those cells, not for
// every cell (nor for copies of them): 2^29 cells (4 GiB of counts, 6 weighted with their
// block marks) filled with a handful of samples stay under 512 MiB resident, counts and sums.
TEST(Large, HugeSparseHistogramsCostTheCellsTheyTouch) {
  const std::int64_t cells = std::int64_t{1} << 29;
  const std::vector<std::int64_t> x{0, 7, cells - 1, cells - 1, cells, -1};
  const std::vector<double> w{1.5, 2.0, 0.25, 0.25, 9.0, 9.0};
  const std::int64_t before = peak_resident_kib();
  for (bool weighted : {false, true}) {
    tally::options o;
    o.backend = tally::backend::cpu;
    o.weighted = weighted;
    tally::histogram h(tally::axis::integer(0, cells), o);
    if (weighted) h.fill(tally::make_view(x.data(), 6), tally::make_view(w.data(), 6));
    else h.fill(tally::make_view(x.data(), 6));
    const std::uint64_t* c = h.counts_u64();
    const double* s = h.sums_data();
    ASSERT_TRUE(weighted ? s != nullptr : c != nullptr);
    EXPECT_EQ(weighted ? s[0] : static_cast<double>(c[0]), weighted ? 1.5 : 1.0);
    EXPECT_EQ(weighted ? s[7] : static_cast<double>(c[7]), weighted ? 2.0 : 1.0);
    EXPECT_EQ(weighted ? s[cells - 1] : static_cast<double>(c[cells - 1]), weighted ? 0.5 : 2.0);
    h.reset();
    EXPECT_EQ(h.samples(), 0u);
  }
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the counts are checked; resident memory is not: AddressSanitizer's shadow and "
                  "quarantine add to it";
#endif
  EXPECT_LT(peak_resident_kib() - before, 512 * 1024) << "KiB more at the peak";
}

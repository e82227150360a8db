// Every documented error path raises tally::error, and a failed fill leaves the histogram as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "core/backend.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/nccl.hpp"
#include "tally/tally.hpp"

#if __has_include(<sys/mman.h>)
#include <sys/mman.h>
#endif

namespace tally_test {
namespace {

using tally::axis;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

TEST(AxisErrors, RegularRejectsBadBinsRangesAndCollidingEdges) {
  EXPECT_THROW(axis::regular(0, 0, 1), tally::error);
  EXPECT_THROW(axis::regular(-1, 0, 1), tally::error);
  EXPECT_THROW(axis::regular(-(std::int64_t{1} << 62), 0, 1), tally::error);
  EXPECT_THROW(axis::regular(10, 1, 1), tally::error);
  EXPECT_THROW(axis::regular(10, 2, 1), tally::error);
  EXPECT_THROW(axis::regular(10, nan, 1), tally::error);
  EXPECT_THROW(axis::regular(10, 0, nan), tally::error);
  EXPECT_THROW(axis::regular(10, -inf, 1), tally::error);
  EXPECT_THROW(axis::regular(10, 0, inf), tally::error);
  // f16 has 2^-11 spacing just below 1: 10000 bins over (0, 1) give equal rounded edges.
  EXPECT_THROW(axis::regular(10000, 0, 1, dtype::f16), tally::error);
  // bf16 keeps 8 significant bits: 1000 bins over (1, 2) collide.
  EXPECT_THROW(axis::regular(1000, 1, 2, dtype::bf16), tally::error);
  // Distinct in f64, equal once rounded to f32.
  EXPECT_THROW(axis::regular(2, 1.0, 1.0 + 1e-12, dtype::f32), tally::error);
  // Only float edge types exist.
  EXPECT_THROW(axis::regular(4, 0, 1, dtype::i32), tally::error);
  // The same parameters with a valid edge type are accepted (the throws above are specific).
  EXPECT_NO_THROW(axis::regular(1000, 0, 1, dtype::f16));
  EXPECT_NO_THROW(axis::regular(2, 1.0, 1.0 + 1e-12));
}

TEST(AxisErrors, VariableRejectsBadEdges) {
  EXPECT_THROW(axis::variable({}), tally::error);
  EXPECT_THROW(axis::variable({1.0}), tally::error);
  EXPECT_THROW(axis::variable({0, 2, 1}), tally::error);
  EXPECT_THROW(axis::variable({0, nan, 1}), tally::error);
  EXPECT_THROW(axis::variable({nan, 1}), tally::error);
  EXPECT_THROW(axis::variable({inf, 0}), tally::error);
  EXPECT_THROW(axis::variable_integers(std::vector<std::int64_t>{0, 2, 1}), tally::error);
  EXPECT_THROW(axis::variable_integers(std::vector<std::uint64_t>{5}), tally::error);
  // numpy's edges: repeated, and infinite at the ends.
  EXPECT_NO_THROW(axis::variable({0, 1}));
  EXPECT_NO_THROW(axis::variable({0, 1, 1, 2}));
  EXPECT_NO_THROW(axis::variable({-inf, 0, inf}));
  EXPECT_NO_THROW(axis::variable({inf, inf}));
}

TEST(AxisErrors, IntegerRejectsEmptyRange) {
  EXPECT_THROW(axis::integer(5, 5), tally::error);
  EXPECT_THROW(axis::integer(5, 3), tally::error);
  EXPECT_THROW(axis::integer(std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()),
               tally::error);
  EXPECT_NO_THROW(axis::integer(5, 6));
}

TEST(HistogramErrors, NoAxes) { EXPECT_THROW(tally::histogram(std::vector<axis>{}), tally::error); }

TEST(HistogramErrors, TooManyCellsForMemory) {
  const std::int64_t two62 = std::int64_t{1} << 62;
  EXPECT_THROW(tally::histogram(axis::integer(0, two62)), tally::memory_error);
  // 2^32 x 2^32 cells: the product wraps to 0 in 64 bits.
  EXPECT_THROW(tally::histogram(std::vector<axis>{axis::integer(0, std::int64_t{1} << 32),
                                                  axis::integer(0, std::int64_t{1} << 32)}),
               tally::error);
  // 2^31 x 2^31 x 2^31 = 2^93 cells.
  const axis a = axis::integer(0, std::int64_t{1} << 31);
  EXPECT_THROW(tally::histogram(std::vector<axis>{a, a, a}), tally::error);
}

TEST(HistogramErrors, RegularAxisOf2To62BinsIsRejectedQuickly) {
  // 2^62 equal bins: the edges k * 1.0 collide past 2^53, and the cells do not fit in memory;
  // either check may fire, at the axis or at the histogram, without visiting every edge.
  const std::int64_t two62 = std::int64_t{1} << 62;
  EXPECT_THROW(tally::histogram(axis::regular(two62, 0, 0x1p62)), tally::error);
  EXPECT_THROW(tally::histogram(axis::regular(two62, 0, 1)), tally::error);
}

TEST(HistogramErrors, CudaBackendWithoutUsableGpu) {
  for (const auto& b : tally::backends()) {
    if (b.which == tally::backend::cuda && b.usable) GTEST_SKIP() << "a GPU is usable here: " << b.detail;
  }
  const column data = random_column(dtype::f64, dist::uniform, {0, 1}, 100, 1);
  tally::options o;
  o.backend = tally::backend::cuda;
  EXPECT_THROW(
      {
        tally::histogram h(axis::regular(10, 0, 1), o);
        h.fill(data.view());
      },
      tally::error);
}

tally::options cpu_options_weighted(bool weighted) {
  tally::options o = cpu_options();
  o.weighted = weighted;
  return o;
}

/// A histogram that already holds data, so "unchanged" after a failed call means something.
struct filled {
  axis_spec spec = regular_spec(20, -1.3, 2.7);
  column data = random_column_for(spec, dtype::f64, dist::uniform, 1000, 7);
  column weights = make_column(dtype::f64, random_weights(1000, 8));
  tally::histogram h;

  /// A 1-D histogram over spec, or one over `axes`, each column filled with data.
  explicit filled(bool weighted, std::vector<axis> axes = {})
      : h(axes.empty() ? std::vector<axis>{spec.make()} : std::move(axes), cpu_options_weighted(weighted)) {
    const std::vector<tally::view> columns(h.axes().size(), data.view());
    if (weighted) {
      h.fill(columns, weights.view());
    } else {
      h.fill(columns);
    }
  }
};

/// Expects `bad` to throw tally::error and to leave f.h unchanged.
template <class F>
void expect_rejected(filled& f, F bad) {
  ASSERT_GT(f.h.samples(), 0u);
  const snapshot before(f.h);
  EXPECT_THROW(bad(f.h), tally::error);
  expect_unchanged(f.h, before);
}

TEST(FillErrors, WeightsOfWrongLengthOrType) {
  for (bool weighted : {true, false}) {
    filled f(weighted);
    const tally::view s = f.data.view();
    if (weighted) {
      const column shorter = make_column(dtype::f64, random_weights(999, 9));
      const column longer = make_column(dtype::f64, random_weights(1001, 9));
      expect_rejected(f, [&](tally::histogram& h) { h.fill(s, shorter.view()); });
      expect_rejected(f, [&](tally::histogram& h) { h.fill(s, longer.view()); });
      for (dtype t : {dtype::i32, dtype::u8, dtype::i64, dtype::f16, dtype::bf16}) {
        SCOPED_TRACE(std::string(tally::name_of(t)));
        const column w = make_column(t, std::vector<double>(1000, 1.0));
        expect_rejected(f, [&](tally::histogram& h) { h.fill(s, w.view()); });
      }
    } else {
      // A weighted fill on an unweighted histogram.
      expect_rejected(f, [&](tally::histogram& h) { h.fill(s, f.weights.view()); });
    }
  }
}

TEST(FillErrors, NullPointersAndBadStrides) {
  for (bool weighted : {false, true}) {
    filled f(weighted);
    auto fill = [&](tally::histogram& h, const tally::view& s, const tally::view& w) {
      if (weighted) {
        h.fill(s, w);
      } else {
        h.fill(s);
      }
    };
    const tally::view s = f.data.view();
    const tally::view w = f.weights.view();
    tally::view null_samples = s;
    null_samples.data = nullptr;
    expect_rejected(f, [&](tally::histogram& h) { fill(h, null_samples, w); });
    for (std::int64_t stride : {-1, -3}) {
      tally::view bad = s;
      bad.stride = stride;
      expect_rejected(f, [&](tally::histogram& h) { fill(h, bad, w); });
    }
    tally::view negative = s;
    negative.size = -1;
    expect_rejected(f, [&](tally::histogram& h) { fill(h, negative, w); });
    if (weighted) {
      tally::view null_weights = w;
      null_weights.data = nullptr;
      expect_rejected(f, [&](tally::histogram& h) { fill(h, s, null_weights); });
      tally::view bad = w;
      bad.stride = -1;
      expect_rejected(f, [&](tally::histogram& h) { fill(h, s, bad); });
    }
  }
}

TEST(FillErrors, EmptyFillWithNullPointerIsAccepted) {
  filled f(false);
  const snapshot before(f.h);
  EXPECT_NO_THROW(f.h.fill(tally::view{nullptr, 0, 1, dtype::f64}));
  expect_unchanged(f.h, before);
}

TEST(FillErrors, ColumnCountAndLengthsMustMatchAxes) {
  filled one(false);
  const tally::view s = one.data.view();
  expect_rejected(one, [&](tally::histogram& h) { h.fill(std::vector<tally::view>{s, s}); });
  expect_rejected(one, [&](tally::histogram& h) { h.fill(std::vector<tally::view>{}); });

  const axis a = regular_spec(20, -1.3, 2.7).make();
  filled two(false, {a, a});
  expect_rejected(two, [&](tally::histogram& h) { h.fill(s); });
  expect_rejected(two, [&](tally::histogram& h) { h.fill(std::vector<tally::view>{s}); });
  expect_rejected(two, [&](tally::histogram& h) { h.fill(std::vector<tally::view>{s, s, s}); });
  expect_rejected(two, [&](tally::histogram& h) { h.fill(std::vector<tally::view>{s, slice(s, 0, 999)}); });
  tally::view bad_stride = s;
  bad_stride.stride = -2;
  expect_rejected(two, [&](tally::histogram& h) { h.fill(std::vector<tally::view>{s, bad_stride}); });
}

/// A fill's counts are added to many cells (2^17: the check and the addition run on the plan's
/// threads) as to few: where cells would overflow, the first is named and nothing is added.
TEST(FillErrors, CountsAddedToManyCellsNameTheFirstOverflowAndAddNothing) {
  for (const std::size_t cells : {std::size_t{300}, std::size_t{1} << 17}) {
    SCOPED_TRACE(std::to_string(cells) + " cells");
    std::vector<std::uint32_t> counts(cells), want(cells);
    std::vector<std::uint64_t> add(cells);
    for (std::size_t k = 0; k < cells; ++k) {
      counts[k] = static_cast<std::uint32_t>(k * 7 % 1000);
      add[k] = k % 13;
      want[k] = counts[k] + static_cast<std::uint32_t>(add[k]);
    }
    tally::detail::fill_job job;
    job.cells = static_cast<std::int64_t>(cells);
    job.counts32 = counts.data();
    job.plan.threads = 4;
    tally::detail::add_counts(job, add.data());
    EXPECT_EQ(counts, want);
    counts[cells - 50] = 0xFFFFFFFCu;  // + 4 overflows
    add[cells - 50] = 4;
    counts[cells - 10] = 0xFFFFFFFFu;  // + 1 overflows too, later
    add[cells - 10] = 1;
    const std::vector<std::uint32_t> before = counts;
    try {
      tally::detail::add_counts(job, add.data());
      ADD_FAILURE() << "no error";
    } catch (const tally::error& e) {
      EXPECT_NE(std::string(e.what()).find("bin " + std::to_string(cells - 50) + " "), std::string::npos) << e.what();
    }
    EXPECT_EQ(counts, before);
  }
}

TEST(FillErrors, ChannelsMisuseWritesNoHistogram) {
  const axis_spec spec = regular_spec(20, -1.3, 2.7);
  const column pixels = random_column_for(spec, dtype::f32, dist::uniform, 1200, 12);
  const column other = random_column_for(spec, dtype::f32, dist::uniform, 1200, 13);
  auto three = [&] {
    std::vector<tally::histogram> hs;
    for (int k = 0; k < 3; ++k) hs.emplace_back(spec.make(), cpu_options());
    tally::fill_channels(hs, other.view(), 3);  // non-empty state first
    return hs;
  };
  auto expect_all_rejected = [&](std::vector<tally::histogram> hs, const tally::view& v, int channels) {
    std::vector<snapshot> before;
    for (const auto& h : hs) {
      ASSERT_GT(h.samples(), 0u);
      before.emplace_back(h);
    }
    EXPECT_THROW(tally::fill_channels(hs, v, channels), tally::error);
    for (std::size_t k = 0; k < hs.size(); ++k) expect_unchanged(hs[k], before[k]);
  };
  expect_all_rejected(three(), pixels.view(), 0);
  expect_all_rejected(three(), pixels.view(), -3);
  expect_all_rejected(three(), slice(pixels.view(), 0, 1199), 3);  // not a multiple of 3
  expect_all_rejected(three(), pixels.view(), 2);                   // more histograms than channels
  tally::view null_pixels = pixels.view();
  null_pixels.data = nullptr;
  expect_all_rejected(three(), null_pixels, 3);
}

TEST(AccessErrors, CountsSumsAndFlowNeedTheRightOptions) {
  tally::options weighted = cpu_options();
  weighted.weighted = true;
  const tally::histogram w(axis::regular(4, 0, 1), weighted);
  EXPECT_THROW(w.counts(), tally::error);
  EXPECT_NO_THROW(w.sums());

  const tally::histogram u(axis::regular(4, 0, 1), cpu_options());
  EXPECT_THROW(u.sums(), tally::error);
  EXPECT_NO_THROW(u.counts());

  tally::options no_flow = cpu_options();
  no_flow.flow = false;
  const tally::histogram nf(axis::regular(4, 0, 1), no_flow);
  EXPECT_THROW(nf.flow(), tally::error);
  EXPECT_NO_THROW(u.flow());
}

TEST(NameErrors, UnknownNamesAndBadMatrices) {
  EXPECT_THROW(tally::dtype_from_name("float128"), tally::error);
  EXPECT_THROW(tally::dtype_from_name(""), tally::error);
  EXPECT_THROW(tally::backend_from_name("tpu"), tally::error);
  EXPECT_THROW(tally::strategy_from_name("gpu_magic"), tally::error);
  const column m = make_column(dtype::f64, std::vector<double>(10, 0.5));
  EXPECT_THROW(tally::columns_of(m.view(), 0), tally::error);
  EXPECT_THROW(tally::columns_of(m.view(), 3), tally::error);  // 10 elements are not n x 3
}

#if __has_include(<sys/mman.h>)
/// 2^32 + 16 bytes of u8 samples, all 0 but for a few 1s: the untouched pages of an anonymous
/// mapping all read as the kernel's one zero page, so this costs no memory, only reading time.
class zero_mapping {
 public:
  explicit zero_mapping(std::size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(p);
  }
  ~zero_mapping() {
    if (data_) munmap(data_, bytes_);
  }
  zero_mapping(const zero_mapping&) = delete;
  zero_mapping& operator=(const zero_mapping&) = delete;
  std::uint8_t* data() const { return data_; }

 private:
  std::size_t bytes_;
  std::uint8_t* data_ = nullptr;
};

/// A u32 count reaching 2^32 - 1 is fine; one more sample in that bin throws and writes nothing.
/// Needs 2^32 samples (about 5 s at 1 G samples/s on 2 cores).
TEST(FillErrors, U32CountOverflowThrowsAndWritesNothing) {
  const std::int64_t two32 = std::int64_t{1} << 32;
  zero_mapping region(static_cast<std::size_t>(two32) + 16);
  if (!region.data()) GTEST_SKIP() << "cannot map 4 GiB of address space";
  // Three samples of value 1 (overflow of integer(0, 1)) among the first 2^32 + 2 samples.
  const std::int64_t ones[] = {4096, std::int64_t{1} << 31, two32 - 100};
  for (std::int64_t at : ones) region.data()[at] = 1;
  tally::options o = cpu_options();
  o.counts = tally::count_type::u32;
  tally::histogram h(axis::integer(0, 1), o);
  h.fill(tally::view{region.data(), two32 + 2, 1, dtype::u8});  // 2^32 - 1 zeros, 3 ones
  ASSERT_EQ(h.counts(), std::vector<std::uint64_t>{0xFFFFFFFFu});
  EXPECT_TRUE(same_flow(h.flow(), {0, 3, 0}));

  const snapshot before(h);
  EXPECT_THROW(h.fill(tally::view{region.data() + 8, 1, 1, dtype::u8}), tally::error);  // one more 0
  expect_unchanged(h, before);
  // A sample that lands outside the bins overflows no count and is accepted.
  EXPECT_NO_THROW(h.fill(tally::view{region.data() + ones[0], 1, 1, dtype::u8}));
  EXPECT_EQ(h.counts(), std::vector<std::uint64_t>{0xFFFFFFFFu});
  EXPECT_TRUE(same_flow(h.flow(), {0, 4, 0}));
}
#endif

TEST(NcclErrors, CallsSayWhyTheyCannotRun) {
  // In a build without NCCL every call says so; with it, an empty sharded fill is rejected (or
  // NCCL is missing from this machine, which the message names).
  try {
    std::vector<tally::device_histogram> none;
    tally::sharded_fill(none, {}, {}, {});
    ADD_FAILURE() << "sharded_fill of no histograms returned";
  } catch (const tally::error& e) {
    const std::string what = e.what();
    if (tally::nccl_available()) {
      EXPECT_TRUE(what.find("no histograms") != std::string::npos || what.find("libnccl") != std::string::npos) << what;
    } else {
      EXPECT_NE(what.find("no NCCL support"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace tally_test

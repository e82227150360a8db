// N-D histograms (2-D, 3-D; separate columns and columns_of a row-major matrix; flow under the
// first rejecting axis; weights; density) and interleaved channels, against the reference.
#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

std::vector<ref::axis_model> models(const std::vector<axis_spec>& specs) {
  std::vector<ref::axis_model> m;
  for (const auto& s : specs) m.push_back(s.model());
  return m;
}

std::vector<tally::axis> axes_of(const std::vector<axis_spec>& specs) {
  std::vector<tally::axis> a;
  for (const auto& s : specs) a.push_back(s.make());
  return a;
}

std::vector<tally::view> views_of(const std::vector<column>& columns) {
  std::vector<tally::view> v;
  for (const auto& c : columns) v.push_back(c.view());
  return v;
}

/// One random column per axis, of the given types and shape.
std::vector<column> random_columns(const std::vector<axis_spec>& specs, const std::vector<dtype>& types, dist d,
                                   std::int64_t n, std::uint64_t seed, std::int64_t stride = 1) {
  std::vector<column> c;
  for (std::size_t i = 0; i < specs.size(); ++i)
    c.push_back(random_column_for(specs[i], types[i], d, n, seed + i, stride));
  return c;
}

struct nd_case {
  std::string name;
  std::vector<axis_spec> axes;
  std::vector<dtype> types;
  dist shape = dist::uniform;
  std::int64_t n = 0;
  std::int64_t stride = 1;
  bool weighted = false;
  int threads = 0;
};

std::vector<nd_case> nd_cases() {
  return {
      {"2d_regular_integer_f32_i16", {regular_spec(50, -1.3, 2.7), integer_spec(-30, 70)}, {dtype::f32, dtype::i16},
       dist::uniform, 100003, 1, false, 0},
      {"2d_variable_regular_weighted", {variable_spec(30, -1.3, 2.7, 4), regular_spec(257, -1.3, 2.7, dtype::f32)},
       {dtype::f64, dtype::f32}, dist::normal, (std::int64_t{1} << 20) + 3, 1, true, 3},
      {"2d_strided2_u8_f16", {regular_spec(16, 0.5, 250.5), regular_spec(8, -1.3, 2.7, dtype::f16)},
       {dtype::u8, dtype::f16}, dist::mostly_one_bin, 20011, 2, false, 2},
      {"3d_mixed", {regular_spec(17, -1.3, 2.7), variable_spec(13, 0.5, 250.5, 5), integer_spec(-5, 11)},
       {dtype::f64, dtype::u8, dtype::i32}, dist::uniform, 100003, 1, false, 8},
      {"3d_strided3_weighted_sorted", {regular_spec(9, -1.3, 2.7, dtype::bf16), regular_spec(2, -1e9, 1e9),
       integer_spec(0, 1)}, {dtype::bf16, dtype::i64, dtype::f32}, dist::sorted, 70001, 3, true, 1},
      {"3d_one_bin_u64", {regular_spec(255, 0, 1e19), integer_spec(0, 4), regular_spec(1, -1.3, 2.7)},
       {dtype::u64, dtype::u16, dtype::f64}, dist::one_bin, 1000, 1, false, 0},
  };
}

void PrintTo(const nd_case& c, std::ostream* os) { *os << c.name; }

class FillND : public ::testing::TestWithParam<nd_case> {};

TEST_P(FillND, MatchesReference) {
  const nd_case& c = GetParam();
  const std::vector<column> cols = random_columns(c.axes, c.types, c.shape, c.n, 700, c.stride);
  const column weights = make_column(dtype::f64, random_weights(c.n, 799), 1);
  const tally::view w = weights.view();
  tally::options o = cpu_options();
  o.weighted = c.weighted;
  o.threads = c.threads;
  tally::histogram h(axes_of(c.axes), o);
  ref::result want = ref::empty(models(c.axes), c.weighted);
  if (c.weighted) {
    h.fill(views_of(cols), w);
    ref::fill(want, models(c.axes), views_of(cols), &w);
  } else {
    h.fill(views_of(cols));
    ref::fill(want, models(c.axes), views_of(cols));
  }
  ASSERT_GT(binned(want), 0u);
  std::vector<std::int64_t> shape;
  for (const auto& a : c.axes) shape.push_back(a.bins);
  EXPECT_EQ(h.shape(), shape);
  EXPECT_EQ(h.size(), ref::cells_of(models(c.axes)));
  expect_matches(h, want);
  if (!c.weighted) {
    EXPECT_TRUE(same_elements(h.density(), ref::density(want, models(c.axes))));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FillND, ::testing::ValuesIn(nd_cases()),
                         [](const ::testing::TestParamInfo<nd_case>& info) { return info.param.name; });

TEST(FillND, FlowGoesToTheFirstRejectingAxis) {
  const std::vector<axis_spec> specs = {regular_spec(2, 0, 1), regular_spec(2, 0, 1)};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // (x, y): x decides when it rejects, else y.
  const column x = typed_column<double>({-1, 5, 0.5, nan, 0.5, 0.25, 1.0, 2, 0.5});
  const column y = typed_column<double>({5, -1, nan, -1, 2, 0.75, 1.0, nan, -0.5});
  tally::histogram h(axes_of(specs), cpu_options());
  h.fill({x.view(), y.view()});
  EXPECT_EQ(h.counts(), (std::vector<std::uint64_t>{0, 1, 0, 1}));  // (0.25, 0.75) and (1, 1)
  EXPECT_TRUE(same_flow(h.flow(), tally::flow_counts{2, 3, 2}));
  EXPECT_EQ(h.samples(), 9u);
  ref::result want = ref::empty(models(specs), false);
  ref::fill(want, models(specs), {x.view(), y.view()});
  expect_matches(h, want);
}

TEST(FillND, StrideZeroColumnsAndWeightsRepeatOneValue) {
  std::deque<column> kept;
  expect_stride_zero_repeats(cpu_options(), [&](column c) {
    kept.push_back(std::move(c));
    return kept.back().view();
  });
}

TEST(FillND, FlowBinsKeepEverySampleInItsAxesFlowBins) {
  expect_flow_bins_match(cpu_options(), [&](const column& c) { return c.view(); });
}

TEST(FillND, FlowBinsCountOnlyAndNoDensityOrChannels) {
  tally::options o = cpu_options();
  o.flow_bins = true;
  o.weighted = true;
  EXPECT_THROW(tally::histogram(regular_spec(4, 0, 1).make(), o), tally::error);
  o.weighted = false;
  tally::histogram h(regular_spec(4, 0, 1).make(), o);
  EXPECT_THROW(h.density(), tally::error);
  std::vector<tally::histogram> channels{h};
  const column pixels = typed_column<std::uint8_t>({1, 2, 3, 4});
  EXPECT_THROW(tally::fill_channels(channels, pixels.view(), 2), tally::error);
}

TEST(ColumnsOf, SplitsARowMajorMatrixIntoStridedColumns) {
  const std::vector<axis_spec> specs = {regular_spec(20, -1.3, 2.7), variable_spec(7, -1.3, 2.7, 6),
                                        integer_spec(-2, 3)};
  const std::int64_t n = 30011;
  const int dims = 3;
  // Row i holds (x_i, y_i, z_i): interleave three random sequences.
  std::vector<std::vector<double>> seq;
  for (int d = 0; d < dims; ++d) seq.push_back(random_values(dist::normal, specs[d].body(), n, 80 + d, true));
  std::vector<double> rows;
  for (std::int64_t i = 0; i < n; ++i)
    for (int d = 0; d < dims; ++d) rows.push_back(seq[d][static_cast<std::size_t>(i)]);
  for (dtype t : {dtype::f64, dtype::f32}) {
    SCOPED_TRACE(std::string(tally::name_of(t)));
    const column matrix = make_column(t, rows);
    const std::vector<tally::view> cols = tally::columns_of(matrix.view(), dims);
    ASSERT_EQ(cols.size(), 3u);
    for (int d = 0; d < dims; ++d) {
      EXPECT_EQ(cols[d].data, matrix.bytes.data() + d * ref::bytes_of(t));
      EXPECT_EQ(cols[d].size, n);
      EXPECT_EQ(cols[d].stride, dims);
      EXPECT_EQ(cols[d].type, t);
    }
    // The same columns built by hand, separately stored.
    std::vector<column> separate;
    for (int d = 0; d < dims; ++d) separate.push_back(make_column(t, seq[d]));
    tally::histogram h(axes_of(specs), cpu_options());
    h.fill(cols);
    ref::result want = ref::empty(models(specs), false);
    ref::fill(want, models(specs), views_of(separate));
    ASSERT_GT(binned(want), 0u);
    expect_matches(h, want);
  }
}

TEST(FillND, ChunkedFillEqualsOneFillAndResetClears) {
  const std::vector<axis_spec> specs = {regular_spec(33, -1.3, 2.7), regular_spec(12, -1.3, 2.7, dtype::f32)};
  const std::vector<column> cols = random_columns(specs, {dtype::f64, dtype::f32}, dist::uniform, 50000, 90);
  tally::histogram h(axes_of(specs), cpu_options());
  const std::vector<std::int64_t> cuts = uneven_cuts(50000);
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
    h.fill({slice(cols[0].view(), cuts[i], cuts[i + 1]), slice(cols[1].view(), cuts[i], cuts[i + 1])});
  ref::result want = ref::empty(models(specs), false);
  ref::fill(want, models(specs), views_of(cols));
  ASSERT_GT(binned(want), 0u);
  expect_matches(h, want);
  h.reset();
  expect_matches(h, ref::empty(models(specs), false));
}

// ---- interleaved channels ----

struct channel_case {
  int channels;
  int active;  // histograms passed, <= channels
  dtype type;
  std::int64_t pixels;
};

void PrintTo(const channel_case& c, std::ostream* os) {
  *os << c.channels << " channels, " << c.active << " active, " << tally::name_of(c.type) << ", " << c.pixels
      << " pixels";
}

class Channels : public ::testing::TestWithParam<channel_case> {};

TEST_P(Channels, EachActiveChannelMatchesReference) {
  const channel_case& c = GetParam();
  // Channel k has its own axis (bins differ), as CUB's per-channel levels.
  std::vector<axis_spec> specs;
  for (int k = 0; k < c.active; ++k) specs.push_back(regular_spec(16 << k, 0.5 + k, 250.5 - k));
  const range body{0, 255};
  const column interleaved = make_column(
      c.type, random_values(dist::uniform, body, c.pixels * c.channels, 100 + c.channels, floating(c.type)));
  std::vector<tally::histogram> hists;
  for (const auto& s : specs) hists.emplace_back(s.make(), cpu_options());
  tally::fill_channels(hists, interleaved.view(), c.channels);
  for (int k = 0; k < c.active; ++k) {
    SCOPED_TRACE("channel " + std::to_string(k));
    const ref::result want = channel_reference(specs[k], interleaved.view(), k, c.channels, 1);
    ASSERT_GT(binned(want), 0u);
    expect_matches(hists[k], want);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Channels,
                         ::testing::Values(channel_case{1, 1, dtype::u8, 10007}, channel_case{3, 3, dtype::u8, 100003},
                                           channel_case{4, 4, dtype::u16, 20011}, channel_case{5, 5, dtype::f32, 7},
                                           channel_case{4, 3, dtype::u8, 30011}, channel_case{5, 2, dtype::f16, 1000},
                                           channel_case{3, 1, dtype::i32, 999}),
                         [](const ::testing::TestParamInfo<channel_case>& info) {
                           return "C" + std::to_string(info.param.channels) + "_active" +
                                  std::to_string(info.param.active) + "_" +
                                  std::string(tally::name_of(info.param.type)) + "_n" +
                                  std::to_string(info.param.pixels);
                         });

}  // namespace
}  // namespace tally_test

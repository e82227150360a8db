// numpy.histogram's edge rules (tally/edges.hpp) against edges numpy 2.4.6 gives, written out in
// hexadecimal; the Python suite compares them with numpy.linspace on random ranges of every type.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tally/tally.hpp"

namespace {

using tally::dtype;

TEST(Edges, Float32ArithmeticIsNumpysNotFloat64Rounded) {
  // numpy.linspace(np.float32(-13.031572), np.float32(-3.977014), 7, dtype=np.float32): computed
  // in float32, edges 2 and 4 differ from float64 linspace rounded to float32 (-0x1.406da8p+3,
  // -0x1.bfb15cp+2).
  const double lo = -0x1.a102a4p+3, hi = -0x1.fd0eccp+1;
  const std::vector<double> numpy = {-0x1.a102a4p+3, -0x1.70b826p+3, -0x1.406daap+3, -0x1.10232cp+3,
                                     -0x1.bfb15ep+2, -0x1.5f1c64p+2, -0x1.fd0eccp+1};
  EXPECT_EQ(tally::linspace_edges(6, lo, hi, dtype::f32, dtype::f32), numpy);
  const std::vector<double> via_f64 = {-0x1.a102a4p+3, -0x1.70b826p+3, -0x1.406da8p+3, -0x1.10232cp+3,
                                       -0x1.bfb15cp+2, -0x1.5f1c60p+2, -0x1.fd0eccp+1};
  EXPECT_EQ(tally::linspace_edges(6, lo, hi, dtype::f64, dtype::f32), via_f64);
  // The axis bins by numpy's edges: a variable axis where no regular one has them.
  const tally::axis a = tally::equal_bins(6, lo, hi, dtype::f32, dtype::f32);
  EXPECT_EQ(a.kind(), tally::axis_kind::variable);
  EXPECT_EQ(a.edges(), numpy);
  const tally::axis b = tally::equal_bins(6, lo, hi, dtype::f64, dtype::f32);
  EXPECT_EQ(b.kind(), tally::axis_kind::regular);
  EXPECT_EQ(b.edges(), via_f64);
}

TEST(Edges, Float64LinspaceIsTheRegularAxis) {
  // numpy.linspace(0, 0.3, 4): the step rounds down, so the middle edges are below 0.1 and 0.2.
  const std::vector<double> numpy = {0.0, 0.09999999999999999, 0.19999999999999998, 0.3};
  EXPECT_EQ(tally::linspace_edges(3, 0, 0.3, dtype::f64, dtype::f64), numpy);
  const tally::axis a = tally::equal_bins(3, 0, 0.3, dtype::f64, dtype::f64);
  EXPECT_EQ(a.kind(), tally::axis_kind::regular);
  EXPECT_EQ(a.edges(), numpy);
  EXPECT_EQ(tally::axis_of_edges(numpy).kind(), tally::axis_kind::regular);
  EXPECT_EQ(tally::axis_of_edges({0.0, 0.1, 0.2, 0.3}).kind(), tally::axis_kind::variable);
}

TEST(Edges, TooManyBinsAndOverflowAreNumpysErrors) {
  // numpy.histogram(np.float32([1, 1.0000001]), bins=100): "Too many bins for data range. ..."
  try {
    tally::equal_bins(100, 1.0, 0x1.000002p+0, dtype::f32, dtype::f32);
    ADD_FAILURE() << "100 bins between neighbouring floats";
  } catch (const tally::error& e) {
    EXPECT_STREQ(e.what(), "Too many bins for data range. Cannot create 100 finite-sized bins.");
  }
  // float16 over [-60000, 60000]: the difference overflows; numpy's edges are
  // [nan, inf, inf, inf, 60000] (its comparison finds inf >= inf: too many bins).
  const auto e = tally::linspace_edges(4, -60000, 60000, dtype::f16, dtype::f16);
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(e[4], 60000.0);
  EXPECT_THROW(tally::equal_bins(4, -60000, 60000, dtype::f16, dtype::f16), tally::error);
  // An int64 range in float64, rounded to float16 edges: [-inf, inf], numpy's outer edges.
  const tally::axis wide = tally::equal_bins(1, -0x1p63, 0x1p63, dtype::f64, dtype::f16);
  EXPECT_EQ(wide.kind(), tally::axis_kind::variable);
  EXPECT_EQ(wide.edges(), (std::vector<double>{-std::numeric_limits<double>::infinity(),
                                               std::numeric_limits<double>::infinity()}));
  EXPECT_THROW(tally::linspace_edges(0, 0, 1, dtype::f64, dtype::f64), tally::error);
  EXPECT_THROW(tally::linspace_edges(2, 0, 1, dtype::i32, dtype::f64), tally::error);
}

TEST(Edges, ZeroStepDividesFirst) {
  // numpy.linspace(0, 5e-324, 4): the step 5e-324 / 3 rounds to 0, so numpy divides i by 3 first
  // and multiplies by the difference: [0, 0, 5e-324, 5e-324].
  const double tiny = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(tally::linspace_edges(3, 0, tiny, dtype::f64, dtype::f64), (std::vector<double>{0, 0, tiny, tiny}));
  EXPECT_THROW(tally::equal_bins(3, 0, tiny, dtype::f64, dtype::f64), tally::error);  // too many bins
}

TEST(Edges, DataRangeWidensAConstantInTheSamplesType) {
  // np.float32(0.1) - 0.5 is float32 (numpy 2): -0x1.99999ap-2, not float64's -0x1.9999998p-2.
  const double x = 0x1.99999ap-4;  // np.float32(0.1)
  EXPECT_EQ(tally::data_range(true, x, x, dtype::f32), std::make_pair(-0x1.99999ap-2, 0x1.333334p-1));
  EXPECT_EQ(tally::data_range(true, x, x, dtype::f64), std::make_pair(x - 0.5, x + 0.5));
  EXPECT_EQ(tally::data_range(true, 3, 3, dtype::i64), std::make_pair(2.5, 3.5));
  EXPECT_EQ(tally::data_range(true, -1, 2, dtype::i64), std::make_pair(-1.0, 2.0));
  EXPECT_EQ(tally::data_range(false, 0, 0, dtype::f32), std::make_pair(0.0, 1.0));
  EXPECT_THROW(tally::data_range(true, 0, std::numeric_limits<double>::infinity(), dtype::f64), tally::error);
}

}  // namespace

// numpy.histogram's edge rules (tally/edges.hpp) against edges numpy 2.4.6 gives, written out in
// hexadecimal; the Python suite compares them with numpy.linspace on random ranges of every type.
// The bin estimators against numpy 2.4.6's numbers of bins for samples of the narrow types, where
// computing in float64 gives other numbers (python/tests/test_edges.py compares every type with
// numpy on random data).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
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

/// Samples of type t (values exactly of it) in a buffer that a view reads.
struct typed_samples {
  std::vector<unsigned char> bytes;
  tally::view view;

  typed_samples(dtype t, const std::vector<double>& values) : bytes(values.size() * tally::size_of(t)) {
    for (std::size_t i = 0; i < values.size(); ++i) put(t, values[i], bytes.data() + i * tally::size_of(t));
    view.data = bytes.data();
    view.size = static_cast<std::int64_t>(values.size());
    view.type = t;
  }

  static void put(dtype t, double v, unsigned char* at) {
    const auto store = [at](auto x) { std::memcpy(at, &x, sizeof x); };
    switch (t) {
      case dtype::u8: return store(static_cast<std::uint8_t>(v));
      case dtype::i8: return store(static_cast<std::int8_t>(v));
      case dtype::u16: return store(static_cast<std::uint16_t>(v));
      case dtype::i16: return store(static_cast<std::int16_t>(v));
      case dtype::u32: return store(static_cast<std::uint32_t>(v));
      case dtype::i32: return store(static_cast<std::int32_t>(v));
      case dtype::u64: return store(static_cast<std::uint64_t>(v));
      case dtype::i64: return store(static_cast<std::int64_t>(v));
      case dtype::f16: return store(tally::to_half(v));
      case dtype::bf16: return store(tally::to_bfloat16(v));
      case dtype::f32: return store(static_cast<float>(v));
      case dtype::f64: return store(v);
    }
  }
};

using ends = std::optional<std::pair<tally::range_end, tally::range_end>>;

tally::bin_estimate estimate(const char* name, dtype t, const std::vector<double>& values, const ends& range = {}) {
  const typed_samples x(t, values);
  return tally::estimate_bins(*tally::bin_estimator_from_name(name), x.view, range);
}

TEST(Estimators, NarrowTypesComputeAsNumpyDoes) {
  struct golden {
    const char* name;
    dtype type;
    std::vector<double> x;
    std::int64_t bins;  // numpy 2.4.6's (float64 arithmetic on the same values gives another)
  };
  const std::vector<golden> cases = {
      // float16's percentile differences, std, cubes, rice's and stone's widths in float16
      {"auto", dtype::f16, {-0.1292724609375, -0.1329345703125, -0.17724609375, 0.00946044921875}, 4},
      {"doane", dtype::f16, {-1643.0, -256.75, -980.5, -173.125}, 3},
      {"fd", dtype::f16, {0.09765625, 0.029937744140625, -0.1109619140625, -0.021484375, 0.19677734375,
                          0.01457977294921875}, 3},
      {"scott", dtype::f16, {-1324.0, -248.375, 420.5, 1136.0, 109.6875, -552.5, -785.0, 748.5, 1635.0}, 0},
      {"stone", dtype::f16, {-215.125, -1958.0, 388.25, 302.25, 2029.0, 697.5, 58.09375, 859.5, 610.0, -25.5625}, 8},
      {"stone", dtype::f32, {-178388.703125, 66204.671875, 62751.63671875, 81351.8359375, 11769.7861328125}, 13},
      // integer percentiles subtract in the samples' type, which wraps
      {"auto", dtype::i16, {29206, 21206, -20333}, 4},
      {"fd", dtype::i16, {29206, 21206, -20333}, 49539},
      {"fd", dtype::i8, {62, -128, 67}, 195},
      {"stone", dtype::i8, {-47, -80, -47}, 33},
      // float32's std of a constant: its mean rounds, so the width is not 0
      {"scott", dtype::f32, std::vector<double>(1000, static_cast<double>(0.1f)), 192243280},
  };
  for (const golden& c : cases) {
    const tally::bin_estimate got = estimate(c.name, c.type, c.x);
    EXPECT_EQ(got.failed, tally::bin_estimate::failure::none) << c.name << " " << tally::name_of(c.type);
    EXPECT_EQ(got.bins, c.bins) << c.name << " of " << c.x.size() << " " << tally::name_of(c.type) << " samples";
  }
}

TEST(Estimators, RangeEndsCompareAndSubtractInNumpysTypes) {
  // float16 samples and Python floats: numpy compares them as float16, 0.1 as 0.0999755859375,
  // so the sample equal to it is in range (compared as float64 it is not: 4 bins).
  const std::vector<double> x = {0.0999755859375, 0.5,       0.7001953125, 0.89990234375,
                                 0.300048828125,  0.199951171875, 0.60009765625};
  const ends floats{{tally::range_end::python_float(0.1), tally::range_end::python_float(1.0)}};
  EXPECT_EQ(estimate("sqrt", dtype::f16, x, floats).bins, 3);
  // int8 ends subtract as uint8, Python ints as int64, float16 ends as float16: the same 200 here.
  const std::vector<double> y = {-100, -90, -20, 0, 5, 50, 99, 100, 12, -7};
  const ends int8s{{tally::range_end::of_integer(dtype::i8, -100), tally::range_end::of_integer(dtype::i8, 100)}};
  const ends ints{{tally::range_end::python_int(-100), tally::range_end::python_int(100)}};
  const ends halves{{tally::range_end::of_float(dtype::f16, -100), tally::range_end::of_float(dtype::f16, 100)}};
  const std::vector<std::pair<const char*, std::int64_t>> want = {
      {"auto", 5}, {"fd", 4}, {"doane", 5}, {"rice", 5}, {"scott", 2}, {"sqrt", 4}, {"stone", 1}, {"sturges", 5}};
  for (const auto& [name, bins] : want) {
    EXPECT_EQ(estimate(name, dtype::i8, y, int8s).bins, bins) << name;
    EXPECT_EQ(estimate(name, dtype::i8, y, ints).bins, bins) << name;
    EXPECT_EQ(estimate(name, dtype::i8, y, halves).bins, bins) << name;
  }
  // Python ints beyond int64 subtract as int64 in numpy: its OverflowError.
  const ends wide{{tally::range_end::python_int(0), tally::range_end::python_int(std::numeric_limits<std::uint64_t>::max())}};
  const tally::bin_estimate w = estimate("sturges", dtype::u64, {1, 5, 9}, wide);
  EXPECT_EQ(w.failed, tally::bin_estimate::failure::overflow_error);
  EXPECT_EQ(w.message, "Python integer 18446744073709551615 out of bounds for int64");
}

TEST(Estimators, NumpysFailuresAreReported) {
  using failure = tally::bin_estimate::failure;
  // float16: numpy's stone makes 21 edges over [1000, 1010] that its float16 linspace repeats.
  const tally::bin_estimate stone =
      estimate("stone", dtype::f16, {1000.0, 1000.5, 1001.0, 1003.5, 1002.0, 1007.5, 1010.0, 1004.0});
  EXPECT_EQ(stone.failed, failure::value_error);
  EXPECT_EQ(stone.message, "Too many bins for data range. Cannot create 21 finite-sized bins.");
  // float16's ptp overflows: inf / inf (NaN) and an infinite count, as numpy's int() refuses them.
  EXPECT_EQ(estimate("sqrt", dtype::f16, {-40000.0, 40000.0, 0.0}).failed, failure::value_error);
  EXPECT_EQ(estimate("rice", dtype::f16, {-40000.0, 40000.0, 0.0}).message, "cannot convert float NaN to integer");
  const tally::bin_estimate fd = estimate("fd", dtype::f16, {-40000.0, 40000.0, 0.0, 1.0});
  EXPECT_EQ(fd.failed, failure::overflow_error);
  EXPECT_EQ(fd.message, "cannot convert float infinity to integer");
}

TEST(Estimators, EmptyConstantAndBfloat16Samples) {
  for (const char* name : {"auto", "fd", "doane", "rice", "scott", "sqrt", "stone", "sturges"}) {
    EXPECT_EQ(estimate(name, dtype::f64, {}).bins, 1) << name;
    EXPECT_EQ(estimate(name, dtype::i32, {7}).bins, 1) << name;
    EXPECT_EQ(estimate(name, dtype::u8, {3, 3, 3, 3}).bins, 1) << name;
    // Nothing in range: one bin.
    const ends above{{tally::range_end::python_float(10), tally::range_end::python_float(11)}};
    EXPECT_EQ(estimate(name, dtype::f32, {1, 2, 3}, above).bins, 1) << name;
    // bfloat16 samples are estimated as their float32 values.
    std::vector<double> x;
    for (int i = 0; i < 300; ++i) x.push_back(static_cast<double>(static_cast<float>(std::sin(i * 0.37) * 50)));
    std::vector<double> rounded;
    for (double v : x) rounded.push_back(tally::to_double(tally::to_bfloat16(v)));
    EXPECT_EQ(estimate(name, dtype::bf16, x).bins, estimate(name, dtype::f32, rounded).bins) << name;
  }
  // NaN is never in range, and left out of the data's range.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(estimate("sturges", dtype::f64, {1, nan, 2, 3, 4}).bins, estimate("sturges", dtype::f64, {1, 2, 3, 4}).bins);
  // Stone's search ends at its bound (100 candidates) for 150 spikes: numpy's warning; for 200
  // it stops at 82 (numpy 2.4.6's numbers).
  for (const auto& [spikes, bins] : {std::pair<int, std::int64_t>{150, 100}, {200, 82}}) {
    std::vector<double> x;
    for (int i = 0; i < 4000; ++i) x.push_back((i % spikes) * 10);
    const tally::bin_estimate s = estimate("stone", dtype::i16, x);
    EXPECT_EQ(s.at_search_bound, bins == 100) << spikes;
    EXPECT_EQ(s.bins, bins) << spikes;
  }
}

}  // namespace

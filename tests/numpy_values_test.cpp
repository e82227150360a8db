// Results numpy gives, written out by hand (reasoned exactly, then checked with numpy 2.4.6):
// the bins, edges, sums and densities tally must reproduce bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::axis;

/// Counts of a 1-D f64 histogram of `x`.
std::vector<std::uint64_t> counts_of(const axis& a, const column& x) {
  tally::histogram h(a, cpu_options());
  h.fill(x.view());
  return h.counts();
}

using counts = std::vector<std::uint64_t>;

TEST(Numpy, ThreeBinsOverTheUnitInterval) {
  // numpy.histogram([0, 0.1, 0.2, 0.3, 1.0], bins=3, range=(0, 1))[0] -> [4, 0, 1]
  // (edges 0, 1/3, 2/3, 1: 0.3 < 0.333.. and 1.0 is the closed last edge)
  EXPECT_EQ(counts_of(axis::regular(3, 0, 1), typed_column<double>({0, 0.1, 0.2, 0.3, 1.0})), (counts{4, 0, 1}));
}

TEST(Numpy, LinspaceEdgesOverZeroToPointThree) {
  // numpy.linspace(0, 0.3, 4).tolist() -> [0.0, 0.09999999999999999, 0.19999999999999998, 0.3]
  // step = 0.3 / 3 rounds down to 0.09999999999999999 < 0.1, so 0.1 is in bin 1, and
  // 0.2 (0.2000000000000000111) >= 0.19999999999999998 is in bin 2:
  // numpy.histogram([0.1, 0.2], bins=3, range=(0, 0.3))[0] -> [0, 1, 1]
  const axis a = axis::regular(3, 0, 0.3);
  EXPECT_EQ(a.edges(), (std::vector<double>{0.0, 0.09999999999999999, 0.19999999999999998, 0.3}));
  EXPECT_EQ(counts_of(a, typed_column<double>({0.1, 0.2})), (counts{0, 1, 1}));
}

TEST(Numpy, TenthsOfTheUnitInterval) {
  // numpy.linspace(0, 1, 11).tolist() ->
  //   [0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8, 0.9, 1.0]
  // numpy.histogram([0.3, 0.6, 0.7], bins=10, range=(0, 1))[0] -> [0, 0, 1, 0, 0, 1, 1, 0, 0, 0]
  const axis a = axis::regular(10, 0, 1);
  EXPECT_EQ(a.edges(), (std::vector<double>{0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001,
                                            0.7000000000000001, 0.8, 0.9, 1.0}));
  EXPECT_EQ(counts_of(a, typed_column<double>({0.3, 0.6, 0.7})), (counts{0, 0, 1, 0, 0, 1, 1, 0, 0, 0}));
}

TEST(Numpy, NegativeRange) {
  // numpy.linspace(-0.3, 0, 4).tolist() -> [-0.3, -0.2, -0.1, 0.0]
  // numpy.histogram([-0.1], bins=3, range=(-0.3, 0))[0] -> [0, 0, 1]
  const axis a = axis::regular(3, -0.3, 0);
  EXPECT_EQ(a.edges(), (std::vector<double>{-0.3, -0.2, -0.1, 0.0}));
  EXPECT_EQ(counts_of(a, typed_column<double>({-0.1})), (counts{0, 0, 1}));
}

TEST(Numpy, Float32SamplesUseFloat32Edges) {
  // 0.7f = 0.699999988079071; edge 7 is 0.7000000000000001 in f64 but 0.699999988079071 in f32:
  // a = numpy.array([0.7], dtype=numpy.float32)
  // numpy.histogram(a, bins=10, range=(0, 1))[0]                   -> [0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
  // numpy.histogram(a.astype(numpy.float64), bins=10, range=(0, 1))[0] -> [0, 0, 0, 0, 0, 0, 1, 0, 0, 0]
  const column a = typed_column<float>({0.7f});
  EXPECT_EQ(counts_of(axis::regular(10, 0, 1, tally::dtype::f32), a), (counts{0, 0, 0, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(counts_of(axis::regular(10, 0, 1), a), (counts{0, 0, 0, 0, 0, 0, 1, 0, 0, 0}));

  // numpy.histogram(numpy.array([0.1, 0.2, 0.3], dtype=numpy.float32), bins=3, range=(0, 0.3))
  //   -> ([0, 1, 2], [0.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896])
  const axis f32 = axis::regular(3, 0, 0.3, tally::dtype::f32);
  EXPECT_EQ(f32.edges(), (std::vector<double>{0.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896}));
  EXPECT_EQ(counts_of(f32, typed_column<float>({0.1f, 0.2f, 0.3f})), (counts{0, 1, 2}));
}

TEST(Numpy, Float16SamplesUseFloat16Edges) {
  // h = numpy.array([1/3], dtype=numpy.float16)       # 0.333251953125, the f16 edge 1 too
  // numpy.histogram(h, bins=3, range=(0, 1))[0]                      -> [0, 1, 0]
  // numpy.histogram(h.astype(numpy.float64), bins=3, range=(0, 1))[0] -> [1, 0, 0]
  const column h = typed_column<tally::half>({tally::to_half(1.0 / 3)});
  EXPECT_EQ(tally::to_double(tally::to_half(1.0 / 3)), 0.333251953125);
  EXPECT_EQ(counts_of(axis::regular(3, 0, 1, tally::dtype::f16), h), (counts{0, 1, 0}));
  EXPECT_EQ(counts_of(axis::regular(3, 0, 1), h), (counts{1, 0, 0}));
}

TEST(Numpy, Int64SamplesRoundToFloat64) {
  // numpy.histogram(numpy.array([2**53 + 1], dtype=numpy.int64), bins=1, range=(0, 2.0**53))[0] -> [1]
  // numpy.histogram(numpy.array([2**53 + 1], dtype=numpy.int64), bins=2, range=(0, 2.0**53))[0] -> [0, 1]
  const column x = typed_column<std::int64_t>({(std::int64_t{1} << 53) + 1});
  EXPECT_EQ(counts_of(axis::regular(1, 0, 0x1p53), x), (counts{1}));
  EXPECT_EQ(counts_of(axis::regular(2, 0, 0x1p53), x), (counts{0, 1}));
  // Unit integer edges ending at 2^53: the samples 2^53 + 1 round onto the last edge.
  // numpy.histogram(numpy.array([2**53 + 1, 2**53 + 1, 2**53 - 1], dtype=numpy.uint64), 1)[0] -> [3]
  // (the range [2^53 - 1, 2^53 + 1] from the data, compared exactly, the edges [2^53 - 1, 2^53])
  const column y = typed_column<std::uint64_t>({(std::uint64_t{1} << 53) + 1, (std::uint64_t{1} << 53) + 1,
                                                (std::uint64_t{1} << 53) - 1});
  const axis unit = axis::regular(1, 0x1p53 - 1, 0x1p53);
  EXPECT_FALSE(unit.unit_integer_edges());
  EXPECT_EQ(counts_of(unit, y), (counts{3}));
  EXPECT_EQ(counts_of(axis::regular_exact(1, (std::uint64_t{1} << 53) - 1, (std::uint64_t{1} << 53) + 1), y),
            (counts{3}));
  // numpy.histogram(that array, 2, (2.0**53 - 2, 2.0**53))[0] -> [0, 3]
  EXPECT_EQ(counts_of(axis::regular(2, 0x1p53 - 2, 0x1p53), y), (counts{0, 3}));
  EXPECT_TRUE(axis::regular(2, 0x1p53 - 3, 0x1p53 - 1).unit_integer_edges());
}

TEST(Numpy, Bincount) {
  // numpy.bincount([0, 1, 1, 3, 2, 1, 7]) -> [1, 3, 1, 1, 0, 0, 0, 1]
  EXPECT_EQ(counts_of(axis::integer(0, 8), typed_column<std::int64_t>({0, 1, 1, 3, 2, 1, 7})),
            (counts{1, 3, 1, 1, 0, 0, 0, 1}));
}

TEST(Numpy, Density) {
  // numpy.histogram([1, 2, 2, 3], bins=2, range=(1, 3), density=True)[0] -> [0.25, 0.75]
  tally::histogram h(axis::regular(2, 1, 3), cpu_options());
  h.fill(typed_column<double>({1, 2, 2, 3}).view());
  EXPECT_EQ(h.density(), (std::vector<double>{0.25, 0.75}));

  // f32 edges: numpy's widths are np.diff of the f32 edges, in f32.
  // numpy.histogram(numpy.array([0.5], dtype=numpy.float32), bins=3, range=(-1.3, 0.7), density=True)[0].tolist()
  //   -> [0.0, 0.0, 1.5000000894069725]
  tally::histogram f(axis::regular(3, -1.3, 0.7, tally::dtype::f32), cpu_options());
  f.fill(typed_column<float>({0.5f}).view());
  EXPECT_EQ(f.density(), (std::vector<double>{0.0, 0.0, 1.5000000894069725}));
}

TEST(Numpy, HistogramDD) {
  // numpy.histogramdd(([0, 0.5, 1], [1, 0, 0.5]), bins=(2, 2), range=((0, 1), (0, 1)))[0] -> [[0, 1], [1, 1]]
  tally::histogram h(std::vector<axis>{axis::regular(2, 0, 1), axis::regular(2, 0, 1)}, cpu_options());
  const column x = typed_column<double>({0, 0.5, 1});
  const column y = typed_column<double>({1, 0, 0.5});
  h.fill({x.view(), y.view()});
  EXPECT_EQ(h.counts(), (counts{0, 1, 1, 1}));
}

TEST(Numpy, WeightedSums) {
  // numpy.histogram([0.1, 0.2, 0.9], bins=2, range=(0, 1), weights=[0.1, 0.2, 0.3])[0].tolist()
  //   -> [0.30000000000000004, 0.3]
  tally::options o = cpu_options();
  o.weighted = true;
  tally::histogram h(axis::regular(2, 0, 1), o);
  h.fill(typed_column<double>({0.1, 0.2, 0.9}).view(), typed_column<double>({0.1, 0.2, 0.3}).view());
  EXPECT_EQ(h.sums(), (std::vector<double>{0.30000000000000004, 0.3}));
}

}  // namespace
}  // namespace tally_test

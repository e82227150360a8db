// N-D and strided counts on the CUDA backend against the CPU backend (host-memory inputs,
// options.backend = cuda): the generic shared kernel's loads ahead, stride-0 columns binned once
// per block, flow bins, NaN, unaligned and 8-byte columns, tails of every length. Each case is
// skipped, never passed, where tally::backends() reports CUDA not usable.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::strategy;

class CudaND : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }
};

/// The generic strategies that count N-D fills (the typed ones take one contiguous column).
constexpr strategy nd_strategies[] = {strategy::automatic, strategy::shared, strategy::shared_replicated,
                                      strategy::warp_aggregated, strategy::global_atomic};

/// One axis of a case and how its column is laid out.
struct column_spec {
  axis_spec axis;
  dtype type = dtype::f32;
  std::int64_t stride = 1;        // 0: one value repeated (a broadcast scalar)
  double repeated = 0;            // stride 0: the value
  bool unaligned = false;         // the column starts one byte past its type's alignment
};

/// The columns of a case, kept alive: n random samples of shape d per axis (NaN, +inf and -inf
/// sprinkled into float columns), a repeated value, or an unaligned copy.
struct columns {
  std::deque<column> kept;
  std::deque<std::vector<unsigned char>> unaligned;
  std::vector<tally::view> views;
};

columns make_columns(const std::vector<column_spec>& specs, dist d, std::int64_t n, std::uint64_t seed) {
  columns c;
  for (const column_spec& s : specs) {
    ++seed;
    if (s.stride == 0) {
      c.kept.push_back(make_column(s.type, {s.repeated}));
      tally::view v = c.kept.back().view();
      v.size = n;
      v.stride = 0;
      c.views.push_back(v);
      continue;
    }
    c.kept.push_back(random_column_for(s.axis, s.type, d, n, seed, s.stride));
    tally::view v = c.kept.back().view();
    if (s.unaligned) {
      const std::vector<unsigned char>& bytes = c.kept.back().bytes;
      c.unaligned.emplace_back(bytes.size() + 1);
      std::memcpy(c.unaligned.back().data() + 1, bytes.data(), bytes.size());
      v.data = c.unaligned.back().data() + 1;
    }
    c.views.push_back(v);
  }
  return c;
}

std::vector<tally::axis> axes_of(const std::vector<column_spec>& specs) {
  std::vector<tally::axis> a;
  for (const column_spec& s : specs) a.push_back(s.axis.make());
  return a;
}

tally::options options_of(tally::backend b, strategy s, bool flow_bins) {
  tally::options o = cpu_options();
  o.backend = b;
  o.strategy = s;
  o.flow_bins = flow_bins;
  return o;
}

/// Whether one copy of a histogram's counters (its cells and 3 flow counters) and an int per axis
/// fit a block's shared memory on this device, as the shared strategies need.
bool one_copy_fits(const tally::histogram& h) {
  tally::plan_request device;
  device.where = tally::backend::cuda;
  tally::describe_device(device);
  const auto dims = static_cast<std::int64_t>(h.axes().size());
  return (h.size() + 3) * 4 + dims * 4 <= device.device_shared_bytes;
}

/// Fills the case's columns on the CPU and, by every generic strategy that applies, on the GPU;
/// each GPU histogram equals the CPU's (cells, flow counters, samples). Returns the CPU's.
tally::histogram expect_cpu_counts(const std::vector<column_spec>& specs, const std::vector<tally::view>& views,
                                   bool flow_bins) {
  tally::histogram cpu(axes_of(specs), options_of(tally::backend::cpu, strategy::automatic, flow_bins));
  cpu.fill(views);
  for (strategy s : nd_strategies) {
    if ((s == strategy::shared || s == strategy::shared_replicated) && !one_copy_fits(cpu)) continue;
    SCOPED_TRACE(std::string(tally::name_of(s)));
    tally::histogram gpu(axes_of(specs), options_of(tally::backend::cuda, s, flow_bins));
    gpu.fill(views);
    EXPECT_TRUE(same_elements(gpu.counts(), cpu.counts()));
    EXPECT_TRUE(same_flow(gpu.flow(), cpu.flow()));
    EXPECT_EQ(gpu.samples(), cpu.samples());
    EXPECT_TRUE(gpu == cpu);
  }
  return cpu;
}

struct nd_case {
  std::string name;
  std::vector<column_spec> columns;
  std::int64_t n = 0;
};

column_spec col(axis_spec a, dtype t, std::int64_t stride = 1) { return {std::move(a), t, stride, 0, false}; }
column_spec repeated(axis_spec a, dtype t, double value) { return {std::move(a), t, 0, value, false}; }
column_spec unaligned(axis_spec a, dtype t) { return {std::move(a), t, 1, 0, true}; }

std::vector<nd_case> nd_cases() {
  // The HEP fill's histogram: a dataset (StrCategory(5)'s codes, one per fill) x pt x eta.
  const axis_spec dataset = integer_spec(0, 5), pt = regular_spec(100, 0, 500), eta = regular_spec(50, -2.5, 2.5);
  return {
      {"hep_3d_25000_cells_f32_and_stride0_i64", {repeated(dataset, dtype::i64, 3), col(pt, dtype::f32), col(eta, dtype::f32)},
       (std::int64_t{1} << 20) + 4099},
      {"3d_all_f32_columns", {col(integer_spec(-2, 6), dtype::f32), col(pt, dtype::f32), col(eta, dtype::f32)}, 300007},
      {"2d_5000_cells_f32_f64", {col(regular_spec(100, -1.3, 2.7), dtype::f32), col(variable_spec(50, -2.5, 250.5, 41), dtype::f64)},
       500009},
      {"2d_f32_edges_i16_strided", {col(regular_spec(64, -1.3, 2.7, dtype::f32), dtype::f32, 3), col(integer_spec(-30, 70), dtype::i16, 2)},
       100003},
      {"2d_unaligned_f32_u8", {unaligned(regular_spec(33, -1.3, 2.7), dtype::f32), col(regular_spec(16, 0.5, 250.5), dtype::u8)},
       70001},
      {"3d_stride0_in_the_middle", {col(regular_spec(40, -1.3, 2.7), dtype::f16), repeated(integer_spec(0, 7), dtype::f64, 2.5),
       col(regular_spec(30, -1.3, 2.7), dtype::bf16)}, 90001},
      {"4d_more_columns_than_load_ahead", {col(regular_spec(9, -1.3, 2.7), dtype::f32), col(regular_spec(8, -1.3, 2.7), dtype::i32),
       col(integer_spec(-2, 7), dtype::u16), col(regular_spec(11, -1.3, 2.7), dtype::f32)}, 200003},
      {"5d_i64_and_u64", {col(integer_spec(-3, 5), dtype::i64), col(regular_spec(4, 0, 1e19), dtype::u64),
       col(regular_spec(6, -1.3, 2.7), dtype::f32), col(integer_spec(0, 3), dtype::i8), col(regular_spec(5, -1.3, 2.7), dtype::f64)},
       60001},
      {"1d_strided_f32", {col(regular_spec(1000, -1.3, 2.7), dtype::f32, 2)}, 400009},
  };
}

void PrintTo(const nd_case& c, std::ostream* os) { *os << c.name; }

class CudaNDCases : public CudaND, public ::testing::WithParamInterface<nd_case> {};

TEST_P(CudaNDCases, EqualTheCpuBackendOnEveryDistributionWithAndWithoutFlowBins) {
  const nd_case& c = GetParam();
  std::uint64_t seed = 4000;
  for (dist d : all_dists) {
    for (bool flow_bins : {false, true}) {
      SCOPED_TRACE(std::string(name_of(d)) + (flow_bins ? ", flow bins" : ""));
      const columns cols = make_columns(c.columns, d, c.n, seed += 10);
      const tally::histogram cpu = expect_cpu_counts(c.columns, cols.views, flow_bins);
      // Something landed in a bin and something did not, so neither part passes vacuously.
      std::uint64_t binned = 0;
      for (std::uint64_t k : cpu.counts()) binned += k;
      if (flow_bins) binned -= cpu.flow().total();
      EXPECT_GT(binned, 0u);
      if (d != dist::one_bin) {
        EXPECT_GT(cpu.flow().total(), 0u);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaNDCases, ::testing::ValuesIn(nd_cases()),
                         [](const ::testing::TestParamInfo<nd_case>& info) { return info.param.name; });

TEST_F(CudaND, EveryTailLengthOfTheLastRound) {
  // A thread's samples i + k x (grid x block), k < 4: fills of every length near the rounds'
  // ends (one block of 1024 threads takes 4096 samples a round), and of 0 and 1 sample.
  const std::vector<column_spec> specs = {repeated(integer_spec(0, 5), dtype::i32, 1), col(regular_spec(20, -1.3, 2.7), dtype::f32),
                                          col(regular_spec(10, -1.3, 2.7), dtype::f32)};
  for (std::int64_t n : {0, 1, 2, 1023, 1024, 1025, 3071, 4095, 4096, 4097, 8191, 12289}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const columns cols = make_columns(specs, dist::uniform, n, 5000 + static_cast<std::uint64_t>(n));
    expect_cpu_counts(specs, cols.views, false);
    expect_cpu_counts(specs, cols.views, true);
  }
}

TEST_F(CudaND, RepeatedValuesOutsideTheAxisNanAndInfinity) {
  // A stride-0 column whose one value is in a bin, below, above or NaN: with flow bins every
  // sample goes to that axis' flow bin; without, to the flow counter of the first axis that drops
  // it, this one or an earlier one.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (double value : {2.0, -1.0, 9.0, nan, inf, -inf}) {
    SCOPED_TRACE("repeated " + std::to_string(value));
    const std::vector<column_spec> specs = {col(regular_spec(12, -1.3, 2.7), dtype::f32),
                                            repeated(regular_spec(5, 0, 5), dtype::f32, value),
                                            col(regular_spec(7, -1.3, 2.7), dtype::f32)};
    const columns cols = make_columns(specs, dist::normal, 150001, 6000);
    const tally::histogram cpu = expect_cpu_counts(specs, cols.views, false);
    EXPECT_GT(cpu.flow().total(), 0u);
    expect_cpu_counts(specs, cols.views, true);
  }
}

TEST_F(CudaND, ThePlanForTheHepCountIsTheGenericSharedKernel) {
  // What this device plans for the HEP count (3 axes, a stride-0 column): where one copy of the
  // counters (and an int per axis) fits a block's shared memory, that copy, in blocks of 1024
  // threads with several samples of each column in flight; else device memory.
  tally::plan_request device;
  device.where = tally::backend::cuda;
  ASSERT_TRUE(tally::describe_device(device));
  for (bool flow_bins : {false, true}) {
    SCOPED_TRACE(flow_bins ? "flow bins" : "no flow bins");
    const std::vector<tally::axis> axes = {tally::axis::integer(0, 5), tally::axis::regular(100, 0, 500),
                                           tally::axis::regular(50, -2.5, 2.5)};
    const tally::policy p = tally::histogram(axes, options_of(tally::backend::cuda, strategy::automatic, flow_bins))
                                .plan_for(tally::dtype::i64, 20000000);
    const std::int64_t cells = flow_bins ? 8 * 103 * 53 : 5 * 100 * 50;
    if ((cells + 3) * 4 + 3 * 4 > device.device_shared_bytes) {
      EXPECT_EQ(p.chosen, strategy::warp_aggregated) << tally::describe(p);
      continue;
    }
    EXPECT_EQ(p.chosen, strategy::shared) << tally::describe(p);
    EXPECT_EQ(p.block_threads, 1024);
    EXPECT_EQ(p.vector_bytes, 0);
    EXPECT_GT(p.unroll, 1);
  }
}

}  // namespace
}  // namespace tally_test

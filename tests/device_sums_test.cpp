// Weighted and exact sums of device samples: device_histogram's and the synchronous fills' sums
// against the synchronous CUDA fill, the host's order of fills, the documented fixed order of f64
// weighted sums, and the CPU's exact sums bit for bit. Skipped, never passed, where no CUDA device
// is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "device_helpers.hpp"
#include "device_memory.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/device.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

TEST_F(Device, WeightedSumsHaveTheBitsOfTheSynchronousFill) {
  const stream s;
  std::uint64_t seed = 7200;
  // 5000 and 65536 cells with f32 weights: the partitioned exact sums, in the stream-ordered fill's
  // temporary memory.
  for (const axis_spec& a : {regular_spec(256, -1.3, 2.7), integer_spec(0, 256), variable_spec(5000, -2.5, 250.5, 7),
                             integer_spec(-5, 65536)}) {
    for (dtype wt : {dtype::f32, dtype::f64}) {
      ++seed;
      SCOPED_TRACE(a.name() + " weights " + std::string(tally::name_of(wt)));
      const std::int64_t n = (1 << 20) + 3;
      const column host = random_column_for(a, dtype::f32, dist::normal, n, seed);
      const column w = make_column(wt, random_weights(n, seed + 1));
      const device_column dev(host.view()), dw(w.view());

      tally::options sync = device_options(true);
      sync.backend = tally::backend::cuda;
      tally::histogram want(a.make(), sync);
      want.fill(host.view(), w.view());
      want.fill(host.view());  // an unweighted fill adds 1 per sample

      device_histogram h(a.make(), device_options(true), s.get());
      h.fill(dev.view(), dw.view(), s.get());
      h.fill(dev.view(), s.get());
      EXPECT_TRUE(same_elements(h.sums(s.get()), want.sums()));
      EXPECT_TRUE(same_flow(h.flow(s.get()), want.flow()));
      EXPECT_EQ(h.counts_data(), nullptr);
      EXPECT_NE(h.sums_data(), nullptr);
    }
  }
}

/// The bytes of column c with its elements `stride` apart (the rest zero).
column spaced(const column& c, std::int64_t stride) {
  const std::size_t size = tally::size_of(c.type);
  column out = c;
  out.stride = stride;
  out.bytes.assign(static_cast<std::size_t>(c.n * stride) * size, 0);
  for (std::int64_t i = 0; i < c.n; ++i)
    std::memcpy(out.bytes.data() + static_cast<std::size_t>(i * stride) * size,
                c.bytes.data() + static_cast<std::size_t>(i * c.stride) * size, size);
  return out;
}

/// The CUDA backend's f64 weighted sums in their documented order, computed on the host: blocks of
/// 256 threads, as many as n / 16384 (1 to 4096), each a contiguous range of the samples; warp v of
/// a block takes its 32-sample groups v, v + 8, ...; the lanes of a group that share a cell pair up
/// by their ranks in it, level by level; each warp adds its groups in order, the block its warps in
/// order, and the blocks are summed as 32 consecutive parts, each in order, then the parts in order.
std::vector<double> gpu_fixed_order_sums(const ref::axis_model& a, const tally::view& x, const std::vector<double>& w) {
  const std::int64_t n = x.size, cells = a.bins;
  const std::int64_t grid = std::clamp<std::int64_t>((n + 16383) / 16384, 1, 4096);
  std::vector<double> partials(static_cast<std::size_t>(grid * cells));
  for (std::int64_t b = 0; b < grid; ++b) {
    const std::int64_t per = n / grid, extra = n % grid;
    const std::int64_t begin = b * per + std::min(b, extra), end = begin + per + (b < extra ? 1 : 0);
    std::vector<std::vector<double>> warp(8, std::vector<double>(static_cast<std::size_t>(cells), 0.0));
    for (int v = 0; v < 8; ++v) {
      for (std::int64_t base = begin + 32 * v; base < end; base += 256) {
        std::vector<std::pair<std::int64_t, double>> lanes;  // (cell, weight) in lane order
        for (std::int64_t i = base; i < std::min(base + 32, end); ++i) {
          const ref::placed p = ref::place(a, ref::read(x, i));
          if (p.f == ref::fate::in_bin) lanes.emplace_back(p.bin, w[static_cast<std::size_t>(i)]);
        }
        std::vector<bool> taken(lanes.size());
        for (std::size_t j = 0; j < lanes.size(); ++j) {
          if (taken[j]) continue;
          std::vector<double> group;
          for (std::size_t k = j; k < lanes.size(); ++k)
            if (lanes[k].first == lanes[j].first) group.push_back(lanes[k].second), taken[k] = true;
          while (group.size() > 1) {
            std::vector<double> next;
            for (std::size_t k = 0; k < group.size(); k += 2)
              next.push_back(k + 1 < group.size() ? group[k] + group[k + 1] : group[k]);
            group = next;
          }
          warp[static_cast<std::size_t>(v)][static_cast<std::size_t>(lanes[j].first)] += group[0];
        }
      }
    }
    for (std::int64_t c = 0; c < cells; ++c) {
      double total = 0.0;
      for (int v = 0; v < 8; ++v) total += warp[static_cast<std::size_t>(v)][static_cast<std::size_t>(c)];
      partials[static_cast<std::size_t>(b * cells + c)] = total;
    }
  }
  std::vector<double> sums(static_cast<std::size_t>(cells));
  for (std::int64_t c = 0; c < cells; ++c) {
    double total = 0.0;
    for (std::int64_t part = 0; part < 32; ++part) {
      double sum = 0.0;
      for (std::int64_t b = grid * part / 32; b < grid * (part + 1) / 32; ++b)
        sum += partials[static_cast<std::size_t>(b * cells + c)];
      total += sum;
    }
    sums[static_cast<std::size_t>(c)] = 0.0 + total;
  }
  return sums;
}

/// f64 weights sum in their documented order whatever the layout: the typed loop (a contiguous
/// column with a 32-bit rule, aligned weights) and the generic one (strided samples or weights, or
/// weights off their alignment, read byte by byte) give the bits of gpu_fixed_order_sums, within
/// the summation error of the reference. The weights span 2^-30 .. 2^30, so another order of
/// additions would round otherwise.
TEST_F(Device, F64WeightsSumInOneOrderWhateverTheLayout) {
  const stream s;
  std::uint64_t seed = 7300;
  for (const auto& [a, t] : {std::pair{integer_spec(0, 256), dtype::i32}, std::pair{integer_spec(-5, 300), dtype::u8},
                             std::pair{integer_spec(-50, 256), dtype::i16},
                             std::pair{regular_spec(256, 0.0, 1.0, dtype::f32), dtype::f32},
                             std::pair{regular_spec(256, -1.3, 2.7, dtype::f32), dtype::f32},
                             std::pair{variable_spec(300, -2.5, 250.5, 11), dtype::f32}}) {
    for (dist d : all_dists) {
      ++seed;
      SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d));
      const std::int64_t n = (1 << 18) + 5;
      const column x = random_column_for(a, t, d, n, seed);
      const std::vector<double> w = random_weights(n, seed + 1);
      const column wc = make_column(dtype::f64, w);
      const tally::view wv = wc.view();
      const weighted_reference r = weighted_reference_of(a.model(), x.view(), wv);
      ASSERT_GT(binned(r.want), 0u);

      // Weights 4 bytes off an 8-byte boundary (the device copy keeps the address modulo 16).
      std::vector<unsigned char> off(static_cast<std::size_t>(n) * 8 + 4);
      std::memcpy(off.data() + 4, wc.bytes.data(), static_cast<std::size_t>(n) * 8);
      const column x2 = spaced(x, 2), w3 = spaced(wc, 3);
      const device_column dx(x.view()), dx2(x2.view()), dw(wv), dw3(w3.view()),
          dwoff(tally::view{off.data() + 4, n, 1, dtype::f64});
      const auto sums = [&](const tally::view& samples, const tally::view& weights) {
        device_histogram h(a.make(), device_options(true), s.get());
        h.fill(samples, weights, s.get());
        EXPECT_TRUE(same_flow(h.flow(s.get()), r.want.flow));
        return h.sums(s.get());
      };
      const std::vector<double> typed = sums(dx.view(), dw.view());
      expect_within_summation_error(typed, r);
      EXPECT_TRUE(same_elements(typed, gpu_fixed_order_sums(a.model(), x.view(), w))) << "the documented order";
      EXPECT_TRUE(same_elements(sums(dx.view(), dw3.view()), typed)) << "weights at a stride of 3";
      EXPECT_TRUE(same_elements(sums(dx2.view(), dw.view()), typed)) << "samples at a stride of 2";
      EXPECT_TRUE(same_elements(sums(dx.view(), dwoff.view()), typed)) << "weights off their alignment";
    }
  }
}

/// n f32 samples over `a` (the distribution chosen by seed) and spread weights of type wt
/// (infinities and a NaN for an even seed), on the host and copied to the device.
struct spread_weighted {
  column x, w;
  device_column dx, dw;
  spread_weighted(const axis_spec& a, dtype wt, std::int64_t n, std::uint64_t seed)
      : x(random_column_for(a, dtype::f32, all_dists[seed % 5], n, seed)),
        w(make_column(wt, spread_weights(n, seed + 1, seed % 2 == 0))),
        dx(x.view()),
        dw(w.view()) {}
};

/// Calls body(a, d) with fresh spread_weighted data `d` of n samples for each axis a and each
/// weight type (f32, f64), seeds from seed + 1 on.
template <class Body>
void each_spread_weighted(const std::vector<axis_spec>& axes, std::int64_t n, std::uint64_t seed, const Body& body) {
  for (const axis_spec& a : axes) {
    for (dtype wt : {dtype::f32, dtype::f64}) {
      SCOPED_TRACE(a.name() + " weights " + std::string(tally::name_of(wt)));
      const spread_weighted d(a, wt, n, ++seed);
      body(a, d);
    }
  }
}

TEST_F(Device, ExactSumsInPartsEqualOneCpuFillBitForBit) {
  // options::exact_sums keeps the words on the device: fills of uneven parts (f32 weights through
  // the exact kernel, partitioned above ~4100 cells; f64 through the wide atomics; infinities and
  // NaNs among them; an unweighted fill adding ones) equal one CPU fill of all the data, and
  // reset clears the words.
  const stream s;
  std::mt19937_64 gen(7300);
  const std::int64_t n = 400003;
  const std::vector<axis_spec> axes = {regular_spec(256, -1.3, 2.7), integer_spec(-5, 3000), integer_spec(-5, 5000),
                                       variable_spec(23, -1.3, 2.7, 11)};
  each_spread_weighted(axes, n, 7300, [&](const axis_spec& a, const spread_weighted& d) {
    const tally::view host = d.x.view(), w = d.w.view(), dev = d.dx.view(), dw = d.dw.view();

    tally::options exact = device_options(true);
    exact.exact_sums = true;
    exact.backend = tally::backend::cpu;
    tally::histogram want(a.make(), exact);
    want.fill(host, w);
    want.fill(host);

    exact.backend = tally::backend::automatic;
    device_histogram h(a.make(), exact, s.get());
    std::vector<std::int64_t> cuts = {0, n};
    for (int i = 0; i < 3; ++i) cuts.push_back(std::uniform_int_distribution<std::int64_t>(0, n)(gen));
    std::sort(cuts.begin(), cuts.end());
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
      h.fill(slice(dev, cuts[i], cuts[i + 1]), slice(dw, cuts[i], cuts[i + 1]), s.get());
    h.fill(dev, s.get());
    EXPECT_TRUE(same_elements(h.sums(s.get()), want.sums()));
    EXPECT_TRUE(same_flow(h.flow(s.get()), want.flow()));

    h.reset(s.get());
    h.fill(dev, dw, s.get());
    tally::histogram once(a.make(), exact);
    once.fill(host, w);
    EXPECT_TRUE(same_elements(h.sums(s.get()), once.sums()));
  });
  tally::options unweighted = device_options(false);
  unweighted.exact_sums = true;
  EXPECT_THROW(device_histogram(regular_spec(8, 0.0, 1.0).make(), unweighted), tally::error);
}

TEST_F(Device, SynchronousWeightedFillsKeepTheHostsOrderOfSums) {
  // Plain f64 sums add fill by fill on the host: fl(fl(h + a) + b). Device fills after a CPU
  // fill equal merges in fill order bit for bit, and device fills into zero sums equal them too.
  std::uint64_t seed = 7700;
  for (const axis_spec& a : {regular_spec(256, -1.3, 2.7), integer_spec(-5, 5000), integer_spec(-5, 65536)}) {
    for (dtype wt : {dtype::f32, dtype::f64}) {
      seed += 10;
      SCOPED_TRACE(a.name() + " weights " + std::string(tally::name_of(wt)));
      const std::int64_t n = 200003;
      std::vector<column> xs, ws;
      for (int i = 0; i < 3; ++i) {
        xs.push_back(random_column_for(a, dtype::i32, all_dists[(seed + i) % 5], n, seed + i));
        ws.push_back(make_column(wt, random_weights(n, seed + 5 + i)));
      }
      const device_column x1(xs[1].view()), w1(ws[1].view()), x2(xs[2].view()), w2(ws[2].view());
      const auto one_fill = [&](int i) {
        tally::histogram part(a.make(), sync_options(true));
        if (i == 0) part.fill(xs[0].view(), ws[0].view());
        else if (i == 1) part.fill(x1.view(), w1.view());
        else part.fill(x2.view(), w2.view());
        return part;
      };
      tally::histogram want = one_fill(0);
      want += one_fill(1);
      want += one_fill(2);
      ASSERT_GT(want.samples() - want.flow().total(), 0u);

      tally::histogram h(a.make(), sync_options(true));
      h.fill(xs[0].view(), ws[0].view());  // host samples: the CPU
      h.fill(x1.view(), w1.view());
      h.fill(x2.view(), w2.view());
      EXPECT_TRUE(same_elements(h.sums(), want.sums())) << "after a CPU fill";
      EXPECT_TRUE(same_flow(h.flow(), want.flow()));

      tally::histogram zero(a.make(), sync_options(true)), parts = one_fill(1);
      zero.fill(x1.view(), w1.view());
      zero.fill(x2.view(), w2.view());
      parts += one_fill(2);
      EXPECT_TRUE(same_elements(zero.sums(), parts.sums())) << "over zero sums";
      EXPECT_TRUE(zero == parts);
    }
  }
}

TEST_F(Device, SynchronousExactSumsGatherOnTheDevice) {
  const std::int64_t n = 300003;
  each_spread_weighted({regular_spec(256, -1.3, 2.7), integer_spec(-5, 5000)}, n, 7800,
                       [&](const axis_spec& a, const spread_weighted& d) {
    const tally::view x = d.x.view(), w = d.w.view(), dx = d.dx.view(), dw = d.dw.view();
    tally::options exact = sync_options(true);
    exact.exact_sums = true;
    tally::histogram want(a.make(), exact);  // host samples: the CPU
    want.fill(x, w);
    want.fill(x, w);
    want.fill(x);

    tally::histogram h(a.make(), exact);
    h.fill(slice(dx, 0, n / 2), slice(dw, 0, n / 2));
    h.fill(slice(dx, n / 2, n), slice(dw, n / 2, n));
    h.fill(x, w);  // host samples: the CPU, after the pending fills are taken
    h.fill(dx);
    EXPECT_TRUE(h == want);
    EXPECT_TRUE(same_elements(h.sums(), want.sums()));
    EXPECT_EQ(h.exact_digits(), want.exact_digits());
    EXPECT_EQ(tally::serialize(h), tally::serialize(want));
  });
}

TEST_F(Device, ExactWideSumsOfAHotCellAddRunsAndEqualTheCpu) {
  // options::exact_sums with f64 weights into one hot cell: a lane adds its runs of terms of one
  // cell and limb in registers, then each run into the cell's words (the runs' limit of
  // kWideRunTerms needs more samples a lane than a test fills; ExactSum.WideRuns* covers it). The
  // weights, a quarter each: the largest doubles, +max then -max (cancelling exactly); subnormals
  // and signed zeros; spread magnitudes with infinities and a NaN; ones. One sample in 97 lands
  // in another cell or past the axis.
  const axis_spec a = integer_spec(0, 4);
  const std::int64_t n = 200003;
  const double big = std::numeric_limits<double>::max(), tiny = std::numeric_limits<double>::denorm_min();
  const std::vector<double> spread = spread_weights(n, 7851, true);
  std::vector<double> xs(n, 2.0), ws(n);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % 97 == 0) xs[i] = static_cast<double>(i % 6) - 1;  // -1 .. 4: both flows too
    const std::int64_t quarter = i * 4 / n;
    ws[i] = quarter == 0   ? (i < n / 8 ? big : -big)
            : quarter == 1 ? (i % 5 == 0 ? (i % 2 ? -0.0 : 0.0) : tiny * static_cast<double>(i % 1000) * (i % 3 ? 1 : -1))
            : quarter == 2 ? spread[i]
                           : 1.0;
  }
  for (dtype wt : {dtype::f64, dtype::f32}) {
    SCOPED_TRACE(std::string(tally::name_of(wt)) + " weights");
    const column x = make_column(dtype::i32, xs), w = make_column(wt, ws);
    const device_column dx(x.view()), dw(w.view());
    tally::options exact = sync_options(true);
    exact.exact_sums = true;
    tally::histogram want(a.make(), exact);  // host samples: the CPU
    want.fill(x.view(), w.view());
    tally::histogram h(a.make(), exact);
    h.fill(dx.view(), dw.view());
    EXPECT_TRUE(h == want);
    EXPECT_EQ(h.exact_digits(), want.exact_digits());
    EXPECT_TRUE(same_elements(h.sums(), want.sums()));
  }
}

}  // namespace
}  // namespace tally_test

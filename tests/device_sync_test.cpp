// tally::histogram filled from device memory: the fills gather on the device, and every reader
// takes them first (copies, merges, reset, assign, const readers on several threads); u32 counts
// and flow counters checked against the fills still pending. Skipped, never passed, where no CUDA
// device is usable.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "device_helpers.hpp"
#include "device_memory.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

TEST_F(Device, SynchronousFillsOfDeviceSamplesGatherUntilRead) {
  std::uint64_t seed = 7600;
  for (tally::count_type width : {tally::count_type::u64, tally::count_type::u32}) {
    for (const axis_spec& a : {integer_spec(-50, 4096), regular_spec(257, -1.3, 2.7, dtype::f32),
                               variable_spec(70000, -2.5, 250.5, 7600)}) {
      ++seed;
      SCOPED_TRACE(a.name() + (width == tally::count_type::u32 ? " u32" : " u64"));
      const std::int64_t n = 300007;
      const column x = random_column_for(a, dtype::f32, all_dists[seed % 5], n, seed);
      const column y = random_column_for(a, dtype::i32, all_dists[(seed + 1) % 5], n, seed + 1);
      const device_column dx(x.view()), dy(y.view());
      tally::options o = sync_options();
      o.counts = width;
      tally::histogram h(a.make(), o);
      ref::result want = ref::empty({a.model()}, false);
      h.fill(slice(dx.view(), 0, n / 3));
      h.fill(slice(dx.view(), n / 3, n));
      h.fill(dy.view());
      ref::fill(want, a.model(), x.view());
      ref::fill(want, a.model(), y.view());
      ASSERT_GT(binned(want), 0u);
      EXPECT_EQ(h.samples(), want.samples) << "samples() counts pending fills";
      const tally::histogram copy = h;  // takes the pending fills
      tally_test::expect_matches(copy, want);
      tally_test::expect_matches(h, want);

      // After a read: more device fills, then a CPU fill (host samples) and a merge.
      h.fill(dx.view());
      ref::fill(want, a.model(), x.view());
      h.fill(y.view());  // host memory: the CPU backend, after the pending fill is taken
      ref::fill(want, a.model(), y.view());
      h += copy;
      ref::fill(want, a.model(), x.view());
      ref::fill(want, a.model(), y.view());
      tally_test::expect_matches(h, want);
      tally::histogram cpu(a.make(), cpu_options());
      cpu.fill(x.view());
      cpu.fill(y.view());
      cpu.fill(x.view());
      cpu.fill(y.view());
      cpu.fill(x.view());
      cpu.fill(y.view());
      EXPECT_TRUE(same_elements(h.counts(), cpu.counts()));

      // reset and assign drop what is pending.
      h.fill(dy.view());
      h.reset();
      EXPECT_EQ(h.counts(), std::vector<std::uint64_t>(static_cast<std::size_t>(h.size()), 0));
      h.fill(dy.view());
      std::vector<std::uint64_t> given(static_cast<std::size_t>(h.size()));
      for (std::size_t i = 0; i < given.size(); ++i) given[i] = i % 7;
      h.assign(given, {}, 99);
      h.fill(dy.view());
      std::vector<std::uint64_t> expected = given;
      ref::result only_y = ref::empty({a.model()}, false);
      ref::fill(only_y, a.model(), y.view());
      for (std::size_t i = 0; i < given.size(); ++i) expected[i] += only_y.counts[i];
      EXPECT_TRUE(same_elements(h.counts(), expected));
      EXPECT_EQ(h.samples(), 99u + static_cast<std::uint64_t>(n));
      EXPECT_TRUE(same_flow(h.flow(), only_y.flow));
    }
  }
}

TEST_F(Device, SynchronousU32CountsNearTheirLimitAreCheckedAtTheFill) {
  // A fill that could take a cell past 2^32 - 1 is checked on the host before it changes
  // anything, pending fills included.
  const axis_spec a = integer_spec(0, 16);
  tally::options o = sync_options();
  o.counts = tally::count_type::u32;
  tally::histogram h(a.make(), o);
  std::vector<std::uint64_t> given(16, 0);
  given[3] = 0xFFFFFFFFu - 8;
  h.assign(given, {}, 0xFFFFFFFFu - 8);
  const column threes = make_column(dtype::i32, std::vector<double>(5, 3.0));
  const device_column d(threes.view());
  h.fill(d.view());  // 2^32 - 4 in cell 3
  const snapshot before(h);
  EXPECT_EQ(h.counts()[3], 0xFFFFFFFFu - 3);
  expect_error([&] { h.fill(d.view()); }, "overflow");
  expect_unchanged(h, before);
  h.fill(slice(d.view(), 0, 3));
  EXPECT_EQ(h.counts()[3], 0xFFFFFFFFu);

  // Counts assigned beyond samples(): the largest cell, not samples(), bounds what may gather.
  tally::histogram big(a.make(), o);
  big.assign(given, {}, 0);
  big.fill(slice(d.view(), 0, 4));  // 2^32 - 5 in cell 3
  const snapshot was(big);
  expect_error([&] { big.fill(d.view()); }, "overflow");
  expect_unchanged(big, was);
  big.fill(slice(d.view(), 0, 4));
  EXPECT_EQ(big.counts()[3], 0xFFFFFFFFu);
}

TEST_F(Device, SynchronousMergesCheckPendingFlowCounters) {
  // A merge's overflow checks see the fills still on the device.
  const axis_spec a = integer_spec(0, 16);
  const column below = make_column(dtype::i32, std::vector<double>(5, -1.0));
  const device_column d(below.view());
  tally::histogram h(a.make(), sync_options()), twin(a.make(), sync_options()), other(a.make(), sync_options());
  for (tally::histogram* x : {&h, &twin}) {
    x->assign(std::vector<std::uint64_t>(16, 0), {~std::uint64_t{0} - 9, 0, 0}, 0);
    x->fill(d.view());  // 2^64 - 5 underflows, 5 of them pending
  }
  other.fill(below.view());  // host samples: 5 underflows on the CPU
  const snapshot was(twin);  // read from the twin: h keeps its fill pending until the merge
  EXPECT_EQ(was.flow.underflow, ~std::uint64_t{0} - 4);
  expect_error([&] { h += other; }, "overflow");
  expect_unchanged(h, was);
}

TEST_F(Device, SynchronousReadersTakePendingFillsOnce) {
  // Const readers on several threads at once: each sees every fill, the storage is settled once.
  const axis_spec a = integer_spec(0, 4096);
  const column x = random_column_for(a, dtype::i32, dist::uniform, 1 << 20, 7900);
  const device_column dx(x.view());
  tally::histogram h(a.make(), sync_options());
  h.fill(dx.view());
  h.fill(dx.view());
  ref::result want = ref::empty({a.model()}, false);
  ref::fill(want, a.model(), x.view());
  ref::fill(want, a.model(), x.view());
  std::vector<std::vector<std::uint64_t>> seen(4);
  std::vector<std::thread> readers;
  const tally::histogram& shared = h;
  for (auto& s : seen) readers.emplace_back([&shared, &s] { s = shared.counts(); });
  for (auto& t : readers) t.join();
  for (const auto& s : seen) EXPECT_TRUE(same_elements(s, want.counts));
}

}  // namespace
}  // namespace tally_test

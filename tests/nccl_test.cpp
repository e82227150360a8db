// tally/nccl.hpp over the GPUs this process sees (one communicator a device, one clique): data
// sharded over them, filled and summed by sharded_fill, all_reduce or reduce, equals the CPU
// backend's histogram of all the data, counts exactly and sums bit for bit (integer weights, so
// that every partial sum is exact), flow counters included, for every axis kind. With one GPU
// the communicator has one rank; with several, the shards meet through NCCL. Skipped, never
// passed, where no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "device_memory.hpp"
#include "random_data.hpp"
#include "tally/nccl.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::device_histogram;

constexpr int most_devices = 8;

/// One communicator and one stream per visible device (up to most_devices).
class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
    int count = 0;
    check(cudaGetDeviceCount(&count));
    for (int d = 0; d < std::min(count, most_devices); ++d) devices_.push_back(d);
    comms_.resize(devices_.size());
    ASSERT_EQ(ncclCommInitAll(comms_.data(), static_cast<int>(devices_.size()), devices_.data()), ncclSuccess);
    for (int d : devices_) {
      on(d);
      cudaStream_t s = nullptr;
      check(cudaStreamCreate(&s));
      streams_.push_back(s);
    }
  }
  void TearDown() override {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
      on(devices_[i]);
      cudaStreamSynchronize(streams_[i]);
      cudaStreamDestroy(streams_[i]);
    }
    for (ncclComm_t c : comms_)
      if (c) ncclCommDestroy(c);
  }
  static void on(int device) { check(cudaSetDevice(device)); }
  std::size_t ranks() const { return devices_.size(); }
  std::vector<void*> streams() const { return {streams_.begin(), streams_.end()}; }

  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};

struct data_case {
  axis_spec axis;
  dtype type;
};

/// Every axis kind, bins from 30 to 2^16, float samples with NaN and infinities, flow outside.
std::vector<data_case> data_cases() {
  return {{regular_spec(256, -1.3, 2.7), dtype::f32},
          {regular_spec(1 << 16, -1.3, 2.7, dtype::f32), dtype::f32},
          {regular_exact_spec(100, tally::integer_value(-1000), tally::integer_value(1000)), dtype::i64},
          {variable_spec(255, -2.5, 250.5, 7400), dtype::f64},
          {integer_edges_spec({-7, 0, 3, 50, 51, 400}, false), dtype::i32},
          {integer_spec(-50, 256), dtype::i32}};
}

tally::options with_flow(bool weighted, bool exact_sums = false) {
  tally::options o;
  o.flow = true;
  o.weighted = weighted;
  o.exact_sums = exact_sums;
  return o;
}

/// Random integer weights (|w| < 2^32): sums of 10^5 of them are exact in f64, in any order.
column integer_weights(std::int64_t n, std::uint64_t seed) {
  std::vector<double> w = random_weights(n, seed);
  for (double& x : w) x = std::nearbyint(x);
  return make_column(dtype::f64, w);
}

/// The CPU backend's histogram of all the samples (and weights).
tally::histogram cpu_histogram(const tally::axis& a, const tally::options& opts, const column& x, const column* w) {
  tally::options o = opts;
  o.backend = tally::backend::cpu;
  tally::histogram h(a, o);
  if (w) {
    h.fill(x.view(), w->view());
  } else {
    h.fill(x.view());
  }
  return h;
}

/// The device histogram's cells and flow equal the CPU histogram's (sums bit for bit).
void expect_equal(const device_histogram& got, const tally::histogram& want, void* stream) {
  if (want.weighted()) {
    EXPECT_TRUE(same_elements(got.sums(stream), want.sums())) << "sums";
  } else {
    EXPECT_TRUE(same_elements(got.counts(stream), want.counts())) << "counts";
  }
  EXPECT_TRUE(same_flow(got.flow(stream), want.flow()));
}

/// Shard i of n: uneven cuts, so the ranks' histograms differ.
tally::view shard(const tally::view& all, std::size_t i, std::size_t n) {
  const std::int64_t size = all.size;
  const auto cut = [&](std::size_t k) { return k == n ? size : static_cast<std::int64_t>(k * k) * size / static_cast<std::int64_t>(n * n + 1); };
  return slice(all, cut(i), cut(i + 1));
}

TEST_F(Nccl, ShardedFillEqualsOneFillOfAllTheData) {
  // Counts; sums of integer weights (every partial sum exact in f64); exact sums of spread f32 or
  // f64 weights with infinities and NaNs (whose f64 partial sums would depend on the order).
  enum mode { counts, sums, exact_sums };
  std::uint64_t seed = 7500;
  for (const data_case& c : data_cases()) {
    for (mode m : {counts, sums, exact_sums}) {
      ++seed;
      const bool weighted = m != counts;
      const dtype weight_type = seed % 2 ? dtype::f32 : dtype::f64;
      SCOPED_TRACE(c.axis.name() + (m == counts ? " counts" : m == sums ? " weighted" : " exact sums of " +
                   std::string(tally::name_of(weight_type))) + ", " + std::to_string(ranks()) + " GPUs");
      const std::int64_t n = 200003;
      const dist d = m == exact_sums ? all_dists[seed % 5] : dist::uniform;
      const column x = random_column_for(c.axis, c.type, d, n, seed);
      const column w = m == exact_sums ? make_column(weight_type, spread_weights(n, seed + 1, seed % 3 == 0))
                                       : integer_weights(n, seed + 1);
      const tally::options opts = with_flow(weighted, m == exact_sums);
      const tally::histogram want = cpu_histogram(c.axis.make(), opts, x, weighted ? &w : nullptr);
      if (d == dist::uniform) {
        ASSERT_GT(want.flow().total(), 0u);
      }

      std::vector<std::unique_ptr<device_column>> xs, ws;
      std::vector<tally::view> x_shards, w_shards;
      std::vector<device_histogram> per_device;
      for (std::size_t i = 0; i < ranks(); ++i) {
        on(devices_[i]);
        xs.push_back(std::make_unique<device_column>(shard(x.view(), i, ranks())));
        x_shards.push_back(xs.back()->view());
        if (weighted) {
          ws.push_back(std::make_unique<device_column>(shard(w.view(), i, ranks())));
          w_shards.push_back(ws.back()->view());
        }
        per_device.emplace_back(c.axis.make(), opts, streams_[i]);
      }
      tally::sharded_fill(per_device, x_shards, comms_, streams(), w_shards);
      for (std::size_t i = 0; i < ranks(); ++i) {
        SCOPED_TRACE("device " + std::to_string(devices_[i]));
        expect_equal(per_device[i], want, streams_[i]);
      }
    }
  }
}

TEST_F(Nccl, AllReduceAndReduceOfTwoDimensionsEqualOneFill) {
  std::uint64_t seed = 7600;
  const std::vector<axis_spec> specs = {regular_spec(64, -1.3, 2.7), integer_spec(-10, 30)};
  const std::vector<tally::axis> axes = {specs[0].make(), specs[1].make()};
  for (bool root_only : {false, true}) {
    for (bool weighted : {false, true}) {
      seed += 3;
      SCOPED_TRACE(std::string(root_only ? "reduce" : "all_reduce") + (weighted ? " weighted" : " counts"));
      const std::int64_t n = 100003;
      const column x = random_column_for(specs[0], dtype::f64, dist::uniform, n, seed);
      const column y = random_column_for(specs[1], dtype::i16, dist::normal, n, seed + 1);
      const column w = integer_weights(n, seed + 2);

      std::vector<std::unique_ptr<device_column>> memory;
      std::vector<device_histogram> per_device;
      std::vector<tally::histogram> parts;  // each device's shard alone, on the CPU
      for (std::size_t i = 0; i < ranks(); ++i) {
        on(devices_[i]);
        const tally::view xi = shard(x.view(), i, ranks()), yi = shard(y.view(), i, ranks());
        const tally::view wi = shard(w.view(), i, ranks());
        for (const tally::view& v : {xi, yi, wi}) memory.push_back(std::make_unique<device_column>(v));
        const std::size_t m = memory.size();
        per_device.emplace_back(axes, with_flow(weighted), streams_[i]);
        tally::options o = with_flow(weighted);
        o.backend = tally::backend::cpu;
        parts.emplace_back(axes, o);
        if (weighted) {
          per_device.back().fill({memory[m - 3]->view(), memory[m - 2]->view()}, memory[m - 1]->view(), streams_[i]);
          parts.back().fill({xi, yi}, wi);
        } else {
          per_device.back().fill({memory[m - 3]->view(), memory[m - 2]->view()}, streams_[i]);
          parts.back().fill({xi, yi});
        }
      }
      tally::histogram want = parts[0];
      for (std::size_t i = 1; i < ranks(); ++i) want += parts[i];
      ASSERT_GT(want.flow().total(), 0u);

      ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // one thread drives every device
      for (std::size_t i = 0; i < ranks(); ++i) {
        if (root_only) {
          tally::reduce(per_device[i], 0, comms_[i], streams_[i]);
        } else {
          tally::all_reduce(per_device[i], comms_[i], streams_[i]);
        }
      }
      ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
      for (std::size_t i = 0; i < ranks(); ++i) {
        SCOPED_TRACE("device " + std::to_string(devices_[i]));
        // reduce leaves the other ranks' partial histograms in place.
        expect_equal(per_device[i], root_only && i > 0 ? parts[i] : want, streams_[i]);
      }
    }
  }
}

/// Runs body(i) for every rank i on a thread of its own (on its device), as one process a GPU
/// would: exact sums are reduced outside any NCCL group (their digits are carried back after the
/// collective). Returns each rank's tally::error message, empty where none.
template <class Body>
std::vector<std::string> on_every_rank(const std::vector<int>& devices, Body&& body) {
  std::vector<std::string> errors(devices.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        check(cudaSetDevice(devices[i]));
        body(i);
      } catch (const tally::error& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

TEST_F(Nccl, ExactSumsAllReduceAndReduceEqualOneFillBitForBit) {
  std::uint64_t seed = 7700;
  const std::vector<axis_spec> specs = {regular_spec(64, -1.3, 2.7), integer_spec(-10, 30)};
  const std::vector<tally::axis> axes = {specs[0].make(), specs[1].make()};
  const tally::options exact = with_flow(true, true);
  for (bool root_only : {false, true}) {
    for (dtype weight_type : {dtype::f32, dtype::f64}) {
      seed += 3;
      SCOPED_TRACE(std::string(root_only ? "reduce" : "all_reduce") + ", exact sums of " +
                   std::string(tally::name_of(weight_type)));
      const std::int64_t n = 100003;
      const column x = random_column_for(specs[0], dtype::f64, dist::normal, n, seed);
      const column y = random_column_for(specs[1], dtype::i16, dist::mostly_one_bin, n, seed + 1);
      const column w = make_column(weight_type, spread_weights(n, seed + 2, root_only));
      tally::options on_cpu = exact;
      on_cpu.backend = tally::backend::cpu;
      tally::histogram want(axes, on_cpu);
      want.fill({x.view(), y.view()}, w.view());
      std::vector<tally::histogram> parts;  // each rank's shard alone, on the CPU
      for (std::size_t i = 0; i < ranks(); ++i) {
        parts.emplace_back(axes, on_cpu);
        parts.back().fill({shard(x.view(), i, ranks()), shard(y.view(), i, ranks())}, shard(w.view(), i, ranks()));
      }
      const int root = static_cast<int>(ranks()) - 1;
      std::vector<std::vector<double>> got(ranks());
      std::vector<tally::flow_counts> got_flow(ranks());
      const auto errors = on_every_rank(devices_, [&](std::size_t i) {
        const device_column xi(shard(x.view(), i, ranks())), yi(shard(y.view(), i, ranks()));
        const device_column wi(shard(w.view(), i, ranks()));
        device_histogram h(axes, exact, streams_[i]);
        h.fill({xi.view(), yi.view()}, wi.view(), streams_[i]);
        if (root_only) {
          tally::reduce(h, root, comms_[i], streams_[i]);
        } else {
          tally::all_reduce(h, comms_[i], streams_[i]);
        }
        got[i] = h.sums(streams_[i]);
        got_flow[i] = h.flow(streams_[i]);
      });
      for (std::size_t i = 0; i < ranks(); ++i) {
        SCOPED_TRACE("rank " + std::to_string(i));
        EXPECT_EQ(errors[i], "");
        // reduce leaves the other ranks' partial histograms in place.
        const tally::histogram& expected = root_only && static_cast<int>(i) != root ? parts[i] : want;
        EXPECT_TRUE(same_elements(got[i], expected.sums())) << "sums";
        EXPECT_TRUE(same_flow(got_flow[i], expected.flow()));
      }
    }
  }
  if (ranks() < 2) GTEST_SKIP() << "a layout that differs in exact_sums needs two ranks (GPUs); the sums passed";
  const auto errors = on_every_rank(devices_, [&](std::size_t i) {
    device_histogram h(axes, with_flow(true, i == 0), streams_[i]);
    tally::check_same_layout(h, comms_[i], streams_[i]);
  });
  for (const std::string& e : errors) EXPECT_NE(e.find("exact_sums"), std::string::npos) << e;
}

TEST_F(Nccl, CheckSameLayoutTellsEqualFromDifferentHistograms) {
  // check_same_layout waits for its answer, so each rank calls it from a thread of its own.
  const auto check_all = [&](auto&& bins_of_rank) {
    std::vector<std::string> errors(ranks());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < ranks(); ++i) {
      threads.emplace_back([&, i] {
        try {
          on(devices_[i]);
          device_histogram h(tally::axis::regular(bins_of_rank(i), 0.0, 1.0), with_flow(false), streams_[i]);
          tally::check_same_layout(h, comms_[i], streams_[i]);
        } catch (const tally::error& e) {
          errors[i] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    return errors;
  };
  for (const std::string& e : check_all([](std::size_t) { return 256; })) EXPECT_EQ(e, "");
  if (ranks() < 2) GTEST_SKIP() << "layouts that differ need two ranks (GPUs); equal ones passed";
  for (const std::string& e : check_all([](std::size_t i) { return 256 + static_cast<std::int64_t>(i); }))
    EXPECT_NE(e.find("differ"), std::string::npos) << e;
}

TEST_F(Nccl, BadArgumentsRaiseClearErrors) {
  on(devices_[0]);
  device_histogram h(tally::axis::regular(10, 0.0, 1.0), with_flow(false), streams_[0]);
  expect_error([&] { tally::all_reduce(h, nullptr, streams_[0]); }, "communicator is null");
  expect_error([&] { tally::reduce(h, static_cast<int>(ranks()), comms_[0], streams_[0]); }, "is not a rank");
  expect_error([&] { tally::reduce(h, -1, comms_[0], streams_[0]); }, "is not a rank");

  std::vector<device_histogram> two;
  two.emplace_back(tally::axis::regular(10, 0.0, 1.0), with_flow(false), streams_[0]);
  two.emplace_back(tally::axis::regular(11, 0.0, 1.0), with_flow(false), streams_[0]);
  const std::vector<ncclComm_t> comms(2, comms_[0]);
  const std::vector<void*> streams(2, streams_[0]);
  expect_error([&] { tally::sharded_fill(two, {tally::view{}}, comms, streams); }, "need as many shards");
  expect_error([&] { tally::sharded_fill(two, {tally::view{}, tally::view{}}, comms, streams); },
               "differs from histogram 0");
  std::vector<device_histogram> none;
  expect_error([&] { tally::sharded_fill(none, {}, {}, {}); }, "no histograms");

  device_histogram moved = std::move(h);
  (void)moved;
  expect_error([&] { tally::all_reduce(h, comms_[0], streams_[0]); }, "moved from");
  if (ranks() < 2) GTEST_SKIP() << "a communicator of another device needs two GPUs; the other errors passed";
  expect_error([&] { tally::all_reduce(moved, comms_[1], streams_[1]); }, "but the communicator on device");
}

}  // namespace
}  // namespace tally_test

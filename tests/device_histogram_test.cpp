// device_histogram, the stream-ordered entry point: samples in device memory, fills enqueued on
// a stream, counts read back only when asked. Construction, fills of every axis kind, type and
// strategy, flow, reset, the caller's allocator and the arguments refused, compared with the
// independent reference. Skipped, never passed, where no CUDA device is usable (one case checks
// the error there instead).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>
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

TEST(DeviceHistogramWithoutGpu, ConstructionSaysWhyItCannotRun) {
  if (cuda_usable()) GTEST_SKIP() << "a CUDA device is usable here: the other cases run instead";
  try {
    device_histogram h(tally::axis::regular(10, 0.0, 1.0));
    ADD_FAILURE() << "constructed a device_histogram without a usable CUDA device";
  } catch (const tally::error& e) {
    EXPECT_NE(std::string(e.what()).find("device_histogram"), std::string::npos) << e.what();
  }
}

TEST_F(Device, MatchesTheReferenceForEveryAxisKindTypeAndDistribution) {
  const stream s;
  std::uint64_t seed = 7000;
  for (dtype t : {dtype::u8, dtype::i16, dtype::i32, dtype::u64, dtype::f16, dtype::bf16, dtype::f32, dtype::f64}) {
    for (const axis_spec& a : {regular_spec(257, -1.3, 2.7, floating(t) && t != dtype::f64 ? t : dtype::f64),
                               variable_spec(255, -2.5, 250.5, seed), integer_spec(-50, 256)}) {
      for (dist d : all_dists) {
        ++seed;
        const column host = random_column_for(a, t, d, 100003 + static_cast<std::int64_t>(seed % 4), seed);
        const device_column dev(host.view());
        SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d));
        device_histogram h(a.make(), device_options(), s.get());
        // Two fills of uneven halves accumulate.
        const std::int64_t cut = host.n / 3;
        h.fill(slice(dev.view(), 0, cut), s.get());
        h.fill(slice(dev.view(), cut, host.n), s.get());
        ref::result want = ref::empty({a.model()}, false);
        ref::fill(want, a.model(), host.view());
        ASSERT_GT(binned(want), 0u);
        expect_matches(h, want, s.get());
      }
    }
  }
}

TEST_F(Device, NamedStrategiesStridedColumnsAndTwoDimensions) {
  const stream s;
  const axis_spec a = integer_spec(0, 4096);
  const column host = random_column_for(a, dtype::i32, dist::mostly_one_bin, (1 << 20) + 1, 7100);
  const device_column dev(host.view());
  ref::result want = ref::empty({a.model()}, false);
  ref::fill(want, a.model(), host.view());
  ASSERT_GT(binned(want), 0u);
  for (auto st : {tally::strategy::global_atomic, tally::strategy::global_atomic_vec, tally::strategy::warp_aggregated,
                  tally::strategy::shared, tally::strategy::shared_replicated, tally::strategy::cluster,
                  tally::strategy::partitioned}) {
    SCOPED_TRACE(std::string(tally::name_of(st)));
    tally::options o = device_options();
    o.strategy = st;
    device_histogram h(a.make(), o, s.get());
    h.fill(dev.view(), s.get());
    expect_matches(h, want, s.get());
  }

  const std::vector<axis_spec> specs = {regular_spec(64, -1.3, 2.7), integer_spec(-10, 30)};
  const column x = random_column_for(specs[0], dtype::f64, dist::uniform, 50001, 7101, 3);  // stride 3
  const column y = random_column_for(specs[1], dtype::i16, dist::normal, 50001, 7102);
  const device_column dx(x.view()), dy(y.view());
  device_histogram h2(std::vector<tally::axis>{specs[0].make(), specs[1].make()}, device_options(), s.get());
  h2.fill({dx.view(), dy.view()}, s.get());
  ref::result want2 = ref::empty({specs[0].model(), specs[1].model()}, false);
  ref::fill(want2, {specs[0].model(), specs[1].model()}, {x.view(), y.view()});
  ASSERT_GT(binned(want2), 0u);
  expect_matches(h2, want2, s.get());
  EXPECT_EQ(h2.shape(), (std::vector<std::int64_t>{64, 30}));
}

TEST_F(Device, StrideZeroColumnsAndWeightsRepeatOneValue) {
  std::deque<column> hosts;
  std::deque<device_column> copies;
  expect_stride_zero_repeats(sync_options(), [&](column c) {
    hosts.push_back(std::move(c));
    return copies.emplace_back(hosts.back().view()).view();
  });
}

TEST_F(Device, FlowBinsKeepEverySampleInItsAxesFlowBins) {
  std::deque<device_column> copies;
  expect_flow_bins_match(sync_options(), [&](const column& c) { return copies.emplace_back(c.view()).view(); });
}

TEST_F(Device, FillReturnsWhileItsStreamIsBlocked) {
  // A host function holds the stream until `open`. A fill that waited for the stream (a hidden
  // synchronisation) would return only after the opener thread sets it, 2 s later.
  const stream s;
  const axis_spec a = regular_spec(256, 0.0, 1.0, dtype::f32);
  const column host = random_column_for(a, dtype::f32, dist::uniform, 1 << 20, 7300);
  const device_column dev(host.view());
  for (bool weighted : {false, true}) {
    SCOPED_TRACE(weighted ? "weighted" : "counts");
    device_histogram h(a.make(), device_options(weighted), s.get());
    h.fill(dev.view(), s.get());  // warm-up: CUDA loads each kernel at its first launch
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
    std::atomic<bool> open{false};
    check(cudaLaunchHostFunc(
        static_cast<cudaStream_t>(s.get()),
        [](void* flag) {
          while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        &open));
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      open = true;
    });
    h.fill(dev.view(), s.get());
    h.fill(dev.view(), s.get());
    h.reset(s.get());
    h.fill(dev.view(), s.get());
    const bool returned_while_blocked = !open.load();
    opener.join();
    EXPECT_TRUE(returned_while_blocked) << "a fill waited for its stream";
    ref::result want = ref::empty({a.model()}, weighted);
    ref::fill(want, a.model(), host.view());
    ASSERT_GT(binned(want), 0u);
    if (weighted) EXPECT_TRUE(same_elements(h.sums(s.get()), want.sums));
    else EXPECT_TRUE(same_elements(h.counts(s.get()), want.counts));
  }
}

/// Counts what it hands out and gets back (through cudaMallocAsync / cudaFreeAsync).
struct counting_allocator {
  int outstanding = 0;
  int calls = 0;

  tally::device_allocator get() {
    tally::device_allocator a;
    a.context = this;
    a.allocate = [](void* self, std::size_t bytes, void* s) -> void* {
      void* p = nullptr;
      if (cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(s)) != cudaSuccess) return nullptr;
      ++static_cast<counting_allocator*>(self)->outstanding;
      ++static_cast<counting_allocator*>(self)->calls;
      return p;
    };
    a.deallocate = [](void* self, void* p, std::size_t, void* s) {
      cudaFreeAsync(p, static_cast<cudaStream_t>(s));
      --static_cast<counting_allocator*>(self)->outstanding;
    };
    return a;
  }
};

TEST_F(Device, TheCallersAllocatorGetsEveryBlockBack) {
  const stream s;
  counting_allocator alloc;
  const axis_spec a = integer_spec(-128, 256);
  const column host = random_column_for(a, dtype::i8, dist::mostly_one_bin, 300001, 7400);  // value table: temporary memory
  const device_column dev(host.view());
  {
    device_histogram h(a.make(), device_options(), s.get(), alloc.get());
    h.fill(dev.view(), s.get());
    device_histogram moved(std::move(h));
    moved.fill(dev.view(), s.get());
    ref::result want = ref::empty({a.model()}, false);
    ref::fill(want, a.model(), host.view());
    ref::fill(want, a.model(), host.view());
    ASSERT_GT(binned(want), 0u);
    expect_matches(moved, want, s.get());
    EXPECT_THROW(h.fill(dev.view(), s.get()), tally::error) << "a moved-from histogram";
    EXPECT_GE(alloc.calls, 3) << "the cells and one temporary block per fill come from the allocator";
  }
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
  EXPECT_EQ(alloc.outstanding, 0);
}

TEST_F(Device, ReleasedOnTheDefaultStreamItOutlivesItsStream) {
  // An owner handed to a framework outlives the caller's stream: after
  // release_on_default_stream the memory goes back on the default stream, after the fill.
  const axis_spec a = integer_spec(0, 4096);
  const column host = random_column_for(a, dtype::i32, dist::uniform, 1 << 20, 7450);
  const device_column dev(host.view());
  counting_allocator alloc;
  auto h = std::make_unique<device_histogram>(a.make(), device_options(), nullptr, alloc.get());
  std::vector<std::uint64_t> got;
  {
    const stream s;
    h->fill(dev.view(), s.get());
    h->release_on_default_stream();
    got = h->counts(s.get());
  }  // the stream is destroyed before the histogram
  h.reset();
  check(cudaDeviceSynchronize());
  EXPECT_EQ(alloc.outstanding, 0);
  ref::result want = ref::empty({a.model()}, false);
  ref::fill(want, a.model(), host.view());
  EXPECT_EQ(got, want.counts);
}

// A regular axis of unit integer edges: integer samples take the integer rule and the histogram
// uploads no edge table; a later fill of float samples gathers and uploads it then. Counts, sums
// (an unweighted fill of a weighted histogram reads the device's 1.0) and channels, against the
// reference.
TEST_F(Device, UnitIntegerEdgesUploadTheTablesForTheFirstFloatFill) {
  const stream s;
  const axis_spec a = regular_spec(4096, -2048, 2048);
  ASSERT_TRUE(a.make().unit_integer_edges());
  std::uint64_t seed = 7900;
  for (bool weighted : {false, true}) {
    device_histogram h(a.make(), device_options(weighted), s.get());
    ref::result want = ref::empty({a.model()}, false);  // counts: the sums of weights of 1
    for (dtype t : {dtype::i32, dtype::i16, dtype::i64, dtype::f32, dtype::i32, dtype::f64}) {
      SCOPED_TRACE(std::string(tally::name_of(t)) + (weighted ? ", weighted" : ""));
      const column host = random_column_for(a, t, dist::uniform, 100003, ++seed);
      const device_column dev(host.view());
      h.fill(dev.view(), s.get());
      ref::fill(want, a.model(), host.view());
      ASSERT_GT(binned(want), 0u);
      expect_counted(h, want, s.get());
    }
  }
  // RGB u8 pixels in one pass, each channel over the values' own unit edges [0, 256].
  const axis_spec rgb = regular_spec(256, 0, 256);
  const column pixels = random_column_for(rgb, dtype::u8, dist::uniform, 3 * 100001, ++seed);
  const device_column dev(pixels.view());
  std::vector<device_histogram> hs;
  for (int k = 0; k < 3; ++k) hs.emplace_back(rgb.make(), device_options(), s.get());
  tally::fill_channels(hs, dev.view(), 3, s.get());
  for (int k = 0; k < 3; ++k) {
    const ref::result r = channel_reference(rgb, pixels.view(), k, 3, 1);
    ASSERT_GT(binned(r), 0u);
    expect_matches(hs[static_cast<std::size_t>(k)], r, s.get());
  }
}

TEST_F(Device, BadArgumentsThrowBeforeAnythingRuns) {
  const stream s;
  const axis_spec a = integer_spec(0, 16);
  const column host = random_column_for(a, dtype::i32, dist::uniform, 1000, 7500);
  const device_column dev(host.view());
  device_histogram h(a.make(), device_options(), s.get());
  h.fill(dev.view(), s.get());
  const auto before = h.counts(s.get());
  EXPECT_THROW(h.fill(host.view(), s.get()), tally::error) << "host samples";
  const column w = make_column(dtype::f32, random_weights(1000, 7501));
  EXPECT_THROW(h.fill(dev.view(), w.view(), s.get()), tally::error) << "weights for an unweighted histogram";
  EXPECT_THROW(h.fill(std::vector<tally::view>{dev.view(), dev.view()}, s.get()), tally::error) << "two columns, one axis";
  EXPECT_EQ(h.counts(s.get()), before);
  EXPECT_THROW(h.sums(s.get()), tally::error);

  // Interleaved channels: at most one histogram a channel, whole pixels, device samples, 1-D.
  std::vector<device_histogram> two;
  two.emplace_back(a.make(), device_options(), s.get());
  two.emplace_back(a.make(), device_options(), s.get());
  EXPECT_THROW(tally::fill_channels(two, dev.view(), 1, s.get()), tally::error) << "two histograms, one channel";
  EXPECT_THROW(tally::fill_channels(two, dev.view(), 0, s.get()), tally::error) << "no channels";
  EXPECT_THROW(tally::fill_channels(two, slice(dev.view(), 0, 999), 2, s.get()), tally::error) << "half a pixel";
  EXPECT_THROW(tally::fill_channels(two, host.view(), 2, s.get()), tally::error) << "host samples";
  std::vector<device_histogram> flat;
  flat.emplace_back(std::vector<tally::axis>{a.make(), a.make()}, device_options(), s.get());
  EXPECT_THROW(tally::fill_channels(flat, dev.view(), 2, s.get()), tally::error) << "a 2-D histogram";
  EXPECT_EQ(two[0].counts(s.get()), std::vector<std::uint64_t>(16, 0)) << "a failed call counted";

  tally::options u32 = device_options();
  u32.counts = tally::count_type::u32;
  EXPECT_THROW(device_histogram(a.make(), u32), tally::error);
  tally::options on_cpu = device_options();
  on_cpu.backend = tally::backend::cpu;
  EXPECT_THROW(device_histogram(a.make(), on_cpu), tally::error);
  tally::device_allocator half_allocator;
  half_allocator.allocate = [](void*, std::size_t, void*) -> void* { return nullptr; };
  EXPECT_THROW(device_histogram(a.make(), device_options(), nullptr, half_allocator), tally::error);

  device_histogram weighted(a.make(), device_options(true), s.get());
  const device_column dw(w.view());
  const column i32_weights = make_column(dtype::i32, random_weights(1000, 7502));
  const device_column bad_type(i32_weights.view());
  EXPECT_THROW(weighted.fill(dev.view(), bad_type.view(), s.get()), tally::error) << "i32 weights";
  EXPECT_THROW(weighted.fill(dev.view(), w.view(), s.get()), tally::error) << "host weights";
  EXPECT_THROW(weighted.fill(dev.view(), slice(dw.view(), 0, 999), s.get()), tally::error) << "999 weights";
  EXPECT_THROW(weighted.counts(s.get()), tally::error);
  EXPECT_EQ(weighted.plan_for(dtype::i32, 1 << 20).where, tally::backend::cuda);
}

}  // namespace
}  // namespace tally_test

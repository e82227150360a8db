// device_histogram, the stream-ordered entry point: samples in device memory, fills enqueued on
// a stream, counts read back only when asked. Compared with the independent reference and with
// the synchronous CUDA fills. Skipped, never passed, where no CUDA device is usable (one case
// checks the error there instead).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "device_memory.hpp"
#include "random_data.hpp"
#include "reference.hpp"
#include "tally/device.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::device_histogram;

class Device : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }
};

tally::options device_options(bool weighted = false) {
  tally::options o;
  o.flow = true;
  o.weighted = weighted;
  return o;
}

/// The device histogram's counts and flow equal the reference's.
void expect_matches(const device_histogram& h, const ref::result& want, void* s) {
  EXPECT_TRUE(same_elements(h.counts(s), want.counts)) << "counts";
  EXPECT_TRUE(same_flow(h.flow(s), want.flow));
}

/// expect_matches, or for a weighted histogram filled without weights its sums (of weights of 1)
/// equal to the reference's counts.
void expect_counted(const device_histogram& h, const ref::result& want, void* s) {
  if (!h.weighted()) return expect_matches(h, want, s);
  const std::vector<double> ones(want.counts.begin(), want.counts.end());
  EXPECT_TRUE(same_elements(h.sums(s), ones)) << "sums";
  EXPECT_TRUE(same_flow(h.flow(s), want.flow));
}

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

TEST_F(Device, InterleavedChannelsInOnePassOrOneByOne) {
  // 2-4 channels of 8-bit samples into unweighted histograms take one pass (a channel without a
  // histogram is skipped, the pixels may start anywhere); 5 channels, 16-bit samples and
  // weighted histograms fill one by one, each channel a strided column. Two fills accumulate.
  const stream s;
  std::uint64_t seed = 7800;
  for (dtype t : {dtype::u8, dtype::i8, dtype::i16}) {
    const std::int64_t lo = t == dtype::u8 ? 0 : -128;
    // The last two take every value, so that each channel of one-bin data bins something.
    const std::vector<axis_spec> specs = {integer_spec(lo, 256), regular_spec(17, lo + 10.5, lo + 200.0),
                                          variable_spec(40, lo + 3.5, lo + 250.5, 11),
                                          regular_spec(7, lo - 0.5, lo + 255.5), variable_spec(9, lo - 1.5, lo + 256.5, 12)};
    for (int channels : {2, 3, 4, 5}) {
      for (dist d : {dist::uniform, dist::one_bin, dist::mostly_one_bin, dist::sorted}) {
        for (bool weighted : {false, true}) {
          ++seed;
          if (weighted && seed % 3) continue;  // a third of the cases: the one-by-one path
          const int active = static_cast<int>(seed % 2) ? channels : channels - 1;
          const std::int64_t offset = static_cast<std::int64_t>(seed % 4) * channels;
          const column host = random_column_for(specs[0], t, d, channels * 100001 + offset, seed);
          const device_column dev(host.view());
          const tally::view v = slice(dev.view(), offset, host.n);
          const tally::view hv = slice(host.view(), offset, host.n);
          SCOPED_TRACE(std::string(tally::name_of(t)) + " " + std::to_string(channels) + " channels, " +
                       std::to_string(active) + " active, " + name_of(d) + (weighted ? ", weighted" : "") +
                       ", offset " + std::to_string(offset));
          std::vector<device_histogram> hs;
          for (int k = 0; k < active; ++k)
            hs.emplace_back(specs[static_cast<std::size_t>(k)].make(), device_options(weighted), s.get());
          tally::fill_channels(hs, v, channels, s.get());
          tally::fill_channels(hs, v, channels, s.get());
          for (int k = 0; k < active; ++k) {
            SCOPED_TRACE("channel " + std::to_string(k));
            const ref::result r = channel_reference(specs[static_cast<std::size_t>(k)], hv, k, channels, 2);
            ASSERT_GT(binned(r), 0u);
            expect_counted(hs[static_cast<std::size_t>(k)], r, s.get());
          }
        }
      }
    }
  }
}

/// count_into's counts as `type` (u64, i64, f64, f32, f16, bf16) at a device address, read back
/// as doubles (the 16-bit floats decoded from their bits).
std::vector<double> read_counts(const void* out, dtype type, std::int64_t cells) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(cells) * tally::size_of(type));
  check(cudaMemcpy(bytes.data(), out, bytes.size(), cudaMemcpyDeviceToHost));
  std::vector<double> v;
  for (std::int64_t c = 0; c < cells; ++c) {
    const unsigned char* at = bytes.data() + c * tally::size_of(type);
    std::uint64_t u64 = 0;
    std::uint16_t u16 = 0;
    float f32 = 0;
    double f64 = 0;
    switch (type) {
      case dtype::u64:
      case dtype::i64: std::memcpy(&u64, at, 8); v.push_back(static_cast<double>(u64)); break;
      case dtype::f64: std::memcpy(&f64, at, 8); v.push_back(f64); break;
      case dtype::f32: std::memcpy(&f32, at, 4); v.push_back(f32); break;
      case dtype::bf16: {
        std::memcpy(&u16, at, 2);
        const std::uint32_t bits = std::uint32_t{u16} << 16;
        std::memcpy(&f32, &bits, 4);
        v.push_back(f32);
        break;
      }
      default: {  // f16: counts are non-negative integers, normal or zero or infinite
        std::memcpy(&u16, at, 2);
        const int exponent = (u16 >> 10) & 31, mantissa = u16 & 1023;
        v.push_back(exponent == 31 ? HUGE_VAL : exponent == 0 ? mantissa * std::ldexp(1.0, -24)
                                                               : std::ldexp(1024 + mantissa, exponent - 25));
      }
    }
  }
  return v;
}

/// A count as `type` holds it: rounded to nearest-even at the type's significand bits (f16: 11,
/// bf16: 8, f32: 24), infinite beyond f16's largest finite value.
double count_as(std::uint64_t count, dtype type) {
  const int bits = type == dtype::f16 ? 11 : type == dtype::bf16 ? 8 : type == dtype::f32 ? 24 : 64;
  int width = 0;
  while (width < 64 && (count >> width) != 0) ++width;
  if (width <= bits) return static_cast<double>(count);
  const int shift = width - bits;
  std::uint64_t kept = count >> shift;
  const std::uint64_t rest = count & ((std::uint64_t{1} << shift) - 1), half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (kept & 1))) ++kept;
  const double rounded = std::ldexp(static_cast<double>(kept), shift);
  return type == dtype::f16 && rounded > 65504 ? HUGE_VAL : rounded;
}

TEST_F(Device, CountIntoWritesTheReferenceCountsInTheCallersType) {
  const stream s;
  std::uint64_t seed = 7600;
  // Up to 2^17 samples: the write_once plan (one block, or a cluster of up to 8; one launch); up
  // to 2^20 the add_once plan (blocks adding into the zeroed output) but into f16 and bf16; more:
  // a histogram's fill.
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{37}, std::int64_t{4096}, std::int64_t{4097},
                         std::int64_t{16385}, std::int64_t{100003}, tally::write_once_max_samples,
                         tally::write_once_max_samples + 1, std::int64_t{1} << 20, (std::int64_t{1} << 20) + 1}) {
    for (dtype t : {dtype::u8, dtype::i32, dtype::i64, dtype::f16, dtype::f32, dtype::f64}) {
      if (n > 100003 && t != dtype::i32 && t != dtype::f64) continue;  // larger: one integer, one float type
      for (const axis_spec& a : {regular_spec(257, -1.3, 2.7, floating(t) && t != dtype::f64 ? t : dtype::f64),
                                 variable_spec(255, -2.5, 250.5, 7599), integer_spec(-50, 256)}) {
        for (dist d : all_dists) {
          ++seed;
          const column host = random_column_for(a, t, d, n, seed);
          const device_column dev(host.view());
          SCOPED_TRACE(a.name() + " " + std::string(tally::name_of(t)) + " " + name_of(d) + " n " + std::to_string(n));
          ref::result want = ref::empty({a.model()}, false);
          ref::fill(want, a.model(), host.view());
          const std::int64_t cells = static_cast<std::int64_t>(want.counts.size());
          // The output, and one sentinel element after it that no call may write.
          for (dtype out_type : {dtype::u64, dtype::i64, dtype::f64, dtype::f32, dtype::f16, dtype::bf16}) {
            const std::size_t size = tally::size_of(out_type);
            void* out = nullptr;
            check(cudaMalloc(&out, (cells + 1) * size));
            check(cudaMemset(out, 0x5a, (cells + 1) * size));
            tally::count_into({a.make()}, {dev.view()}, out, out_type, s.get());
            check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
            const std::vector<double> got = read_counts(out, out_type, cells);
            std::vector<unsigned char> after(size);
            check(cudaMemcpy(after.data(), static_cast<char*>(out) + cells * size, size, cudaMemcpyDeviceToHost));
            cudaFree(out);
            EXPECT_EQ(after, std::vector<unsigned char>(size, 0x5a)) << "written past the cells";
            std::int64_t wrong = 0;
            for (std::int64_t c = 0; c < cells; ++c) wrong += got[c] != count_as(want.counts[c], out_type);
            EXPECT_EQ(wrong, 0) << tally::name_of(out_type);
            if (d != dist::uniform || t != dtype::i32) break;  // every output type on one case of each n
          }
        }
      }
    }
  }
}

/// The nodes of the graph that `enqueue` records on a capturing stream of its own.
std::size_t captured_nodes(const std::function<void(void*)>& enqueue) {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  check(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  enqueue(s);
  cudaGraph_t graph = nullptr;
  check(cudaStreamEndCapture(s, &graph));
  std::size_t nodes = 0;
  check(cudaGraphGetNodes(graph, nullptr, &nodes));
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  return nodes;
}

TEST_F(Device, CountIntoSmallFillsAreOneLaunchOrAMemsetAndOne) {
  // nodes: 1 for write_once (one launch of a block or a cluster), 2 for add_once (a memset and a
  // launch), 0 for a histogram's fill and conversion (more).
  struct small_case {
    axis_spec a;
    dtype t;
    std::int64_t n;
    std::size_t nodes;
  };
  const small_case cases[] = {
      {integer_spec(0, 16384), dtype::i32, 4096, 1},  // (16384 + 3) x 4 bytes: shared memory past 48 KiB
      {regular_spec(257, -1.3, 2.7, dtype::f32), dtype::f32, 4096, 1},  // the kept tables
      {integer_spec(-50, 256), dtype::i64, 37, 1},                      // no tables at all
      {variable_spec(255, -2.5, 250.5, 7900), dtype::u8, 1000, 1},      // integers read the tables
      {integer_spec(0, 16384), dtype::i32, 4097, 1},                   // a cluster of one block of 1024
      {regular_spec(257, -1.3, 2.7, dtype::f64), dtype::f64, 100003, 1},  // a cluster of 7
      {integer_spec(0, 16384), dtype::i32, tally::write_once_max_samples + 1, 2},
      {integer_spec(0, 256), dtype::i32, std::int64_t{1} << 20, 2},
      {integer_spec(0, 256), dtype::i32, (std::int64_t{1} << 20) + 1, 0},
      {integer_spec(0, 16385), dtype::i32, 100, 0},
  };
  const stream s;
  std::uint64_t seed = 7910;
  for (const small_case& c : cases) {
    SCOPED_TRACE(c.a.name() + " " + std::string(tally::name_of(c.t)) + " n " + std::to_string(c.n));
    const column host = random_column_for(c.a, c.t, dist::mostly_one_bin, c.n, ++seed);
    const device_column dev(host.view());
    ref::result want = ref::empty({c.a.model()}, false);
    ref::fill(want, c.a.model(), host.view());
    std::vector<std::uint64_t> got(want.counts.size());
    void* out = nullptr;
    check(cudaMalloc(&out, got.size() * sizeof(std::uint64_t)));
    tally::count_into({c.a.make()}, {dev.view()}, out, dtype::u64, s.get());  // uploads tables where needed
    check(cudaMemcpyAsync(got.data(), out, got.size() * 8, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s.get())));
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
    EXPECT_EQ(got, want.counts);
    const std::size_t nodes =
        captured_nodes([&](void* on) { tally::count_into({c.a.make()}, {dev.view()}, out, dtype::u64, on); });
    if (c.nodes) EXPECT_EQ(nodes, c.nodes);
    else EXPECT_GT(nodes, 2u);
    cudaFree(out);
  }
}

TEST_F(Device, CountIntoOfStridedAndTwoDimensionalColumnsAndNamedStrategies) {
  const stream s;
  const std::vector<axis_spec> specs = {regular_spec(64, -1.3, 2.7), integer_spec(-10, 30)};
  for (std::int64_t n : {std::int64_t{3000}, std::int64_t{50001}}) {
    const column x = random_column_for(specs[0], dtype::f64, dist::uniform, n, 7701, 3);  // stride 3
    const column y = random_column_for(specs[1], dtype::i16, dist::normal, n, 7702);
    const device_column dx(x.view()), dy(y.view());
    ref::result want = ref::empty({specs[0].model(), specs[1].model()}, false);
    ref::fill(want, {specs[0].model(), specs[1].model()}, {x.view(), y.view()});
    ASSERT_GT(binned(want), 0u);
    void* out = nullptr;
    check(cudaMalloc(&out, 64 * 30 * sizeof(std::uint64_t)));
    tally::count_into({specs[0].make(), specs[1].make()}, {dx.view(), dy.view()}, out, dtype::u64, s.get());
    std::vector<std::uint64_t> got(64 * 30);
    check(cudaMemcpyAsync(got.data(), out, got.size() * 8, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s.get())));
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
    EXPECT_EQ(got, want.counts) << "n " << n;
    for (auto st : {tally::strategy::global_atomic, tally::strategy::shared}) {
      tally::options o;
      o.strategy = st;
      check(cudaMemset(out, 0x5a, 64 * 30 * sizeof(std::uint64_t)));
      tally::count_into({specs[0].make(), specs[1].make()}, {dx.view(), dy.view()}, out, dtype::u64, s.get(), o);
      check(cudaMemcpyAsync(got.data(), out, got.size() * 8, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s.get())));
      check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
      EXPECT_EQ(got, want.counts) << tally::name_of(st) << " n " << n;
    }
    cudaFree(out);
  }
}

TEST_F(Device, CountIntoOfOneColumnAlignedStridedOrMisaligned) {
  // One column in each layout count_into's small fills read: aligned, contiguous or strided (a
  // thread loads 8 samples before it bins them), and one byte off its type's alignment (one
  // sample at a time); at the sizes of one block, a cluster of 7 and add_once.
  const stream s;
  const axis_spec a = regular_spec(100, -1.3, 2.7, dtype::f32);
  std::uint64_t seed = 7950;
  for (std::int64_t n : {std::int64_t{3000}, std::int64_t{100003}, std::int64_t{300001}}) {
    for (std::int64_t stride : {std::int64_t{1}, std::int64_t{3}}) {
      const column host = random_column_for(a, dtype::f32, dist::normal, n, ++seed, stride);
      const std::size_t bytes = static_cast<std::size_t>((n - 1) * stride + 1) * sizeof(float);
      for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
        SCOPED_TRACE("n " + std::to_string(n) + " stride " + std::to_string(stride) + " offset " +
                     std::to_string(offset));
        // The column's bytes `offset` past a 16-byte boundary (device_column keeps it).
        std::vector<unsigned char> raw(bytes + 32);
        unsigned char* at = raw.data() + (16 - reinterpret_cast<std::uintptr_t>(raw.data()) % 16) % 16 + offset;
        std::memcpy(at, host.view().data, bytes);
        const tally::view shifted{at, n, stride, dtype::f32};
        const device_column dev(shifted);
        ref::result want = ref::empty({a.model()}, false);
        ref::fill(want, a.model(), shifted);
        ASSERT_GT(binned(want), 0u);
        std::vector<std::uint64_t> got(want.counts.size());
        void* out = nullptr;
        check(cudaMalloc(&out, got.size() * sizeof(std::uint64_t)));
        tally::count_into({a.make()}, {dev.view()}, out, dtype::u64, s.get());
        check(cudaMemcpyAsync(got.data(), out, got.size() * 8, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s.get())));
        check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
        cudaFree(out);
        EXPECT_EQ(got, want.counts);
      }
    }
  }
}

TEST_F(Device, CountIntoRejectsWhatItCannotWrite) {
  const axis_spec a = integer_spec(0, 16);
  const column host = random_column_for(a, dtype::i32, dist::uniform, 1000, 7800);
  const device_column dev(host.view());
  void* out = nullptr;
  check(cudaMalloc(&out, 16 * sizeof(std::uint64_t)));
  std::vector<std::uint64_t> host_out(16);
  EXPECT_THROW(tally::count_into({a.make()}, {host.view()}, out, dtype::u64), tally::error) << "host samples";
  EXPECT_THROW(tally::count_into({a.make()}, {dev.view()}, host_out.data(), dtype::u64), tally::error) << "host out";
  EXPECT_THROW(tally::count_into({a.make()}, {dev.view()}, nullptr, dtype::u64), tally::error) << "null out";
  EXPECT_THROW(tally::count_into({a.make()}, {dev.view()}, out, dtype::i32), tally::error) << "i32 counts";
  EXPECT_THROW(tally::count_into({a.make()}, {dev.view(), dev.view()}, out, dtype::u64), tally::error) << "two columns";
  tally::options weighted;
  weighted.weighted = true;
  EXPECT_THROW(tally::count_into({a.make()}, {dev.view()}, out, dtype::u64, nullptr, weighted), tally::error);
  tally::options u32;
  u32.counts = tally::count_type::u32;
  EXPECT_THROW(tally::count_into({a.make()}, {dev.view()}, out, dtype::u64, nullptr, u32), tally::error);
  tally::options on_cpu;
  on_cpu.backend = tally::backend::cpu;
  EXPECT_THROW(tally::count_into({a.make()}, {dev.view()}, out, dtype::u64, nullptr, on_cpu), tally::error);
  cudaFree(out);
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

/// tally::histogram filled from device memory: the fills gather on the device, and every reader
/// takes them first.
tally::options sync_options(bool weighted = false) {
  tally::options o = device_options(weighted);
  o.backend = tally::backend::automatic;
  return o;
}

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

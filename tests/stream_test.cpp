// device_histogram's streaming fills (fill_from_host, fill_stream, fill_channels_stream): host data
// pushed through 1 MiB buffers, so tens of MiB take many rounds and the ring of buffers wraps;
// every result compared with the CPU backend's tally::histogram on the same data. Skipped, never
// passed, where no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "random_data.hpp"
#include "tally/device.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

using tally::device_histogram;

constexpr std::size_t kBuffer = std::size_t{1} << 20;  // forces many rounds

class Stream : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  }
};

tally::stream_options small_buffers(int buffers = 3) {
  tally::stream_options o;
  o.buffer_bytes = kBuffer;
  o.buffers = buffers;
  return o;
}

tally::options with_flow(bool weighted = false, tally::backend b = tally::backend::automatic) {
  tally::options o;
  o.flow = true;
  o.weighted = weighted;
  o.backend = b;
  return o;
}

/// The CPU backend's histogram over the same axes and storage.
tally::histogram cpu_twin(const device_histogram& d) {
  return tally::histogram(d.axes(), with_flow(d.weighted(), tally::backend::cpu));
}

/// The device histogram's cells and flow equal the CPU histogram's (sums bit for bit).
void expect_same(const device_histogram& d, const tally::histogram& want) {
  if (d.weighted())
    EXPECT_TRUE(same_elements(d.sums(), want.sums())) << "sums";
  else
    EXPECT_TRUE(same_elements(d.counts(), want.counts())) << "counts";
  EXPECT_TRUE(same_flow(d.flow(), want.flow()));
}

/// Weights that are multiples of 1/4 below 64 in magnitude: every partial sum is exact in f64, so
/// any order of additions (rounds, blocks) gives the same bits.
std::vector<double> exact_weights(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> quarter(-255, 255);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (double& x : w) x = quarter(gen) / 4.0;
  return w;
}

/// Host memory from cudaMallocHost holding a copy of `bytes`.
class pinned_copy {
 public:
  explicit pinned_copy(const std::vector<unsigned char>& bytes) : size_(bytes.size()) {
    EXPECT_EQ(cudaMallocHost(&p_, std::max<std::size_t>(size_, 1)), cudaSuccess);
    if (p_ && size_) std::memcpy(p_, bytes.data(), size_);
  }
  ~pinned_copy() { cudaFreeHost(p_); }
  pinned_copy(const pinned_copy&) = delete;
  pinned_copy& operator=(const pinned_copy&) = delete;
  void* get() const { return p_; }
  std::size_t size() const { return size_; }

 private:
  void* p_ = nullptr;
  std::size_t size_;
};

const dist kDists[] = {dist::uniform, dist::one_bin, dist::mostly_one_bin, dist::sorted};

TEST_F(Stream, PageableAndPinnedHostSamplesMatchTheCpuBackend) {
  std::uint64_t seed = 9100;
  for (dtype t : {dtype::u8, dtype::i32, dtype::f32, dtype::f64}) {
    for (dist d : kDists) {
      for (bool pinned : {false, true}) {
        ++seed;
        // Tens of MiB of 8-byte samples (fewer of narrow ones), not a multiple of the buffer.
        const std::int64_t n = (t == dtype::u8 ? 5'000'003 : 3'000'017) + static_cast<std::int64_t>(seed % 5);
        column host = make_column(t, random_values(d, {-10.0, 250.0}, n, seed, floating(t)));
        SCOPED_TRACE(std::string(tally::name_of(t)) + " " + name_of(d) + (pinned ? " pinned" : " pageable"));
        device_histogram h(tally::axis::regular(256, 0.0, 240.0), with_flow());
        tally::histogram want = cpu_twin(h);
        want.fill(host.view());
        pinned_copy p(host.bytes);
        tally::view v = host.view();
        if (pinned) v.data = p.get();
        h.fill_from_host(v, nullptr, small_buffers());
        // On return the host memory may be reused: overwriting it changes nothing.
        std::memset(pinned ? p.get() : host.bytes.data(), 0x7f, host.bytes.size());
        expect_same(h, want);
      }
    }
  }
}

/// A device allocator that refuses to hold more than `cap` bytes at once: the GPU's memory, as
/// far as the histogram can tell.
struct capped_memory {
  std::size_t cap = 0, in_use = 0, peak = 0;

  tally::device_allocator allocator() {
    return {this,
            [](void* self, std::size_t bytes, void* stream) -> void* {
              auto& m = *static_cast<capped_memory*>(self);
              if (m.in_use + bytes > m.cap)
                throw tally::error("capped_memory: " + std::to_string(bytes) + " bytes more would pass the cap");
              void* p = nullptr;
              if (cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(stream)) != cudaSuccess)
                throw tally::error("capped_memory: cudaMallocAsync failed");
              m.in_use += bytes;
              m.peak = std::max(m.peak, m.in_use);
              return p;
            },
            [](void* self, void* p, std::size_t bytes, void* stream) {
              cudaFreeAsync(p, static_cast<cudaStream_t>(stream));
              static_cast<capped_memory*>(self)->in_use -= bytes;
            }};
  }
};

TEST_F(Stream, DataEightTimesTheDevicesCapFitThroughItsBuffers) {
  const std::int64_t n = std::int64_t{32} << 20;  // 128 MiB of f32
  column host = make_column(dtype::f32, random_values(dist::normal, {0.0, 1.0}, n, 9150, true));
  capped_memory memory;
  memory.cap = std::size_t{16} << 20;
  {
    device_histogram h(tally::axis::regular(1000, 0.0, 1.0), with_flow(), nullptr, memory.allocator());
    tally::histogram want = cpu_twin(h);
    want.fill(host.view());
    h.fill_from_host(host.view(), nullptr, small_buffers());
    expect_same(h, want);
    // The rounds' buffers were taken from the allocator, and never more than the cap at once.
    EXPECT_GE(memory.peak, 2 * kBuffer);
    EXPECT_LE(memory.peak, memory.cap);
  }
}

TEST_F(Stream, DoubleBuffersAndOneRoundPerSampleAlsoMatch) {
  const column host = make_column(dtype::i16, random_values(dist::uniform, {-5.0, 300.0}, 700'001, 9200, false));
  for (const tally::stream_options& o : {small_buffers(2), [] {
         tally::stream_options tiny = small_buffers(3);
         tiny.buffer_bytes = 1;  // one row a round
         return tiny;
       }()}) {
    const tally::view v = slice(host.view(), 0, o.buffer_bytes == 1 ? 3001 : host.n);
    device_histogram h(tally::axis::integer(0, 256), with_flow());
    tally::histogram want = cpu_twin(h);
    want.fill(v);
    h.fill_from_host(v, nullptr, o);
    expect_same(h, want);
  }
}

TEST_F(Stream, WeightedSumsMatchTheCpuBackend) {
  std::uint64_t seed = 9300;
  for (dtype wt : {dtype::f32, dtype::f64}) {
    for (dist d : kDists) {
      ++seed;
      const std::int64_t n = 2'000'011;
      const column x = make_column(dtype::f32, random_values(d, {-1.0, 1.0}, n, seed, true));
      const column w = make_column(wt, exact_weights(n, seed + 1));
      SCOPED_TRACE(std::string("weights ") + std::string(tally::name_of(wt)) + " " + name_of(d));
      device_histogram h(tally::axis::regular(100, -1.0, 1.0), with_flow(true));
      tally::histogram want = cpu_twin(h);
      want.fill(x.view(), w.view());
      h.fill_from_host(x.view(), w.view(), nullptr, small_buffers());
      expect_same(h, want);
    }
  }
  // Weights whose sums round: equal within the rounding of each round's sum.
  const std::int64_t n = 1'500'007;
  const column x = make_column(dtype::f64, random_values(dist::uniform, {0.0, 1.0}, n, 9399, false));
  const std::vector<double> weights = random_weights(n, 9398);
  const column w = make_column(dtype::f64, weights);
  device_histogram h(tally::axis::regular(64, 0.0, 1.0), with_flow(true));
  tally::histogram want = cpu_twin(h);
  want.fill(x.view(), w.view());
  h.fill_from_host(x.view(), w.view(), nullptr, small_buffers());
  double scale = 0;
  for (double v : weights) scale += std::fabs(v);
  const std::vector<double> got = h.sums(), expected = want.sums();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-13 * scale) << "cell " << i;
}

TEST_F(Stream, TwoDimensionsFromStridedColumnsAndFromARowReader) {
  std::uint64_t seed = 9400;
  for (dist d : kDists) {
    ++seed;
    const std::int64_t rows = 1'200'007;
    // Rows of (x, y) in one f32 array: the columns are strided host views.
    const std::vector<double> values = random_values(d, {-2.0, 2.0}, rows * 2, seed, true);
    const column matrix = make_column(dtype::f32, values);
    const std::vector<tally::view> cols = tally::columns_of(matrix.view(), 2);
    const std::vector<tally::axis> axes = {tally::axis::regular(40, -2.0, 2.0),
                                           tally::axis::variable({-2.0, -1.0, -0.25, 0.0, 0.5, 2.0})};
    SCOPED_TRACE(name_of(d));
    tally::histogram want(axes, with_flow(false, tally::backend::cpu));
    want.fill(cols);
    device_histogram from_views(axes, with_flow());
    from_views.fill_from_host(cols, nullptr, small_buffers());
    expect_same(from_views, want);

    // The same rows from a reader that hands out fewer than asked, in whole rows.
    std::mt19937_64 gen(seed);
    std::int64_t at = 0;
    const auto* data = reinterpret_cast<const float*>(matrix.bytes.data());
    const tally::stream_reader reader = [&](void* out, std::int64_t max) {
      std::int64_t n = std::min<std::int64_t>(max, 2 * rows - at);
      n = std::uniform_int_distribution<std::int64_t>(std::min<std::int64_t>(n, 2) / 2, n / 2)(gen) * 2;
      std::memcpy(out, data + at, static_cast<std::size_t>(n) * sizeof(float));
      at += n;
      return n;
    };
    device_histogram from_reader(axes, with_flow());
    from_reader.fill_stream(dtype::f32, reader, nullptr, small_buffers());
    EXPECT_EQ(at, 2 * rows);
    expect_same(from_reader, want);
  }
}

/// A reader over a host column, `step` values at most a call (0: as many as asked).
tally::stream_reader reader_of(const column& c, std::int64_t& at, std::int64_t step = 0) {
  return [&c, &at, step](void* out, std::int64_t max) {
    std::int64_t n = std::min(max, c.n - at);
    if (step > 0) n = std::min(n, step);
    const std::size_t item = tally::size_of(c.type);
    std::memcpy(out, c.bytes.data() + static_cast<std::size_t>(at) * item, static_cast<std::size_t>(n) * item);
    at += n;
    return n;
  };
}

TEST_F(Stream, WeightedReaderAndEmptyInputs) {
  const std::int64_t n = 2'500'009;
  const column x = make_column(dtype::u16, random_values(dist::mostly_one_bin, {0.0, 1000.0}, n, 9500, false));
  const column w = make_column(dtype::f32, exact_weights(n, 9501));
  device_histogram h(tally::axis::regular(250, 0.0, 1000.0), with_flow(true));
  tally::histogram want = cpu_twin(h);
  want.fill(x.view(), w.view());
  std::int64_t at_x = 0, at_w = 0;
  h.fill_stream(dtype::u16, reader_of(x, at_x, 77'777), dtype::f32, reader_of(w, at_w), nullptr, small_buffers());
  EXPECT_EQ(at_w, n);
  expect_same(h, want);

  // Nothing to fill: the histogram stays as it was.
  const std::int64_t before = at_x;
  h.fill_stream(dtype::u16, [](void*, std::int64_t) { return std::int64_t{0}; }, dtype::f32,
                [](void*, std::int64_t) -> std::int64_t { throw std::logic_error("no samples, no weights asked"); },
                nullptr, small_buffers());
  h.fill_from_host(tally::view{nullptr, 0, 1, dtype::u16}, tally::view{nullptr, 0, 1, dtype::f32}, nullptr,
                   small_buffers());
  EXPECT_EQ(at_x, before);
  expect_same(h, want);
}

TEST_F(Stream, InterleavedChannelsFromAReader) {
  const std::int64_t pixels = 3'000'001;
  const column rgb = make_column(dtype::u8, random_values(dist::uniform, {0.0, 255.0}, pixels * 3, 9600, false));
  const column w = make_column(dtype::f64, exact_weights(pixels, 9601));
  for (bool weighted : {false, true}) {
    SCOPED_TRACE(weighted ? "weighted" : "counts");
    std::vector<device_histogram> dev;
    std::vector<tally::histogram> want;
    for (int c = 0; c < 3; ++c) {
      dev.emplace_back(tally::axis::regular(64 + c, 0.0, 256.0), with_flow(weighted));
      want.emplace_back(dev.back().axes(), with_flow(weighted, tally::backend::cpu));
    }
    const std::vector<tally::view> channels = tally::columns_of(rgb.view(), 3);
    for (int c = 0; c < 3; ++c) weighted ? want[c].fill(channels[c], w.view()) : want[c].fill(channels[c]);
    std::int64_t at = 0, at_w = 0;
    const tally::stream_reader weights = reader_of(w, at_w);
    tally::fill_channels_stream(dev, dtype::u8, 3, reader_of(rgb, at, 3 * 100'000), weighted ? &weights : nullptr,
                                dtype::f64, nullptr, small_buffers());
    for (int c = 0; c < 3; ++c) expect_same(dev[c], want[c]);
  }
}

TEST_F(Stream, AReaderThatThrowsStopsTheFillAndLeavesTheHistogramUsable) {
  const std::int64_t n = 4'000'003;
  const column x = make_column(dtype::f32, random_values(dist::sorted, {0.0, 1.0}, n, 9700, false));
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  {
    device_histogram h(tally::axis::regular(128, 0.0, 1.0), with_flow(), s);
    std::int64_t at = 0;
    int calls = 0;
    const tally::stream_reader base = reader_of(x, at);
    const tally::stream_reader failing = [&](void* out, std::int64_t max) {
      if (++calls == 7) throw std::runtime_error("disk read failed");
      return base(out, max);
    };
    try {
      h.fill_stream(dtype::f32, failing, s, small_buffers());
      ADD_FAILURE() << "the reader's exception did not propagate";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "disk read failed");
    }
    // The rounds before the failure were filled: exactly the samples read.
    tally::histogram partial = cpu_twin(h);
    partial.fill(slice(x.view(), 0, at));
    expect_same(h, partial);
    // The histogram and its buffers work again.
    h.reset(s);
    at = 0;
    h.fill_stream(dtype::f32, base, s, small_buffers());
    tally::histogram want = cpu_twin(h);
    want.fill(x.view());
    expect_same(h, want);
  }
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(Stream, BadReadersAndOptionsThrowClearErrors) {
  const column x = make_column(dtype::i32, random_values(dist::uniform, {0.0, 10.0}, 1000, 9800, false));
  device_histogram h(tally::axis::regular(10, 0.0, 10.0), with_flow(true));
  const auto too_many = [](void*, std::int64_t max) { return max + 1; };
  expect_error([&] { h.fill_stream(dtype::i32, too_many, nullptr, small_buffers()); }, "asked for at most");
  device_histogram h2(std::vector<tally::axis>{tally::axis::regular(4, 0.0, 1.0), tally::axis::regular(4, 0.0, 1.0)});
  expect_error([&] { h2.fill_stream(dtype::f64, [](void*, std::int64_t) { return std::int64_t{3}; }); },
               "whole number of 2-value rows");
  std::int64_t at = 0;
  expect_error([&] {
    h.fill_stream(dtype::i32, reader_of(x, at), dtype::f32, [](void*, std::int64_t max) { return max - 1; });
  }, "weights reader returned");
  expect_error([&] { h.fill_stream(dtype::i32, tally::stream_reader{}); }, "samples reader is empty");
  expect_error([&] { h.fill_stream(dtype::i32, reader_of(x, at), dtype::i32, reader_of(x, at)); }, "f32 or f64");
  tally::stream_options one = small_buffers(1);
  expect_error([&] { h.fill_from_host(x.view(), nullptr, one); }, "buffers must be 2 or more");
  tally::stream_options empty = small_buffers();
  empty.buffer_bytes = 0;
  expect_error([&] { h.fill_from_host(x.view(), nullptr, empty); }, "buffer_bytes must be positive");
  device_histogram counts(tally::axis::regular(10, 0.0, 10.0));
  expect_error([&] { counts.fill_from_host(x.view(), x.view()); }, "unweighted");
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4096), cudaSuccess);
  expect_error([&] { h.fill_from_host(tally::view{dev, 16, 1, dtype::i32}); }, "takes host memory");
  cudaFree(dev);
  // None of the failures counted anything.
  EXPECT_TRUE(same_elements(h.sums(), std::vector<double>(10, 0.0)));
}

}  // namespace
}  // namespace tally_test

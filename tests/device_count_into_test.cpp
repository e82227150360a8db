// tally::count_into: device samples' counts written at a device address in the caller's type, by
// the small fills' plans (write_once: one launch; add_once: a memset and one) or a histogram's
// fill, compared with the reference; the launches counted in a captured graph. Skipped, never
// passed, where no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
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
    // count_into_if_one_launch: counts and asks for its output exactly where the captured graph
    // has one launch (or a memset and one); never for a named strategy.
    check(cudaMemset(out, 0xff, got.size() * 8));
    int asked = 0;
    const auto ask = [&] { ++asked; return out; };
    EXPECT_EQ(tally::count_into_if_one_launch({c.a.make()}, {dev.view()}, ask, dtype::u64, s.get()), c.nodes != 0);
    EXPECT_EQ(asked, c.nodes != 0 ? 1 : 0);
    if (c.nodes) {
      check(cudaMemcpyAsync(got.data(), out, got.size() * 8, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s.get())));
      check(cudaStreamSynchronize(static_cast<cudaStream_t>(s.get())));
      EXPECT_EQ(got, want.counts);
    }
    tally::options named;
    named.strategy = tally::strategy::shared;
    EXPECT_FALSE(tally::count_into_if_one_launch({c.a.make()}, {dev.view()}, ask, dtype::u64, s.get(), named));
    EXPECT_EQ(asked, c.nodes != 0 ? 1 : 0);
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

}  // namespace
}  // namespace tally_test

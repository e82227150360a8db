// tally::transform (tally/patterns/transform.cuh) with a user's device lambdas and functors:
// every strategy, lengths around the vector width, arrays misaligned alone and against one
// another, in place, mixed element types and several inputs. Results are compared exactly with the same function on
// the host (the functions are exact or one fma), and the elements around the output must keep
// their values. Inputs are allocated to their exact length so that compute-sanitizer (the
// gpu_check sanitizer set) sees any load past the end. Skipped, never passed, without a usable
// CUDA device; argument errors are checked everywhere (they throw before any CUDA call).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "tally/patterns/transform.cuh"

namespace tally_test {
namespace {

using tally::map_strategy;

/// A device array of `offset + n` elements of T (exactly: nothing readable past the end) plus
/// `guard` more, holding `host` from element `offset` on.
template <class T> class device_array {
 public:
  device_array(const std::vector<T>& host, std::size_t offset, std::size_t guard = 0)
      : offset_(offset), size_(offset + host.size() + guard) {
    EXPECT_EQ(cudaMalloc(&base_, size_ * sizeof(T)), cudaSuccess);
    std::vector<T> all(size_, sentinel());
    std::copy(host.begin(), host.end(), all.begin() + static_cast<std::ptrdiff_t>(offset));
    EXPECT_EQ(cudaMemcpy(base_, all.data(), size_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~device_array() { cudaFree(base_); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;

  T* data() { return base_ + offset_; }
  /// All elements, the offset and guard included.
  std::vector<T> all() const {
    std::vector<T> out(size_);
    EXPECT_EQ(cudaMemcpy(out.data(), base_, size_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  static T sentinel() {
    if constexpr (std::is_same_v<T, tally::half>) return tally::half{0x7e5a};  // a NaN no function returns
    else return static_cast<T>(-12345);
  }

 private:
  T* base_ = nullptr;
  std::size_t offset_, size_;
};

template <class T> std::uint32_t bits(T v) {
  std::uint32_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

/// Checks that device elements [offset, offset + want.size()) equal `want` bit for bit and every
/// other element still holds the sentinel.
template <class T> void expect_output(const device_array<T>& out, std::size_t offset, const std::vector<T>& want) {
  const std::vector<T> got = out.all();
  int bad = 0;
  for (std::size_t i = 0; i < got.size() && bad < 5; ++i) {
    const bool inside = i >= offset && i < offset + want.size();
    const T expected = inside ? want[i - offset] : device_array<T>::sentinel();
    if (bits(got[i]) != bits(expected)) {
      ++bad;
      ADD_FAILURE() << (inside ? "output element " : "element outside the output ") << i << ": got bits "
                    << bits(got[i]) << ", want " << bits(expected);
    }
  }
}

const std::vector<std::size_t> kLengths = {0, 1, 3, 4, 5, 8, 9, 31, 1000, 4099};

/// out (f32) = fma(a (f32), b (f16), 1): two inputs of different widths; the output at every
/// offset modulo a vector, a at the same or another alignment, b at the output's.
template <map_strategy S> void fma_of_mixed_types(std::mt19937& g) {
  std::uniform_real_distribution<float> u(-8, 8);
  for (std::size_t n : kLengths) {
    for (std::size_t out_offset = 0; out_offset < 4; ++out_offset) {
      for (std::size_t a_offset : {out_offset, (out_offset + 1) % 4}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " out offset " + std::to_string(out_offset) + " a offset " +
                     std::to_string(a_offset));
        std::vector<float> a(n), want(n);
        std::vector<tally::half> b(n);
        for (std::size_t i = 0; i < n; ++i) {
          a[i] = u(g);
          b[i] = tally::to_half(u(g));
          want[i] = std::fma(a[i], static_cast<float>(tally::to_double(b[i])), 1.0f);
        }
        device_array<float> da(a, a_offset);
        device_array<tally::half> db(b, out_offset);
        device_array<float> dout(std::vector<float>(n, device_array<float>::sentinel()), out_offset, 4);
        tally::transform<S>(nullptr, static_cast<std::int64_t>(n), dout.data(),
                            [] __device__(float x, float y) { return fmaf(x, y, 1.0f); }, da.data(),
                            static_cast<const tally::half*>(db.data()));
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        expect_output(dout, out_offset, want);
      }
    }
  }
}

/// A functor over f16 in place: the f32 value halved, rounded once to f16.
struct halve {
  __device__ float operator()(float v) const { return v * 0.5f; }
};

template <map_strategy S> void halve_in_place(std::mt19937& g) {
  std::uniform_real_distribution<double> u(-1000, 1000);
  for (std::size_t n : kLengths) {
    for (std::size_t offset = 0; offset < 8; ++offset) {
      SCOPED_TRACE("n=" + std::to_string(n) + " offset " + std::to_string(offset));
      std::vector<tally::half> x(n), want(n);
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = tally::to_half(u(g));
        want[i] = tally::to_half(tally::to_double(x[i]) * 0.5);
      }
      device_array<tally::half> dx(x, offset, 3);
      tally::transform<S>(nullptr, static_cast<std::int64_t>(n), dx.data(), halve{},
                          static_cast<const tally::half*>(dx.data()));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_output(dx, offset, want);
    }
  }
}

/// Three i32 inputs, passed to the lambda as they are: a * b + c.
template <map_strategy S> void three_integer_inputs(std::mt19937& g) {
  std::uniform_int_distribution<std::int32_t> u(-30000, 30000);
  for (std::size_t n : kLengths) {
    for (std::size_t offset : {0, 2}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " offset " + std::to_string(offset));
      std::vector<std::int32_t> a(n), b(n), c(n), want(n);
      for (std::size_t i = 0; i < n; ++i) {
        a[i] = u(g), b[i] = u(g), c[i] = u(g);
        want[i] = a[i] * b[i] + c[i];
      }
      device_array<std::int32_t> da(a, offset), db(b, offset), dc(c, 3 - offset);
      device_array<std::int32_t> out(std::vector<std::int32_t>(n, device_array<std::int32_t>::sentinel()), offset, 2);
      tally::transform<S>(nullptr, static_cast<std::int64_t>(n), out.data(),
                          [] __device__(std::int32_t x, std::int32_t y, std::int32_t z) { return x * y + z; },
                          static_cast<const std::int32_t*>(da.data()), static_cast<const std::int32_t*>(db.data()),
                          static_cast<const std::int32_t*>(dc.data()));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_output(out, offset, want);
    }
  }
}

template <map_strategy S> void every_case(std::mt19937& g) {
  SCOPED_TRACE(std::string("strategy ") + std::string(tally::name_of(S)));
  fma_of_mixed_types<S>(g);
  halve_in_place<S>(g);
  three_integer_inputs<S>(g);
}

TEST(Transform, EveryStrategyMapsExactlyAndStaysInBounds) {
  if (!cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  std::mt19937 g(31);
  every_case<map_strategy::automatic>(g);
  every_case<map_strategy::scalar>(g);
  every_case<map_strategy::x2>(g);
  every_case<map_strategy::x4>(g);
  every_case<map_strategy::x8>(g);
  every_case<map_strategy::packed128>(g);
  every_case<map_strategy::packed128_resident>(g);
}

/// 2^24 + 3 f16 elements in place, one off the vector alignment: more chunks than a device's
/// resident blocks hold at once, so that packed128_resident's blocks each stride several times.
TEST(Transform, ResidentGridCoversLargeArrays) {
  if (!cuda_usable()) GTEST_SKIP() << "the CUDA backend is not usable on this machine";
  std::mt19937 g(37);
  std::uniform_real_distribution<double> u(-1000, 1000);
  const std::size_t n = (std::size_t{1} << 24) + 3;
  std::vector<tally::half> x(n), want(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = tally::to_half(u(g));
    want[i] = tally::to_half(tally::to_double(x[i]) * 0.5);
  }
  device_array<tally::half> dx(x, 1, 3);
  tally::transform<map_strategy::packed128_resident>(nullptr, static_cast<std::int64_t>(n), dx.data(), halve{},
                                                     static_cast<const tally::half*>(dx.data()));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_output(dx, 1, want);
}

struct square {
  __device__ float operator()(float v) const { return v * v; }
};

TEST(Transform, RejectsBadArgumentsBeforeLaunching) {
  // Host memory is enough: every check happens before any CUDA call.
  std::vector<float> x(64, 1.0f);
  const float* in = x.data();
  EXPECT_THROW(tally::transform(nullptr, -1, x.data(), square{}, in), tally::error);
  EXPECT_THROW(tally::transform(nullptr, 8, static_cast<float*>(nullptr), square{}, in), tally::error);
  EXPECT_THROW(tally::transform(nullptr, 8, x.data(), square{}, static_cast<const float*>(nullptr)), tally::error);
  EXPECT_THROW(tally::transform(nullptr, 8, x.data() + 1, square{}, in), tally::error);  // overlaps, not in place
  EXPECT_THROW(tally::transform(nullptr, 8, reinterpret_cast<float*>(reinterpret_cast<char*>(x.data() + 32) + 2), square{},
                                in),
               tally::error);  // misaligned output
  tally::transform(nullptr, 0, x.data(), square{}, in);  // nothing to do: no CUDA call either
  for (float v : x) EXPECT_EQ(v, 1.0f);
}

}  // namespace
}  // namespace tally_test

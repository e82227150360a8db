// Sample types (names, sizes, 16-bit float rounding), the planner's policies, describe(), the
// backend listing and the name round trips of backends and strategies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>

#include <omp.h>

#include "random_data.hpp"
#include "tally/tally.hpp"

namespace tally_test {
namespace {

TEST(Dtype, NamesRoundTripAndNumpyNamesParse) {
  for (dtype t : all_dtypes) {
    EXPECT_EQ(tally::dtype_from_name(tally::name_of(t)), t) << tally::name_of(t);
  }
  EXPECT_EQ(tally::dtype_from_name("u8"), dtype::u8);
  EXPECT_EQ(tally::dtype_from_name("i32"), dtype::i32);
  EXPECT_EQ(tally::dtype_from_name("f16"), dtype::f16);
  EXPECT_EQ(tally::dtype_from_name("bf16"), dtype::bf16);
  EXPECT_EQ(tally::dtype_from_name("f64"), dtype::f64);
  const std::pair<const char*, dtype> numpy_names[] = {
      {"uint8", dtype::u8},   {"int8", dtype::i8},       {"uint16", dtype::u16},   {"int16", dtype::i16},
      {"uint32", dtype::u32}, {"int32", dtype::i32},     {"uint64", dtype::u64},   {"int64", dtype::i64},
      {"float16", dtype::f16}, {"float32", dtype::f32},  {"float64", dtype::f64}};
  for (const auto& [name, t] : numpy_names) EXPECT_EQ(tally::dtype_from_name(name), t) << name;
}

TEST(Dtype, SizesAndCategories) {
  const std::size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
  for (std::size_t i = 0; i < std::size(all_dtypes); ++i) {
    const dtype t = all_dtypes[i];
    EXPECT_EQ(tally::size_of(t), sizes[i]) << tally::name_of(t);
    EXPECT_EQ(tally::is_floating(t), floating(t)) << tally::name_of(t);
    const bool is_signed = t == dtype::i8 || t == dtype::i16 || t == dtype::i32 || t == dtype::i64;
    EXPECT_EQ(tally::is_signed_integer(t), is_signed) << tally::name_of(t);
  }
}

struct rounding {
  double x;
  std::uint16_t bits;
  const char* why;
};

/// Each x converts to exactly `bits`.
template <class Convert>
void expect_roundings(Convert convert, std::initializer_list<rounding> cases) {
  for (const rounding& c : cases) {
    EXPECT_EQ(convert(c.x).bits, c.bits) << "x = " << c.x << ": " << c.why;
  }
}

/// A NaN's bits: exponent all ones, mantissa not zero.
void expect_nan_bits(std::uint16_t bits, std::uint16_t exponent_mask) {
  EXPECT_EQ(bits & exponent_mask, exponent_mask);
  EXPECT_NE(bits & 0x7FFF & ~exponent_mask, 0);
}

struct widening {
  std::uint16_t bits;
  double x;
};

/// Each bit pattern of format F widens to exactly x.
template <class F>
void expect_widenings(std::initializer_list<widening> cases) {
  for (const widening& c : cases) EXPECT_EQ(tally::to_double(F{c.bits}), c.x) << std::hex << c.bits;
}

TEST(Dtype, HalfRoundsToNearestEven) {
  expect_roundings(tally::to_half,
                   {{1.0, 0x3C00, "exact"},
                    {-2.0, 0xC000, "exact"},
                    {1.0 + 0x1p-10, 0x3C01, "exact"},
                    {1.0 + 0x1p-11, 0x3C00, "tie -> even (down)"},
                    {1.0 + 3 * 0x1p-11, 0x3C02, "tie -> even (up)"},
                    {1.0 + 0x1p-11 + 0x1p-30, 0x3C01, "just above a tie: a detour through f32 would lose this"},
                    {65504.0, 0x7BFF, "largest finite"},
                    {65519.99, 0x7BFF, "below the tie with 65536"},
                    {65520.0, 0x7C00, "tie with 65536 -> even -> overflows to inf"},
                    {INFINITY, 0x7C00, "inf"},
                    {-INFINITY, 0xFC00, "-inf"},
                    {0x1p-24, 0x0001, "smallest subnormal"},
                    {0x1p-25, 0x0000, "tie -> even (zero)"},
                    {0x1p-25 + 0x1p-40, 0x0001, "just above a tie"},
                    {3 * 0x1p-25, 0x0002, "subnormal tie -> even"},
                    {-0.0, 0x8000, "negative zero"}});
  expect_nan_bits(tally::to_half(NAN).bits, 0x7C00);
  expect_widenings<tally::half>({{0x3C01, 1.0 + 0x1p-10}, {0x0001, 0x1p-24}, {0x7BFF, 65504.0}, {0xFC00, -INFINITY}});
  EXPECT_TRUE(std::isnan(tally::to_double(tally::half{0x7E00})));
}

TEST(Dtype, BFloat16RoundsToNearestEven) {
  expect_roundings(tally::to_bfloat16,
                   {{1.0, 0x3F80, "exact"},
                    {-1.0, 0xBF80, "exact"},
                    {1.0 + 0x1p-7, 0x3F81, "exact"},
                    {1.0 + 0x1p-8, 0x3F80, "tie -> even (down)"},
                    {1.0 + 3 * 0x1p-8, 0x3F82, "tie -> even (up)"},
                    {1.0 + 0x1p-8 + 0x1p-40, 0x3F81, "just above a tie: a detour through f32 would lose this"},
                    {3.0e38, 0x7F62, "3e38 = 1.763 * 2^127, mantissa 97.7/128 -> 98"},
                    {INFINITY, 0x7F80, "inf"}});
  expect_nan_bits(tally::to_bfloat16(NAN).bits, 0x7F80);
  expect_widenings<tally::bfloat16>({{0x3F81, 1.0 + 0x1p-7}, {0x4049, 3.140625}, {0x0001, 0x1p-133}});
  EXPECT_TRUE(std::isnan(tally::to_double(tally::bfloat16{0x7FC0})));
}

TEST(Planner, PoliciesAreSaneAndHonourTheStrategy) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  for (int threads : {0, 1, 3}) {
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1000}, std::int64_t{1} << 24}) {
      for (tally::strategy s : {tally::strategy::automatic, tally::strategy::cpu_private}) {
        tally::plan_request r;
        r.where = tally::backend::cpu;
        r.wanted = s;
        r.cells = 256;
        r.n = n;
        r.threads = threads;
        r.sample = dtype::u8;
        const tally::policy p = tally::plan(r);
        EXPECT_EQ(p.where, tally::backend::cpu);
        EXPECT_EQ(p.chosen, tally::strategy::cpu_private);  // the only CPU strategy
        EXPECT_GE(p.threads, 1);
        EXPECT_LE(p.threads, static_cast<int>(threads > 0 ? threads : hw));
        EXPECT_GE(p.replicas, 1);
        EXPECT_EQ(p.block, 65536);
        EXPECT_FALSE(tally::describe(p).empty());
      }
    }
  }
  // The histogram's own planning goes through the same planner.
  tally::options o;
  o.backend = tally::backend::cpu;
  o.strategy = tally::strategy::cpu_private;
  o.threads = 2;
  const tally::histogram h(tally::axis::regular(10, 0, 1), o);
  const tally::policy p = h.plan_for(dtype::f32, 1 << 20);
  EXPECT_EQ(p.where, tally::backend::cpu);
  EXPECT_EQ(p.chosen, tally::strategy::cpu_private);
  EXPECT_GE(p.threads, 1);
  EXPECT_LE(p.threads, 2);
}

TEST(Planner, ThreadsNeverExceedTheMachinesAndWeightsFollowSumBlock) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  tally::plan_request r;
  r.where = tally::backend::cpu;
  r.cells = 16;
  r.n = std::int64_t{1} << 30;  // work for thousands of threads
  r.sample = dtype::u8;
  for (int threads : {1000, std::numeric_limits<int>::max()}) {
    r.threads = threads;
    EXPECT_LE(tally::plan(r).threads, hw) << threads;
  }
  r.threads = 0;
  r.weighted = true;
  EXPECT_EQ(tally::plan(r).block, 65536);
  r.sum_block = 1000;
  EXPECT_EQ(tally::plan(r).block, 1000);
  r.sum_block = 0;  // one block, one thread: input order
  const tally::policy whole = tally::plan(r);
  EXPECT_EQ(whole.block, r.n);
  EXPECT_EQ(whole.threads, 1);
}

TEST(Planner, ThreadsZeroFollowOpenMPsLimit) {
  // OMP_NUM_THREADS and threadpoolctl set OpenMP's limit; a fill asking for 0 threads keeps it.
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  tally::plan_request r;
  r.where = tally::backend::cpu;
  r.cells = 16;
  r.n = std::int64_t{1} << 30;
  r.sample = dtype::u8;
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  EXPECT_EQ(tally::plan(r).threads, 1);
  r.threads = 2;  // asked for: as asked (at most the machine's)
  EXPECT_EQ(tally::plan(r).threads, std::min(2, hw));
  omp_set_num_threads(before);
  r.threads = 0;
  EXPECT_EQ(tally::plan(r).threads, std::min(before, hw));
}

TEST(Backends, CpuIsUsableAndCudaIsListed) {
  bool cpu = false, cuda = false;
  for (const auto& b : tally::backends()) {
    if (b.which == tally::backend::cpu) {
      cpu = true;
      EXPECT_TRUE(b.compiled);
      EXPECT_TRUE(b.usable);
    }
    if (b.which == tally::backend::cuda) {
      cuda = true;
      if (b.usable) {
        EXPECT_TRUE(b.compiled);
      } else {
        EXPECT_FALSE(b.detail.empty()) << "an unusable backend says why";
      }
    }
  }
  EXPECT_TRUE(cpu);
  EXPECT_TRUE(cuda);
}

TEST(Names, SampleTypesAreOneTableInTheEnumsOrder) {
  const auto& all = tally::sample_types();
  ASSERT_EQ(all.size(), 12u);
  std::string names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const tally::dtype t = all[i];
    EXPECT_EQ(static_cast<std::size_t>(t), i);
    EXPECT_EQ(tally::dtype_from_name(tally::name_of(t)), t);
    EXPECT_EQ(tally::dtype_from_name(tally::numpy_name_of(t)), t);
    names += (i ? " " : "") + std::string(tally::name_of(t));
  }
  EXPECT_EQ(tally::sample_type_names(), names);
  EXPECT_EQ(tally::numpy_name_of(tally::dtype::bf16), "bfloat16");
  EXPECT_EQ(tally::size_of(tally::dtype::f16), 2u);
  try {
    tally::dtype_from_name("f128");
    ADD_FAILURE() << "f128 was accepted";
  } catch (const tally::error& e) {
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
  }
}

TEST(Names, BackendStrategyCountTypeRoundTrip) {
  for (tally::backend b : {tally::backend::automatic, tally::backend::cpu, tally::backend::cuda}) {
    EXPECT_EQ(tally::backend_from_name(tally::name_of(b)), b);
  }
  for (tally::strategy s : {tally::strategy::automatic, tally::strategy::cpu_private}) {
    EXPECT_EQ(tally::strategy_from_name(tally::name_of(s)), s);
  }
  EXPECT_NE(tally::name_of(tally::count_type::u32), tally::name_of(tally::count_type::u64));
  EXPECT_EQ(tally::version(), "0.1.0");
}

}  // namespace
}  // namespace tally_test

// bincount's plan: minlength or the learned guess, from which size, capped for narrow types;
// the guess a power of two in [2^12, 2^20] at or above the last learned length.
TEST(Bincount, PlanGuessesTheLearnedLengthFromTheRightSize) {
  tally::reset_bincount_guess();
  EXPECT_EQ(tally::bincount_guess(), 4096);
  using tally::dtype;
  // Host data: from as many samples as the guess has bins; weighted or with minlength, minlength.
  EXPECT_FALSE(tally::plan_bincount(false, 4095, dtype::i64, 0, false).learn);
  EXPECT_EQ(tally::plan_bincount(false, 4095, dtype::i64, 0, false).length, 0);
  EXPECT_TRUE(tally::plan_bincount(false, 4096, dtype::i64, 0, false).learn);
  EXPECT_EQ(tally::plan_bincount(false, 4096, dtype::i64, 0, false).length, 4096);
  EXPECT_EQ(tally::plan_bincount(false, 1 << 20, dtype::i64, 7, false).length, 7);
  EXPECT_FALSE(tally::plan_bincount(false, 1 << 20, dtype::i64, 7, false).learn);
  EXPECT_EQ(tally::plan_bincount(false, 1 << 20, dtype::i64, 0, true).length, 0);
  // CUDA memory: from 2^24 samples.
  EXPECT_FALSE(tally::plan_bincount(true, (1 << 24) - 1, dtype::i32, 0, false).learn);
  EXPECT_TRUE(tally::plan_bincount(true, 1 << 24, dtype::i32, 0, false).learn);
  // Narrow types never beyond their values from 0.
  tally::remember_bincount_length(70000);
  EXPECT_EQ(tally::bincount_guess(), 1 << 17);
  EXPECT_EQ(tally::plan_bincount(false, 1 << 20, dtype::u8, 0, false).length, 256);
  EXPECT_EQ(tally::plan_bincount(false, 1 << 20, dtype::i8, 0, false).length, 128);
  EXPECT_EQ(tally::plan_bincount(false, 1 << 20, dtype::u16, 0, false).length, 65536);
  EXPECT_EQ(tally::plan_bincount(false, 1 << 20, dtype::i16, 0, false).length, 32768);
  EXPECT_EQ(tally::plan_bincount(false, 1 << 20, dtype::u32, 0, false).length, 1 << 17);
  // The guess: a power of two at or above, within [2^12, 2^20].
  for (const auto& [length, want] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {0, 4096}, {1, 4096}, {4097, 8192}, {8192, 8192}, {(1 << 20) + 7, 1 << 20}, {std::int64_t{1} << 40, 1 << 20}}) {
    tally::remember_bincount_length(length);
    EXPECT_EQ(tally::bincount_guess(), want) << length;
  }
  tally::reset_bincount_guess();
}

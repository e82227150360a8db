// `tally hist --backend cuda`: the file streamed through the GPU in --chunk-mb rounds (many rounds
// here) gives the report and the output file of `--backend cpu`, byte for byte. Skipped where
// `tally info` finds no usable CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "harness.hpp"

namespace cli_test {
namespace {

bool cuda_usable() { return tally({"info"}).out.find("  cuda  usable") != std::string::npos; }

/// Runs `tally hist ARGS` on each backend, writing DIR/<backend>.json, and compares the printed
/// reports and the files.
void expect_backends_agree(const scratch& dir, const std::vector<std::string>& args) {
  std::string report[2], file[2];
  const char* names[2] = {"cpu", "cuda"};
  for (int b = 0; b < 2; ++b) {
    std::vector<std::string> full = {"hist"};
    full.insert(full.end(), args.begin(), args.end());
    const std::string out = dir.path(std::string(names[b]) + ".json");
    full.insert(full.end(), {"--backend", names[b], "--chunk-mb", "1", "--flow", "--out", out});
    const outcome o = tally(full);
    ASSERT_EQ(o.code, 0) << names[b] << ": " << o.err;
    report[b] = o.out;
    file[b] = read_bytes(out);
  }
  EXPECT_EQ(report[1], report[0]);
  EXPECT_EQ(file[1], file[0]);
}

/// n values of a distribution over [lo, hi): uniform, 80% one value, skewed or sorted.
template <class T>
std::vector<T> values_of(const std::string& dist, std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::exponential_distribution<double> skew(12 / (hi - lo));
  std::vector<T> v(n);
  for (T& x : v) {
    double d = dist == "skewed" ? lo + skew(gen) : uniform(gen);
    if (dist == "hot" && uniform(gen) < lo + 0.8 * (hi - lo)) d = lo + 0.37 * (hi - lo);
    x = static_cast<T>(std::min(d, hi - 1));
  }
  if (dist == "sorted") std::sort(v.begin(), v.end());
  return v;
}

TEST(GpuStream, OneDimensionRangePassAndWeightsMatchTheCpu) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  scratch dir;
  std::uint64_t seed = 41;
  for (const std::string dist : {"uniform", "hot", "skewed", "sorted"}) {
    SCOPED_TRACE(dist);
    const std::size_t n = 3'000'017;  // 11.4 MiB of f32: a dozen 1 MiB rounds
    const std::string in = dir.path(dist + ".npy");
    write_bytes(in, npy("<f4", {static_cast<std::int64_t>(n)}, bytes_of(values_of<float>(dist, n, -5, 95, ++seed))));
    expect_backends_agree(dir, {in, "--bins", "200"});
    std::vector<double> w(n);
    for (std::size_t i = 0; i < n; ++i) w[i] = static_cast<double>(i % 9) * 0.25 - 1;  // exact partial sums
    const std::string weights = dir.path(dist + "_w.npy");
    write_bytes(weights, npy("<f8", {static_cast<std::int64_t>(n)}, bytes_of(w)));
    expect_backends_agree(dir, {in, "--bins", "100", "--range", "0,90", "--weights", weights});
  }
}

TEST(GpuStream, TwoDimensionsAndChannelsMatchTheCpu) {
  if (!cuda_usable()) GTEST_SKIP() << "no usable CUDA device";
  scratch dir;
  const std::size_t rows = 1'500'001;
  const std::string matrix = dir.path("xy.npy");
  write_bytes(matrix, npy("<i4", {static_cast<std::int64_t>(rows), 2},
                          bytes_of(values_of<std::int32_t>("skewed", 2 * rows, -100, 2000, 7))));
  expect_backends_agree(dir, {matrix, "--bins", "40,30"});
  const std::string pixels = dir.path("rgb.npy");
  write_bytes(pixels, npy("|u1", {static_cast<std::int64_t>(rows), 3},
                          bytes_of(values_of<std::uint8_t>("uniform", 3 * rows, 0, 256, 8))));
  expect_backends_agree(dir, {pixels, "--channels", "3"});
  std::vector<float> w(rows);
  for (std::size_t i = 0; i < rows; ++i) w[i] = static_cast<float>(i % 5) * 0.5f;
  const std::string weights = dir.path("rgb_w.npy");
  write_bytes(weights, npy("<f4", {static_cast<std::int64_t>(rows)}, bytes_of(w)));
  expect_backends_agree(dir, {pixels, "--channels", "3", "--weights", weights});
}

}  // namespace
}  // namespace cli_test

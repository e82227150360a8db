// GPU benchmark: tally's CUDA strategies (through the public API, device-resident input) against
// CUB DeviceHistogram on the same data in the same run. CUDA events, warm-up, median of 15.
// Prints a table (GB/s of input read, fraction of the measured read bandwidth, ratio to CUB)
// and writes JSON to argv[1] (default gpu_bench.json).
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tally/tally.hpp"

namespace {

#define CHECK(expr)                                                                   \
  do {                                                                                \
    cudaError_t e = (expr);                                                           \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e)); \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

constexpr std::size_t kBytes = std::size_t{1} << 30;  // 1 GiB of input per case
constexpr int kRuns = 15;

double median_ms(const std::function<void()>& run) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) run();  // warm-up
  std::vector<float> ms(kRuns);
  for (auto& m : ms) {
    CHECK(cudaEventRecord(a));
    run();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventElapsedTime(&m, a, b));
  }
  std::sort(ms.begin(), ms.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return ms[kRuns / 2];
}

/// Values in [0, bins) as T: uniform, all in one bin, or 80% in one bin.
template <class T>
std::vector<T> make_data(std::size_t n, int bins, const std::string& spread) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> bin(0, bins - 1);
  std::uniform_real_distribution<double> coin(0, 1);
  std::vector<T> v(n);
  for (auto& x : v) {
    const bool hot = spread == "hotspot" || (spread == "skewed80" && coin(rng) < 0.8);
    const int k = hot ? bins / 3 : bin(rng);
    if constexpr (std::is_floating_point_v<T>) x = static_cast<T>((k + 0.5) / bins);
    else x = static_cast<T>(k);
  }
  return v;
}

struct row {
  std::string workload, spread, who;
  double ms, gbs;
};

double read_bandwidth_gbs(const void* d, std::size_t bytes) {
  // A read-only pass: CUB's sum of the bytes as u32 words reads every byte once.
  const auto* words = static_cast<const std::uint32_t*>(d);
  const int n = static_cast<int>(bytes / 4);
  unsigned long long* out;
  CHECK(cudaMalloc(&out, sizeof *out));
  std::size_t temp_bytes = 0;
  cub::DeviceReduce::Sum(nullptr, temp_bytes, words, out, n);
  void* temp;
  CHECK(cudaMalloc(&temp, temp_bytes));
  const double ms = median_ms([&] { cub::DeviceReduce::Sum(temp, temp_bytes, words, out, n); });
  CHECK(cudaFree(temp));
  CHECK(cudaFree(out));
  return bytes / ms / 1e6;
}

template <class T>
void run_case(const std::string& workload, int bins, const std::string& spread, bool float_axis,
              std::vector<row>& rows) {
  const std::size_t n = kBytes / sizeof(T);
  const auto host = make_data<T>(n, bins, spread);
  T* d;
  CHECK(cudaMalloc(&d, n * sizeof(T)));
  CHECK(cudaMemcpy(d, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const double gb = n * sizeof(T) / 1e9;

  // CUB HistogramEven over the same bins.
  int* cub_counts;
  CHECK(cudaMalloc(&cub_counts, bins * sizeof(int)));
  using level_t = std::conditional_t<std::is_floating_point_v<T>, T, int>;
  const level_t lo = 0, hi = float_axis ? level_t(1) : level_t(bins);
  std::size_t temp_bytes = 0;
  cub::DeviceHistogram::HistogramEven(nullptr, temp_bytes, d, cub_counts, bins + 1, lo, hi, static_cast<int>(n));
  void* temp;
  CHECK(cudaMalloc(&temp, temp_bytes));
  const double cub_ms = median_ms([&] {
    cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d, cub_counts, bins + 1, lo, hi, static_cast<int>(n));
  });
  rows.push_back({workload, spread, "cub", cub_ms, gb / cub_ms * 1e3});

  for (auto s : {tally::strategy::global_atomic, tally::strategy::warp_aggregated, tally::strategy::shared,
                 tally::strategy::automatic}) {
    if (s == tally::strategy::shared && bins > 50000) continue;
    tally::options o;
    o.backend = tally::backend::cuda;
    o.strategy = s;
    tally::histogram h(float_axis ? tally::axis::regular(bins, 0.0, 1.0, tally::dtype::f32)
                                  : tally::axis::integer(0, bins), o);
    const auto v = tally::make_view(d, static_cast<std::int64_t>(n));
    const double ms = median_ms([&] { h.fill(v); });
    rows.push_back({workload, spread, "tally " + std::string(tally::name_of(s)), ms, gb / ms * 1e3});
  }
  CHECK(cudaFree(temp));
  CHECK(cudaFree(cub_counts));
  CHECK(cudaFree(d));
}

}  // namespace

int main(int argc, char** argv) {
#ifndef NDEBUG
  std::fprintf(stderr, "tally_gpu_bench: refusing to time a debug build\n");
  return 1;
#endif
  const std::string out = argc > 1 ? argv[1] : "gpu_bench.json";
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  void* probe;
  CHECK(cudaMalloc(&probe, kBytes));
  CHECK(cudaMemset(probe, 1, kBytes));
  const double read_gbs = read_bandwidth_gbs(probe, kBytes);
  CHECK(cudaFree(probe));

  std::vector<row> rows;
  for (const std::string spread : {"uniform", "hotspot", "skewed80"}) {
    run_case<std::uint8_t>("u8, 256 bins", 256, spread, false, rows);
    run_case<std::int32_t>("i32, 256 bins", 256, spread, false, rows);
    run_case<std::int32_t>("i32, 4096 bins", 4096, spread, false, rows);
    run_case<std::int32_t>("i32, 65536 bins", 65536, spread, false, rows);
    run_case<float>("f32, 256 even bins", 256, spread, true, rows);
  }

  std::printf("device %s, measured read bandwidth %.0f GB/s (CUB DeviceReduce over 1 GiB)\n", prop.name, read_gbs);
  std::printf("%-18s %-9s %-20s %9s %9s %7s %7s\n", "workload", "spread", "who", "ms", "GB/s", "of bw", "vs CUB");
  std::ofstream json(out);
  json << "{\"device\":\"" << prop.name << "\",\"read_gbs\":" << read_gbs << ",\"rows\":[";
  double cub_gbs = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.who == "cub") cub_gbs = r.gbs;
    std::printf("%-18s %-9s %-20s %9.3f %9.1f %6.1f%% %6.2fx\n", r.workload.c_str(), r.spread.c_str(), r.who.c_str(),
                r.ms, r.gbs, 100 * r.gbs / read_gbs, r.gbs / cub_gbs);
    json << (i ? "," : "") << "{\"workload\":\"" << r.workload << "\",\"spread\":\"" << r.spread << "\",\"who\":\""
         << r.who << "\",\"ms\":" << r.ms << ",\"gbs\":" << r.gbs << ",\"vs_cub\":" << r.gbs / cub_gbs << "}";
  }
  json << "]}\n";
  return 0;
}

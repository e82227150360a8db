// GPU benchmark: tally's CUDA strategies (through the public synchronous API, device-resident
// input) against CUB DeviceHistogram on the same data in the same run. CUDA events, warm-up,
// median. Prints a table (GB/s of input read, fraction of the measured read bandwidth, ratio to
// CUB) and writes JSON to argv[1] (default gpu_bench.json). argv[2], if given and not empty, keeps
// only the workloads whose name contains it; argv[3] only the spreads so named (for a profiler).
#include <cub/device/device_histogram.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "tally/tally.hpp"
#include "timing.cuh"

namespace {

constexpr std::size_t kBytes = std::size_t{1} << 30;  // 1 GiB of samples per case

__device__ std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum class spread { uniform, hotspot, skewed80, normal };
const char* name_of(spread s) {
  switch (s) {
    case spread::uniform: return "uniform";
    case spread::hotspot: return "hotspot";
    case spread::skewed80: return "skewed80";
    case spread::normal: return "normal";
  }
  return "?";
}

/// Bin k of `bins` for sample i: uniform, all in bin bins/3, 80% there, or a sum of four
/// uniform draws (a bell over the bins).
__device__ int bin_for(std::uint64_t i, int bins, spread s) {
  const std::uint64_t h = mix(i);
  const int hot = bins / 3;
  switch (s) {
    case spread::uniform: return static_cast<int>(h % bins);
    case spread::hotspot: return hot;
    case spread::skewed80: return (h >> 40) % 10 < 8 ? hot : static_cast<int>(h % bins);
    case spread::normal: {
      const std::uint64_t g = mix(h);
      const double u = ((h & 0xffff) + (h >> 16 & 0xffff) + (g & 0xffff) + (g >> 16 & 0xffff)) / 262144.0;
      return min(bins - 1, static_cast<int>(u * bins));
    }
  }
  return 0;
}

/// Samples as T: integers are the bin; floats the bin's centre in [0, 1) (even bins) or
/// between the given edges (arbitrary bins). Columns of one N-D fill take different salts, so
/// that their bins are independent.
template <class T>
__global__ void generate(T* out, std::size_t n, int bins, spread s, const float* edges, std::uint64_t salt = 0) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int k = bin_for(i + salt, bins, s);
    if constexpr (std::is_floating_point_v<T>) {
      out[i] = edges ? static_cast<T>(0.5f * (edges[k] + edges[k + 1])) : static_cast<T>((k + 0.5) / bins);
    } else {
      out[i] = static_cast<T>(k);
    }
  }
}

struct row {
  std::string workload, spread, who;
  double ms, gbs;
};

/// Appends a measured row, and reports it on stderr at once.
void record(std::vector<row>& rows, row r) {
  std::fprintf(stderr, "measured %s %s %s: %.3f ms, %.1f GB/s\n", r.workload.c_str(), r.spread.c_str(),
               r.who.c_str(), r.ms, r.gbs);
  rows.push_back(std::move(r));
}

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

/// CUB with its temporary storage sized once; `call(temp, bytes)` runs one histogram.
template <class Call> double time_cub(Call call) {
  std::size_t temp_bytes = 0;
  call(nullptr, temp_bytes);
  void* temp;
  CHECK(cudaMalloc(&temp, std::max<std::size_t>(temp_bytes, 1)));
  const double ms = median_ms([&] { call(temp, temp_bytes); });
  CHECK(cudaFree(temp));
  return ms;
}

/// The registry's CUDA strategies, then automatic.
std::vector<tally::strategy> cuda_strategies() {
  std::vector<tally::strategy> out;
  for (const tally::strategy_info& s : tally::strategies())
    if (s.where == tally::backend::cuda) out.push_back(s.which);
  out.push_back(tally::strategy::automatic);
  return out;
}

/// One workload: 1 GiB of T over `bins` bins (arbitrary edges if `arbitrary`), CUB then every
/// tally strategy that applies.
template <class T>
void run_case(const std::string& workload, int bins, spread s, bool arbitrary, std::vector<row>& rows) {
  const std::size_t n = kBytes / sizeof(T);
  const double gb = n * sizeof(T) / 1e9;
  std::vector<float> edges_f(static_cast<std::size_t>(bins) + 1);
  for (int k = 0; k <= bins; ++k)  // strictly increasing, uneven: quadratic in k
    edges_f[static_cast<std::size_t>(k)] = static_cast<float>(k) / bins * (0.5f + 0.5f * k / bins);
  float* d_edges = nullptr;
  if (arbitrary) {
    CHECK(cudaMalloc(&d_edges, edges_f.size() * sizeof(float)));
    CHECK(cudaMemcpy(d_edges, edges_f.data(), edges_f.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  T* d;
  CHECK(cudaMalloc(&d, n * sizeof(T)));
  generate<T><<<1024, 256>>>(d, n, bins, s, d_edges);
  CHECK(cudaGetLastError());
  const int in = static_cast<int>(n);

  int* cub_counts;
  CHECK(cudaMalloc(&cub_counts, bins * sizeof(int)));
  using level_t = std::conditional_t<std::is_floating_point_v<T>, T, int>;
  const level_t lo = 0, hi = std::is_floating_point_v<T> ? level_t(1) : level_t(bins);
  const double cub_ms =
      arbitrary ? time_cub([&](void* t, std::size_t& b) {
        cub::DeviceHistogram::HistogramRange(t, b, d, cub_counts, bins + 1, d_edges, in);
      })
                : time_cub([&](void* t, std::size_t& b) {
                    cub::DeviceHistogram::HistogramEven(t, b, d, cub_counts, bins + 1, lo, hi, in);
                  });
  record(rows, {workload, name_of(s), "cub", cub_ms, gb / cub_ms * 1e3});

  std::vector<double> edges(edges_f.begin(), edges_f.end());
  const tally::axis a = arbitrary ? tally::axis::variable(edges)
                        : std::is_floating_point_v<T> ? tally::axis::regular(bins, 0.0, 1.0, tally::dtype::f32)
                                                      : tally::axis::integer(0, bins);
  const auto v = tally::make_view(d, static_cast<std::int64_t>(n));
  for (auto strat : cuda_strategies()) {
    const bool shared = strat == tally::strategy::shared || strat == tally::strategy::shared_replicated;
    if (shared && bins > 50000) continue;
    if (strat == tally::strategy::cluster && (sizeof(T) == 1 || bins > 300000)) continue;
    if (strat == tally::strategy::registers && bins + 3 > 32) continue;
    if (strat == tally::strategy::partitioned && (sizeof(T) == 1 || bins < 65536)) continue;
    tally::options o;
    o.backend = tally::backend::cuda;
    o.strategy = strat;
    tally::histogram h(a, o);
    const double ms = median_ms([&] { h.fill(v); });
    record(rows, {workload, name_of(s), "tally " + std::string(tally::name_of(strat)), ms, gb / ms * 1e3});
  }
  {  // The synchronous call with its counts read after every fill: what a one-shot call pays.
    tally::options o;
    o.backend = tally::backend::cuda;
    tally::histogram h(a, o);
    const double ms = median_ms([&] {
      h.fill(v);
      (void)h.counts_u64();
    });
    record(rows, {workload, name_of(s), "tally automatic + read", ms, gb / ms * 1e3});
  }
  // The stream-ordered entry point: counts stay on the device, nothing waits.
  tally::device_histogram dh(a);
  const double ms = median_ms([&] { dh.fill(v); });
  record(rows, {workload, name_of(s), "tally device_histogram", ms, gb / ms * 1e3});
  CHECK(cudaFree(cub_counts));
  CHECK(cudaFree(d));
  if (d_edges) CHECK(cudaFree(d_edges));
}

/// RGBA u8 pixels, 3 of 4 channels histogrammed with 256 bins: CUB MultiHistogramEven against
/// tally::fill_channels, synchronous and stream-ordered.
void run_rgba(spread s, std::vector<row>& rows) {
  const std::size_t n = kBytes;
  std::uint8_t* d;
  CHECK(cudaMalloc(&d, n));
  generate<std::uint8_t><<<1024, 256>>>(d, n, 256, s, nullptr);
  CHECK(cudaGetLastError());
  const double gb = n / 1e9;
  ::cuda::std::array<int*, 3> counts;
  for (auto& c : counts) CHECK(cudaMalloc(&c, 256 * sizeof(int)));
  const ::cuda::std::array<int, 3> levels{257, 257, 257}, lo{0, 0, 0}, hi{256, 256, 256};
  const double cub_ms = time_cub([&](void* t, std::size_t& b) {
    cub::DeviceHistogram::MultiHistogramEven<4, 3>(t, b, d, counts, levels, lo, hi, static_cast<int>(n / 4));
  });
  const std::string workload = "RGBA u8, 3 x 256";
  record(rows, {workload, name_of(s), "cub", cub_ms, gb / cub_ms * 1e3});
  tally::options o;
  o.backend = tally::backend::cuda;
  std::vector<tally::histogram> hs;
  for (int c = 0; c < 3; ++c) hs.emplace_back(tally::axis::integer(0, 256), o);
  const auto v = tally::make_view(d, static_cast<std::int64_t>(n));
  const double ms = median_ms([&] { tally::fill_channels(hs, v, 4); });
  record(rows, {workload, name_of(s), "tally automatic", ms, gb / ms * 1e3});
  // The stream-ordered call: counts stay on the device, nothing waits.
  std::vector<tally::device_histogram> dhs;
  for (int c = 0; c < 3; ++c) dhs.emplace_back(tally::axis::integer(0, 256));
  const double dms = median_ms([&] { tally::fill_channels(dhs, v, 4); });
  record(rows, {workload, name_of(s), "tally device_histogram", dms, gb / dms * 1e3});
  for (auto& c : counts) CHECK(cudaFree(c));
  CHECK(cudaFree(d));
}

/// i32 bin indices with f32 weights over `bins` bins (2^27 pairs, 1 GiB): no CUB anchor (CUB has
/// no weights); reported in G samples/s as well.
void run_weighted(int bins, spread s, std::vector<row>& rows) {
  const std::size_t n = kBytes / 8;
  std::int32_t* index;
  float* weight;
  CHECK(cudaMalloc(&index, n * sizeof(std::int32_t)));
  CHECK(cudaMalloc(&weight, n * sizeof(float)));
  generate<std::int32_t><<<1024, 256>>>(index, n, bins, s, nullptr);
  generate<float><<<1024, 256>>>(weight, n, 1024, spread::uniform, nullptr);
  CHECK(cudaGetLastError());
  tally::options o;
  o.backend = tally::backend::cuda;
  o.weighted = true;
  tally::histogram h(tally::axis::integer(0, bins), o);
  const auto iv = tally::make_view(index, static_cast<std::int64_t>(n));
  const auto wv = tally::make_view(weight, static_cast<std::int64_t>(n));
  const double ms = median_ms([&] { h.fill(iv, wv); });
  const std::string workload = "i32+f32 w, " + std::to_string(bins);
  record(rows, {workload + " (" + std::to_string(static_cast<int>(n / ms / 1e6)) + " Gs/s)", name_of(s),
                  "tally automatic", ms, kBytes / 1e9 / ms * 1e3});
  const double rms = median_ms([&] {
    h.fill(iv, wv);
    (void)h.sums_data();
  });
  record(rows, {workload + " (" + std::to_string(static_cast<int>(n / rms / 1e6)) + " Gs/s)", name_of(s),
                  "tally automatic + read", rms, kBytes / 1e9 / rms * 1e3});
  tally::options dopts;
  dopts.weighted = true;
  tally::device_histogram dh(tally::axis::integer(0, bins), dopts);
  const double dms = median_ms([&] { dh.fill(iv, wv); });
  record(rows, {workload + " (" + std::to_string(static_cast<int>(n / dms / 1e6)) + " Gs/s)", name_of(s),
                  "tally device_histogram", dms, kBytes / 1e9 / dms * 1e3});
  CHECK(cudaFree(index));
  CHECK(cudaFree(weight));
}

/// i32 bin indices with f32 and f64 weights over 256 bins (2^27 samples) into histograms that keep
/// exact sums (options::exact_sums: f32 weights take the exact kernel and a widening pass, f64
/// weights the wide atomics), beside the plain f64-weight sums; in G samples/s as well.
void run_exact_weighted(spread s, std::vector<row>& rows) {
  const std::size_t n = kBytes / 8;
  std::int32_t* index;
  float* weight;
  double* weight64;
  CHECK(cudaMalloc(&index, n * sizeof(std::int32_t)));
  CHECK(cudaMalloc(&weight, n * sizeof(float)));
  CHECK(cudaMalloc(&weight64, n * sizeof(double)));
  generate<std::int32_t><<<1024, 256>>>(index, n, 256, s, nullptr);
  generate<float><<<1024, 256>>>(weight, n, 1024, spread::uniform, nullptr);
  generate<double><<<1024, 256>>>(weight64, n, 1024, spread::uniform, nullptr);
  CHECK(cudaGetLastError());
  const auto iv = tally::make_view(index, static_cast<std::int64_t>(n));
  const auto time = [&](const tally::view& wv, bool exact) {
    tally::options o;
    o.backend = tally::backend::cuda;
    o.weighted = true;
    o.exact_sums = exact;
    tally::histogram h(tally::axis::integer(0, 256), o);
    const double ms = median_ms([&] { h.fill(iv, wv); });
    const std::string weights = wv.type == tally::dtype::f32 ? "f32" : "f64";
    const double bytes = static_cast<double>(n * (sizeof(std::int32_t) + tally::size_of(wv.type)));
    record(rows, {"i32+" + weights + " w, 256 (" + std::to_string(static_cast<int>(n / ms / 1e6)) + " Gs/s)",
                  name_of(s), exact ? "tally exact_sums" : "tally automatic", ms, bytes / 1e9 / ms * 1e3});
  };
  time(tally::make_view(weight, static_cast<std::int64_t>(n)), true);
  time(tally::make_view(weight64, static_cast<std::int64_t>(n)), false);
  time(tally::make_view(weight64, static_cast<std::int64_t>(n)), true);
  CHECK(cudaFree(index));
  CHECK(cudaFree(weight));
  CHECK(cudaFree(weight64));
}

/// N-D counts through the generic shared kernel, 1 GiB of f32 columns (8 bytes an event): issue
/// 40's HEP histogram, a dataset (integer axis of 5, one stride-0 i64 column: a broadcast scalar)
/// x 100 x 50 bins (25,000 cells), without and with flow bins; and 100 x 50 bins over two columns
/// (5,000 cells). The spread shapes each column's bins independently. No CUB anchor (CUB has no
/// N-D histogram).
void run_nd(spread s, std::vector<row>& rows) {
  const std::size_t n = kBytes / 8;
  float* pt;
  float* eta;
  std::int64_t* dataset;
  CHECK(cudaMalloc(&pt, n * sizeof(float)));
  CHECK(cudaMalloc(&eta, n * sizeof(float)));
  CHECK(cudaMalloc(&dataset, sizeof(std::int64_t)));
  generate<float><<<1024, 256>>>(pt, n, 100, s, nullptr);
  generate<float><<<1024, 256>>>(eta, n, 50, s, nullptr, n);
  generate<std::int64_t><<<1, 1>>>(dataset, 1, 5, spread::hotspot, nullptr);
  CHECK(cudaGetLastError());
  const double gb = kBytes / 1e9;
  const auto ptv = tally::make_view(pt, static_cast<std::int64_t>(n));
  const auto etav = tally::make_view(eta, static_cast<std::int64_t>(n));
  tally::view datasetv = tally::make_view(dataset, static_cast<std::int64_t>(n));
  datasetv.stride = 0;
  const tally::axis pt_axis = tally::axis::regular(100, 0.0, 1.0), eta_axis = tally::axis::regular(50, 0.0, 1.0);
  const auto time = [&](const std::string& workload, const std::vector<tally::axis>& axes,
                        const std::vector<tally::view>& columns) {
    for (const bool flow_bins : {false, true}) {
      tally::options o;
      o.backend = tally::backend::cuda;
      o.flow_bins = flow_bins;
      tally::histogram h(axes, o);
      const double ms = median_ms([&] { h.fill(columns); });
      record(rows, {workload, name_of(s), flow_bins ? "tally automatic, flow bins" : "tally automatic", ms,
                    gb / ms * 1e3});
    }
    tally::device_histogram dh(axes);
    const double ms = median_ms([&] { dh.fill(columns); });
    record(rows, {workload, name_of(s), "tally device_histogram", ms, gb / ms * 1e3});
  };
  time("N-D f32, 5x100x50 (stride 0)", {tally::axis::integer(0, 5), pt_axis, eta_axis}, {datasetv, ptv, etav});
  time("N-D f32, 100x50", {pt_axis, eta_axis}, {ptv, etav});
  CHECK(cudaFree(pt));
  CHECK(cudaFree(eta));
  CHECK(cudaFree(dataset));
}

/// The fixed cost of one fill of 1 device-resident sample, in microseconds: synchronous
/// (planning, the launch and the wait; then also the read of the counts, which brings them back),
/// and stream-ordered (planning and the launch, timed on the stream).
void run_overhead(std::vector<row>& rows) {
  std::int32_t* d;
  CHECK(cudaMalloc(&d, sizeof(std::int32_t)));
  CHECK(cudaMemset(d, 0, sizeof(std::int32_t)));
  tally::options o;
  o.backend = tally::backend::cuda;
  tally::histogram h(tally::axis::integer(0, 256), o);
  const double ms = median_ms([&] { h.fill(tally::make_view(d, 1)); });
  record(rows, {"fixed cost of a fill (us)", "-", "tally automatic", ms, ms * 1e3});
  const double rms = median_ms([&] {
    h.fill(tally::make_view(d, 1));
    (void)h.counts_u64();
  });
  record(rows, {"fixed cost of a fill (us)", "-", "tally automatic + read", rms, rms * 1e3});
  tally::device_histogram dh(tally::axis::integer(0, 256));
  const double dms = median_ms([&] { dh.fill(tally::make_view(d, 1)); });
  record(rows, {"fixed cost of a fill (us)", "-", "tally device_histogram", dms, dms * 1e3});
  CHECK(cudaFree(d));
}

}  // namespace

int main(int argc, char** argv) {
  if (refuses_debug_build("tally_gpu_bench")) return 1;
  const std::string out = argc > 1 ? argv[1] : "gpu_bench.json";
  const std::string only = argc > 2 ? argv[2] : "";
  const std::string only_spread = argc > 3 ? argv[3] : "";
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  void* probe;
  CHECK(cudaMalloc(&probe, kBytes));
  CHECK(cudaMemset(probe, 1, kBytes));
  const double read_gbs = read_bandwidth_gbs(probe, kBytes);
  CHECK(cudaFree(probe));

  std::vector<row> rows;
  run_overhead(rows);
  const auto want = [&](const std::string& name) { return only.empty() || name.find(only) != std::string::npos; };
  for (spread s : {spread::uniform, spread::hotspot, spread::skewed80, spread::normal}) {
    if (!only_spread.empty() && only_spread != name_of(s)) continue;
    if (want("u8")) run_case<std::uint8_t>("u8, 256 bins", 256, s, false, rows);
    if (want("rgba")) run_rgba(s, rows);
    for (int bins : {16, 256, 4096, 65536, 1 << 18, 1 << 20}) {
      const std::string name = "i32, " + std::to_string(bins) + " bins";
      if (want(name)) run_case<std::int32_t>(name, bins, s, false, rows);
    }
    if (want("exact")) run_exact_weighted(s, rows);
    if (want("f32, 256 even")) run_case<float>("f32, 256 even bins", 256, s, false, rows);
    if (want("f32, 256 edges")) run_case<float>("f32, 256 edges", 256, s, true, rows);
    for (int bins : {256, 4096, 65536, 1 << 20})
      if (want("weighted") || want("i32+f32 w, " + std::to_string(bins) + " ")) run_weighted(bins, s, rows);
    if (want("N-D")) run_nd(s, rows);
  }

  std::printf("device %s, measured read bandwidth %.0f GB/s (CUB DeviceReduce over 1 GiB)\n", prop.name, read_gbs);
  std::printf("%-26s %-9s %-24s %9s %9s %7s %7s\n", "workload", "spread", "who", "ms", "GB/s", "of bw", "vs CUB");
  std::ofstream json(out);
  json << "{\"device\":\"" << prop.name << "\",\"read_gbs\":" << read_gbs << ",\"rows\":[";
  double cub_gbs = 0;
  std::string cub_of;  // the workload and spread the last CUB row measured
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.who == "cub") {
      cub_gbs = r.gbs;
      cub_of = r.workload + r.spread;
    }
    const bool anchored = cub_of == r.workload + r.spread;
    if (r.spread == "-") {  // the fixed cost: microseconds, not GB/s
      std::printf("%-26s %-9s %-24s %9.3f %9.1f us\n", r.workload.c_str(), r.spread.c_str(), r.who.c_str(), r.ms,
                  r.gbs);
      json << (i ? "," : "") << "{\"workload\":\"" << r.workload << "\",\"who\":\"" << r.who
           << "\",\"ms\":" << r.ms << "}";
      continue;
    }
    std::printf("%-26s %-9s %-24s %9.3f %9.1f %6.1f%% ", r.workload.c_str(), r.spread.c_str(), r.who.c_str(), r.ms,
                r.gbs, 100 * r.gbs / read_gbs);
    if (anchored) std::printf("%6.2fx\n", r.gbs / cub_gbs);
    else std::printf("%7s\n", "-");
    json << (i ? "," : "") << "{\"workload\":\"" << r.workload << "\",\"spread\":\"" << r.spread << "\",\"who\":\""
         << r.who << "\",\"ms\":" << r.ms << ",\"gbs\":" << r.gbs << ",\"of_bandwidth\":" << r.gbs / read_gbs;
    if (anchored) json << ",\"vs_cub\":" << r.gbs / cub_gbs;
    json << "}";
  }
  json << "]}\n";
  return 0;
}

// Streaming-fill benchmark: device_histogram::fill_from_host of 8 GiB of host samples (far more
// than the 3 x 64 MiB of device buffers it uses) against the measured host-to-device copy rate
// of the same machine (cudaMemcpyAsync of 1 GiB blocks from pinned memory). Target: the fill from
// pinned memory at >= 90% of the copy rate. CUDA events, warm-up, median (timing.cuh). Prints a
// table and writes JSON to argv[1] (default stream_bench.json).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tally/device.hpp"
#include "timing.cuh"

namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;
constexpr std::size_t kBytes = 8 * kGiB;

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Uniform random 32-bit words (i32 over its range, or f32 in [0, 1)), written by all threads.
void fill_random(std::uint32_t* p, std::size_t n, bool floats) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([=] {
      for (std::size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        const auto r = static_cast<std::uint32_t>(mix(i));
        if (!floats) {
          p[i] = r;
        } else {
          const float f = static_cast<float>(r >> 8) * 0x1p-24f;
          std::memcpy(&p[i], &f, sizeof f);
        }
      }
    });
  for (auto& t : pool) t.join();
}

struct row {
  std::string source, type;
  double ms, gbs;
};

}  // namespace

int main(int argc, char** argv) {
  if (refuses_debug_build("tally_stream_bench")) return 1;
  const std::string out = argc > 1 ? argv[1] : "stream_bench.json";
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::size_t n = kBytes / sizeof(std::uint32_t);

  std::uint32_t* pinned = nullptr;
  CHECK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), kBytes, cudaHostAllocDefault));
  const std::unique_ptr<std::uint32_t[]> pageable(new std::uint32_t[n]);

  // The copy rate: 1 GiB blocks from pinned memory into one device buffer.
  void* block = nullptr;
  CHECK(cudaMalloc(&block, kGiB));
  fill_random(pinned, n, false);
  const double copy_ms = median_ms([&] {
    for (std::size_t at = 0; at < kBytes; at += kGiB)
      CHECK(cudaMemcpyAsync(block, reinterpret_cast<char*>(pinned) + at, kGiB, cudaMemcpyHostToDevice, nullptr));
  });
  CHECK(cudaFree(block));
  const double copy_gbs = kBytes / copy_ms / 1e6;

  std::vector<row> rows;
  const auto time_fill = [&](const std::string& source, const char* type, const tally::view& v, const tally::axis& a,
                             int copy_threads = 0) {
    tally::device_histogram h(a);
    tally::stream_options o;
    o.copy_threads = copy_threads;
    const double ms = median_ms([&] { h.fill_from_host(v, nullptr, o); });
    rows.push_back({source, type, ms, kBytes / ms / 1e6});
  };
  const auto i32 = tally::axis::regular(256, -2147483648.0, 2147483648.0);
  const auto f32 = tally::axis::regular(256, 0.0, 1.0);
  time_fill("pinned", "i32", {pinned, static_cast<std::int64_t>(n), 1, tally::dtype::i32}, i32);
  std::memcpy(pageable.get(), pinned, kBytes);
  time_fill("pageable", "i32", {pageable.get(), static_cast<std::int64_t>(n), 1, tally::dtype::i32}, i32);
  // Pageable memory by the number of threads that copy it into staging (the row above: the default).
  for (int threads : {4, 16})
    time_fill("pageable, " + std::to_string(threads) + " copy threads", "i32",
              {pageable.get(), static_cast<std::int64_t>(n), 1, tally::dtype::i32}, i32, threads);
  // The driver's own rate from pageable memory (its staging), 1 GiB blocks: a reference.
  CHECK(cudaMalloc(&block, kGiB));
  const double pageable_ms = median_ms([&] {
    for (std::size_t at = 0; at < kBytes; at += kGiB)
      CHECK(cudaMemcpyAsync(block, reinterpret_cast<char*>(pageable.get()) + at, kGiB, cudaMemcpyHostToDevice, nullptr));
  });
  CHECK(cudaFree(block));
  rows.push_back({"pageable cudaMemcpyAsync (no fill)", "i32", pageable_ms, kBytes / pageable_ms / 1e6});
  fill_random(pinned, n, true);
  time_fill("pinned", "f32", {pinned, static_cast<std::int64_t>(n), 1, tally::dtype::f32}, f32);
  CHECK(cudaFreeHost(pinned));

  std::printf("device %s: host-to-device copy %.1f GB/s (cudaMemcpyAsync, 1 GiB blocks from pinned memory)\n",
              prop.name, copy_gbs);
  std::printf("streaming fill of 8 GiB, 256 bins, 3 x 64 MiB buffers (target: from pinned >= 90%% of the copy rate)\n");
  std::printf("%-36s %-5s %9s %9s %12s %9s\n", "source", "type", "ms", "GB/s", "samples/s", "of copy");
  std::ofstream json(out);
  json << "{\"device\":\"" << prop.name << "\",\"h2d_gbs\":" << copy_gbs << ",\"bytes\":" << kBytes << ",\"rows\":[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    const double per_s = r.gbs * 1e9 / 4;
    std::printf("%-36s %-5s %9.1f %9.1f %12.3g %8.1f%%\n", r.source.c_str(), r.type.c_str(), r.ms, r.gbs, per_s,
                100 * r.gbs / copy_gbs);
    json << (i ? "," : "") << "{\"source\":\"" << r.source << "\",\"type\":\"" << r.type << "\",\"ms\":" << r.ms
         << ",\"gbs\":" << r.gbs << ",\"samples_per_s\":" << per_s << ",\"of_copy\":" << r.gbs / copy_gbs << "}";
  }
  json << "]}\n";
  return 0;
}

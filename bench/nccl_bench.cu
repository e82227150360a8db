// The multi-GPU benchmark: tally::sharded_fill (a fill on each GPU, then an NCCL all-reduce of
// the cells) against one fill on one GPU, and the all-reduce alone against NCCL's bandwidth.
// 2^30 i32 samples a GPU (argv[2]: log2 of it), integer axes of 256, 65536 and 2^20 bins counted,
// and of 256 and 65536 bins with exact sums of f32 weights (options::exact_sums: the words
// all-reduced as digits), every visible GPU (CUDA_VISIBLE_DEVICES picks them; with one the
// communicator has one rank). The baseline is the first GPU's fill alone; the slowest GPU's is
// printed beside it. Times are host wall-clock medians over all devices after warm-up (CUDA
// events time one device).
// Writes JSON to argv[1] (default nccl_bench.json).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tally/nccl.hpp"
#include "timing.cuh"

namespace {

#define NCCL_CHECK(expr)                                                                   \
  do {                                                                                     \
    ncclResult_t r = (expr);                                                               \
    if (r != ncclSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, ncclGetErrorString(r)); \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

/// A 64-bit hash of the index and a seed (splitmix64's finaliser).
__device__ std::uint64_t mixed(std::int64_t i, std::uint64_t seed) {
  std::uint64_t z = (static_cast<std::uint64_t>(i) + seed) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform samples in [0, bins) from a hash of the index and a seed: no host copy of 4 GiB.
__global__ void uniform_samples_kernel(std::int32_t* out, std::int64_t n, std::uint32_t bins, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<std::int32_t>(mixed(i, seed) % bins);
}

/// f32 weights in [-1, 1) from the same hash.
__global__ void uniform_weights_kernel(float* out, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<float>(static_cast<std::int64_t>(mixed(i, seed) >> 40) - (std::int64_t{1} << 23)) * 0x1p-23f;
}

struct gpus {
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;

  void sync() const {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      CHECK(cudaSetDevice(devices[i]));
      CHECK(cudaStreamSynchronize(streams[i]));
    }
  }
  std::vector<void*> stream_list() const { return {streams.begin(), streams.end()}; }
};

/// Median wall-clock milliseconds of `run` (which enqueues on every GPU) after two warm-ups.
template <class Run>
double median_wall_ms(const gpus& g, Run&& run, int runs = 7) {
  for (int w = 0; w < 2; ++w) run();
  g.sync();
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    g.sync();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// An NCCL all-reduce of `bytes` (as u64) on every GPU, in one group: the bandwidth reference.
double raw_all_reduce_ms(const gpus& g, std::size_t bytes, std::vector<void*>& buffers) {
  return median_wall_ms(g, [&] {
    NCCL_CHECK(ncclGroupStart());
    for (std::size_t i = 0; i < g.devices.size(); ++i)
      NCCL_CHECK(ncclAllReduce(buffers[i], buffers[i], bytes / 8, ncclUint64, ncclSum, g.comms[i], g.streams[i]));
    NCCL_CHECK(ncclGroupEnd());
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (refuses_debug_build("tally_nccl_bench")) return 1;
  const std::string out = argc > 1 ? argv[1] : "nccl_bench.json";
  const int log2_n = argc > 2 ? std::stoi(argv[2]) : 30;
  const std::int64_t n = std::int64_t{1} << log2_n;  // samples a GPU

  gpus g;
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  for (int d = 0; d < count; ++d) g.devices.push_back(d);
  const auto k = g.devices.size();
  g.comms.resize(k);
  NCCL_CHECK(ncclCommInitAll(g.comms.data(), static_cast<int>(k), g.devices.data()));
  std::vector<std::int32_t*> samples(k);
  std::vector<void*> scratch(k);
  const std::size_t big = std::size_t{256} << 20;  // NCCL's bus bandwidth at 256 MiB
  for (std::size_t i = 0; i < k; ++i) {
    CHECK(cudaSetDevice(g.devices[i]));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    g.streams.push_back(s);
    CHECK(cudaMalloc(&samples[i], static_cast<std::size_t>(n) * sizeof(std::int32_t)));
    CHECK(cudaMalloc(&scratch[i], big));
    CHECK(cudaMemset(scratch[i], 0, big));
  }
  const auto bus_gbs = [&](std::size_t bytes, double ms) {  // NCCL's busBw: 2 (k-1) / k of the bytes
    return k > 1 ? bytes * 2.0 * (k - 1) / k / (ms * 1e6) : 0.0;
  };
  const double big_ms = raw_all_reduce_ms(g, big, scratch);
  const double peak_bus_gbs = bus_gbs(big, big_ms);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, g.devices[0]));
  std::printf("%zu x %s, 2^%d i32 samples a GPU; NCCL all-reduce of 256 MiB: %.3f ms, bus %.1f GB/s\n", k, prop.name,
              log2_n, big_ms, peak_bus_gbs);

  std::ofstream json(out);
  json << "{\"device\":\"" << prop.name << "\",\"gpus\":" << k << ",\"samples_per_gpu\":" << n
       << ",\"nccl_256mib_ms\":" << big_ms << ",\"nccl_bus_gbs\":" << peak_bus_gbs << ",\"rows\":[";
  bool first_row = true;
  struct row_spec {
    std::int64_t bins;
    bool exact;  // f32 weights into options::exact_sums histograms
  };
  std::vector<float*> weights(k, nullptr);
  for (const row_spec r : {row_spec{256, false}, row_spec{65536, false}, row_spec{std::int64_t{1} << 20, false},
                           row_spec{256, true}, row_spec{65536, true}}) {
    const std::int64_t bins = r.bins;
    for (std::size_t i = 0; i < k; ++i) {
      CHECK(cudaSetDevice(g.devices[i]));
      uniform_samples_kernel<<<1024, 256, 0, g.streams[i]>>>(samples[i], n, static_cast<std::uint32_t>(bins), 1000 * i);
      CHECK(cudaGetLastError());
      if (r.exact && !weights[i]) {
        CHECK(cudaMalloc(&weights[i], static_cast<std::size_t>(n) * sizeof(float)));
        uniform_weights_kernel<<<1024, 256, 0, g.streams[i]>>>(weights[i], n, 77 + i);
        CHECK(cudaGetLastError());
      }
    }
    const tally::axis a = tally::axis::integer(0, bins);
    tally::options opts;
    opts.weighted = opts.exact_sums = r.exact;
    std::vector<tally::device_histogram> per_device;
    std::vector<tally::view> shards, weight_shards;
    for (std::size_t i = 0; i < k; ++i) {
      CHECK(cudaSetDevice(g.devices[i]));
      per_device.emplace_back(a, opts, g.streams[i]);
      shards.push_back(tally::view{samples[i], n, 1, tally::dtype::i32});
      if (r.exact) weight_shards.push_back(tally::view{weights[i], n, 1, tally::dtype::f32});
    }
    const auto fill_one = [&](std::size_t i) {
      if (r.exact) per_device[i].fill(shards[i], weight_shards[i], g.streams[i]);
      else per_device[i].fill(shards[i], g.streams[i]);
    };
    // Each GPU's own fill alone: the first GPU's is the baseline; the slowest bounds the sharded fill.
    std::vector<double> alone_ms;
    for (std::size_t i = 0; i < k; ++i) {
      CHECK(cudaSetDevice(g.devices[i]));
      alone_ms.push_back(median_wall_ms(g, [&] { fill_one(i); }));
    }
    CHECK(cudaSetDevice(g.devices[0]));
    const double one_ms = alone_ms[0];
    const double slowest_ms = *std::max_element(alone_ms.begin(), alone_ms.end());
    const double sharded_ms = median_wall_ms(g, [&] {
      tally::sharded_fill(per_device, shards, g.comms, g.stream_list(), weight_shards);
    });
    // Counts reduce inside one group of the caller's; exact sums one thread a device (their digits
    // are carried after the collective), which sharded_fill does for one thread: its time less
    // the fills' is not separable, so exact rows time the raw digits' all-reduce only.
    const double reduce_ms = r.exact ? 0.0 : median_wall_ms(g, [&] {
      NCCL_CHECK(ncclGroupStart());
      for (std::size_t i = 0; i < k; ++i) tally::all_reduce(per_device[i], g.comms[i], g.streams[i]);
      NCCL_CHECK(ncclGroupEnd());
    });
    const std::size_t cell_bytes =
        static_cast<std::size_t>(bins) * sizeof(std::uint64_t) * (r.exact ? tally::exact_digits_per_cell : 1);
    const double raw_ms = cell_bytes <= big ? raw_all_reduce_ms(g, cell_bytes, scratch) : 0.0;

    // The histogram of one sharded fill holds k * n samples on every GPU.
    for (auto& h : per_device) h.reset(g.streams[&h - per_device.data()]);
    tally::sharded_fill(per_device, shards, g.comms, g.stream_list(), weight_shards);
    if (!r.exact) {
      std::uint64_t total = 0;
      for (const std::uint64_t c : per_device.back().counts(g.streams[k - 1])) total += c;
      if (total != k * static_cast<std::uint64_t>(n)) {
        std::fprintf(stderr, "tally_nccl_bench: %llu samples counted, expected %llu\n",
                     static_cast<unsigned long long>(total), static_cast<unsigned long long>(k * n));
        return 3;
      }
    } else if (per_device[0].sums(g.streams[0]) != per_device.back().sums(g.streams[k - 1])) {
      std::fprintf(stderr, "tally_nccl_bench: the GPUs' exact sums differ after the all-reduce\n");
      return 3;
    }

    const double one_gs = n / (one_ms * 1e6), sharded_gs = k * n / (sharded_ms * 1e6);
    const double expected_ms = k > 1 ? cell_bytes * 2.0 * (k - 1) / k / (peak_bus_gbs * 1e6) : 0.0;
    const std::string what = std::to_string(bins) + " bins" + (r.exact ? ", exact f32-weighted sums" : "");
    const std::string alone = r.exact ? "not timed alone" : std::to_string(reduce_ms) + " ms";
    std::printf("%s: 1 GPU %.2f Gsamples/s (slowest GPU alone %.2f); %zu GPUs sharded fill + all_reduce %.2f "
                "Gsamples/s (%.2fx); all_reduce of %zu B %s (raw NCCL %.3f ms, at the 256 MiB bus bandwidth "
                "%.3f ms)\n",
                what.c_str(), one_gs, n / (slowest_ms * 1e6), k, sharded_gs, sharded_gs / one_gs, cell_bytes,
                alone.c_str(), raw_ms, expected_ms);
    json << (first_row ? "" : ",") << "{\"bins\":" << bins << ",\"exact_sums\":" << (r.exact ? "true" : "false")
         << ",\"one_gpu_ms\":" << one_ms << ",\"slowest_gpu_ms\":" << slowest_ms << ",\"sharded_ms\":" << sharded_ms
         << ",\"one_gpu_gsamples\":" << one_gs << ",\"sharded_gsamples\":" << sharded_gs << ",\"speedup\":" << sharded_gs / one_gs
         << ",\"all_reduce_ms\":" << reduce_ms << ",\"raw_nccl_ms\":" << raw_ms << ",\"bandwidth_bound_ms\":" << expected_ms
         << ",\"cell_bytes\":" << cell_bytes << "}";
    first_row = false;
  }
  json << "]}\n";
  for (std::size_t i = 0; i < k; ++i) {
    CHECK(cudaSetDevice(g.devices[i]));
    CHECK(cudaFree(samples[i]));
    CHECK(cudaFree(weights[i]));
    CHECK(cudaFree(scratch[i]));
    NCCL_CHECK(ncclCommDestroy(g.comms[i]));
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

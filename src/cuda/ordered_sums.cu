// Fixed-order f64 weighted sums on the GPU (weights not summed exactly): warps' copies in shared
// memory, lanes of one cell combined by a fixed tree, blocks added in a fixed order, on a grid that
// depends on n alone.
#include "cuda/sums_common.cuh"

namespace tally::detail::cuda {
namespace {

/// Sums x over each group of lanes with equal keys (`peers`, from peers_of) by a pairwise
/// tree fixed by the lanes' ranks in their group: the lowest lane of each group ends with the
/// group's sum, the same bits for the same inputs on every run.
__device__ __forceinline__ double sum_peers(unsigned peers, double x) {
  const unsigned lane = threadIdx.x & 31;
  unsigned rank = __popc(peers & ((1u << lane) - 1));  // members below this lane
  unsigned above = peers & ~((2u << lane) - 1);        // members above it (2u << 31 is 0)
  while (__any_sync(0xffffffffu, above != 0)) {
    const int next = __ffs(above);  // the next member still in the tree, 1-based; 0 if none
    const double partner = __shfl_sync(0xffffffffu, x, next > 0 ? next - 1 : lane);
    const bool done = rank & 1;  // odd ranks hand their sum to the even rank below and leave
    if (!done && next > 0) x += partner;
    above &= __ballot_sync(0xffffffffu, !done);
    rank >>= 1;
  }
  return x;
}

/// sum_peers over the whole warp (every lane one group), in lane 0: the same tree, without the
/// ranks' bookkeeping.
__device__ __forceinline__ double sum_warp(double x) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) x += __shfl_down_sync(0xffffffffu, x, d);
  return x;
}

/// The weights of the fixed-order sums: W values at a byte stride (0: one value for every sample).
template <class W> struct strided_weights {
  const char* p;
  std::int64_t stride;
  __device__ __forceinline__ double operator()(std::int64_t i) const {
    return static_cast<double>(load_unaligned<W>(p + i * stride));
  }
};
/// Contiguous, aligned f64 weights.
struct column_weights {
  const double* p;
  __device__ __forceinline__ double operator()(std::int64_t i) const { return __ldg(p + i); }
};

/// The 32-sample groups a warp of weighted_kernel loads before it adds the first of them.
constexpr int kWeightedGroups = 4;
constexpr unsigned kNotInWindow = 0xffffffffu;

/// The lanes whose key equals this lane's, for keys in the window: each such lane ORs its bit
/// into table[key], the warp's word of its cell (zero between groups), and reads back the mask of
/// its cell's lanes. A lane outside the window is a group of its own (its sum is dropped). The
/// caller's lowest lane of each cell zeroes the word again once every lane has read it.
/// __match_any_sync gives the same masks, at a cost that grows with the number of distinct keys;
/// the table costs one shared atomic and one load a lane (bench/PERFORMANCE.md, "Fixed-order f64
/// weighted sums").
__device__ __forceinline__ unsigned peers_of(unsigned key, unsigned* table) {
  const unsigned lane = threadIdx.x & 31;
  const bool in = key != kNotInWindow;
  if (in) atomicOr(table + key, 1u << lane);
  __syncwarp();
  const unsigned peers = in ? table[key] : 1u << lane;
  __syncwarp();  // every lane has read before the word is cleared
  return peers;
}

/// Weighted sums over the window [lo, lo + window) of cells. Block b takes a fixed contiguous
/// range of samples; warp w of it takes the 32-sample groups w, w + warps, ... in order; the
/// lanes of a group that share a cell combine by sum_peers and the lowest adds into the warp's
/// own f64 copy. Then the warps' copies are added in warp order into partials[b]. A warp loads
/// kWeightedGroups groups' samples and weights before it adds the first: the same order of
/// additions, with the loads in flight together. A group whose lanes all share one cell (a hot
/// bin's) skips the search for its groups.
template <class Samples, class Weights>
__global__ void __launch_bounds__(256) weighted_kernel(Samples samples, Weights weight, weighted_args a) {
  extern __shared__ double warp_sums[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  auto* tables = reinterpret_cast<unsigned*>(warp_sums + warps * a.window);  // peers_of's, a warp each
  for (std::int64_t k = threadIdx.x; k < warps * a.window; k += blockDim.x) {
    warp_sums[k] = 0.0;
    tables[k] = 0u;
  }
  __syncthreads();
  double* mine = warp_sums + warp * a.window;
  unsigned* table = tables + warp * a.window;

  const std::int64_t per = a.n / gridDim.x, extra = a.n % gridDim.x;
  const std::int64_t begin = blockIdx.x * per + (blockIdx.x < extra ? blockIdx.x : extra);
  const std::int64_t end = begin + per + (blockIdx.x < extra ? 1 : 0);
  const std::int64_t step = 32 * warps;
  unsigned long long under = 0, over = 0, nan = 0;
  for (std::int64_t base = begin + 32 * warp; base < end; base += step * kWeightedGroups) {
    unsigned key[kWeightedGroups];
    double w[kWeightedGroups];
#pragma unroll
    for (int g = 0; g < kWeightedGroups; ++g) {
      const std::int64_t i = base + g * step + lane;
      key[g] = kNotInWindow;
      w[g] = 0.0;
      if (i < end) {
        w[g] = weight(i);
        const std::int64_t s = samples.slot(i, a.cells);
        if (s >= a.cells) {
          under += s == a.cells;
          over += s == a.cells + 1;
          nan += s == a.cells + 2;
        } else if (s >= a.window_lo && s < a.window_lo + a.window) {
          key[g] = static_cast<unsigned>(s - a.window_lo);
        }
      }
    }
#pragma unroll
    for (int g = 0; g < kWeightedGroups; ++g) {
      __syncwarp();  // the last group's additions to the warp's copy and its table's clears are seen
      const unsigned first = __shfl_sync(0xffffffffu, key[g], 0);
      if (__all_sync(0xffffffffu, key[g] == first)) {
        if (first == kNotInWindow) continue;
        const double sum = sum_warp(w[g]);
        if (lane == 0) mine[first] += sum;
        continue;
      }
      const unsigned peers = peers_of(key[g], table);
      const double sum = sum_peers(peers, w[g]);
      if (key[g] != kNotInWindow && lane == static_cast<unsigned>(__ffs(peers) - 1)) {
        mine[key[g]] += sum;
        table[key[g]] = 0u;  // the table is zero again for the next group
      }
    }
  }
  if (a.count_flow) add_warp_flow(under, over, nan, a.flow);
  __syncthreads();
  for (std::int64_t c = threadIdx.x; c < a.window; c += blockDim.x) {
    double total = 0.0;
    for (int v = 0; v < warps; ++v) total += warp_sums[v * a.window + c];
    a.partials[blockIdx.x * a.window + c] = total;
  }
}

/// sums[c] += the blocks' partials of cell c, summed in a fixed order: 32 parts of consecutive
/// blocks, each summed in order, then the parts in order.
__global__ void reduce_partials_kernel(const double* partials, std::int64_t blocks, std::int64_t window,
                                       double* sums) {
  __shared__ double parts[32][33];
  const std::int64_t c = blockIdx.x * 32 + threadIdx.x;
  const std::int64_t part = threadIdx.y;
  const std::int64_t b0 = blocks * part / 32, b1 = blocks * (part + 1) / 32;
  double sum = 0.0;
  if (c < window)
    for (std::int64_t b = b0; b < b1; ++b) sum += partials[b * window + c];
  parts[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < window) {
    double total = 0.0;
    for (int p = 0; p < 32; ++p) total += parts[p][threadIdx.x];
    sums[c] += total;
  }
}

}  // namespace

void sum_weighted(const device_axes& axes, const weighted_args& args, const launch_shape& shape) {
  const auto launch = [&](const auto& samples, const auto& weights) {
    auto* kernel = &weighted_kernel<std::decay_t<decltype(samples)>, std::decay_t<decltype(weights)>>;
    allow_shared(reinterpret_cast<const void*>(kernel), shape.shared_bytes);
    kernel<<<shape.grid, shape.block, shape.shared_bytes, shape.stream>>>(samples, weights, args);
    TALLY_CUDA_CHECK(cudaGetLastError());
  };
  const device_axis& first = axes.axis[0];
  const auto size = static_cast<std::int64_t>(size_of(first.type));
  const bool column = axes.count == 1 && first.stride_bytes == size &&
                      reinterpret_cast<std::uintptr_t>(first.data) % static_cast<std::uintptr_t>(size) == 0;
  const bool f64_column = args.weight_type == dtype::f64 && args.weight_stride_bytes == sizeof(double) &&
                          reinterpret_cast<std::uintptr_t>(args.weights) % alignof(double) == 0;
  const auto* weights64 = reinterpret_cast<const double*>(args.weights);
  if (!(column && f64_column &&
        with_column_samples(axes, [&](const auto& samples) { launch(samples, column_weights{weights64}); }))) {
    if (args.weight_type == dtype::f32)
      launch(any_samples{axes}, strided_weights<float>{args.weights, args.weight_stride_bytes});
    else
      launch(any_samples{axes}, strided_weights<double>{args.weights, args.weight_stride_bytes});
  }
  const auto tiles = static_cast<unsigned>((args.window + 31) / 32);
  reduce_partials_kernel<<<tiles, dim3(32, 32), 0, shape.stream>>>(args.partials, shape.grid, args.window,
                                                                    args.sums + args.window_lo);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

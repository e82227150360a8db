// The generic kernels, for any sample type, stride, alignment and number of axes: one sample
// per load, the rule chosen at run time. global_atomic and warp_aggregated (the ladder's first
// rungs), shared / shared_replicated, and the deterministic weighted sums.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "cuda/kernels.hpp"

namespace tally::detail::cuda {
namespace {

/// global_atomic: one 64-bit atomic per sample straight into the device counts. With
/// WarpAggregated (the warp_aggregated strategy), the lanes of a warp that hit the same slot
/// find each other with __match_any_sync and the lowest of them adds for all, so a hot bin
/// costs one atomic per warp instead of 32.
template <bool WarpAggregated>
__global__ void global_atomic_kernel(device_axes axes, std::int64_t n, std::int64_t cells,
                                     unsigned long long* slots) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const std::int64_t slot = slot_of(axes, i, cells);
    if constexpr (WarpAggregated) {
      const unsigned peers = __match_any_sync(__activemask(), static_cast<unsigned long long>(slot));
      if ((threadIdx.x & 31) == static_cast<unsigned>(__ffs(peers) - 1))
        atomicAdd(&slots[slot], static_cast<unsigned long long>(__popc(peers)));
    } else {
      atomicAdd(&slots[slot], 1ull);
    }
  }
}

/// shared: each block counts into 2^shift interleaved shared-memory copies of all slots
/// (32-bit; the host bounds a block's samples below 2^32), then adds them to the device counts.
__global__ void shared_kernel(device_axes axes, std::int64_t n, std::int64_t cells, int shift,
                              unsigned long long* slots) {
  extern __shared__ unsigned block_slots[];
  const std::int64_t total = cells + 3;
  const std::int64_t copies = std::int64_t{1} << shift;
  for (std::int64_t k = threadIdx.x; k < (total << shift); k += blockDim.x) block_slots[k] = 0;
  __syncthreads();
  const unsigned copy = threadIdx.x & (copies - 1);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    atomicAdd(&block_slots[(slot_of(axes, i, cells) << shift) + copy], 1u);
  __syncthreads();
  flush_copies(block_slots, total, shift, slots);
}

/// A count stored as element c of `out`, of `type` (u64, i64, f64, f32, f16, bf16; the float
/// types rounded to nearest from the count's float32 value where they are narrower, as a
/// conversion of int64 counts).
__device__ __forceinline__ void store_count(void* out, dtype type, std::int64_t c, unsigned long long v) {
  switch (type) {
    case dtype::u64:
    case dtype::i64: static_cast<unsigned long long*>(out)[c] = v; break;
    case dtype::f64: static_cast<double*>(out)[c] = static_cast<double>(v); break;
    case dtype::f32: static_cast<float*>(out)[c] = static_cast<float>(v); break;
    case dtype::f16: static_cast<__half*>(out)[c] = __float2half_rn(static_cast<float>(v)); break;
    case dtype::bf16: static_cast<__nv_bfloat16*>(out)[c] = __float2bfloat16_rn(static_cast<float>(v)); break;
    default: break;
  }
}

/// A block's count of cell c added into `out`, of `type` (u64, i64, f64, f32): integer adds in
/// any order give the same integer, below 2^24 in f32 (the planner's add_once limit keeps it).
__device__ __forceinline__ void add_count(void* out, dtype type, std::int64_t c, unsigned v) {
  switch (type) {
    case dtype::u64:
    case dtype::i64: atomicAdd(static_cast<unsigned long long*>(out) + c, static_cast<unsigned long long>(v)); break;
    case dtype::f64: atomicAdd(static_cast<double*>(out) + c, static_cast<double>(v)); break;
    case dtype::f32: atomicAdd(static_cast<float*>(out) + c, static_cast<float>(v)); break;
    default: break;
  }
}

/// count_into's small fills: each block counts its grid-stride share of the samples in shared
/// memory (the flow slots after the cells), then the one block of write_once writes each cell
/// into `out`, which needs no zeroing, or each block of add_once adds its nonzero counts into
/// `out`, zeroed before.
template <bool Adds>
__global__ void count_once_kernel(device_axes axes, std::int64_t n, std::int64_t cells, void* out, dtype type) {
  extern __shared__ unsigned block_slots[];
  for (std::int64_t k = threadIdx.x; k < cells + 3; k += blockDim.x) block_slots[k] = 0;
  __syncthreads();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    atomicAdd(&block_slots[slot_of(axes, i, cells)], 1u);
  __syncthreads();
  for (std::int64_t c = threadIdx.x; c < cells; c += blockDim.x) {
    if constexpr (Adds) {
      if (block_slots[c]) add_count(out, type, c, block_slots[c]);
    } else {
      store_count(out, type, c, block_slots[c]);
    }
  }
}

/// A histogram's u64 count of a cell stored into `out` as `type` (for_each_cell).
struct convert_op {
  const unsigned long long* counts;
  void* out;
  dtype type;
  __device__ void operator()(std::int64_t c) const { store_count(out, type, c, counts[c]); }
};

/// Sums x over each group of lanes with equal keys (`peers`, from __match_any_sync) by a
/// pairwise tree fixed by the lanes' ranks in their group: the lowest lane of each group ends
/// with the group's sum, the same bits for the same inputs on every run.
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

template <class W> __device__ __forceinline__ double weight_at(const char* w, std::int64_t stride, std::int64_t i) {
  return static_cast<double>(load_unaligned<W>(w + i * stride));
}

/// Weighted sums over the window [lo, lo + window) of cells. Block b takes a fixed contiguous
/// range of samples; warp w of it takes the 32-sample groups w, w + warps, ... in order; the
/// lanes of a group that share a cell combine by sum_peers and the lowest adds into the warp's
/// own f64 copy. Then the warps' copies are added in warp order into partials[b].
template <class W>
__global__ void __launch_bounds__(256) weighted_kernel(weighted_args a) {
  extern __shared__ double warp_sums[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (std::int64_t k = threadIdx.x; k < warps * a.window; k += blockDim.x) warp_sums[k] = 0.0;
  __syncthreads();
  double* mine = warp_sums + warp * a.window;

  const std::int64_t per = a.n / gridDim.x, extra = a.n % gridDim.x;
  const std::int64_t begin = blockIdx.x * per + (blockIdx.x < extra ? blockIdx.x : extra);
  const std::int64_t end = begin + per + (blockIdx.x < extra ? 1 : 0);
  unsigned long long under = 0, over = 0, nan = 0;
  for (std::int64_t base = begin + 32 * warp; base < end; base += 32 * warps) {
    const std::int64_t i = base + lane;
    unsigned key = 0xffffffffu;  // not in the window
    double w = 0.0;
    if (i < end) {
      const std::int64_t s = slot_of(a.axes, i, a.cells);
      if (s >= a.cells) {
        under += s == a.cells;
        over += s == a.cells + 1;
        nan += s == a.cells + 2;
      } else if (s >= a.window_lo && s < a.window_lo + a.window) {
        key = static_cast<unsigned>(s - a.window_lo);
        w = weight_at<W>(a.weights, a.weight_stride_bytes, i);
      }
    }
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    const double sum = sum_peers(peers, w);
    if (key != 0xffffffffu && lane == static_cast<unsigned>(__ffs(peers) - 1)) mine[key] += sum;
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

void count_generic(const device_axes& axes, std::int64_t n, std::int64_t cells, strategy s, int replica_shift,
                   unsigned long long* slots, const launch_shape& shape) {
  switch (s) {
    case strategy::shared:
    case strategy::shared_replicated:
      allow_shared(reinterpret_cast<const void*>(shared_kernel), shape.shared_bytes);
      shared_kernel<<<shape.grid, shape.block, shape.shared_bytes, shape.stream>>>(axes, n, cells,
                                                                                  replica_shift, slots);
      break;
    case strategy::warp_aggregated:
      global_atomic_kernel<true><<<shape.grid, shape.block, 0, shape.stream>>>(axes, n, cells, slots);
      break;
    default:
      global_atomic_kernel<false><<<shape.grid, shape.block, 0, shape.stream>>>(axes, n, cells, slots);
      break;
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void count_once(const device_axes& axes, std::int64_t n, std::int64_t cells, const policy& plan, void* out,
                dtype type, cudaStream_t stream) {
  const auto bytes = static_cast<std::size_t>(plan.shared_bytes);
  const auto kernel = plan.add_once ? count_once_kernel<true> : count_once_kernel<false>;
  if (plan.add_once)
    TALLY_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(cells) * size_of(type), stream));
  allow_shared(reinterpret_cast<const void*>(kernel), bytes);
  kernel<<<static_cast<unsigned>(plan.grid_blocks), static_cast<unsigned>(plan.block_threads), bytes, stream>>>(
      axes, n, cells, out, type);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void convert_counts(const unsigned long long* counts, std::int64_t cells, void* out, dtype type, cudaStream_t stream) {
  for_each_cell(cells, convert_op{counts, out, type}, stream);
}

void sum_weighted(const weighted_args& args, const launch_shape& shape) {
  auto* kernel = args.weight_type == dtype::f32 ? &weighted_kernel<float> : &weighted_kernel<double>;
  allow_shared(reinterpret_cast<const void*>(kernel), shape.shared_bytes);
  kernel<<<shape.grid, shape.block, shape.shared_bytes, shape.stream>>>(args);
  TALLY_CUDA_CHECK(cudaGetLastError());
  const auto tiles = static_cast<unsigned>((args.window + 31) / 32);
  reduce_partials_kernel<<<tiles, dim3(32, 32), 0, shape.stream>>>(args.partials, shape.grid, args.window,
                                                                    args.sums + args.window_lo);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

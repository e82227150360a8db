// The generic kernels, for any sample type, stride, alignment and number of axes, the rule chosen
// at run time: global_atomic and warp_aggregated (the ladder's first rungs), shared /
// shared_replicated (several samples of each column in flight a thread, each axis' rule chosen once
// for them), and the one-launch counts of small fills.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "core/generic_shape.hpp"
#include "cuda/clusters.cuh"
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

// shared_kernel's shape (kGenericThreads, kGenericLoads, kGenericAhead): core/generic_shape.hpp,
// which the planner sizes the launches by. Columns not loaded ahead load as their axis bins.

/// How shared_kernel reads each axis' column, worked out on the host once per launch.
struct column_reads {
  int size[kMaxAxes] = {};         // bytes per sample
  bool aligned[kMaxAxes] = {};     // the column's address and stride are multiples of the size
  bool repeated[kMaxAxes] = {};    // stride 0: one value, binned once per block
  int ahead[kMaxAxes] = {};        // the column's place among those loaded ahead; -1: none
  int ahead_axis[kGenericAhead] = {};  // the axis of each column loaded ahead
  int ahead_count = 0;
};

column_reads reads_of(const device_axes& axes) {
  column_reads r;
  for (int d = 0; d < axes.count; ++d) {
    const device_axis& a = axes.axis[d];
    r.size[d] = static_cast<int>(size_of(a.type));
    r.aligned[d] = reinterpret_cast<std::uintptr_t>(a.data) % r.size[d] == 0 && a.stride_bytes % r.size[d] == 0;
    r.repeated[d] = a.stride_bytes == 0;
    r.ahead[d] = -1;
    if (!r.repeated[d] && r.size[d] <= 4 && r.ahead_count < kGenericAhead) {
      r.ahead[d] = r.ahead_count;
      r.ahead_axis[r.ahead_count++] = d;
    }
  }
  return r;
}

/// The bits of the sample of `size` (1, 2 or 4) bytes at p, in the low bytes.
__device__ __forceinline__ unsigned load_bits(const char* p, int size, bool aligned) {
  switch (size) {
    case 1: return load_as<std::uint8_t>(p, true);
    case 2: return load_as<std::uint16_t>(p, aligned);
    default: return load_as<std::uint32_t>(p, aligned);
  }
}

/// shared_kernel's axes and how it reads their columns (one parameter: the kernel then reads both
/// from parameter space at any index, where a second would be copied to local memory).
struct generic_args {
  device_axes axes;
  column_reads reads;
};

/// shared and shared_replicated, any axes: each block counts into 2^shift interleaved copies of
/// all slots in shared memory (32-bit; the host bounds a block's samples below 2^32), then adds
/// them to the device counts. A thread takes kGenericLoads samples a grid-stride apart (each load
/// of a warp coalesced): the columns loaded ahead all together, then the axes bin in order, each
/// axis' rule chosen once for the thread's samples; a column of one repeated value (stride 0) is
/// binned once per block, into the ints after the copies.
__global__ void __launch_bounds__(kGenericThreads)
    shared_kernel(generic_args args, std::int64_t n, std::int64_t cells, int shift, unsigned long long* slots) {
  extern __shared__ unsigned block_slots[];
  const device_axes& axes = args.axes;
  const column_reads& reads = args.reads;
  const std::int64_t total = cells + 3;
  int* repeated_bins = reinterpret_cast<int*>(block_slots + (total << shift));
  for (std::int64_t k = threadIdx.x; k < (total << shift); k += blockDim.x) block_slots[k] = 0;
  for (int d = static_cast<int>(threadIdx.x); n > 0 && d < axes.count; d += static_cast<int>(blockDim.x))
    if (reads.repeated[d]) repeated_bins[d] = static_cast<int>(axis_index(axes.axis[d], 0));
  __syncthreads();
  unsigned* mine = block_slots + (threadIdx.x & ((1u << shift) - 1));  // this lane's copy
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += kGenericLoads * step) {
    // Samples i + k x step for k < in (all but the grid's last round).
    const int in = i + (kGenericLoads - 1) * step < n ? kGenericLoads : static_cast<int>((n - 1 - i) / step) + 1;
    unsigned bits[kGenericAhead][kGenericLoads] = {};
#pragma unroll
    for (int e = 0; e < kGenericAhead; ++e) {
      if (e >= reads.ahead_count) break;
      const int d = reads.ahead_axis[e];
      const char* p = axes.axis[d].data + i * axes.axis[d].stride_bytes;
      const std::int64_t p_step = step * axes.axis[d].stride_bytes;
#pragma unroll
      for (int k = 0; k < kGenericLoads; ++k)
        if (k < in) bits[e][k] = load_bits(p + k * p_step, reads.size[d], reads.aligned[d]);
    }
    // Each sample's cell so far, or the index (< 0) of the first axis that dropped it.
    int flat[kGenericLoads] = {};
    for (int d = 0; d < axes.count; ++d) {
      const device_axis& a = axes.axis[d];
      int b[kGenericLoads];
      if (reads.repeated[d]) {
        const int repeated = repeated_bins[d];
#pragma unroll
        for (int k = 0; k < kGenericLoads; ++k) b[k] = repeated;
      } else {
        const int e_of = reads.ahead[d];
        unsigned ahead_bits[kGenericLoads] = {};
#pragma unroll
        for (int e = 0; e < kGenericAhead; ++e)
#pragma unroll
          for (int k = 0; k < kGenericLoads; ++k)
            if (e == e_of) ahead_bits[k] = bits[e][k];
        const bool aligned = reads.aligned[d];
        with_axis_rule(a, [&](auto tag, const auto& binner) {
          using T = typename decltype(tag)::type;
          T v[kGenericLoads];
#pragma unroll
          for (int k = 0; k < kGenericLoads; ++k) {
            v[k] = T{};
            if constexpr (sizeof(T) <= sizeof(unsigned)) {
              if (e_of >= 0) {
                memcpy(&v[k], &ahead_bits[k], sizeof(T));
                continue;
              }
            }
            if (k < in) v[k] = load_as<T>(a.data + (i + k * step) * a.stride_bytes, aligned);
          }
#pragma unroll
          for (int k = 0; k < kGenericLoads; ++k) b[k] = static_cast<int>(binner(v[k]));
        });
      }
      const int bins = static_cast<int>(a.bins);
#pragma unroll
      for (int k = 0; k < kGenericLoads; ++k) {
        if (axes.flow_bins) flat[k] = flat[k] * (bins + 3) + static_cast<int>(flow_bin_of(b[k], bins));
        else if (flat[k] >= 0) flat[k] = b[k] < 0 ? b[k] : flat[k] * bins + b[k];
      }
    }
    // atomicAdd(p, 1): the warp's lanes on one counter add once (a hot cell costs no more).
#pragma unroll
    for (int k = 0; k < kGenericLoads; ++k)
      if (k < in) atomicAdd(mine + (static_cast<unsigned>(slot_of_index(flat[k], cells)) << shift), 1u);
  }
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

/// Samples a thread of count_once_kernel loads before it counts the first. A small fill's time is
/// the latency of its loads, not the bandwidth: a thread's share is at most 16 samples.
constexpr int kOnceLoads = 8;

/// Counts the block's grid-stride share of the n samples into block_slots. A column aligned to
/// its type: each thread loads kOnceLoads samples before it bins them; else one at a time.
__device__ __forceinline__ void count_share(const device_axes& axes, std::int64_t n, std::int64_t cells,
                                            unsigned* block_slots) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  bool counted = false;
  if (axes.count == 1) {
    const device_axis& a = axes.axis[0];
    with_axis_rule(a, [&](auto tag, const auto& binner) {
      using T = typename decltype(tag)::type;
      if (reinterpret_cast<std::uintptr_t>(a.data) % alignof(T) != 0 || a.stride_bytes % alignof(T) != 0) return;
      counted = true;
      for (std::int64_t i = first; i < n; i += kOnceLoads * stride) {
        T v[kOnceLoads] = {};
#pragma unroll
        for (int k = 0; k < kOnceLoads; ++k)
          if (i + k * stride < n) v[k] = *reinterpret_cast<const T*>(a.data + (i + k * stride) * a.stride_bytes);
#pragma unroll
        for (int k = 0; k < kOnceLoads; ++k)
          if (i + k * stride < n) atomicAdd(&block_slots[slot_of_index(binner(v[k]), cells)], 1u);
      }
    });
  }
  if (!counted)
    for (std::int64_t i = first; i < n; i += stride) atomicAdd(&block_slots[slot_of(axes, i, cells)], 1u);
}

/// count_into's small fills: each block counts its grid-stride share of the samples in shared
/// memory (the flow slots after the cells). write_once's grid is one cluster: once every block
/// has counted, thread t of block r sums cells r x blockDim + t, stepping by the cluster's
/// threads, over the cluster's copies and writes each into `out`, which needs no zeroing.
/// add_once's blocks each add their nonzero counts into `out`, zeroed before. Blocks of up to
/// 1024 threads (the planner's write_once).
template <bool Adds>
__global__ void __launch_bounds__(1024) count_once_kernel(device_axes axes, std::int64_t n, std::int64_t cells, void* out, dtype type) {
  extern __shared__ unsigned block_slots[];
  for (std::int64_t k = threadIdx.x; k < cells + 3; k += blockDim.x) block_slots[k] = 0;
  __syncthreads();
  count_share(axes, n, cells, block_slots);
  if constexpr (Adds) {
    __syncthreads();
    for (std::int64_t c = threadIdx.x; c < cells; c += blockDim.x)
      if (block_slots[c]) add_count(out, type, c, block_slots[c]);
  } else {
    cluster_sync();  // every block's counts are in its shared memory
    const unsigned blocks = cluster_blocks();
    for (std::int64_t c = cluster_rank() * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < cells;
         c += static_cast<std::int64_t>(blocks) * blockDim.x) {
      unsigned count = 0;
      for (unsigned b = 0; b < blocks; ++b) count += cluster_shared(block_slots, b)[c];
      store_count(out, type, c, count);
    }
    cluster_sync();  // no block leaves while another reads its shared memory
  }
}

/// A histogram's u64 count of a cell stored into `out` as `type` (for_each_cell).
struct convert_op {
  const unsigned long long* counts;
  void* out;
  dtype type;
  __device__ void operator()(std::int64_t c) const { store_count(out, type, c, counts[c]); }
};

}  // namespace

void count_generic(const device_axes& axes, std::int64_t n, std::int64_t cells, strategy s, int replica_shift,
                   unsigned long long* slots, const launch_shape& shape) {
  switch (s) {
    case strategy::shared:
    case strategy::shared_replicated: {
      // The copies, then each axis' bin where its column repeats one value.
      const std::size_t needed = static_cast<std::size_t>(((cells + 3) << replica_shift) + axes.count) * 4;
      if (shape.shared_bytes < needed || shape.block > static_cast<unsigned>(kGenericThreads))
        throw error("count_generic: a block of " + std::to_string(shape.block) + " threads and " +
                    std::to_string(shape.shared_bytes) + " bytes of shared memory; the kernel needs at most " +
                    std::to_string(kGenericThreads) + " threads and " + std::to_string(needed) + " bytes");
      allow_shared(reinterpret_cast<const void*>(shared_kernel), shape.shared_bytes);
      shared_kernel<<<shape.grid, shape.block, shape.shared_bytes, shape.stream>>>(
          generic_args{axes, reads_of(axes)}, n, cells, replica_shift, slots);
      break;
    }
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
  const launch_shape shape{static_cast<unsigned>(plan.grid_blocks), static_cast<unsigned>(plan.block_threads),
                           static_cast<std::size_t>(plan.shared_bytes), stream};
  if (plan.write_once) {
    launch_clustered(&count_once_kernel<false>, shape, shape.grid, axes, n, cells, out, type);
    return;
  }
  TALLY_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(cells) * size_of(type), stream));
  allow_shared(reinterpret_cast<const void*>(&count_once_kernel<true>), shape.shared_bytes);
  count_once_kernel<true><<<shape.grid, shape.block, shape.shared_bytes, stream>>>(axes, n, cells, out, type);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void convert_counts(const unsigned long long* counts, std::int64_t cells, void* out, dtype type, cudaStream_t stream) {
  for_each_cell(cells, convert_op{counts, out, type}, stream);
}

}  // namespace tally::detail::cuda

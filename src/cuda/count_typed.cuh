// The typed count kernel: one contiguous column of T, 16-byte loads on the aligned body and
// scalar loads for the head and tail, the shared bin rule per sample, counted in 2^shift
// interleaved shared-memory copies (lane l uses copy l mod 2^shift) or straight into global
// memory. Included by the translation units that instantiate it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include <cooperative_groups.h>

#include "cuda/kernels.hpp"

namespace tally::detail::cuda {

constexpr int kTypedThreads = 512;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread before counting

/// The lowest value of an 8-bit type: the value table's slot s holds the value s + value_lo<T>.
template <class T> constexpr int value_lo = std::is_signed_v<T> ? -128 : 0;

/// The value table's slot of an 8-bit sample: its value less the type's lowest (never dropped;
/// the fold applies the axis' rule to each of the 256 values once).
struct value_binner {
  int lo;
  template <class T> __device__ __forceinline__ int operator()(T v) const { return static_cast<int>(v) - lo; }
};

/// The value table of C interleaved channels (C = 2, 3, 4): sample i of value v counts in
/// slot (v - lo) + 256 * (i mod C), so channel c's values fill slots [256 c, 256 c + 256).
/// `phase` is the channel of the launch's first sample.
template <int C> struct channel_value_binner {
  int lo;
  int phase;
  template <class T> __device__ __forceinline__ int operator()(T v, std::int64_t index) const {
    return static_cast<int>(v) - lo + 256 * static_cast<int>((index + phase) % C);
  }
};

template <class B> struct takes_index : std::false_type {};
template <int C> struct takes_index<channel_value_binner<C>> : std::true_type {};
/// The distance between samples of one channel: runs of equal slots are looked for among them.
template <class B> constexpr int channel_step = 1;
template <int C> constexpr int channel_step<channel_value_binner<C>> = C;
template <class B> struct counts_values : std::false_type {};
template <> struct counts_values<value_binner> : std::true_type {};
template <int C> struct counts_values<channel_value_binner<C>> : std::true_type {};

/// Bytes of the rule's tables, and copying them into shared memory (then pointing the rule
/// at the copy). Every thread calls stage; all of them copy, each keeps its own pointer.
template <int C> __device__ __forceinline__ std::int64_t table_bytes(const channel_value_binner<C>&) { return 0; }
__device__ __forceinline__ std::int64_t table_bytes(const value_binner&) { return 0; }
__device__ __forceinline__ std::int64_t table_bytes(const integer_binner&) { return 0; }
__device__ __forceinline__ std::int64_t table_bytes(const regular_table_binner& b) {
  return 8 * (b.rule.bins + 1);
}
__device__ __forceinline__ std::int64_t table_bytes(const variable_binner& b) {
  return 8 * (b.rule.bins + 1) + 8 * (b.rule.bucket_count + 1);
}

__device__ __forceinline__ void copy_words(std::uint64_t* to, const std::uint64_t* from, std::int64_t n) {
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
}
template <int C> __device__ __forceinline__ void stage(channel_value_binner<C>&, unsigned char*) {}
__device__ __forceinline__ void stage(value_binner&, unsigned char*) {}
__device__ __forceinline__ void stage(integer_binner&, unsigned char*) {}
__device__ __forceinline__ void stage(regular_table_binner& b, unsigned char* smem) {
  auto* t = reinterpret_cast<double*>(smem);
  copy_words(reinterpret_cast<std::uint64_t*>(t), reinterpret_cast<const std::uint64_t*>(b.rule.table),
             b.rule.bins + 1);
  b.rule.table = t;
}
__device__ __forceinline__ void stage(variable_binner& b, unsigned char* smem) {
  auto* edges = reinterpret_cast<double*>(smem);
  auto* buckets = reinterpret_cast<std::int64_t*>(edges + b.rule.bins + 1);
  copy_words(reinterpret_cast<std::uint64_t*>(edges), reinterpret_cast<const std::uint64_t*>(b.rule.edges),
             b.rule.bins + 1);
  b.rule.edges = edges;
  if (b.rule.buckets) {
    copy_words(reinterpret_cast<std::uint64_t*>(buckets),
               reinterpret_cast<const std::uint64_t*>(b.rule.buckets), b.rule.bucket_count + 1);
    b.rule.buckets = buckets;
  }
}

/// Cluster: block r of a cluster holds the cells [r 2^slice_shift, (r + 1) 2^slice_shift) for the
/// whole cluster, followed by 3 flow counters of its own; a sample's cell is added in the shared
/// memory of the block that holds it (distributed shared memory).
template <class T, class Binner, bool Cluster>
__global__ void __launch_bounds__(kTypedThreads) count_typed_kernel(Binner binner, typed_count_args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const std::int64_t slots = a.cells + 3;
  const int shift = a.replica_shift;
  std::int64_t tables = 0;
  if (a.stage_tables) {
    tables = table_bytes(binner);
    stage(binner, smem);
  }
  auto* counters = reinterpret_cast<unsigned*>(smem + tables);
  const std::int64_t slice = std::int64_t{1} << a.slice_shift;
  const std::int64_t local = Cluster ? slice + 3 : slots << shift;
  if (!a.to_global)
    for (std::int64_t k = threadIdx.x; k < local; k += blockDim.x) counters[k] = 0;
  if constexpr (Cluster) cooperative_groups::this_cluster().sync();  // every share zeroed
  else __syncthreads();

  const unsigned copy = threadIdx.x & ((1u << shift) - 1);
  // The slot of sample `index` of value v: 32 bits where it indexes shared memory (the planner
  // keeps the shared slots within a block's shared memory), 64 where it goes to device memory.
  auto slot = [&](T v, std::int64_t index) -> std::int64_t {
    if constexpr (takes_index<Binner>::value) return binner(v, index);
    else if constexpr (counts_values<Binner>::value) return binner(v);
    else return slot_of_index(binner(v), a.cells);
  };
  auto add = [&](std::int64_t s, unsigned n) {
    if constexpr (Cluster) {
      if (s >= a.cells) {
        atomicAdd(&counters[slice + (s - a.cells)], n);
      } else {
        const auto owner = static_cast<unsigned>(s >> a.slice_shift);
        unsigned* share = cooperative_groups::this_cluster().map_shared_rank(counters, owner);
        atomicAdd(share + (s & (slice - 1)), n);
      }
    } else if (a.to_global) {
      atomicAdd(&a.slots[s], static_cast<unsigned long long>(n));
    } else {
      atomicAdd(&counters[(static_cast<unsigned>(s) << shift) + copy], n);
    }
  };
  // Head: samples before the first 16-byte boundary; body: whole vectors; tail: the rest.
  constexpr int per_vector = 16 / sizeof(T);
  const T* x = static_cast<const T*>(a.data);
  const auto address = reinterpret_cast<std::uintptr_t>(x);
  const auto to_boundary = static_cast<std::int64_t>(((16 - address % 16) % 16) / sizeof(T));
  const std::int64_t head = to_boundary < a.n ? to_boundary : a.n;
  const std::int64_t vectors = (a.n - head) / per_vector;
  const std::int64_t tail = head + vectors * per_vector;
  const std::int64_t tid = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (tid < head) add(slot(x[tid], tid), 1);
  if (tid < a.n - tail) add(slot(x[tail + tid], tail + tid), 1);

  const uint4* body = reinterpret_cast<const uint4*>(x + head);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = tid; i < vectors; i += stride * kUnroll) {
    uint4 loaded[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i + u * stride < vectors) loaded[u] = __ldg(body + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (i + u * stride < vectors) {
        T v[per_vector];
        memcpy(v, &loaded[u], sizeof v);
        const std::int64_t first = head + (i + u * stride) * per_vector;  // index of v[0]
        // Runs of equal slots within the vector add once (a hot bin costs one atomic per
        // vector instead of one per sample); with channels, runs within each channel's samples.
        constexpr int step = channel_step<Binner>;
#pragma unroll
        for (int k = 0; k < step; ++k) {
          std::int64_t run_slot = slot(v[k], first + k);
          unsigned run = 1;
#pragma unroll
          for (int j = k + step; j < per_vector; j += step) {
            const std::int64_t s = slot(v[j], first + j);
            if (s != run_slot) {
              add(run_slot, run);
              run_slot = s;
              run = 0;
            }
            ++run;
          }
          add(run_slot, run);
        }
      }
    }
  }
  if constexpr (Cluster) {
    // Every block's adds into this share are done; then its cells and flow go to device memory.
    const auto cluster = cooperative_groups::this_cluster();
    cluster.sync();
    const std::int64_t lo = static_cast<std::int64_t>(cluster.block_rank()) << a.slice_shift;
    for (std::int64_t k = threadIdx.x; k < slice + 3; k += blockDim.x) {
      const std::int64_t s = k < slice ? lo + k : a.cells + (k - slice);
      if (counters[k] && (k >= slice || s < a.cells)) atomicAdd(&a.slots[s], static_cast<unsigned long long>(counters[k]));
    }
    return;
  }
  if (a.to_global) return;

  __syncthreads();
  flush_copies(counters, slots, shift, a.slots);
}

/// The planner's grid, cut to the blocks that are resident at once (the planner cannot see
/// the kernel's registers): a grid-stride kernel then runs in one wave.
template <class Kernel> unsigned resident_grid(Kernel* kernel, const launch_shape& shape) {
  // Asked once per device, block size and dynamic shared memory size: the query costs microseconds, a
  // fill of a 1 GiB column a third of a millisecond.
  static std::mutex mutex;
  static std::map<std::tuple<int, unsigned, std::size_t>, unsigned> resident;
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  auto [at, fresh] = resident.try_emplace({device, shape.block, shape.shared_bytes}, 0u);
  if (fresh) {
    int sms = 0, per_sm = 0;
    TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TALLY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(shape.block),
                                                                   shape.shared_bytes));
    at->second = static_cast<unsigned>(std::max(1, per_sm) * sms);
  }
  return std::min(shape.grid, at->second);
}

template <class T, class Binner>
void launch_with(const Binner& binner, const typed_count_args& args, const launch_shape& shape) {
  if constexpr (sizeof(T) > 1) {
    if (args.cluster_blocks) {
      // Clusters of cluster_blocks blocks on as many multiprocessors; the planner's grid is a
      // multiple of the cluster.
      auto* kernel = &count_typed_kernel<T, Binner, true>;
      TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shape.shared_bytes)));
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(shape.grid);
      config.blockDim = dim3(shape.block);
      config.dynamicSmemBytes = shape.shared_bytes;
      config.stream = shape.stream;
      cudaLaunchAttribute cluster{};
      cluster.id = cudaLaunchAttributeClusterDimension;
      cluster.val.clusterDim.x = static_cast<unsigned>(args.cluster_blocks);
      cluster.val.clusterDim.y = 1;
      cluster.val.clusterDim.z = 1;
      config.attrs = &cluster;
      config.numAttrs = 1;
      TALLY_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, binner, args));
      return;
    }
  }
  auto* kernel = &count_typed_kernel<T, Binner, false>;
  if (shape.shared_bytes > 48 * 1024)
    TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(shape.shared_bytes)));
  kernel<<<resident_grid(kernel, shape), shape.block, shape.shared_bytes, shape.stream>>>(binner, args);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

/// Launches the typed kernel for whichever of Ts `sample` is, with the axis' own binner type
/// (each translation unit instantiates its share of the sample types).
template <class... Ts>
void launch_typed(dtype sample, const device_axis& axis, const typed_count_args& args, const launch_shape& shape) {
  const auto launch_if = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (sample != dtype_of<T>) return false;
    with_binner(axis, [&](const auto& binner) { launch_with<T>(binner, args, shape); });
    return true;
  };
  if (!(launch_if(type_tag<Ts>{}) || ...))
    throw error("count_typed: no kernel for " + std::string(name_of(sample)) + " samples in this unit");
}

}  // namespace tally::detail::cuda

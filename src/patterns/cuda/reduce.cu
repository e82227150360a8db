// CUDA reductions, the same bits on every run: every element goes to a fixed thread of a fixed
// chunk (whole arrays) or row, threads combine in a fixed tree (warp shuffles, then shared memory),
// chunks leave partial results in fixed slots, and the last block to finish combines them in slot
// order. Which block takes which chunk varies from run to run; no result depends on it. One launch,
// no floating-point atomics.
#include <algorithm>
#include <cstdint>

#include "base/cuda_check.cuh"
#include "patterns/core/reduce_rule.hpp"
#include "patterns/cuda/patterns.hpp"
#include "tally/patterns/transform.cuh"

namespace tally::detail::cuda {
namespace {

constexpr int kThreads = 256;     // short rows: a warp per row
constexpr int kBigThreads = 512;  // whole arrays (a block per chunk) and long rows (a block per row)
constexpr int kBigBlocksPerSm = 3;  // 40 registers a thread: no spills
constexpr int kUnroll = 4;        // 16-byte loads in flight per thread
// Whole arrays: chunks of at least kChunkVectors 16-byte vectors (64 KiB: blocks claiming chunks
// as they finish keep every multiprocessor busy to the end), at most kMaxChunks of them (their
// partials are the scratch).
constexpr std::int64_t kChunkVectors = 4096;
constexpr std::int64_t kMaxChunks = 16384;

template <class Acc, bool Extreme> using rule = reducer<Acc, Extreme>;

template <class Acc, class T> __device__ __forceinline__ Acc value_of(T v) { return static_cast<Acc>(map::widen(v)); }

/// Folds the 16-byte vectors lane, lane + lanes, ... of body[0, vectors) into acc, kUnroll loads
/// before combining.
template <class T, class Acc, bool Extreme, int V = 16 / sizeof(T)>
__device__ __forceinline__ void fold_vectors(const map::pack<T, V>* body, std::int64_t vectors, std::int64_t lane,
                                             std::int64_t lanes, const rule<Acc, Extreme>& f, Acc& acc) {
  std::int64_t v = lane;
#pragma unroll 1  // kUnroll loads in flight and no more: more would take registers the occupancy needs
  for (; v + (kUnroll - 1) * lanes < vectors; v += kUnroll * lanes) {
    map::pack<T, V> chunk[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) chunk[u] = body[v + u * lanes];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int j = 0; j < V; ++j) acc = f(acc, value_of<Acc>(chunk[u].v[j]));
  }
  for (; v < vectors; v += lanes) {
    const map::pack<T, V> chunk = body[v];
#pragma unroll
    for (int j = 0; j < V; ++j) acc = f(acc, value_of<Acc>(chunk.v[j]));
  }
}

/// Elements of p before its first 16-byte boundary (at most n).
template <class T> __device__ __forceinline__ std::int64_t head_of(const T* p, std::int64_t n) {
  constexpr int V = 16 / sizeof(T);
  const auto misaligned = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p) % 16 / sizeof(T));
  return min(n, (V - misaligned) % V);
}

/// Folds elements [0, n) of p into acc: lane `lane` of `lanes` takes the unaligned head's
/// element lane, the vectors of fold_vectors, then the tail's element lane. Which lane takes which
/// element depends only on n and p % 16.
template <class T, class Acc, bool Extreme>
__device__ __forceinline__ void fold_range(const T* p, std::int64_t n, std::int64_t lane, std::int64_t lanes,
                                           const rule<Acc, Extreme>& f, Acc& acc) {
  constexpr int V = 16 / sizeof(T);
  const std::int64_t head = head_of(p, n);
  const std::int64_t vectors = (n - head) / V;
  if (lane < head) acc = f(acc, value_of<Acc>(p[lane]));
  fold_vectors(reinterpret_cast<const map::pack<T, V>*>(p + head), vectors, lane, lanes, f, acc);
  const std::int64_t tail = head + vectors * V;
  if (tail + lane < n) acc = f(acc, value_of<Acc>(p[tail + lane]));
}

template <class Acc, bool Extreme> __device__ __forceinline__ Acc warp_fold(const rule<Acc, Extreme>& f, Acc acc) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc = f(acc, __shfl_down_sync(0xffffffffu, acc, offset));
  return acc;
}

/// The fold of a block of Threads threads, valid in thread 0. Every thread of the block calls it.
template <int Threads, class Acc, bool Extreme> __device__ Acc block_fold(const rule<Acc, Extreme>& f, Acc acc) {
  constexpr int warps_per_block = Threads / 32;
  __shared__ Acc warps[warps_per_block];
  acc = warp_fold(f, acc);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warps[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = threadIdx.x < warps_per_block ? warps[threadIdx.x] : f.start();
    acc = warp_fold(f, acc);
  }
  __syncthreads();  // warps[] may be reused by the caller's next fold
  return acc;
}

/// The result: the fold, or for a mean the fold divided by the count, in the result type.
template <class Out, class Acc> __device__ __forceinline__ void finish(Out* out, Acc acc, bool mean, std::int64_t n) {
  if constexpr (std::is_same_v<Out, half> || std::is_same_v<Out, bfloat16>) {
    *out = map::narrow<Out>(acc);
  } else {
    *out = mean ? static_cast<Out>(acc) / static_cast<Out>(n) : static_cast<Out>(acc);
  }
}

/// The whole-array split of n elements of T: chunk c takes the 16-byte vectors
/// [c * chunk_vectors, (c + 1) * chunk_vectors) after the unaligned head, chunk 0 also the head and
/// the last chunk the tail. `chunks` is at least the number for any alignment of the array.
struct whole_plan {
  std::int64_t chunk_vectors, chunks;
};
template <class T> whole_plan plan_of(std::int64_t n) {
  constexpr std::int64_t tile = std::int64_t{kBigThreads} * kUnroll;
  const std::int64_t vectors = n / (16 / static_cast<std::int64_t>(sizeof(T)));
  const std::int64_t per_chunk = (vectors + kMaxChunks - 1) / kMaxChunks;
  const std::int64_t chunk_vectors = std::max(kChunkVectors, (per_chunk + tile - 1) / tile * tile);
  return {chunk_vectors, std::max<std::int64_t>(1, (vectors + chunk_vectors - 1) / chunk_vectors)};
}

/// A block takes chunk blockIdx.x, then claims the next chunk (counters[0]) as it finishes one,
/// until none is left; counters[1] counts finished blocks. The last block combines the chunks'
/// partials in chunk order and leaves both counters at zero. With one block (one chunk) nothing
/// is claimed.
template <class T, class Acc, class Out, bool Extreme>
__global__ void __launch_bounds__(kBigThreads, kBigBlocksPerSm)
    reduce_all_kernel(const T* x, std::int64_t n, std::int64_t chunk_vectors, rule<Acc, Extreme> f, bool mean,
                      Acc* partials, unsigned* counters, Out* out) {
  constexpr int V = 16 / sizeof(T);
  constexpr int warps_per_block = kBigThreads / 32;
  const std::int64_t head = head_of(x, n);
  const std::int64_t vectors = (n - head) / V;
  const std::int64_t tail = head + vectors * V;
  const std::int64_t chunks = max(std::int64_t{1}, (vectors + chunk_vectors - 1) / chunk_vectors);
  const auto* body = reinterpret_cast<const map::pack<T, V>*>(x + head);
  __shared__ Acc warps[warps_per_block];
  __shared__ std::int64_t next[2];  // by the chunk's parity: a slow thread may still read the other
  const int warp = threadIdx.x / 32;
  Acc acc = f.start();
  int parity = 0;
  for (std::int64_t c = blockIdx.x; c < chunks; parity ^= 1) {
    acc = f.start();
    if (c == 0 && threadIdx.x < head) acc = f(acc, value_of<Acc>(x[threadIdx.x]));
    const std::int64_t first = c * chunk_vectors;
    fold_vectors(body + first, min(chunk_vectors, vectors - first), threadIdx.x, kBigThreads, f, acc);
    if (c == chunks - 1 && tail + threadIdx.x < n) acc = f(acc, value_of<Acc>(x[tail + threadIdx.x]));
    acc = warp_fold(f, acc);
    if (threadIdx.x % 32 == 0) warps[warp] = acc;
    if (threadIdx.x == 0) next[parity] = gridDim.x > 1 ? gridDim.x + std::int64_t{atomicAdd(counters, 1u)} : chunks;
    __syncthreads();
    if (warp == 0) {
      acc = threadIdx.x < warps_per_block ? warps[threadIdx.x] : f.start();
      acc = warp_fold(f, acc);
      if (gridDim.x > 1 && threadIdx.x == 0) partials[c] = acc;
    }
    __syncthreads();  // next[parity] is set and warps[] may be reused
    c = next[parity];
  }
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) finish(out, acc, mean, n);
    return;
  }
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence();  // the partials are visible device-wide before the ticket counts them
    last = atomicAdd(counters + 1, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // Thread t folds the partials t, t + kBigThreads, ... in that order, kCombineLoads in flight.
  constexpr int kCombineLoads = 8;
  Acc total = f.start();
  for (std::int64_t c = threadIdx.x; c < chunks; c += kCombineLoads * kBigThreads) {
    Acc part[kCombineLoads];
#pragma unroll
    for (int u = 0; u < kCombineLoads; ++u) {
      const std::int64_t i = c + std::int64_t{u} * kBigThreads;
      part[u] = i < chunks ? __ldcg(partials + i) : f.start();
    }
#pragma unroll
    for (int u = 0; u < kCombineLoads; ++u) total = f(total, part[u]);
  }
  total = block_fold<kBigThreads>(f, total);
  if (threadIdx.x == 0) {
    finish(out, total, mean, n);
    counters[0] = 0;  // every block's last claim came before its ticket
    counters[1] = 0;
  }
}

/// Rows of 2048 elements and more: a block per row.
template <class T, class Acc, class Out, bool Extreme>
__global__ void __launch_bounds__(kBigThreads, kBigBlocksPerSm)
    reduce_long_rows_kernel(const T* x, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                            rule<Acc, Extreme> f, bool mean, Out* out) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // the same trip count in the whole block
    Acc acc = f.start();
    fold_range(x + r * row_stride, cols, threadIdx.x, kBigThreads, f, acc);
    acc = block_fold<kBigThreads>(f, acc);
    if (threadIdx.x == 0) finish(out + r, acc, mean, cols);
  }
}

/// Shorter rows: a warp per row.
template <class T, class Acc, class Out, bool Extreme>
__global__ void __launch_bounds__(kThreads)
    reduce_rows_kernel(const T* x, std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                       rule<Acc, Extreme> f, bool mean, Out* out) {
  constexpr int warps_per_block = kThreads / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(warps_per_block) + threadIdx.x / 32; r < rows;
       r += warps) {
    Acc acc = f.start();
    fold_range(x + r * row_stride, cols, threadIdx.x % 32, 32, f, acc);
    acc = warp_fold(f, acc);
    if (threadIdx.x % 32 == 0) finish(out + r, acc, mean, cols);
  }
}

/// Blocks of the whole-array kernel: one per chunk, at most enough to fill the current device
/// once. The occupancy is asked once per kernel; the multiprocessors per device.
template <class T, class Acc, class Out, bool Extreme> std::int64_t grid_of(std::int64_t chunks) {
  static const int per_sm = [] {
    int blocks = 0;
    TALLY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, reduce_all_kernel<T, Acc, Out, Extreme>, kBigThreads, 0));
    return std::max(1, blocks);
  }();
  return std::min<std::int64_t>(chunks, std::int64_t{per_sm} * multiprocessors());
}

}  // namespace

std::size_t reduce_scratch_bytes(const reduce_job& job) {
  if (!job.whole) return 0;
  std::size_t bytes = 0;
  with_reduce_types(job, [&](auto t, auto acc, auto out, auto extreme) {
    using T = typename decltype(t)::type;
    using Acc = typename decltype(acc)::type;
    const whole_plan plan = plan_of<T>(job.cols);
    const auto blocks = grid_of<T, Acc, typename decltype(out)::type, decltype(extreme)::value>(plan.chunks);
    bytes = blocks == 1 ? 0 : reduce_ticket_bytes + static_cast<std::size_t>(plan.chunks) * sizeof(Acc);
  });
  return bytes;
}

void launch_reduce(const reduce_job& job, void* scratch) {
  const cudaStream_t stream = stream_of(job.run);
  const bool mean = job.op == reduce_op::mean;
  with_reduce_types(job, [&](auto t, auto acc, auto out, auto extreme) {
    using T = typename decltype(t)::type;
    using Acc = typename decltype(acc)::type;
    using Out = typename decltype(out)::type;
    constexpr bool kExtreme = decltype(extreme)::value;
    const rule<Acc, kExtreme> f{job.op == reduce_op::min};
    const auto* x = static_cast<const T*>(job.x);
    auto* result = static_cast<Out*>(job.result);
    constexpr std::int64_t max_grid = 0x7fffffff;
    if (job.whole) {
      const whole_plan plan = plan_of<T>(job.cols);
      const auto blocks = grid_of<T, Acc, Out, kExtreme>(plan.chunks);
      auto* counters = static_cast<unsigned*>(scratch);
      auto* partials = reinterpret_cast<Acc*>(static_cast<char*>(scratch) + reduce_ticket_bytes);
      reduce_all_kernel<<<static_cast<unsigned>(blocks), kBigThreads, 0, stream>>>(
          x, job.cols, plan.chunk_vectors, f, mean, partials, blocks > 1 ? counters : nullptr, result);
    } else if (job.cols >= 2048) {
      const auto blocks = std::clamp<std::int64_t>(job.rows, 1, max_grid);
      reduce_long_rows_kernel<<<static_cast<unsigned>(blocks), kBigThreads, 0, stream>>>(
          x, job.rows, job.cols, job.row_stride, f, mean, result);
    } else {
      constexpr std::int64_t warps_per_block = kThreads / 32;
      const std::int64_t blocks = std::clamp<std::int64_t>((job.rows + warps_per_block - 1) / warps_per_block, 1,
                                                           std::int64_t{multiprocessors()} * 16);
      reduce_rows_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, job.rows, job.cols,
                                                                                 job.row_stride, f, mean, result);
    }
    TALLY_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace tally::detail::cuda

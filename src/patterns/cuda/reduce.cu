// CUDA reductions, the same bits on every run: every element goes to a fixed thread, threads
// combine in a fixed tree (warp shuffles, then shared memory), blocks leave partial results in
// fixed slots, and the last block to finish combines them in slot order. One launch, no
// floating-point atomics.
#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "patterns/core/reduce_rule.hpp"
#include "patterns/cuda/patterns.hpp"
#include "tally/patterns/transform.cuh"

namespace tally::detail::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread

template <class Acc, bool Extreme> using rule = reducer<Acc, Extreme>;

template <class Acc, class T> __device__ __forceinline__ Acc value_of(T v) { return static_cast<Acc>(map::widen(v)); }

/// Folds elements [0, n) of p into acc: lane `lane` of `lanes` takes the unaligned head's
/// element lane, the 16-byte vectors lane, lane + lanes, ... (kUnroll loads before combining),
/// then the tail's element lane. Which lane takes which element depends only on n and p % 16.
template <class T, class Acc, bool Extreme>
__device__ __forceinline__ void fold_range(const T* p, std::int64_t n, std::int64_t lane, std::int64_t lanes,
                                           const rule<Acc, Extreme>& f, Acc& acc) {
  constexpr int V = 16 / sizeof(T);
  const auto misaligned = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p) % 16 / sizeof(T));
  const std::int64_t head = min(n, (V - misaligned) % V);
  const std::int64_t vectors = (n - head) / V;
  if (lane < head) acc = f(acc, value_of<Acc>(p[lane]));
  const auto* body = reinterpret_cast<const map::pack<T, V>*>(p + head);
  std::int64_t v = lane;
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
  const std::int64_t tail = head + vectors * V;
  if (tail + lane < n) acc = f(acc, value_of<Acc>(p[tail + lane]));
}

template <class Acc, bool Extreme> __device__ __forceinline__ Acc warp_fold(const rule<Acc, Extreme>& f, Acc acc) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc = f(acc, __shfl_down_sync(0xffffffffu, acc, offset));
  return acc;
}

/// The block's fold, valid in thread 0. Every thread of the block calls it.
template <class Acc, bool Extreme> __device__ Acc block_fold(const rule<Acc, Extreme>& f, Acc acc) {
  __shared__ Acc warps[kWarps];
  acc = warp_fold(f, acc);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warps[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = threadIdx.x < kWarps ? warps[threadIdx.x] : f.start();
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

template <class T, class Acc, class Out, bool Extreme>
__global__ void __launch_bounds__(kThreads) reduce_all_kernel(const T* x, std::int64_t n, rule<Acc, Extreme> f,
                                                              bool mean, Acc* partials, unsigned* ticket, Out* out) {
  Acc acc = f.start();
  const std::int64_t lanes = static_cast<std::int64_t>(gridDim.x) * kThreads;
  fold_range(x, n, blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x, lanes, f, acc);
  acc = block_fold(f, acc);
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) finish(out, acc, mean, n);
    return;
  }
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();  // the partial is visible device-wide before the ticket counts it
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  Acc total = f.start();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kThreads) total = f(total, __ldcg(partials + b));
  total = block_fold(f, total);
  if (threadIdx.x == 0) {
    finish(out, total, mean, n);
    *ticket = 0;
  }
}

/// One row per warp (short rows) or per block (rows of 2048 elements and more): group lanes.
template <class T, class Acc, class Out, bool Extreme>
__global__ void __launch_bounds__(kThreads) reduce_rows_kernel(const T* x, std::int64_t rows, std::int64_t cols,
                                                               std::int64_t row_stride, bool block_rows,
                                                               rule<Acc, Extreme> f, bool mean, Out* out) {
  if (block_rows) {
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // the same trip count in the whole block
      Acc acc = f.start();
      fold_range(x + r * row_stride, cols, threadIdx.x, kThreads, f, acc);
      acc = block_fold(f, acc);
      if (threadIdx.x == 0) finish(out + r, acc, mean, cols);
    }
    return;
  }
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarps;
  for (std::int64_t r = blockIdx.x * static_cast<std::int64_t>(kWarps) + threadIdx.x / 32; r < rows; r += warps) {
    Acc acc = f.start();
    fold_range(x + r * row_stride, cols, threadIdx.x % 32, 32, f, acc);
    acc = warp_fold(f, acc);
    if (threadIdx.x % 32 == 0) finish(out + r, acc, mean, cols);
  }
}

/// Blocks of the whole-array kernel: enough to fill the current device once, fewer for small
/// inputs. The occupancy is asked once per kernel; the multiprocessors per device.
template <class T, class Acc, class Out, bool Extreme> std::int64_t grid_of(std::int64_t n) {
  static const int per_sm = [] {
    int blocks = 0;
    TALLY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, reduce_all_kernel<T, Acc, Out, Extreme>, kThreads, 0));
    return std::max(1, blocks);
  }();
  const std::int64_t per_block = static_cast<std::int64_t>(kThreads) * kUnroll * (16 / sizeof(T));
  return std::clamp<std::int64_t>((n + per_block - 1) / per_block, 1, std::int64_t{per_sm} * multiprocessors());
}

}  // namespace

std::size_t reduce_scratch_bytes(const reduce_job& job) {
  if (!job.whole) return 0;
  std::size_t bytes = 0;
  with_reduce_types(job, [&](auto t, auto acc, auto out, auto extreme) {
    using Acc = typename decltype(acc)::type;
    const auto blocks = static_cast<std::size_t>(
        grid_of<typename decltype(t)::type, Acc, typename decltype(out)::type, decltype(extreme)::value>(job.cols));
    bytes = blocks == 1 ? 0 : reduce_ticket_bytes + blocks * sizeof(Acc);
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
    if (job.whole) {
      const auto blocks = grid_of<T, Acc, Out, kExtreme>(job.cols);
      auto* ticket = static_cast<unsigned*>(scratch);
      auto* partials = reinterpret_cast<Acc*>(static_cast<char*>(scratch) + reduce_ticket_bytes);
      reduce_all_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, job.cols, f, mean, partials,
                                                                                blocks > 1 ? ticket : nullptr, result);
    } else {
      const bool block_rows = job.cols >= 2048;
      const std::int64_t groups_per_block = block_rows ? 1 : kWarps;
      const std::int64_t blocks = std::clamp<std::int64_t>((job.rows + groups_per_block - 1) / groups_per_block, 1,
                                                           std::int64_t{multiprocessors()} * 16);
      reduce_rows_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          x, job.rows, job.cols, job.row_stride, block_rows, f, mean, result);
    }
    TALLY_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace tally::detail::cuda

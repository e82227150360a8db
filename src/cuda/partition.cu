// The partitioned strategy's second pass: count each bucket of the sorted tiles in the shared
// memory of the blocks that own it (count_typed.cuh's partition_kernel sorts them).
#include <algorithm>

#include "core/partition.hpp"
#include "cuda/kernels.hpp"

namespace tally::detail::cuda {
namespace {

constexpr int kCountThreads = kPartitionCountThreads;

/// Where slot s of a bucket is counted: its row of 32 counters, its place in the row XOR the row's
/// number. Slots a multiple of 4 apart (data on every 4th bin) would otherwise share 8 of the 32
/// banks: i32 2^20 bins of such data counted in 103 us a pass of 2^25 samples, 84 swizzled
/// (spread data 57-59 either way).
__device__ __forceinline__ int swizzle(int s) { return s ^ ((s >> 5) & 31); }

/// One block: finds its bucket and its share of the bucket's tiles from the totals (blocks are
/// numbered bucket by bucket), counts the share's samples in shared memory and adds the counters
/// to device memory. Two blocks fit a multiprocessor (32 registers) where the counters leave room,
/// and a.blocks is one wave of them: the blocks are shared out as if there were B, the most (down
/// to half a wave) whose rounded shares still run in one wave, so that no block starts late and
/// a multiprocessor counts with two blocks where the spread allows. With one block per
/// multiprocessor a bell over 2^20 bins was counted in 120 us a pass of 2^25 samples (a second
/// wave started late), with two in 103 (84 swizzled); B of one wave: 84 -> 67 us on the bell,
/// 59 -> 52 spread evenly, 58 -> 58 with 80% in one bin (bench/PERFORMANCE.md, "Partitioned
/// fills").
__global__ void __launch_bounds__(kCountThreads, 2) partition_count_kernel(partition_count_args a) {
  extern __shared__ unsigned counters[];
  __shared__ partition_count_tables tables;
  auto& totals = tables.totals;
  auto& portion = tables.portion;
  auto& mine = tables.mine;
  auto& warp_words = tables.warp_words;
  auto& first_word = tables.first_word;
  auto& range = tables.range;
  const unsigned lane = threadIdx.x & 31;
  const partition_scratch& in = a.sorted;
  for (int k = threadIdx.x; k < in.buckets; k += blockDim.x) totals[k] = in.totals[k];
  if (threadIdx.x == 0) mine[0] = -1;
  if (blockIdx.x == 0)
    for (int k = threadIdx.x; k < in.buckets; k += blockDim.x) a.next_totals[k] = 0;
  __syncthreads();
  if (threadIdx.x < 32) {
    // Warp 0: each lane a run of at most 8 buckets; the pass's total, then each bucket's blocks.
    const int per_lane = (in.buckets + 31) / 32;
    const int lo = min(static_cast<int>(lane) * per_lane, in.buckets), hi = min(lo + per_lane, in.buckets);
    unsigned long long total = 0;
    for (int k = lo; k < hi; ++k) total += totals[k];
    total = warp_sum(total);
    // Each bucket's part of the pass (one division each: the search below with a 64-bit
    // division per bucket and step cost 4-11 us a pass).
    for (int k = lo; k < hi; ++k) portion[k] = static_cast<double>(totals[k]) / static_cast<double>(total);
    // This lane's buckets' blocks, shared out as if there were `shares` blocks.
    const auto lane_blocks = [&](int shares) {
      unsigned blocks = 0;
      for (int k = lo; k < hi; ++k) blocks += partition_blocks_for(portion[k], shares);
      return blocks;
    };
    int least = max(1, a.blocks / 2), most = a.blocks;  // the answer is in [least, most]
    while (least < most) {  // every lane takes the same steps
      const int mid = (least + most + 1) / 2;
      if (warp_sum(lane_blocks(mid)) <= static_cast<unsigned>(a.blocks)) least = mid;
      else most = mid - 1;
    }
    const int shares = least;
    const unsigned blocks = lane_blocks(shares);
    unsigned at = warp_inclusive_sum(blocks) - blocks;
    for (int k = lo; k < hi; ++k) {
      const unsigned b = partition_blocks_for(portion[k], shares);
      if (blockIdx.x >= at && blockIdx.x < at + b) {
        mine[0] = k;
        mine[1] = static_cast<int>(blockIdx.x - at);
        mine[2] = static_cast<int>(b);
      }
      at += b;
    }
  }
  __syncthreads();
  const int bucket = mine[0];
  if (bucket < 0) return;  // more blocks were launched than the buckets take
  const std::int64_t first = static_cast<std::int64_t>(bucket) << in.bits;
  const int width = static_cast<int>(min(std::int64_t{1} << in.bits, a.cells + 3 - first));
  const int words = (width + 31) / 32 * 32;  // whole rows of 32 counters: the swizzle stays within a row
  for (int k = threadIdx.x; k < words; k += blockDim.x) counters[k] = 0;
  __syncthreads();

  // The share's tiles, blockDim at a time: thread i reads tile i's range of the bucket, a scan
  // numbers the 16-byte words of all of them, and the threads take the words in turn, so that a
  // range may hold none or all of its tile's samples.
  const std::int64_t part = mine[1], parts = mine[2];
  const std::int64_t tile_lo = part * a.tiles / parts, tile_hi = (part + 1) * a.tiles / parts;
  const unsigned short* starts = in.offsets + bucket * in.tile_stride;
  const unsigned short* ends = starts + in.tile_stride;
  const int warp = threadIdx.x / 32;
  for (std::int64_t round = tile_lo; round < tile_hi; round += kCountThreads) {
    const std::int64_t t = round + threadIdx.x;
    const unsigned lo = t < tile_hi ? starts[t] : 0, hi = t < tile_hi ? ends[t] : 0;
    const int words = hi > lo ? static_cast<int>((hi + 7) / 8 - lo / 8) : 0;
    const int inclusive = warp_inclusive_sum(words);
    if (lane == 31) warp_words[warp] = inclusive;
    __syncthreads();
    if (threadIdx.x < 32) {
      const int w = warp_words[lane];
      const int before = warp_inclusive_sum(w);
      warp_words[lane] = before - w;
      if (lane == 31) warp_words[32] = before;
    }
    __syncthreads();
    first_word[threadIdx.x] = warp_words[warp] + inclusive - words;
    range[threadIdx.x] = lo | hi << 16;
    const int total = warp_words[32];
    __syncthreads();
    for (int f = threadIdx.x; f < total; f += kCountThreads) {
      // Word f: the last tile whose words start at or before it holds it.
      int owner = 0;
#pragma unroll
      for (int step = kCountThreads / 2; step; step /= 2)
        if (first_word[owner + step] <= f) owner += step;
      const int owner_lo = static_cast<int>(range[owner] & 0xFFFFu), owner_hi = static_cast<int>(range[owner] >> 16);
      const int word = owner_lo / 8 + (f - first_word[owner]);
      const uint4 loaded =
          __ldg(reinterpret_cast<const uint4*>(in.entries + (round + owner) * kPartitionTile) + word);
      unsigned short e[8];
      memcpy(e, &loaded, sizeof e);
      // An increment by the constant 1 is ATOMS.POPC.INC: a warp's lanes on one counter combine.
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (word * 8 + j >= owner_lo && word * 8 + j < owner_hi) atomicAdd(&counters[swizzle(e[j])], 1u);
    }
    __syncthreads();  // the round's tables are read
  }
  __syncthreads();
  for (int k = threadIdx.x; k < words; k += blockDim.x) {
    const int slot = swizzle(k);  // its own inverse
    if (slot < width && counters[k]) atomicAdd(&a.slots[first + slot], static_cast<unsigned long long>(counters[k]));
  }
}

}  // namespace

void count_partitions(const partition_count_args& args, cudaStream_t stream) {
  const std::size_t shared = std::size_t{4} << args.sorted.bits;
  allow_shared(reinterpret_cast<const void*>(partition_count_kernel), shared);
  // Each bucket with samples takes at most one block beyond its share of at most args.blocks.
  const unsigned grid = static_cast<unsigned>(args.blocks + args.sorted.buckets);
  partition_count_kernel<<<grid, kCountThreads, shared, stream>>>(args);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

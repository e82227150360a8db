// The partitioned strategy's fixed sizes, shared by the planner and the CUDA kernels.
#pragma once

#include <cstdint>

#include "core/exact_sum.hpp"
#include "base/hd.hpp"

namespace tally::detail {

/// Samples one block sorts by bucket at a time: 16 per thread of 512. A tile's offsets fit 16 bits.
constexpr std::int64_t kPartitionTile = 8192;
/// Samples per pass: the sorted copy takes 2 bytes each (128 MiB of temporary memory). Every
/// counting block adds its counters to device memory once a pass: i32 2^20 bins counted in 45 us
/// per 2^25 samples in passes of 2^26, 52 in passes of 2^25 (bench/PERFORMANCE.md, "Partitioned
/// fills").
constexpr std::int64_t kPartitionChunk = std::int64_t{1} << 26;
/// A bucket holds 2^bits slots, bits in [kPartitionMinBits, kPartitionMaxBits]; a sorted sample
/// keeps its slot's low bits in 16 bits.
constexpr int kPartitionMinBits = 10;
constexpr int kPartitionMaxBits = 15;
/// Buckets at most: the counting pass shares its blocks out from every bucket's total, each
/// block holding all of them in shared memory.
constexpr int kPartitionMaxBuckets = 256;
/// The counting pass's blocks: their threads, and the shared memory each keeps beside its
/// bucket's counters (the planner counts it).
constexpr int kPartitionCountThreads = 1024;
struct partition_count_tables {
  unsigned long long totals[kPartitionMaxBuckets];  // each bucket's samples in the pass
  double portion[kPartitionMaxBuckets];             // each bucket's part of the pass
  int mine[3];                                      // this block's bucket, part, parts
  int warp_words[33];                    // a round's words before each warp's, and in all
  int first_word[kPartitionCountThreads];         // a round's words before each tile's
  unsigned range[kPartitionCountThreads];         // each tile's range of the bucket, lo | hi << 16
};
constexpr std::int64_t kPartitionCountStatic = sizeof(partition_count_tables);

/// Blocks for a bucket with `portion` of the pass's samples (> 0 where it has any): its share x of
/// `blocks` less 1/4, rounded up, and at least one where it has samples. A block then counts at
/// most 1.25 times an even share (x in (0, 1.25]: one block; x in (1.25, 2.25]: two ...);
/// rounding down gave up to twice (x just under 2), and rounding up would give every bucket of an
/// even spread two blocks (x just over 1), each with its counters to add to device memory. At
/// most blocks + 3/4 a bucket. Every block computes the same figures from the same totals.
TALLY_HD unsigned partition_blocks_for(double portion, int blocks) {
  if (!(portion > 0)) return 0;
  const auto b = static_cast<unsigned>(portion * blocks + 0.75);
  return b > 1 ? b : 1u;
}

/// The partitioned exact sums of f32 weights (cuda/exact_sums.cu). A bucket is 2^kPartitionExactBits
/// cells, whose windows of 16-bit digits (core/exact_sum.hpp's exact_words_bytes: 28 KiB) leave
/// room for two blocks a multiprocessor; the flow samples take no bucket (the sort counts them), and
/// the summing pass flags non-finite weights. A sorted pair is the cell's low bits (2 bytes) and the f32 weight (4),
/// in two arrays, so that a pass moves 6 bytes a sample each way instead of the 8 of a split term.
constexpr int kPartitionExactBits = 10;
/// Beyond half the most cells, buckets of 2^11 cells (56 KiB of windows) where a block holds them:
/// on an even spread a tile then holds 16 pairs of a bucket, not 8, so the summing pass finds half
/// as many ranges for its pairs (2^20 bins 64 -> 73 G samples/s; 65536 bins lost a fifth in 32
/// buckets of 2^11; bench/PERFORMANCE.md, "Exact sums of weights").
constexpr int kPartitionExactWideBits = 11;
/// Cells at most. The sort's warp 0 scans a tile's buckets (up to 33 a lane) while the other warps
/// copy the previous tile out.
constexpr std::int64_t kPartitionExactMaxCells = std::int64_t{1} << 20;
/// Buckets at most: 2^20 cells in buckets of 2^10.
constexpr int kPartitionExactMaxBuckets = static_cast<int>(kPartitionExactMaxCells >> kPartitionExactBits);
/// Samples per pass: 6 bytes each (192 MiB of temporary memory, beside the cells' words).
constexpr std::int64_t kPartitionExactChunk = std::int64_t{1} << 25;
/// The summing pass's blocks: the exact kernel's threads; their tables beside the words.
struct partition_sum_tables {
  unsigned totals[kPartitionExactMaxBuckets];  // each bucket's samples in the pass
  int warp_sums[33];                           // a scan's sums before each warp's, and in all
  int mine[3];                                 // this block's bucket, part, parts
  int first_group[512];                        // a round's groups of 4 before each tile's
  unsigned range[512];                         // each tile's range of the bucket, lo | hi << 16
  exact_window_stats window;                   // the block's window of digits
};
constexpr std::int64_t kPartitionSumStatic = sizeof(partition_sum_tables);

/// Samples per pass of the partitioned strategies at most, in tiles; 0: no limit beyond their
/// own. Tests lower it to cross passes with few samples.
std::int64_t& partition_pass_tiles();

}  // namespace tally::detail

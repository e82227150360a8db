// The partitioned strategy's fixed sizes, shared by the planner and the CUDA kernels.
#pragma once

#include <cstdint>

namespace tally::detail {

/// Samples one block sorts by bucket at a time: 16 per thread of 512. A tile's offsets fit 16 bits.
constexpr std::int64_t kPartitionTile = 8192;
/// Samples per pass: the sorted copy takes 2 bytes each (128 MiB of temporary memory). Every
/// counting block adds its counters to device memory once a pass: i32 2^20 bins counted in 45 us
/// per 2^25 samples in passes of 2^26, 52 in passes of 2^25 (bench/PERFORMANCE.md entry 36).
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

}  // namespace tally::detail

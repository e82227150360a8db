// The partitioned strategy's fixed sizes, shared by the planner and the CUDA kernels.
#pragma once

#include <cstdint>

namespace tally::detail {

/// Samples one block sorts by bucket at a time: 16 per thread of 512. A tile's offsets fit 16 bits.
constexpr std::int64_t kPartitionTile = 8192;
/// Samples per pass: the sorted copy takes 2 bytes each (64 MiB of temporary memory).
constexpr std::int64_t kPartitionChunk = std::int64_t{1} << 25;
/// A bucket holds 2^bits slots, bits in [kPartitionMinBits, kPartitionMaxBits]; a sorted sample
/// keeps its slot's low bits in 16 bits.
constexpr int kPartitionMinBits = 10;
constexpr int kPartitionMaxBits = 15;
/// Buckets at most: the counting pass shares its blocks out from every bucket's total, each
/// block holding all of them in shared memory.
constexpr int kPartitionMaxBuckets = 256;
/// The counting pass's blocks: threads, and shared memory beside the bucket's counters (every
/// bucket's total, and a round's table of tiles).
constexpr int kPartitionCountThreads = 1024;
constexpr std::int64_t kPartitionCountStatic = 16 * kPartitionMaxBuckets + 12 + 4 * 33 + 8 * kPartitionCountThreads;

}  // namespace tally::detail

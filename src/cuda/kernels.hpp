// The CUDA backend's kernels as host functions: each launches on a stream and returns without
// synchronising. Split over several translation units so that the build runs them in parallel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/bin_rule.hpp"
#include "cuda/common.cuh"
#include "tally/plan.hpp"

namespace tally::detail::cuda {

struct launch_shape {
  unsigned grid = 1;
  unsigned block = 256;
  std::size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
};

/// Lets `kernel` take `bytes` of dynamic shared memory on the current device: above the default
/// 48 KiB the limit must be raised first. Raised once per kernel, device and larger size, not at
/// every launch (a driver call each time, in every fill's fixed cost).
void allow_shared(const void* kernel, std::size_t bytes);

/// Launches `kernel` on the shape's grid in clusters of `cluster_blocks` blocks (the grid a
/// multiple of it), with the shape's dynamic shared memory. Every block may map the shared
/// memory of the others in its cluster (sm_90).
template <class... Params, class... Args>
void launch_clustered(void (*kernel)(Params...), const launch_shape& shape, unsigned cluster_blocks,
                      const Args&... args) {
  allow_shared(reinterpret_cast<const void*>(kernel), shape.shared_bytes);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(shape.grid);
  config.blockDim = dim3(shape.block);
  config.dynamicSmemBytes = shape.shared_bytes;
  config.stream = shape.stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = cluster_blocks;
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = 1;
  TALLY_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

/// Where a typed launch counts: in 2^shift interleaved shared-memory copies per block, straight
/// into device memory (global_atomic_vec), in one copy spread over a cluster's shared memory, in
/// registers (lane l of each warp counting slot l, at most 32 slots), or in one shared copy of
/// 16-bit counters, two per word (packed), for twice the slots of 32-bit ones.
/// partition: the first pass of the partitioned strategy (each tile of samples sorted by bucket
/// into temporary memory; count_partitions counts them).
enum class count_mode { shared, global, cluster, registers, packed, partition };

/// A contiguous column of n samples of `size` bytes at `address`: the samples before its first
/// 16-byte boundary (the head, loaded one by one), then whole 16-byte vectors, then the tail.
struct column_body {
  std::int64_t head = 0;
  std::int64_t vectors = 0;
};
TALLY_HD column_body body_of(std::uintptr_t address, std::int64_t n, std::int64_t size) {
  const auto to_boundary = static_cast<std::int64_t>((16 - address % 16) % 16) / size;
  column_body b;
  b.head = to_boundary < n ? to_boundary : n;
  b.vectors = (n - b.head) * size / 16;
  return b;
}

/// The partitioned strategy's sorted pass in temporary memory, as both its passes see it: tile
/// t's slots (their low `bits` bits), sorted by bucket (slot >> bits), at entries + t *
/// kPartitionTile; where bucket k starts in tile t at offsets[k * tile_stride + t] (k = buckets:
/// the tile's end); each bucket's samples in totals[k].
struct partition_scratch {
  unsigned short* entries = nullptr;
  unsigned short* offsets = nullptr;
  std::int64_t tile_stride = 0;
  unsigned* totals = nullptr;
  int bits = 0;
  int buckets = 0;
};

/// A typed, contiguous 1-D count of one axis (device_axis: its rule, with tables in device
/// memory): samples [0, n) of `data` (aligned to the sample size).
struct typed_count_args {
  const void* data = nullptr;
  std::int64_t n = 0;
  std::int64_t cells = 0;
  int replica_shift = 0;     // 2^shift interleaved copies per block
  count_mode mode = count_mode::shared;
  bool stage_tables = false; // copy the rule's edge tables into shared memory first
  bool merge_runs = false;   // shared mode: equal slots within a vector add once (packed and
                             // cluster modes always; global mode keeps runs across vectors)
  int cluster_blocks = 0;    // cluster: blocks sharing one copy (launched as a cluster)
  int slice_shift = 0;       // cluster: each block holds 2^slice_shift cells
  unsigned long long* slots = nullptr;  // cells + 3 device counters, added to
  partition_scratch sorted;  // partition: written (totals added to)
};

/// The partitioned strategy's second pass over the `tiles` tiles a partition launch sorted: the
/// blocks are shared out among the buckets by their totals (about `blocks` in all), each counts
/// its share of one bucket's tiles in shared memory and adds its counters to slots. Zeroes
/// next_totals (the next pass's totals).
struct partition_count_args {
  partition_scratch sorted;  // read
  std::int64_t tiles = 0;
  unsigned* next_totals = nullptr;
  int blocks = 0;
  std::int64_t cells = 0;
  unsigned long long* slots = nullptr;
};
void count_partitions(const partition_count_args& args, cudaStream_t stream);

/// 16-byte loads, the bin rule per sample, counted where args.mode says.
/// By sample family, one translation unit each: 8- and 16-bit integers, 32- and 64-bit
/// integers, floats.
void count_typed_narrow(dtype sample, const device_axis& axis, const typed_count_args& args, const launch_shape& shape);
void count_typed_wide(dtype sample, const device_axis& axis, const typed_count_args& args, const launch_shape& shape);
void count_typed_floats(dtype sample, const device_axis& axis, const typed_count_args& args, const launch_shape& shape);

/// 8-bit samples: counts per value (args.cells = 256) into args.slots, the value table.
void count_values(dtype sample, const typed_count_args& args, const launch_shape& shape);
/// Interleaved 8-bit samples of `channels` (2-4) channels, sample i in channel (i + phase) mod
/// channels: counts per channel and value of the first `counted` channels (args.cells = 256 *
/// counted) into args.slots.
void count_channel_values(dtype sample, int channels, int counted, int phase, const typed_count_args& args,
                          const launch_shape& shape);
/// One channel's fold: its axis' rule and its slots (cells + 3).
struct value_fold {
  device_axis axis;
  std::int64_t cells = 0;
  unsigned long long* slots = nullptr;
};
/// The per-value counts of 8-bit samples, raw[256 c + v] for channel c and value v + lo (lo = 0
/// for u8, -128 for i8), mapped through each channel's rule to its slots.
struct value_folds {
  value_fold channel[4];
  int channels = 0;
  const unsigned long long* raw = nullptr;
};
void fold_values(dtype sample, const value_folds& folds, cudaStream_t stream);

/// The generic kernels (any type, stride, alignment, N-D): global_atomic, warp_aggregated, and
/// shared / shared_replicated with 2^replica_shift copies.
void count_generic(const device_axes& axes, std::int64_t n, std::int64_t cells, strategy s, int replica_shift,
                   unsigned long long* slots, const launch_shape& shape);

/// count_into's kernels: the write_once plan's one cluster, which counts n samples and writes each
/// of the cells into `out` as `type` (u64, i64, f64, f32, f16, bf16), or the add_once plan's
/// blocks, which add their counts into `out` after zeroing it (u64, i64, f64, f32); and a
/// histogram's u64 counts converted into `out` as `type`.
void count_once(const device_axes& axes, std::int64_t n, std::int64_t cells, const policy& plan, void* out,
                dtype type, cudaStream_t stream);
void convert_counts(const unsigned long long* counts, std::int64_t cells, void* out, dtype type, cudaStream_t stream);

/// Exact sums of f32 weights (none: weight 1), as core/exact_sum.hpp's fixed-point words: each
/// weight is an integer addition at one 16-bit digit of its cell, so any order gives the same words.
/// Counts the samples that no cell takes in flow[0..3).
struct exact_sums_args {
  const char* weights = nullptr;  // f32, any alignment; null: every weight is 1
  std::int64_t weight_stride_bytes = 0;
  std::int64_t n = 0;
  std::int64_t cells = 0;
  std::uint64_t* words = nullptr;       // cells x kExactWords, added to
  unsigned* flags = nullptr;            // cells: the infinities and NaN seen, or-ed in
  unsigned long long* flow = nullptr;   // underflow, overflow, nan: added to
  bool in_shared = false;               // each block adds into its own shared copy of the words
  bool staged = false;                  // set by sum_exact: the shape has room for the ring
};
/// Adds the fill's weights to args.words and args.flags: with args.in_shared, each block in its
/// own shared copy of the words (core/exact_sum.hpp's exact_shared_bytes), then added to device
/// memory; else straight into device memory. A contiguous column's groups stream through the
/// ring of core/exact_sum.hpp where shape.shared_bytes has room for it after the words.
/// `column`: axes is one contiguous column (the typed loads and 32-bit rules apply).
void sum_exact(const device_axes& axes, bool column, const exact_sums_args& args, const launch_shape& shape);
/// sums[c] += the words' value of cell c, correctly rounded (one addition per cell).
void finish_exact(const exact_sums_args& args, double* sums, cudaStream_t stream);

/// The partitioned exact sums' first pass (core/partition.hpp), over samples [0, sums.n) of one
/// contiguous column at `data` with sums.weights: each tile's pairs of a cell and a finite weight
/// sorted by bucket, the cells' low bits into sorted.entries and the weights into `weights` at the
/// same places, each tile's bucket starts into sorted.offsets and each bucket's pairs added to
/// sorted.totals. The flow samples are counted into sums.flow, non-finite weights flagged in
/// sums.flags, and the column's unaligned head and tail added to sums.words directly.
struct exact_sort_args {
  exact_sums_args sums;
  const void* data = nullptr;
  partition_scratch sorted;
  float* weights = nullptr;
};
void sort_exact_partitions(const device_axis& column, const exact_sort_args& args, const launch_shape& shape);
/// The second pass over the `tiles` tiles a sort wrote: about `blocks` blocks shared out among the
/// buckets by their totals, each adds its share of one bucket's pairs into its shared copy of the
/// bucket's words, then into `words`. Zeroes next_totals (the next pass's totals).
struct exact_partition_sum_args {
  partition_scratch sorted;
  const float* weights = nullptr;
  std::int64_t tiles = 0;
  unsigned* next_totals = nullptr;
  int blocks = 0;
  std::int64_t cells = 0;
  std::uint64_t* words = nullptr;  // cells x kExactWords, added to
  unsigned* flags = nullptr;       // cells: the infinities and NaN seen, or-ed in
};
void sum_exact_partitions(const exact_partition_sum_args& args, cudaStream_t stream);

/// Deterministic weighted sums of the cells [window_lo, window_lo + window) into `partials`
/// (grid x window doubles, block-major), then reduced in a fixed order and added, one addition
/// per cell, to sums[window_lo, window_lo + window). Flow counts of dropped samples go to
/// flow[0..3) when count_flow.
struct weighted_args {
  const char* weights = nullptr;
  std::int64_t weight_stride_bytes = 0;
  dtype weight_type = dtype::f64;
  std::int64_t n = 0;
  std::int64_t cells = 0;
  std::int64_t window_lo = 0;
  std::int64_t window = 0;
  double* partials = nullptr;
  double* sums = nullptr;
  unsigned long long* flow = nullptr;
  bool count_flow = false;
};
void sum_weighted(const device_axes& axes, const weighted_args& args, const launch_shape& shape);

/// options::exact_sums: the exact kernel's words and flags (args.words, args.flags) added into the
/// cells' wide words (core/exact_sum.hpp, cells x kWideCellWords) in device memory.
void widen_exact(const exact_sums_args& args, std::uint64_t* wide, cudaStream_t stream);

}  // namespace tally::detail::cuda

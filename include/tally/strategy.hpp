// The strategy registry: every named strategy as data (its name, backend, the classic technique
// it implements, where it applies and when the planner picks it), read by the planner's names,
// the Python bindings, the CLI (`tally strategies`) and the benchmarks. A new strategy is its
// enum value and its row here, its choice and shape in the planner (src/core/planner.cpp), and
// its kernel (docs/architecture.md, "Where to add").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tally/backend.hpp"

namespace tally {

/// Named strategies; automatic lets the planner choose. What each is, where it applies and when
/// the planner picks it: the registry below (kStrategies, tally::strategies()).
enum class strategy : std::uint8_t {
  automatic,
  cpu_private,
  global_atomic,
  global_atomic_vec,
  warp_aggregated,
  shared,
  shared_replicated,
  cluster,
  registers,  // named "register"
  partitioned
};

/// One registered strategy.
struct strategy_info {
  strategy which;
  std::string_view name;         // as options, the CLI and Python spell it
  backend where;                 // cpu or cuda; automatic for `automatic`, which plans for either
  std::string_view technique;    // the classic parallel pattern it implements
  std::string_view applies;      // the fills it takes when asked for (others are a tally::error)
  std::string_view chosen_when;  // when the planner picks it unasked, and the measurement behind it
};

/// The registry: one row per strategy, in the enum's order. The planner (src/core/planner.cpp)
/// checks each row's `applies` and makes its `chosen_when`; the figures are H100 measurements of
/// device_histogram over 1 GiB of samples (bench/PERFORMANCE.md).
inline constexpr strategy_info kStrategies[] = {
    {strategy::automatic, "automatic", backend::automatic, "the planner's choice among the others",
     "every fill",
     "the default: the planner picks from the backend, the cells, the sample and weight types, the layout and the "
     "device (`tally plan` prints its choice and reasons)"},
    {strategy::cpu_private, "cpu_private", backend::cpu,
     "privatization on the CPU: each thread fills private histograms (4 interleaved replicas for few cells, so that "
     "equal neighbouring samples do not serialise on one counter), merged at the end",
     "every CPU fill", "every CPU fill"},
    {strategy::global_atomic, "global_atomic", backend::cuda,
     "naive atomics: one atomic add per sample in device memory, one sample per thread",
     "every CUDA fill, and exact sums of weights in device memory",
     "counts: never (i32 4096 bins 148 GB/s uniform and 5.4 on one hot bin, against shared_replicated's 2942 and "
     "2988); exact sums whose words fit neither a block's shared memory nor partitions, and exact sums of f64 "
     "weights"},
    {strategy::global_atomic_vec, "global_atomic_vec", backend::cuda,
     "vectorized loads and coarsening: 16-byte loads of several samples a thread; each thread keeps two runs of "
     "equal bins in registers and adds a run with one device-memory atomic",
     "one contiguous column aligned to its sample type",
     "counters beyond shared memory, clusters and partitions (over 2^23 slots), one contiguous column: i32 2^20 bins "
     "343 GB/s uniform and 2183 hot, against warp_aggregated's 214 and 155"},
    {strategy::warp_aggregated, "warp_aggregated", backend::cuda,
     "warp aggregation: lanes of a warp with the same bin combine, one device-memory atomic per warp and bin",
     "every CUDA count",
     "counters beyond shared memory for strided, N-D or unaligned samples: i32 65536 bins 203 GB/s uniform, 151 hot"},
    {strategy::shared, "shared", backend::cuda,
     "shared-memory privatization: one copy of the counters a block (32-bit, or 16-bit two a word), added to "
     "device memory at the end; also the per-block words of exact f32 sums and the fixed-order f64 sums",
     "counters that fit one block's shared memory (16-bit ones for one contiguous column wider than 8 bits); exact "
     "f32 sums whose words fit; f64 weighted sums",
     "counters that fit a block but not twice half a multiprocessor, or only as 16-bit counters (i32 65536 bins "
     "1919 GB/s uniform, 2405 hot, against the cluster's 213 and 463); exact f32 sums whose words fit; f64 "
     "weighted sums (fixed order, the same bits every run)"},
    {strategy::shared_replicated, "shared_replicated", backend::cuda,
     "replicated shared-memory privatization: up to 32 interleaved copies a block, lane l using copy l mod R, so "
     "lanes spread over banks and a hot bin over copies; 8-bit samples counted per value and folded into bins",
     "counters that fit one block's shared memory",
     "whenever two or more copies fit half a multiprocessor's shared memory: i32 4096 bins 2942 GB/s uniform and "
     "2988 on one hot bin, against CUB's 329 and 1186"},
    {strategy::cluster, "cluster", backend::cuda,
     "distributed shared memory (Hopper): one copy of the counters spread over the shared memory of a thread-block "
     "cluster of 2-8 blocks",
     "one contiguous column of samples wider than 8 bits, at most the cells 8 blocks' shared memory holds",
     "where partitions do not fit and a cluster does (not on an H100, where partitions reach further): i32 65536 "
     "bins 284 GB/s uniform, 400 hot, the only strategy within 5% of the best on every distribution"},
    {strategy::registers, "register", backend::cuda,
     "register privatization: lane l of each warp counts slot l in a register from 6 ballots per 32 samples, one "
     "shared atomic per warp and slot at the end",
     "one contiguous column into at most 29 bins (32 slots with the 3 flow counters)",
     "never: i32 16 bins 1583-1618 GB/s against shared_replicated's 2773-2854 (6 ballots per 32 samples cost more "
     "issue slots than one shared atomic a sample)"},
    {strategy::partitioned, "partitioned", backend::cuda,
     "partitioning: each tile of samples is sorted by bucket (the high bits of its slot) into temporary memory, "
     "then each bucket counted in the shared memory of the blocks that own it",
     "one contiguous column of samples wider than 8 bits, up to 256 buckets of 2^15 slots (2^23); exact f32 sums "
     "up to 2^20 cells",
     "counters beyond one block's shared memory, up to 2^23 slots: i32 2^20 bins 1075 GB/s uniform, 1127 hot, 964 "
     "skewed, against global_atomic_vec's 307, 1097 and 708; exact f32 sums whose words do not fit a block"},
};

/// Every strategy, in the enum's order (automatic first).
const std::vector<strategy_info>& strategies();
/// The registry's row of `s`.
const strategy_info& info_of(strategy s);
std::string_view name_of(strategy s);
/// Parses a registered name; throws tally::error for an unknown one.
strategy strategy_from_name(std::string_view name);

}  // namespace tally

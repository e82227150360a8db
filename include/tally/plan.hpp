// Strategy choice as data: one planner function from the job's parameters to a plain policy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tally/axis.hpp"
#include "tally/backend.hpp"
#include "tally/dtype.hpp"
#include "tally/strategy.hpp"

namespace tally {

enum class count_type : std::uint8_t { u64, u32 };

std::string_view name_of(backend b);
std::string_view name_of(count_type c);
backend backend_from_name(std::string_view name);

/// What the planner looks at.
struct plan_request {
  backend where = backend::cpu;  // resolved backend (not automatic)
  strategy wanted = strategy::automatic;
  axis_kind kind = axis_kind::regular;  // of the first axis
  std::int64_t cells = 0;               // bins, or the product of bins over N-D axes
  int dims = 1;
  int channels = 1;
  int counted_channels = 0;  // of interleaved channels, how many (the first ones) are counted; 0: all
  dtype sample = dtype::f64;
  bool weighted = false;
  dtype weight_type = dtype::f64;       // weighted: the weights' type (f32 for a fill without weights: ones)
  bool exact_sums = false;              // weighted: options::exact_sums
  std::int64_t sum_block = 65536;       // weighted: options::sum_block (0: one block)
  count_type counts = count_type::u64;
  std::int64_t n = 0;  // samples per column
  int threads = 0;     // 0: OpenMP's limit (OMP_NUM_THREADS, omp_set_num_threads), at most the hardware threads
  int device_sms = 0;                    // CUDA: multiprocessors
  std::int64_t device_shared_bytes = 0;  // CUDA: shared memory one block may use
  std::int64_t device_shared_per_sm = 0; // CUDA: shared memory of one multiprocessor
  bool device_clusters = true;           // CUDA: thread block clusters (sm_90 and newer)
  /// CUDA: the samples are one contiguous column of a type whose 16-byte vectors can be
  /// loaded (1-D, stride 1, aligned to the sample size); else the generic per-sample kernel.
  bool contiguous = false;
  /// Bytes of the first axis' edge tables (regular: edges; variable: edges and buckets).
  std::int64_t table_bytes = 0;
  /// CUDA: the counts go to the caller's memory, replacing it (tally::count_into), so a fill
  /// that one cluster of blocks counts may write each cell once instead of adding into zeroed
  /// cells, and a somewhat larger one may add into the zeroed output itself. write_type: the
  /// output's type.
  bool write_once = false;
  dtype write_type = dtype::u64;
  /// options::flow_bins: every axis keeps bins + 3 cells (cells counts them); the generic
  /// per-sample kernels and loops place the flow bins.
  bool flow_bins = false;
};

/// The largest fill the planner's write_once plan (tally::count_into's one launch) takes: a
/// cluster of at most 8 blocks of 1024 threads, 16 samples a thread.
inline constexpr std::int64_t write_once_max_samples = 8 * 1024 * 16;
inline constexpr std::int64_t write_once_max_cells = 16384;
/// The largest fill the planner's add_once plan (count_into's zeroing and one launch) takes.
inline constexpr std::int64_t add_once_max_samples = std::int64_t{1} << 20;

/// The Python package's small host calls (a 1-D numpy call answered by one extension call that
/// writes into a new numpy array, its argument-derived parts kept): at most this many cells, so
/// the copy into the caller's array costs no more than handing a histogram's own cells over.
inline constexpr std::int64_t host_call_max_cells = 4096;
/// Fewer samples than this: bincount's maximum and histogram's data range come from one scalar
/// pass over the samples (numpy's vectorised reductions are faster beyond), and bincount is the
/// small call (plan_bincount's least learned length; below it the maximum comes first anyway).
inline constexpr std::int64_t host_call_max_samples = 4096;

/// The planner's answer.
struct policy {
  backend where = backend::cpu;
  strategy chosen = strategy::cpu_private;
  int threads = 1;
  int replicas = 1;                 // private sub-histograms per thread (CPU) or block (CUDA)
  bool edge_table = false;          // regular axis: look edges up instead of computing them
  std::int64_t block = 65536;       // samples per block; weights sum in this block order
  int block_threads = 0;            // CUDA: threads per block
  std::int64_t grid_blocks = 0;     // CUDA: blocks per launch
  int cluster_blocks = 0;           // CUDA cluster: blocks per cluster sharing one copy
  int vector_bytes = 0;             // CUDA: bytes per load (16, or 0 for one sample per load)
  int unroll = 1;                   // CUDA: loads in flight per thread before counting
  bool value_table = false;         // CUDA: 8-bit samples counted per value, folded into bins once
  bool merge_runs = false;          // CUDA: equal slots add once (within a load; across loads in device memory and exact sums)
  int counter_bits = 32;            // CUDA shared counters: 32, or 16 (two per word, wraps to device memory)
  bool tables_in_shared = false;    // CUDA: edge tables copied into shared memory
  std::int64_t shared_bytes = 0;    // CUDA: dynamic shared memory per block
  std::int64_t window_cells = 0;    // CUDA weighted, f64 weights: cells summed per pass over the samples
  bool exact_sums = false;          // CUDA weighted, f32 weights: exact fixed-point sums, any order
  bool exact_wide = false;          // CUDA options::exact_sums, f64 weights: global atomics into wide words
  int partition_bits = 0;           // CUDA partitioned: a sample's bucket is its slot >> bits
  int partition_buckets = 0;        // CUDA partitioned: buckets, (cells + 2) >> bits, plus one
  std::int64_t partition_chunk = 0; // CUDA partitioned: samples sorted per pass (temporary memory)
  int partition_blocks = 0;         // CUDA partitioned: counting blocks shared out among the buckets
  bool write_once = false;          // CUDA count_into: one cluster counts all samples, writes each cell once
  bool add_once = false;            // CUDA count_into: blocks count in shared memory, add into the zeroed output
  bool flow_bins = false;           // options::flow_bins: underflow, overflow and NaN cells on every axis
  std::vector<std::string> reasons; // the measured reason behind each choice
};

/// The one planner. Pure: no allocation on devices, no synchronisation.
policy plan(const plan_request& request);
/// Fills what the planner needs to know of request.where's current device (CUDA: its
/// multiprocessors and shared memory). Returns false, changing nothing, where that backend is
/// not compiled in or not usable here.
bool describe_device(plan_request& request);
/// A human-readable, multi-line description (what `tally plan` prints).
std::string describe(const policy& p);

/// What is compiled in and usable on this machine.
struct backend_info {
  backend which;
  bool compiled = false;
  bool usable = false;
  std::string detail;  // devices found, or why it is not usable
};
std::vector<backend_info> backends();

/// "0.1.0"
std::string_view version();

}  // namespace tally

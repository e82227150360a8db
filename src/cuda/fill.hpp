// A fill as a sequence of stream-ordered steps into device memory, shared by the synchronous
// backend (cuda_backend.cu: host storage, a copy back at the end) and device_histogram
// (device_histogram.cu: device storage, no wait).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "base/cuda_devices.hpp"
#include "cuda/kernels.hpp"
#include "tally/histogram.hpp"

namespace tally {
class device_histogram;
}

namespace tally::detail {

/// What tally's own reductions (cuda/nccl.cu) reach inside a device_histogram (its friend).
struct device_cells {
  /// options::exact_sums: the cells' wide words and flags (cells x kWideCellWords, after the
  /// f64 sums that hold their rounded values); null without exact sums.
  static std::uint64_t* wide(device_histogram& h);
  /// Temporary device memory from the histogram's allocator, in the order of `stream`.
  static void* allocate(const device_histogram& h, std::size_t bytes, void* stream);
  static void deallocate(const device_histogram& h, void* p, std::size_t bytes, void* stream);
};

}  // namespace tally::detail

namespace tally::detail::cuda {

/// Makes `device` current (if >= 0) and restores the caller's device at the end.
class device_guard {
 public:
  explicit device_guard(int device);
  ~device_guard();
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = 0;
};

struct fill_input;

/// The axes' rules as the kernels see them. Their tables (regular edges; variable edges and
/// buckets) are gathered into `tables` on the host; point_at() aims the rules at a device copy.
/// The columns (data, type, stride) are set per fill by input().
struct device_rules {
  device_axes axes{};
  std::vector<std::uint64_t> tables;
  std::vector<std::size_t> offsets;  // per table, in words
  std::size_t table_words = 0;       // tables.size() once gathered: the 1.0's place in words()
  /// Per axis, the rule kind (rule_kind) of integer samples of at most 32 bits, and of 64 bits.
  axis_kind integer_kind[kMaxAxes][2]{};

  /// The axes' rules; their tables too unless `with_tables` is false (add_tables later).
  explicit device_rules(const std::vector<axis>& axes, bool with_tables = true);
  /// Gathers the tables a constructor without them left out.
  void add_tables(const std::vector<axis>& axes);
  /// Integer samples bin without tables on every axis (integer axes, unit integer edges), so a
  /// histogram filled with them alone never needs the tables (a regular axis of 2^20 bins: 8 MiB).
  bool integers_need_no_tables() const;
  bool has_tables = false;
  /// The tables followed by a 1.0 (the weight an unweighted fill of sums reads at stride 0):
  /// what a fill of one histogram copies to the device and points the rules at.
  std::vector<std::uint64_t> words() const;
  void point_at(const std::uint64_t* device_tables);
  /// A fill's input after point_at(device_words) over a copy of words(): the rules with the
  /// fill's columns (device addresses in `data`, one per axis) and weights (device address in
  /// weight_data; none: the 1.0 after the tables). n, cells and plan are the caller's.
  fill_input input(const std::vector<view>& columns, const std::vector<const char*>& data, const view* weights,
                   const char* weight_data, const std::uint64_t* device_words) const;
};

/// One fill's samples on the device, ready to launch.
struct fill_input {
  device_axes axes{};            // rules with tables in device memory, and the columns
  const char* weights = nullptr; // device address; null: weight 1 (see `one`)
  dtype weight_type = dtype::f64;
  std::int64_t weight_stride_bytes = 0;
  const double* one = nullptr;   // a device 1.0, read for unweighted fills of sums
  std::int64_t n = 0;
  std::int64_t cells = 0;
  policy plan;
};

/// Interleaved 8-bit samples of `channels` (2-4) channels, contiguous: sample i belongs to
/// channel i mod channels. The first outputs.size() channels are counted, each into its axis'
/// slots (tables in device memory); the others (RGBA's alpha, for three) are skipped.
struct channels_input {
  device_axis samples{};  // data, type, stride_bytes (the rule is unused)
  std::int64_t n = 0;     // samples, all channels together
  int channels = 0;
  std::vector<value_fold> outputs;
  policy plan;
};

/// A fill of the interleaved `samples` in one pass on the current device, counting the first
/// `counted` of `channels`, each channel's axis like `first`: planned (plan.value_table false:
/// not in one pass), with samples.data the view's and `counted` outputs for the caller to aim.
channels_input plan_channels(const axis& first, const view& samples, int channels, int counted);

/// Temporary device memory a fill needs beyond its destination (zeroed by the enqueue; by the
/// caller for channels).
std::size_t counts_temp_bytes(const policy& plan);
std::size_t channels_temp_bytes(int channels);
/// `wide`: the fill's exact sums go to the caller's wide words (options::exact_sums).
std::size_t sums_temp_bytes(const policy& plan, std::int64_t cells, bool wide);

/// Adds the fill's counts to slots[0, cells + 3) (cells, then underflow, overflow, nan).
void enqueue_counts(const fill_input& in, unsigned long long* slots, void* temp, cudaStream_t stream);
/// Counts the channels' values in one pass over the samples, then adds each channel's counts
/// to its slots through its rule. temp (channels_temp_bytes) comes zeroed: the caller clears it
/// with the slots, in one memset.
void enqueue_channels(const channels_input& in, void* temp, cudaStream_t stream);
/// Adds the fill's weighted sums to sums[0, cells) and its dropped samples to flow[0, 3). Each
/// cell gets one addition of the fill's total: exact and correctly rounded (plan.exact_sums),
/// else computed in a fixed order. options::exact_sums (`wide` set, sums unused): the fill's exact
/// sums are added to wide[0, cells x kWideCellWords) instead (core/exact_sum.hpp's wide words and
/// flags, zeroed by the caller): the f32 exact kernel's words widened (plan.exact_sums), or the
/// wide atomics (plan.exact_wide).
void enqueue_sums(const fill_input& in, double* sums, unsigned long long* flow, void* temp, cudaStream_t stream,
                  std::uint64_t* wide = nullptr);
/// Each cell's wide words (and flags) correctly rounded into sums[0, cells), as
/// tally::histogram's exact sums are after every fill (core/exact_sum.hpp's exact_value).
void round_wide(const std::uint64_t* wide, std::int64_t cells, double* sums, cudaStream_t stream);
/// Each cell's wide words correctly rounded and added to sums[0, cells): a fill's exact partial
/// sums joining sums kept in f64 (plan.exact_wide without options::exact_sums).
void add_rounded_wide(const std::uint64_t* wide, std::int64_t cells, double* sums, cudaStream_t stream);
/// The wide cells as digits that an integer all-reduce adds without carries, and back (the
/// digit sums carried into words): core/exact_sum.hpp's split_wide_digits and join_wide_digits.
void split_wide(const std::uint64_t* wide, std::int64_t cells, std::uint64_t* digits, cudaStream_t stream);
void join_wide(const std::uint64_t* digits, std::int64_t cells, std::uint64_t* wide, cudaStream_t stream);
/// plan.exact_wide: each weight added into its cell's wide words with global 64-bit atomics, a
/// run of a thread's terms of one cell at a time (cuda/exact_wide.cu); dropped samples to flow[0, 3).
void enqueue_exact_wide(const fill_input& in, std::uint64_t* wide, unsigned long long* flow, cudaStream_t stream);

}  // namespace tally::detail::cuda

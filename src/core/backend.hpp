// The backend table: what every backend implements, and the validated job it is handed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tally/histogram.hpp"

namespace tally::detail {

/// A validated fill: columns.size() == axes.size(), all of length n. The backend adds into
/// the destination storage (exactly one of counts64 / counts32 / sums / exact is set) and into flow
/// (if set). It throws tally::error without writing anything when a count would overflow.
struct fill_job {
  const std::vector<axis>* axes = nullptr;
  std::vector<view> columns;
  const view* weights = nullptr;  // weighted storage only; null there means weight 1
  std::int64_t n = 0;
  std::int64_t cells = 0;
  std::uint64_t* counts64 = nullptr;
  std::uint32_t* counts32 = nullptr;
  double* sums = nullptr;
  /// options::exact_sums: cells x kWideCellWords (core/exact_sum.hpp), each weight added exactly.
  std::uint64_t* exact = nullptr;
  flow_counts* flow = nullptr;
  policy plan;
};

/// Interleaved samples of `channels` channels: per_channel[c] fills channel c's histogram, its
/// one column the strided view of channel c.
struct channels_job {
  view samples;
  int channels = 1;
  std::vector<fill_job> per_channel;
};

/// The hardware threads of this machine (at least 1), read once per process.
int hardware_threads();

/// Throws tally::error if adding `add` (job.cells counts) to the job's storage would overflow a
/// cell.
void check_counts(const fill_job& job, const std::uint64_t* add);
/// Adds a fill's per-cell counts (job.cells of them) to the job's storage (u32 or u64), or throws
/// and leaves the storage as it was if a cell would overflow the storage type. Every backend ends
/// its count fills here.
void add_counts(const fill_job& job, const std::uint64_t* add);

/// Adds another histogram's n counts of the same type (destination == add is allowed), or
/// throws and leaves the destination as it was if a cell would overflow.
void merge_counts(std::uint32_t* destination, const std::uint32_t* add, std::size_t n);
void merge_counts(std::uint64_t* destination, const std::uint64_t* add, std::size_t n);

/// The number of cells of `axes` (at least one axis; the product must fit 64 bits).
std::int64_t cell_count(const std::vector<axis>& axes, bool flow_bins = false);
/// Throws tally::error for a bad view (unknown type, negative size, null data, stride < 1).
void check_view(const view& v, const std::string& what);
/// Checks a fill of `channels` interleaved channels into `histograms` histograms (at most one per
/// channel) and its samples (whole pixels); `call` begins each message.
void check_channels(const view& samples, int channels, std::size_t histograms, const std::string& call);
/// Channel c of the `channels` interleaved in `samples`: every channels-th sample from the c-th.
view channel_of(const view& samples, int c, int channels);
/// Every check of a fill's arguments, shared by tally::histogram and device_histogram.
void check_fill(const std::vector<axis>& axes, bool weighted, const std::vector<view>& columns,
                const view* weights);
/// What the planner looks at for a fill of n samples of type t (first: column 0, and weights,
/// if a fill is known), with what backend `where` adds about the current device (its describe).
plan_request make_request(const std::vector<axis>& axes, const options& opts, backend where, dtype t,
                          std::int64_t n, const view* first, const view* weights);

/// What a histogram's fills added since its host storage last took them, kept by a backend in
/// its own memory (the CUDA backend: device memory), so that fills of samples already there bring
/// nothing back. Counts and exact words add in any order; plain f64 sums gather as fl(f1 + f2 + ...)
/// where the host would make fl(fl(h + f1) + f2), so tally::histogram lets them gather more than
/// one fill only over host sums that are still zero.
class pending_cells {
 public:
  virtual ~pending_cells() = default;
  /// Adds the fill here, waits for it (a synchronous fill) and returns true; or returns false,
  /// having done nothing, where this copy cannot take it (samples in other memory).
  virtual bool fill(const fill_job& job) = 0;
  /// Adds what was gathered into the storage and flow counters `into` names (one of counts64 /
  /// counts32 / sums / exact, and flow; the caller guarantees that no count overflows) and
  /// zeroes this copy. Where it throws, neither the storage nor this copy has changed.
  virtual void settle(const fill_job& into) = 0;
};

struct backend_ops {
  backend which;
  /// Compiled in and able to run here; `detail` says what was found or what is missing.
  bool (*usable)(std::string& detail);
  /// Whether p points into memory this backend reads directly (used by backend::automatic).
  bool (*owns)(const void* p);
  /// Adds what the planner needs to know about the device (null where nothing).
  void (*describe)(plan_request& request);
  void (*fill)(const fill_job& job);
  /// All channels (2 or more) in one pass; returns false where it has no such kernel for the job (the
  /// caller then fills channel by channel). Null: channel by channel always.
  bool (*fill_channels)(const channels_job& job);
  /// A pending copy, on the memory the samples of `job` are in, for a histogram of `opts`; null
  /// (the function, or what it returns) where the backend writes the host storage at every fill.
  std::unique_ptr<pending_cells> (*pending)(const fill_job& job, const options& opts);
};

/// The compiled-in backends, CPU first.
const std::vector<backend_ops>& backend_table();
const backend_ops* find_backend(backend which);

const backend_ops& cpu_backend();
#if defined(TALLY_HAVE_CUDA)
const backend_ops& cuda_backend();
#endif

}  // namespace tally::detail

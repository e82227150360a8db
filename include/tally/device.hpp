// Stream-ordered histograms in device memory: every fill is enqueued on the caller's CUDA stream
// and returns without waiting for the GPU; nothing is read back to the host until the caller
// asks. No CUDA header is needed: streams are passed as `void*` (a cudaStream_t; nullptr is the
// default stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tally/axis.hpp"
#include "tally/dtype.hpp"
#include "tally/histogram.hpp"
#include "tally/plan.hpp"

namespace tally {

/// Where device_histogram takes device memory from, in stream order: its cells and tables for
/// its lifetime, and each fill's temporary memory (released on the fill's stream as soon as the
/// fill's kernels are enqueued). The default (null functions) is cudaMallocFromPoolAsync and
/// cudaFreeAsync on a stream-ordered memory pool of tally's own per device, which keeps freed
/// memory for the next fill (up to the most that fills on the device have used at once) until the
/// process ends. Pass an allocator to take the memory from elsewhere.
struct device_allocator {
  void* context = nullptr;
  void* (*allocate)(void* context, std::size_t bytes, void* stream) = nullptr;
  void (*deallocate)(void* context, void* p, std::size_t bytes, void* stream) = nullptr;
};

/// A histogram whose cells live in device memory, with the axes, options and bin rule of
/// tally::histogram. The samples (and weights) of a fill must be in device memory of the device
/// the histogram was made on; the fill is enqueued on `stream` and returns at once, so the
/// samples must stay valid until the stream reaches the fill. A fill makes no host
/// synchronisation and no host read-back; device errors from earlier work may surface at any
/// later call, as with any CUDA library.
///
/// Counts are 64-bit (a bin cannot overflow); weighted histograms hold f64 sums with the same
/// bits on every run (the order of tally::histogram's CUDA fills). options::counts must be u64:
/// a 32-bit count could only be checked for overflow by reading it back.
///
/// Construction allocates and zeroes the cells and copies the axes' tables (a few KB) to the
/// device with cudaMemcpyAsync from host memory the object owns; that copy may wait for the
/// stream, fills never do. With the default allocator, histograms over equal axes share one
/// device copy of the tables, made (and waited for, on a stream of tally's own) by the first and
/// kept for the process's lifetime (64 sets and 64 MiB a device at most). Axes whose integer
/// samples need no tables (integer axes, regular ones of unit integer edges) get them at the
/// first fill of float samples. Not thread-safe: one object is filled from one thread at a time.
class device_histogram {
 public:
  explicit device_histogram(axis a, options opts = {}, void* stream = nullptr, device_allocator allocator = {});
  explicit device_histogram(std::vector<axis> axes, options opts = {}, void* stream = nullptr,
                            device_allocator allocator = {});
  /// Frees the device memory in stream order on the stream of the last call.
  ~device_histogram();
  device_histogram(device_histogram&& other) noexcept;
  device_histogram& operator=(device_histogram&& other) noexcept;
  device_histogram(const device_histogram&) = delete;
  device_histogram& operator=(const device_histogram&) = delete;

  void fill(const view& samples, void* stream = nullptr);
  void fill(const view& samples, const view& weights, void* stream = nullptr);
  void fill(const std::vector<view>& columns, void* stream = nullptr);
  void fill(const std::vector<view>& columns, const view& weights, void* stream = nullptr);
  /// Zeroes the cells and flow counters (cudaMemsetAsync).
  void reset(void* stream = nullptr);

  const std::vector<axis>& axes() const { return axes_; }
  const options& opts() const { return opts_; }
  std::vector<std::int64_t> shape() const;
  std::int64_t size() const { return cells_; }
  bool weighted() const { return opts_.weighted; }
  /// The CUDA device the histogram lives on (the current device at construction).
  int device() const { return device_; }

  /// Device pointers, valid for the object's lifetime, for kernels or frameworks that read the
  /// result in place (after the stream reaches the fills). Cells row-major, as tally::histogram.
  /// counts_data: u64 counts (null for a weighted histogram); sums_data: f64 sums (null for an
  /// unweighted one); flow_data: underflow, overflow, nan (null unless options::flow).
  const std::uint64_t* counts_data() const;
  const double* sums_data() const;
  const std::uint64_t* flow_data() const;

  /// Copies to the host after the stream's work so far: the one wait the caller asks for.
  std::vector<std::uint64_t> counts(void* stream = nullptr) const;
  std::vector<double> sums(void* stream = nullptr) const;
  flow_counts flow(void* stream = nullptr) const;

  /// For an owner that may outlive the streams the histogram was used on (cells handed to a
  /// framework, say): marks the work enqueued so far, and the destructor then frees the memory on
  /// the legacy default stream once that work is done, instead of on the last call's stream
  /// (which may be destroyed by then). A later fill or reset undoes it.
  void release_on_default_stream();

  /// The policy the planner picks for a fill of n contiguous samples of type t on this device
  /// (with weights of `weight_type` where the histogram is weighted).
  policy plan_for(dtype t, std::int64_t n, dtype weight_type = dtype::f64) const;

 private:
  friend void fill_channels(std::vector<device_histogram>& per_channel, const view& samples, int channels,
                            void* stream);
  struct state;  // device memory and the axes' tables (src/cuda/device_histogram.cu)
  void fill_impl(const std::vector<view>& columns, const view* weights, void* stream);

  std::vector<axis> axes_;
  options opts_;
  std::int64_t cells_ = 0;
  int device_ = 0;
  std::unique_ptr<state> state_;
};

/// Interleaved channels into device histograms, stream-ordered: tally::fill_channels on the
/// device. Sample i of `samples` belongs to channel i mod `channels`, and per_channel[c] takes
/// channel c; channels from per_channel.size() on are skipped (RGBA's alpha, for three). 2-4
/// channels of contiguous 8-bit samples into unweighted histograms of the automatic strategy take
/// one pass over the pixels; anything else fills the histograms one by one, each channel a
/// strided column. The histograms must be 1-D and on the samples' device; like fill, the call
/// returns without waiting for the stream (one pass takes its temporary memory from the first
/// histogram's allocator).
void fill_channels(std::vector<device_histogram>& per_channel, const view& samples, int channels,
                   void* stream = nullptr);

}  // namespace tally

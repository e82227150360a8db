// Stream-ordered histograms in device memory: every fill is enqueued on the caller's CUDA stream
// and returns without waiting for the GPU; nothing is read back to the host until the caller
// asks. No CUDA header is needed: streams are passed as `void*` (a cudaStream_t; nullptr is the
// default stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tally/axis.hpp"
#include "tally/dtype.hpp"
#include "tally/histogram.hpp"
#include "tally/plan.hpp"

namespace tally {

namespace detail {
struct device_cells;  // the exact words, for tally's NCCL reductions (src/cuda/fill.hpp)
}

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

/// How the streaming fills (fill_from_host, fill_stream, fill_channels_stream) move host data to
/// the device. Each of `buffers` rounds in flight has a pinned host staging buffer and a device
/// buffer of `buffer_bytes` (the round's samples and weights together), so a fill holds
/// buffers x buffer_bytes of device memory beside the histogram, whatever the data's size: the
/// device buffers come from the histogram's allocator for the call; the pinned buffers are kept
/// by the histogram for its next streaming fill and freed with it. While round i is counted on
/// the caller's stream, round i+1 is copied on a copy stream of the histogram's own, and the host
/// writes round i+2 into its staging buffer.
struct stream_options {
  /// Positive; a round holds at least one row, however small the buffer.
  std::size_t buffer_bytes = std::size_t{64} << 20;
  /// Rounds in flight, 2 or more (3: the host, the copy and the count each busy with one).
  int buffers = 3;
  /// CPU threads that copy pageable host memory into the staging buffers (one thread's memcpy is
  /// slower than a PCIe 5 link); 0: every hardware thread, at most 16 (H100 host, 8 GiB of i32:
  /// 4 threads 35% of the copy rate, 8 65%, 16 80%; bench/PERFORMANCE.md, "Full runs of the
  /// suite").
  int copy_threads = 0;
};

/// The source of fill_stream: writes up to `max` values into `out` (a staging buffer, aligned for
/// any type) and returns how many it wrote; 0 ends the stream. It may throw: the fill then stops
/// and rethrows once nothing it enqueued reads the staging buffers.
using stream_reader = std::function<std::int64_t(void* out, std::int64_t max)>;

/// A histogram whose cells live in device memory, with the axes, options and bin rule of
/// tally::histogram. The samples (and weights) of a fill must be in device memory of the device
/// the histogram was made on; the fill is enqueued on `stream` and returns at once, so the
/// samples must stay valid until the stream reaches the fill. A fill makes no host
/// synchronisation and no host read-back; device errors from earlier work may surface at any
/// later call, as with any CUDA library.
///
/// Counts are 64-bit (a bin cannot overflow); weighted histograms hold f64 sums with the same
/// bits on every run (the order of tally::histogram's CUDA fills). With options::exact_sums each
/// cell also keeps its sum exactly in device memory (fixed-point words, 280 bytes a cell, as
/// tally::histogram keeps them), so any split of the data into fills, and the NCCL reductions of
/// tally/nccl.hpp, give one fill's sums bit for bit; sums_data() holds their correctly rounded
/// values, rounded again after every fill (one pass over the words). options::counts must be u64:
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

  /// Streaming fills of host data, for data larger than the device's memory: the data go through
  /// the device in rounds of stream_options (pinned double or triple buffering, each round's copy
  /// overlapped with the previous round's count). Each round is a fill() of its rows on `stream`,
  /// so the counts equal one fill's, and weighted sums are the rounds' sums added in f64 (bit for
  /// bit one fill's where every partial sum is exact). On return the host data may be reused or
  /// freed: every copy from it has completed. The counting itself stays stream-ordered (read the
  /// result with counts(stream)). The call waits for copies, and a copy waits for the count of the
  /// round `buffers` earlier, so `stream` must make progress during the call. On an exception the
  /// rounds filled before it stay in the histogram.
  ///
  /// fill_from_host: samples (and weights) in host memory, pageable or pinned, any stride; 1-D
  /// or one column per axis, as fill(). Contiguous pinned memory is copied to the device straight
  /// from where it is; pageable memory through the staging buffers, by stream_options::copy_threads.
  void fill_from_host(const view& samples, void* stream = nullptr, stream_options o = {});
  void fill_from_host(const view& samples, const view& weights, void* stream = nullptr, stream_options o = {});
  void fill_from_host(const std::vector<view>& columns, void* stream = nullptr, stream_options o = {});
  void fill_from_host(const std::vector<view>& columns, const view& weights, void* stream = nullptr,
                      stream_options o = {});
  /// fill_stream: samples of type `type` from a reader, as rows of D = axes().size() values
  /// (row-major: an n x D matrix read row by row); the reader must return whole rows. With
  /// weights, the weights reader is then asked for exactly as many weights as rows were read and
  /// must return that many. A reader that returns more than asked, a partial row or too few
  /// weights is an error.
  void fill_stream(dtype type, const stream_reader& samples, void* stream = nullptr, stream_options o = {});
  void fill_stream(dtype type, const stream_reader& samples, dtype weight_type, const stream_reader& weights,
                   void* stream = nullptr, stream_options o = {});

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
  friend struct detail::device_cells;
  friend void fill_channels(std::vector<device_histogram>& per_channel, const view& samples, int channels,
                            void* stream);
  friend void fill_channels_stream(std::vector<device_histogram>& per_channel, dtype type, int channels,
                                   const stream_reader& pixels, const stream_reader* weights, dtype weight_type,
                                   void* stream, stream_options o);
  struct state;  // device memory and the axes' tables (src/cuda/device_histogram.cu)
  void fill_impl(const std::vector<view>& columns, const view* weights, void* stream);
  void from_host_impl(const std::vector<view>& columns, const view* weights, void* stream, const stream_options& o);
  void stream_impl(dtype type, const stream_reader& samples, const stream_reader* weights, dtype weight_type,
                   void* stream, const stream_options& o);

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

/// fill_channels of interleaved pixels from a reader, streamed as device_histogram::fill_stream
/// streams (the reader returns whole pixels of `channels` values of `type`). With `weights` (one
/// per pixel, of `weight_type`), each channel's histogram gets its channel with the pixel's
/// weight. The first histogram keeps the pinned buffers.
void fill_channels_stream(std::vector<device_histogram>& per_channel, dtype type, int channels,
                          const stream_reader& pixels, const stream_reader* weights = nullptr,
                          dtype weight_type = dtype::f64, void* stream = nullptr, stream_options o = {});

/// The counts of one fill of `columns` (one column of samples per axis, in device memory of the
/// current device) over `axes`, written into `out`: device memory of the current device that the
/// caller owns, one value of `out_type` a cell in C order (u64, i64, f64, f32, f16 or bf16, the
/// float types rounded to nearest as a conversion of int64 counts would round them), replacing
/// what it held; samples that no cell takes are dropped. CUB's convention: the output is the
/// caller's, in the type the caller wants. Enqueued on `stream` with no host wait, as
/// device_histogram::fill. A small fill (the planner's write_once: at most write_once_max_samples
/// into at most write_once_max_cells, unweighted, automatic strategy) is one launch with no
/// allocation; one of at most add_once_max_samples into as many cells, written as u64, i64, f64
/// or f32 (the same conditions otherwise), is a memset of `out` and one launch (add_once). Both hold but for the first fill of
/// float samples (or of integers on variable axes) over new axes, which uploads their tables once
/// as device_histogram does (the kept tables: an allocation and a host wait), and where the
/// device's kept tables are full (then as below). Other fills fill a device_histogram (memory
/// from tally's pool, freed in stream order) and convert its counts.
/// The bin rule is tally::histogram's. `opts` must be unweighted with u64 counts.
void count_into(std::vector<axis> axes, const std::vector<view>& columns, void* out, dtype out_type,
                void* stream = nullptr, options opts = {});

/// count_into where its plan is one launch (write_once, or add_once's memset and one launch) and
/// the axes' tables allow it: asks `out` for the output (device memory of the current device, as
/// count_into's) only then, counts into it and returns true; else returns false having asked and
/// written nothing. For a caller that would otherwise take a device_histogram's cells (counts
/// that count_into would have to convert), deciding no rule of its own. Checks as count_into.
bool count_into_if_one_launch(const std::vector<axis>& axes, const std::vector<view>& columns,
                              const std::function<void*()>& out, dtype out_type, void* stream = nullptr,
                              const options& opts = {});

}  // namespace tally

// Streaming host data through device buffers in rounds: pinned staging buffers, a copy stream,
// and events that let round i+1's copy overlap round i's count (device_histogram's fill_from_host,
// fill_stream and fill_channels_stream).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "tally/device.hpp"

namespace tally::detail::cuda {

/// One array of each round: `per_row` values of `type` a row (samples: one column, D columns of
/// a row-major matrix, or C channels of a pixel; weights: one).
struct stream_part {
  dtype type;
  std::int64_t per_row;
  std::size_t row_bytes() const { return size_of(type) * static_cast<std::size_t>(per_row); }
};

/// The rows of a round and where each part sits in a round's buffer (host and device alike).
struct stream_layout {
  std::int64_t rows = 0;  // most rows a round holds
  int slots = 0;          // rounds in flight
  std::vector<std::size_t> offsets;
  std::size_t slot_bytes = 0;
};

/// The layout for `parts` under `o`, for `total_rows` rows (-1: unknown, from a reader).
/// Throws tally::error for options out of range.
stream_layout layout_for(const std::vector<stream_part>& parts, std::int64_t total_rows, const stream_options& o);

/// Pinned staging buffers, the copy stream and the events of one histogram's streaming fills,
/// kept from one call to the next. Every call waits for its copies before it returns, so between
/// calls nothing in flight reads the buffers.
class host_staging {
 public:
  host_staging() = default;
  ~host_staging();
  host_staging(const host_staging&) = delete;
  host_staging& operator=(const host_staging&) = delete;

  /// Makes the buffers (at least `bytes`), events (`slots` of each) and copy stream ready on the
  /// current device; returns the pinned memory.
  char* prepare(std::size_t bytes, int slots);
  cudaStream_t copy_stream() const { return copy_; }
  cudaEvent_t copied(int k) const { return copied_[static_cast<std::size_t>(k)]; }
  cudaEvent_t counted(int k) const { return counted_[static_cast<std::size_t>(k)]; }
  cudaEvent_t marker() const { return marker_; }

 private:
  char* host_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t copy_ = nullptr;
  cudaEvent_t marker_ = nullptr;  // start and end of a call's copies
  std::vector<cudaEvent_t> copied_, counted_;
};

/// Writes round data: given the most rows a round takes and each part's staging buffer, sets
/// source[p] to where part p's rows are (its staging buffer, once written, or the caller's own
/// pinned memory) and returns the rows (0: the end).
using produce_fn =
    std::function<std::int64_t(std::int64_t max_rows, const std::vector<char*>& staging, std::vector<const void*>& source)>;
/// Enqueues a round's work on the counting stream over the parts' device copies.
using consume_fn = std::function<void(const std::vector<const char*>& device, std::int64_t rows)>;

/// Runs rounds until produce returns 0: round i's parts are copied from their sources into slot
/// i mod slots of `device_ring` (layout.slots x layout.slot_bytes of device memory, allocated
/// in the order of `stream`) on the copy stream, then consumed on `stream`. Returns, and on an
/// exception rethrows, only after every copy has completed; `stream` is then ordered after them.
void stream_rounds(host_staging& staging, const stream_layout& layout, const std::vector<stream_part>& parts,
                   char* device_ring, cudaStream_t stream, const produce_fn& produce, const consume_fn& consume);

/// A producer over host views (one part each, per_row 1, equal sizes): contiguous pinned views
/// are sources as they are, the rest are copied into staging by `copy_threads` threads.
produce_fn produce_from_views(const std::vector<view>& views, int copy_threads);

/// A producer over readers: the first reads the samples' rows (parts[0]); a second, where given,
/// reads exactly one weight a row (parts[1]).
produce_fn produce_from_readers(const std::vector<stream_part>& parts, const stream_reader& samples,
                                const stream_reader* weights);

}  // namespace tally::detail::cuda

// Streaming host data through device buffers in rounds (host_stream.hpp): the copy stream, the
// events that order it with the counting stream, and the host side's parallel copies into
// pinned staging.
#include "cuda/host_stream.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "cuda/common.cuh"

namespace tally::detail::cuda {
namespace {

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

bool is_pinned(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

int resolved_threads(int copy_threads) {
  if (copy_threads > 0) return copy_threads;
  return std::clamp(omp_get_num_procs(), 1, 16);
}

/// Rows [begin, begin + rows) of a host view into `to`, contiguous: pages split among `threads`
/// (a single memcpy reaches about a third of a PCIe 5 link's rate), or element by element for a
/// strided view.
void gather(char* to, const view& v, std::int64_t begin, std::int64_t rows, int threads) {
  const std::size_t item = size_of(v.type);
  const char* from = static_cast<const char*>(v.data) + static_cast<std::size_t>(begin * v.stride) * item;
  if (v.stride == 1) {
    const std::size_t bytes = static_cast<std::size_t>(rows) * item;
    constexpr std::size_t kPerThread = std::size_t{4} << 20;  // below it a thread costs more than it copies
    const int used = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), bytes / kPerThread + 1));
    const std::size_t share = aligned((bytes + static_cast<std::size_t>(used) - 1) / static_cast<std::size_t>(used));
#pragma omp parallel for num_threads(used) schedule(static, 1) if (used > 1)
    for (int t = 0; t < used; ++t) {
      const std::size_t at = static_cast<std::size_t>(t) * share;
      if (at < bytes) std::memcpy(to + at, from + at, std::min(share, bytes - at));
    }
    return;
  }
  const std::size_t step = static_cast<std::size_t>(v.stride) * item;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows >= (std::int64_t{1} << 16))
  for (std::int64_t i = 0; i < rows; ++i)
    std::memcpy(to + static_cast<std::size_t>(i) * item, from + static_cast<std::size_t>(i) * step, item);
}

}  // namespace

stream_layout layout_for(const std::vector<stream_part>& parts, std::int64_t total_rows, const stream_options& o) {
  if (o.buffers < 2) throw error("streaming fill: stream_options::buffers must be 2 or more, got " + std::to_string(o.buffers));
  if (o.copy_threads < 0)
    throw error("streaming fill: stream_options::copy_threads must be 0 (automatic) or more, got " +
                std::to_string(o.copy_threads));
  std::size_t row_bytes = 0;
  for (const auto& p : parts) row_bytes += p.row_bytes();
  if (o.buffer_bytes == 0) throw error("streaming fill: stream_options::buffer_bytes must be positive");
  stream_layout l;
  // A part's start is aligned to 256 bytes; a round holds at least one row.
  const std::size_t padding = 256 * parts.size();
  l.rows = static_cast<std::int64_t>(std::max<std::size_t>(1, (o.buffer_bytes - std::min(o.buffer_bytes, padding)) / row_bytes));
  std::int64_t rounds = -1;
  if (total_rows >= 0) {
    l.rows = std::max<std::int64_t>(1, std::min(l.rows, total_rows));
    rounds = (total_rows + l.rows - 1) / l.rows;
  }
  l.slots = rounds < 0 ? o.buffers : static_cast<int>(std::clamp<std::int64_t>(rounds, 1, o.buffers));
  for (const auto& p : parts) {
    l.offsets.push_back(l.slot_bytes);
    l.slot_bytes += aligned(static_cast<std::size_t>(l.rows) * p.row_bytes());
  }
  return l;
}

host_staging::~host_staging() {
  for (cudaEvent_t e : copied_) cudaEventDestroy(e);
  for (cudaEvent_t e : counted_) cudaEventDestroy(e);
  if (marker_) cudaEventDestroy(marker_);
  if (copy_) cudaStreamDestroy(copy_);
  if (host_) cudaFreeHost(host_);
}

char* host_staging::prepare(std::size_t bytes, int slots) {
  if (!copy_) TALLY_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  if (!marker_) TALLY_CUDA_CHECK(cudaEventCreateWithFlags(&marker_, cudaEventDisableTiming));
  while (copied_.size() < static_cast<std::size_t>(slots)) {
    cudaEvent_t copied = nullptr, counted = nullptr;
    TALLY_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    const cudaError_t made = cudaEventCreateWithFlags(&counted, cudaEventDisableTiming);
    if (made != cudaSuccess) cudaEventDestroy(copied);
    TALLY_CUDA_CHECK(made);
    copied_.push_back(copied);
    counted_.push_back(counted);
  }
  if (bytes > bytes_) {
    // No copy reads the old buffers between calls (stream_rounds waits for its copies).
    if (host_) TALLY_CUDA_CHECK(cudaFreeHost(host_));
    host_ = nullptr;
    bytes_ = 0;
    TALLY_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_), bytes, cudaHostAllocDefault));
    bytes_ = bytes;
  }
  return host_;
}

namespace {

/// Ends a call's copies, on return or exception: `stream` is ordered after them and the host waits
/// for them, so that the staging buffers and the caller's memory are free again.
class copies_done {
 public:
  copies_done(const host_staging& s, cudaStream_t stream) : s_(s), stream_(stream) {}
  ~copies_done() noexcept(false) {
    cudaError_t status = cudaEventRecord(s_.marker(), s_.copy_stream());
    if (status == cudaSuccess) status = cudaStreamWaitEvent(stream_, s_.marker(), 0);
    // Without the event (an earlier error), the whole copy stream is waited for.
    const cudaError_t waited = status == cudaSuccess ? cudaEventSynchronize(s_.marker()) : cudaStreamSynchronize(s_.copy_stream());
    if (std::uncaught_exceptions() > uncaught_) return;  // the exception in flight says what failed first
    TALLY_CUDA_CHECK(status);
    TALLY_CUDA_CHECK(waited);
  }
  copies_done(const copies_done&) = delete;
  copies_done& operator=(const copies_done&) = delete;

 private:
  const host_staging& s_;
  cudaStream_t stream_;
  int uncaught_ = std::uncaught_exceptions();
};

}  // namespace

void stream_rounds(host_staging& staging, const stream_layout& layout, const std::vector<stream_part>& parts,
                   char* device_ring, cudaStream_t stream, const produce_fn& produce, const consume_fn& consume) {
  const std::size_t slot_bytes = layout.slot_bytes;
  char* host_ring = staging.prepare(static_cast<std::size_t>(layout.slots) * slot_bytes, layout.slots);
  const cudaStream_t copy = staging.copy_stream();
  // The device ring was allocated in the order of `stream`: the copies start after that.
  TALLY_CUDA_CHECK(cudaEventRecord(staging.marker(), stream));
  TALLY_CUDA_CHECK(cudaStreamWaitEvent(copy, staging.marker(), 0));
  const copies_done done(staging, stream);

  std::vector<char*> host(parts.size());
  std::vector<const void*> source(parts.size());
  std::vector<const char*> device(parts.size());
  for (std::int64_t round = 0;; ++round) {
    const int k = static_cast<int>(round % layout.slots);
    const bool reused = round >= layout.slots;
    // Slot k's staging was last copied from in round - slots: the host writes it after that copy.
    if (reused) TALLY_CUDA_CHECK(cudaEventSynchronize(staging.copied(k)));
    for (std::size_t p = 0; p < parts.size(); ++p) {
      host[p] = host_ring + static_cast<std::size_t>(k) * slot_bytes + layout.offsets[p];
      device[p] = device_ring + static_cast<std::size_t>(k) * slot_bytes + layout.offsets[p];
      source[p] = host[p];
    }
    const std::int64_t rows = produce(layout.rows, host, source);
    if (rows == 0) return;
    // Slot k's device buffer was last read by round - slots' count: the copy goes after it.
    if (reused) TALLY_CUDA_CHECK(cudaStreamWaitEvent(copy, staging.counted(k), 0));
    for (std::size_t p = 0; p < parts.size(); ++p)
      TALLY_CUDA_CHECK(cudaMemcpyAsync(const_cast<char*>(device[p]), source[p],
                                       static_cast<std::size_t>(rows) * parts[p].row_bytes(), cudaMemcpyHostToDevice,
                                       copy));
    TALLY_CUDA_CHECK(cudaEventRecord(staging.copied(k), copy));
    TALLY_CUDA_CHECK(cudaStreamWaitEvent(stream, staging.copied(k), 0));
    consume(device, rows);
    TALLY_CUDA_CHECK(cudaEventRecord(staging.counted(k), stream));
  }
}

produce_fn produce_from_views(const std::vector<view>& views, int copy_threads) {
  std::vector<bool> direct;
  for (const view& v : views) direct.push_back(v.size > 0 && v.stride == 1 && is_pinned(v.data));
  const int threads = resolved_threads(copy_threads);
  const std::int64_t total = views.empty() ? 0 : views[0].size;
  return [views, direct, threads, total, done = std::int64_t{0}](std::int64_t max_rows, const std::vector<char*>& staging,
                                                                 std::vector<const void*>& source) mutable {
    const std::int64_t rows = std::min(max_rows, total - done);
    if (rows <= 0) return std::int64_t{0};
    for (std::size_t p = 0; p < views.size(); ++p) {
      if (direct[p])
        source[p] = static_cast<const char*>(views[p].data) + static_cast<std::size_t>(done) * size_of(views[p].type);
      else
        gather(staging[p], views[p], done, rows, threads);
    }
    done += rows;
    return rows;
  };
}

produce_fn produce_from_readers(const std::vector<stream_part>& parts, const stream_reader& samples,
                                const stream_reader* weights) {
  return [parts, &samples, weights](std::int64_t max_rows, const std::vector<char*>& staging, std::vector<const void*>&) {
    const std::int64_t per_row = parts[0].per_row;
    const std::int64_t asked = max_rows * per_row;
    const std::int64_t got = samples(staging[0], asked);
    if (got < 0 || got > asked)
      throw error("streaming fill: the reader returned " + std::to_string(got) + " values when asked for at most " +
                  std::to_string(asked));
    if (got % per_row != 0)
      throw error("streaming fill: the reader returned " + std::to_string(got) + " values, not a whole number of " +
                  std::to_string(per_row) + "-value rows");
    const std::int64_t rows = got / per_row;
    if (weights && rows > 0) {
      const std::int64_t w = (*weights)(staging[1], rows);
      if (w != rows)
        throw error("streaming fill: the weights reader returned " + std::to_string(w) + " weights for " +
                    std::to_string(rows) + " rows of samples");
    }
    return rows;
  };
}

}  // namespace tally::detail::cuda

// The CUDA backend of the parallel patterns, host side: host arguments are staged through device
// copies (keeping their address modulo 256, so that the kernels see the caller's alignment), device
// arguments are used as they are and the call only enqueues work on the caller's stream.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/cuda_check.cuh"
#include "base/cuda_devices.hpp"
#include "patterns/cuda/patterns.hpp"

namespace tally::detail {
namespace cuda {

int multiprocessors() {
  static std::mutex mutex;
  static std::vector<int> known;  // per device; 0 until asked
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  if (known.size() <= static_cast<std::size_t>(device)) known.resize(static_cast<std::size_t>(device) + 1);
  int& sms = known[static_cast<std::size_t>(device)];
  if (sms == 0) TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace cuda

namespace {

using cuda::stream_of;

/// Stream-ordered device memory for one call (host arguments' copies) from tally's pool on the
/// current device, which keeps freed memory (the default pool maps it again after every wait:
/// 85 us a call for the reduction's scratch; bench/PERFORMANCE.md, "Patterns"), freed on the same
/// stream when the call's work is enqueued.
class stream_buffer {
 public:
  stream_buffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (!bytes) return;
    int device = 0;
    TALLY_CUDA_CHECK(cudaGetDevice(&device));
    TALLY_CUDA_CHECK(cudaMallocFromPoolAsync(&p_, bytes, cuda::pool_of(device), stream));
  }
  ~stream_buffer() {
    if (p_) cudaFreeAsync(p_, stream_);
  }
  stream_buffer(const stream_buffer&) = delete;
  stream_buffer& operator=(const stream_buffer&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_;
};

/// Device copies of a call's host arguments. in() and out() return the pointer a kernel uses for
/// an argument; a host pointer staged twice (in place) gets the same copy. finish() copies the
/// outputs back and waits; with no host argument nothing is copied and nothing waits.
class staging {
 public:
  explicit staging(cudaStream_t stream) : stream_(stream) {}

  const void* in(const void* p, byte_span span) { return stage(const_cast<void*>(p), span, false); }
  /// Strided outputs keep the bytes between their elements: the span is copied in first.
  void* out(void* p, byte_span span) { return stage(p, span, true); }

  void finish() {
    for (auto& c : copies_) {
      if (c.output && c.span.hi > c.span.lo)
        TALLY_CUDA_CHECK(cudaMemcpyAsync(c.host + c.span.lo, c.device + c.span.lo,
                                         static_cast<std::size_t>(c.span.hi - c.span.lo), cudaMemcpyDeviceToHost,
                                         stream_));
    }
    if (!copies_.empty()) TALLY_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  struct copy {
    char* host;
    byte_span span;
    bool output;
    char* device;  // the host pointer's image: device + offset mirrors host + offset
    std::unique_ptr<stream_buffer> memory;
  };

  void* stage(void* p, byte_span span, bool output) {
    if (!p || cuda::device_of(p) >= 0) return p;
    auto* host = static_cast<char*>(p);
    for (auto& c : copies_) {
      if (c.host == host) {
        c.output = c.output || output;
        return c.device;
      }
    }
    const std::int64_t bytes = span.hi - span.lo;
    const auto misalignment = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(host + span.lo) % 256);
    copy c{host, span, output, nullptr, std::make_unique<stream_buffer>(static_cast<std::size_t>(misalignment + bytes), stream_)};
    c.device = c.memory->get() + misalignment - span.lo;
    if (bytes > 0)
      TALLY_CUDA_CHECK(cudaMemcpyAsync(c.device + span.lo, host + span.lo, static_cast<std::size_t>(bytes),
                                       cudaMemcpyHostToDevice, stream_));
    copies_.push_back(std::move(c));
    return copies_.back().device;
  }

  cudaStream_t stream_;
  std::vector<copy> copies_;
};

byte_span contiguous(std::int64_t n, dtype t) { return {0, n * static_cast<std::int64_t>(size_of(t))}; }

void cuda_unary(const unary_job& job) {
  staging stage(stream_of(job.run));
  unary_job j = job;
  j.x = stage.in(job.x, contiguous(job.n, job.type));
  j.y = stage.out(job.y, contiguous(job.n, job.type));
  cuda::launch_unary(j);
  stage.finish();
}

void cuda_binary(const binary_job& job) {
  staging stage(stream_of(job.run));
  binary_job j = job;
  j.a = stage.in(job.a, span_of(job.rank, job.shape, job.a_strides, size_of(job.a_type)));
  j.b = stage.in(job.b, span_of(job.rank, job.shape, job.b_strides, size_of(job.b_type)));
  j.out = stage.out(job.out, span_of(job.rank, job.shape, job.out_strides, size_of(job.out_type)));
  cuda::launch_binary(j);
  stage.finish();
}

/// The whole-array reduction's scratch (its two counters, then the chunks' partial results), kept
/// and reused: the kernel leaves its counters at zero, so a buffer whose last reduction has
/// completed (its event) is ready with no memset, where a fresh one is zeroed once. A call takes a
/// free buffer of the current device or makes one; buffers are never freed (one per reduction in
/// flight at once, each at most 16 bytes and 16384 partials: 128 KiB). A memset and a stream-ordered allocation a call cost a 2^28
/// f32 sum about 3% of its time (bench/PERFORMANCE.md, "Patterns").
class reduce_scratch {
 public:
  reduce_scratch(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (!bytes) return;
    int device = 0;
    TALLY_CUDA_CHECK(cudaGetDevice(&device));
    std::lock_guard<std::mutex> lock(mutex());
    for (auto& b : buffers()) {
      if (b.device == device && b.bytes >= bytes && !b.taken && cudaEventQuery(b.done) == cudaSuccess) {
        take(b);
        return;
      }
    }
    cudaGetLastError();  // cudaErrorNotReady from the queries
    buffer b{device, std::max<std::size_t>(bytes, 4096)};
    TALLY_CUDA_CHECK(cudaMalloc(&b.memory, b.bytes));
    TALLY_CUDA_CHECK(cudaMemset(b.memory, 0, cuda::reduce_ticket_bytes));
    TALLY_CUDA_CHECK(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
    buffers().push_back(b);
    take(buffers().back());
  }
  /// Marks the buffer busy until the work enqueued on the stream so far completes.
  ~reduce_scratch() {
    if (index_ < 0) return;
    std::lock_guard<std::mutex> lock(mutex());
    buffer& b = buffers()[static_cast<std::size_t>(index_)];
    cudaEventRecord(b.done, stream_);
    b.taken = false;
  }
  reduce_scratch(const reduce_scratch&) = delete;
  reduce_scratch& operator=(const reduce_scratch&) = delete;
  void* get() const { return memory_; }

 private:
  struct buffer {
    int device = 0;
    std::size_t bytes = 0;
    void* memory = nullptr;
    cudaEvent_t done = nullptr;
    bool taken = false;  // between a call's start and its event's record
  };
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<buffer>& buffers() {
    static std::vector<buffer> all;
    return all;
  }
  void take(buffer& b) {
    b.taken = true;
    memory_ = b.memory;
    index_ = static_cast<int>(&b - buffers().data());
  }

  cudaStream_t stream_;
  void* memory_ = nullptr;
  int index_ = -1;
};

void cuda_reduce(const reduce_job& job) {
  const cudaStream_t stream = stream_of(job.run);
  staging stage(stream);
  reduce_job j = job;
  const std::int64_t size = static_cast<std::int64_t>(size_of(job.type));
  j.x = stage.in(job.x, {0, job.cols == 0 ? 0 : ((job.rows - 1) * job.row_stride + job.cols) * size});
  j.result = stage.out(job.result, contiguous(job.rows, job.result_type));
  reduce_scratch scratch(cuda::reduce_scratch_bytes(j), stream);
  cuda::launch_reduce(j, scratch.get());
  stage.finish();
}

void cuda_matmul(const matmul_job& job) {
  staging stage(stream_of(job.options));
  matmul_job j = job;
  j.a = static_cast<const float*>(stage.in(job.a, contiguous(job.m * job.k, dtype::f32)));
  j.b = static_cast<const float*>(stage.in(job.b, contiguous(job.k * job.n, dtype::f32)));
  j.c = static_cast<float*>(stage.out(job.c, contiguous(job.m * job.n, dtype::f32)));
  cuda::launch_matmul(j);
  stage.finish();
}

}  // namespace

const pattern_ops& cuda_patterns() {
  static const pattern_ops table{&cuda_unary, &cuda_binary, &cuda_reduce, &cuda_matmul};
  return table;
}

}  // namespace tally::detail

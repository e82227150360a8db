// The CUDA backend: device discovery, and count fills through the shared bin rule with three
// strategies (global_atomic, warp_aggregated, shared). Faster ones are the CUDA engine's next steps.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/bin_rule.hpp"
#include "core/dispatch.hpp"
#include "core/rules.hpp"

#define TALLY_CUDA_CHECK(expr)                                                                 \
  ::tally::detail::check_cuda((expr), #expr, __FILE__, __LINE__)

namespace tally::detail {
namespace {

void check_cuda(cudaError_t status, const char* expr, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw error(std::string("CUDA error: ") + cudaGetErrorString(status) + " in " + expr + " at " +
              file + ":" + std::to_string(line));
}

/// Device memory owned for one fill.
class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) {
    if (bytes) TALLY_CUDA_CHECK(cudaMalloc(&p_, bytes));
  }
  ~device_buffer() { cudaFree(p_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  template <class T> T* get() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
};

/// One axis as a kernel sees it: its column and its rule, chosen at run time.
struct device_axis {
  axis_kind kind;
  dtype type;
  const char* data;
  std::int64_t stride_bytes;
  std::int64_t bins;
  regular_table_binner regular;
  variable_binner variable;
  integer_binner integer;
};

constexpr int kMaxAxes = 8;
struct device_axes {
  device_axis axis[kMaxAxes];
  int count;
};

template <class T> __device__ T load_sample(const char* p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

__device__ std::int64_t axis_index(const device_axis& a, std::int64_t i) {
  const char* p = a.data + i * a.stride_bytes;
  std::int64_t k = bin_nan;
  with_sample_type(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = load_sample<T>(p);
    switch (a.kind) {
      case axis_kind::regular: k = a.regular(v); break;
      case axis_kind::variable: k = a.variable(v); break;
      default: k = a.integer(v); break;
    }
  });
  return k;
}

/// The flat cell of sample i, or the drop reason of the first axis that rejects it. Cells are
/// followed by three flow counters (underflow, overflow, nan) in the same array.
__device__ std::int64_t slot_of(const device_axes& axes, std::int64_t i, std::int64_t cells) {
  std::int64_t flat = 0;
  for (int d = 0; d < axes.count; ++d) {
    const std::int64_t k = axis_index(axes.axis[d], i);
    if (k < 0) return cells + (-k - 1);
    flat = flat * axes.axis[d].bins + k;
  }
  return flat;
}

/// global_atomic: one 64-bit atomic per sample straight into the device counts. With
/// WarpAggregated (the warp_aggregated strategy), the lanes of a warp that hit the same slot
/// find each other with __match_any_sync and the lowest of them adds for all, so a hot bin
/// costs one atomic per warp instead of 32.
template <bool WarpAggregated>
__global__ void histogram_global_atomic_kernel(device_axes axes, std::int64_t n, std::int64_t cells,
                                               unsigned long long* slots) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const std::int64_t slot = slot_of(axes, i, cells);
    if constexpr (WarpAggregated) {
      const unsigned peers = __match_any_sync(__activemask(), static_cast<unsigned long long>(slot));
      if ((threadIdx.x & 31) == static_cast<unsigned>(__ffs(peers) - 1))
        atomicAdd(&slots[slot], static_cast<unsigned long long>(__popc(peers)));
    } else {
      atomicAdd(&slots[slot], 1ull);
    }
  }
}

/// shared: each block counts into a private shared-memory copy of all slots (32-bit; the host
/// bounds a block's samples below 2^32), then adds its nonzero counters to the device counts.
__global__ void histogram_shared_kernel(device_axes axes, std::int64_t n, std::int64_t cells,
                                        unsigned long long* slots) {
  extern __shared__ unsigned int block_slots[];
  const std::int64_t total = cells + 3;
  for (std::int64_t k = threadIdx.x; k < total; k += blockDim.x) block_slots[k] = 0;
  __syncthreads();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    atomicAdd(&block_slots[slot_of(axes, i, cells)], 1u);
  __syncthreads();
  for (std::int64_t k = threadIdx.x; k < total; k += blockDim.x)
    if (block_slots[k]) atomicAdd(&slots[k], static_cast<unsigned long long>(block_slots[k]));
}

bool cuda_usable(std::string& detail) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    detail = status == cudaSuccess ? "no CUDA device found"
                                   : std::string("no CUDA device: ") + cudaGetErrorString(status);
    cudaGetLastError();  // leave no error behind for later calls
    return false;
  }
  detail.clear();
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    detail += (d ? "; " : "") + std::to_string(d) + ": " + prop.name + " (sm_" +
              std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
              std::to_string(prop.multiProcessorCount) + " SMs, " +
              std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
  }
  return true;
}

bool cuda_owns(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

void cuda_describe(plan_request& r) {
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&r.device_sms, cudaDevAttrMultiProcessorCount, device));
  int optin = 0;
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  r.device_shared_bytes = optin;
}

/// A column in device memory: the caller's, or a copy of the host span it covers.
struct device_column {
  std::unique_ptr<device_buffer> copy;
  const char* data = nullptr;
};

device_column to_device(const view& v) {
  device_column c;
  if (cuda_owns(v.data)) {
    c.data = static_cast<const char*>(v.data);
    return c;
  }
  const std::size_t bytes = static_cast<std::size_t>(((v.size - 1) * v.stride + 1)) * size_of(v.type);
  c.copy = std::make_unique<device_buffer>(bytes);
  TALLY_CUDA_CHECK(cudaMemcpy(c.copy->get<char>(), v.data, bytes, cudaMemcpyHostToDevice));
  c.data = c.copy->get<char>();
  return c;
}

template <class T> std::unique_ptr<device_buffer> upload(const std::vector<T>& host) {
  auto buffer = std::make_unique<device_buffer>(host.size() * sizeof(T));
  TALLY_CUDA_CHECK(cudaMemcpy(buffer->template get<T>(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return buffer;
}

void cuda_fill(const fill_job& job) {
  if (job.sums) throw error("backend cuda: weighted sums are not built yet; use backend cpu");
  if (job.axes->size() > static_cast<std::size_t>(kMaxAxes))
    throw error("backend cuda: at most " + std::to_string(kMaxAxes) + " axes, got " +
                std::to_string(job.axes->size()));

  std::vector<device_column> columns;
  std::vector<std::unique_ptr<device_buffer>> tables;
  device_axes axes{};
  axes.count = static_cast<int>(job.axes->size());
  for (int d = 0; d < axes.count; ++d) {
    const axis& a = (*job.axes)[static_cast<std::size_t>(d)];
    const view& v = job.columns[static_cast<std::size_t>(d)];
    columns.push_back(to_device(v));
    device_axis& da = axes.axis[d];
    da.kind = a.kind();
    da.type = v.type;
    da.data = columns.back().data;
    da.stride_bytes = v.stride * static_cast<std::int64_t>(size_of(v.type));
    da.bins = a.bins();
    switch (a.kind()) {
      case axis_kind::regular:
        tables.push_back(upload(a.edges()));
        da.regular.rule = make_regular_rule(a, tables.back()->get<double>());
        break;
      case axis_kind::variable: {
        tables.push_back(upload(a.variable_edges()));
        const auto buckets = variable_buckets(a);
        tables.push_back(upload(buckets));
        da.variable.rule = make_variable_rule(a, &buckets);
        da.variable.rule.edges = tables[tables.size() - 2]->get<double>();
        da.variable.rule.buckets = tables.back()->get<std::int64_t>();
        break;
      }
      case axis_kind::integer:
        da.integer.rule = make_integer_rule(a);
        break;
    }
  }

  const std::int64_t slots = job.cells + 3;
  device_buffer counts(static_cast<std::size_t>(slots) * sizeof(unsigned long long));
  TALLY_CUDA_CHECK(cudaMemset(counts.get<void>(), 0, static_cast<std::size_t>(slots) * sizeof(unsigned long long)));

  const policy& p = job.plan;
  const bool shared = p.chosen == strategy::shared;
  const std::size_t shared_bytes = shared ? static_cast<std::size_t>(slots) * sizeof(unsigned int) : 0;
  if (shared)
    TALLY_CUDA_CHECK(cudaFuncSetAttribute(histogram_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(shared_bytes)));
  // A shared-memory counter sees at most its block's samples: launch in pieces of 2^20 samples
  // per thread, so that no block passes 2^28 and no 32-bit counter can wrap.
  const std::int64_t piece = p.grid_blocks * p.block_threads * (std::int64_t{1} << 20);
  for (std::int64_t begin = 0; begin < job.n; begin += piece) {
    device_axes shifted = axes;
    for (int d = 0; d < axes.count; ++d) shifted.axis[d].data += begin * axes.axis[d].stride_bytes;
    const std::int64_t count = std::min(piece, job.n - begin);
    const auto grid = static_cast<unsigned>(p.grid_blocks);
    const auto block = static_cast<unsigned>(p.block_threads);
    if (shared)
      histogram_shared_kernel<<<grid, block, shared_bytes>>>(shifted, count, job.cells,
                                                             counts.get<unsigned long long>());
    else if (p.chosen == strategy::warp_aggregated)
      histogram_global_atomic_kernel<true><<<grid, block>>>(shifted, count, job.cells,
                                                            counts.get<unsigned long long>());
    else
      histogram_global_atomic_kernel<false><<<grid, block>>>(shifted, count, job.cells,
                                                             counts.get<unsigned long long>());
    TALLY_CUDA_CHECK(cudaGetLastError());
  }
  std::vector<std::uint64_t> host(static_cast<std::size_t>(slots));
  TALLY_CUDA_CHECK(cudaMemcpy(host.data(), counts.get<void>(), host.size() * sizeof(std::uint64_t),
                              cudaMemcpyDeviceToHost));
  const flow_counts dropped{host[static_cast<std::size_t>(job.cells)], host[static_cast<std::size_t>(job.cells) + 1],
                            host[static_cast<std::size_t>(job.cells) + 2]};
  host.resize(static_cast<std::size_t>(job.cells));
  add_counts(job, host);
  if (job.flow) {
    job.flow->underflow += dropped.underflow;
    job.flow->overflow += dropped.overflow;
    job.flow->nan += dropped.nan;
  }
}

}  // namespace

const backend_ops& cuda_backend() {
  static const backend_ops ops{backend::cuda, &cuda_usable, &cuda_owns, &cuda_describe, &cuda_fill};
  return ops;
}

}  // namespace tally::detail

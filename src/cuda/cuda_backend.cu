// The CUDA backend: device discovery, and fills that run the planner's strategy. The host side
// sets up the rules and their tables, launches the kernels (kernels.hpp) and adds the device's
// counts or sums into the histogram's storage.
#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/exact_sum.hpp"
#include "cuda/fill.hpp"
#include "tally/device.hpp"

namespace tally::detail {
namespace {

using cuda::device_guard;
using cuda::device_of;

/// Memory from one of CUDA's allocators: device memory (copies of host samples, the scratch),
/// or page-locked host memory, into which the device's results copy back at the link's full
/// speed (a pageable destination is staged through the driver's own buffer).
enum class memory_kind { device, pinned_host };
template <memory_kind Kind> class cuda_memory {
 public:
  explicit cuda_memory(std::size_t bytes) {
    if (!bytes) return;
    if constexpr (Kind == memory_kind::device) TALLY_CUDA_CHECK(cudaMalloc(&p_, bytes));
    else TALLY_CUDA_CHECK(cudaMallocHost(&p_, bytes));
  }
  ~cuda_memory() {
    if constexpr (Kind == memory_kind::device) cudaFree(p_);
    else cudaFreeHost(p_);
  }
  cuda_memory(const cuda_memory&) = delete;
  cuda_memory& operator=(const cuda_memory&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
};
using device_buffer = cuda_memory<memory_kind::device>;
using pinned_buffer = cuda_memory<memory_kind::pinned_host>;

/// A buffer that grows to the largest size asked for and is kept.
template <class Buffer> class growing {
 public:
  char* reserve(std::size_t bytes) {
    if (bytes > capacity_) {
      buffer_.reset();
      buffer_ = std::make_unique<Buffer>(bytes);
      capacity_ = bytes;
    }
    return buffer_ ? buffer_->get() : nullptr;
  }

 private:
  std::unique_ptr<Buffer> buffer_;
  std::size_t capacity_ = 0;
};

/// Per-device scratch kept between fills: device memory (counters, tables, partial sums) and
/// the host memory the results come back to, so that a fill allocates nothing once it has run
/// at its size. Fills on one device take turns through `mutex`.
struct scratch {
  std::mutex mutex;
  growing<device_buffer> device;
  growing<pinned_buffer> host;
};

scratch& scratch_of(int device) {
  static std::mutex table_mutex;
  static std::vector<std::unique_ptr<scratch>> table;
  std::lock_guard<std::mutex> lock(table_mutex);
  if (table.size() <= static_cast<std::size_t>(device)) table.resize(static_cast<std::size_t>(device) + 1);
  auto& s = table[static_cast<std::size_t>(device)];
  if (!s) s = std::make_unique<scratch>();
  return *s;
}

/// Carves aligned pieces out of one allocation.
class carve {
 public:
  template <class T> std::size_t add(std::int64_t count) {
    const std::size_t at = (size_ + 255) / 256 * 256;
    size_ = at + static_cast<std::size_t>(count) * sizeof(T);
    return at;
  }
  std::size_t size() const { return size_; }

 private:
  std::size_t size_ = 0;
};

bool cuda_owns(const void* p) { return device_of(p) >= 0; }

/// The current device's figures the planner takes, asked once per device (every fill plans).
void cuda_describe(plan_request& r) {
  struct figures {
    int sms = 0, optin = 0, per_sm = 0, clusters = 0;
  };
  static std::mutex mutex;
  static std::map<int, figures> known;
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  const figures f = cuda::remembered(known, mutex, device, [&] {
    figures made;
    TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&made.sms, cudaDevAttrMultiProcessorCount, device));
    TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&made.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&made.per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&made.clusters, cudaDevAttrClusterLaunch, device));
    return made;
  });
  r.device_sms = f.sms;
  r.device_shared_bytes = f.optin;
  r.device_shared_per_sm = f.per_sm;
  r.device_clusters = f.clusters != 0;
}

/// A column in device memory: the caller's (`device`, from device_of, is >= 0), or a copy of
/// the host span it covers. The copy keeps the address modulo 16, so that the kernels see the
/// caller's alignment.
struct device_column {
  std::unique_ptr<device_buffer> copy;
  const char* data = nullptr;
};

device_column to_device(const view& v, int device) {
  device_column c;
  if (device >= 0) {
    c.data = static_cast<const char*>(v.data);
    return c;
  }
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(v.data) % 16;
  const std::size_t bytes = static_cast<std::size_t>((v.size - 1) * v.stride + 1) * size_of(v.type);
  c.copy = std::make_unique<device_buffer>(misalignment + bytes);
  TALLY_CUDA_CHECK(cudaMemcpy(c.copy->get() + misalignment, v.data, bytes, cudaMemcpyHostToDevice));
  c.data = c.copy->get() + misalignment;
  return c;
}

/// Copies `words` into the device's `tables` through `staging` (pinned host memory that stays
/// untouched until the stream has run): no wait for the device.
void upload(const std::vector<std::uint64_t>& words, char* staging, std::uint64_t* tables) {
  if (words.empty()) return;
  const std::size_t bytes = words.size() * sizeof(std::uint64_t);
  std::memcpy(staging, words.data(), bytes);
  TALLY_CUDA_CHECK(cudaMemcpyAsync(tables, staging, bytes, cudaMemcpyHostToDevice, nullptr));
}

/// Adds the device's three flow counters (underflow, overflow, nan) to the job's.
void add_flow(const fill_job& job, const std::uint64_t* dropped) {
  if (!job.flow) return;
  job.flow->underflow += dropped[0];
  job.flow->overflow += dropped[1];
  job.flow->nan += dropped[2];
}

/// Adds a fill's result, back in host memory, to the job's storage: `cells` holds each cell's
/// wide words and flags, f64 sum or u64 count (as the job's storage is exact, sums or counts), and
/// `dropped` the three flow counters (read only where the job counts flow).
void add_result(const fill_job& job, const char* cells, const std::uint64_t* dropped) {
  const auto n = static_cast<std::size_t>(job.cells);
  if (job.exact) {
    const auto* added = reinterpret_cast<const std::uint64_t*>(cells);
    for (std::size_t c = 0; c < n; ++c)
      add_wide_cell(job.exact + c * kWideCellWords, added + c * kWideCellWords, plain_fetch_add{});
  } else if (job.sums) {
    const auto* added = reinterpret_cast<const double*>(cells);
    for (std::size_t c = 0; c < n; ++c) job.sums[c] += added[c];
  } else {
    add_counts(job, reinterpret_cast<const std::uint64_t*>(cells));
  }
  add_flow(job, dropped);
}

/// The synchronous fill: the samples on the device (the caller's or a copy), the fill enqueued
/// into the scratch (destination, tables, temporary memory), and the result added on the host
/// (with the overflow check of 32-bit counts).
void cuda_fill(const fill_job& job) {
  const int first_device = device_of(job.columns[0].data);
  const device_guard guard(first_device);
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  scratch& s = scratch_of(device);
  std::lock_guard<std::mutex> lock(s.mutex);

  cuda::device_rules r(*job.axes);
  std::vector<device_column> columns;
  std::vector<const char*> data;
  for (std::size_t d = 0; d < job.columns.size(); ++d) {
    const view& v = job.columns[d];
    columns.push_back(to_device(v, d == 0 ? first_device : device_of(v.data)));
    data.push_back(columns.back().data);
  }
  const device_column weights = job.weights ? to_device(*job.weights, device_of(job.weights->data)) : device_column{};

  // Scratch: the destination (counts with their 3 flow slots, or sums and 3 flow counters),
  // the tables followed by a 1.0 (the weight of unweighted fills of sums), temporary memory.
  // Exact sums (options::exact_sums) come back as each cell's wide words and flags instead.
  const bool exact = job.exact != nullptr;
  const bool sums = job.sums != nullptr || exact;
  const auto cells = static_cast<std::size_t>(job.cells);
  const std::vector<std::uint64_t> words = r.words();
  carve layout;
  const std::size_t counts_at = layout.add<unsigned long long>(sums ? 0 : job.cells + 3);
  const std::size_t sums_at = layout.add<double>(sums && !exact ? job.cells : 0);
  const std::size_t wide_at = layout.add<std::uint64_t>(exact ? job.cells * kWideCellWords : 0);
  const std::size_t flow_at = layout.add<unsigned long long>(3);
  const std::size_t tables_at = layout.add<std::uint64_t>(static_cast<std::int64_t>(words.size()));
  const std::size_t temp_at =
      layout.add<char>(static_cast<std::int64_t>(sums ? cuda::sums_temp_bytes(job.plan, job.cells, exact) : cuda::counts_temp_bytes(job.plan)));
  // Pinned host memory laid out as the scratch up to its temporary memory: the tables go up from
  // it and the results come back into it, with one wait for the device, at the end.
  char* base = s.device.reserve(layout.size());
  char* host = s.host.reserve(temp_at);
  TALLY_CUDA_CHECK(cudaMemsetAsync(base, 0, tables_at, nullptr));
  auto* tables = reinterpret_cast<std::uint64_t*>(base + tables_at);
  upload(words, host + tables_at, tables);
  r.point_at(tables);

  cuda::fill_input in = r.input(job.columns, data, job.weights, weights.data, tables);
  in.axes.flow_bins = job.plan.flow_bins;
  in.cells = job.cells;
  in.plan = job.plan;

  if (sums)
    cuda::enqueue_sums(in, reinterpret_cast<double*>(base + sums_at), reinterpret_cast<unsigned long long*>(base + flow_at),
                       base + temp_at, nullptr, exact ? reinterpret_cast<std::uint64_t*>(base + wide_at) : nullptr);
  else
    cuda::enqueue_counts(in, reinterpret_cast<unsigned long long*>(base + counts_at), base + temp_at, nullptr);
  TALLY_CUDA_CHECK(cudaMemcpyAsync(host, base, tables_at, cudaMemcpyDeviceToHost, nullptr));
  TALLY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  const std::size_t result_at = exact ? wide_at : sums ? sums_at : counts_at;
  const std::size_t dropped_at = sums ? flow_at : counts_at + cells * sizeof(std::uint64_t);
  add_result(job, host + result_at, reinterpret_cast<const std::uint64_t*>(host + dropped_at));
}

/// Interleaved 8-bit channels in one pass, where the planner chooses it: the samples once on the
/// device, every channel's slots and tables in the scratch, the counts added on the host after
/// every channel's overflow check.
bool cuda_fill_channels(const channels_job& job) {
  const view& v = job.samples;
  for (const auto& j : job.per_channel)
    if (j.sums || j.exact) return false;
  const fill_job& first = job.per_channel[0];
  const int first_device = device_of(v.data);
  const device_guard guard(first_device);
  const int counted = static_cast<int>(job.per_channel.size());
  cuda::channels_input in = cuda::plan_channels((*first.axes)[0], v, job.channels, counted);
  if (!in.plan.value_table) return false;

  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  scratch& s = scratch_of(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  const device_column samples = to_device(v, first_device);

  std::vector<cuda::device_rules> rules;
  std::vector<std::uint64_t> words;
  std::vector<std::size_t> table_at, slots_at;
  carve layout;
  for (const auto& j : job.per_channel) {
    rules.emplace_back(*j.axes);
    table_at.push_back(words.size());
    words.insert(words.end(), rules.back().tables.begin(), rules.back().tables.end());
    slots_at.push_back(layout.add<unsigned long long>(j.cells + 3));
  }
  const std::size_t temp_at = layout.add<char>(static_cast<std::int64_t>(cuda::channels_temp_bytes(counted)));
  const std::size_t tables_at = layout.add<std::uint64_t>(static_cast<std::int64_t>(words.size()));
  // Pinned host memory laid out as the scratch, as in cuda_fill. One memset clears the slots and
  // the value counts after them.
  char* base = s.device.reserve(layout.size());
  char* host = s.host.reserve(layout.size());
  TALLY_CUDA_CHECK(cudaMemsetAsync(base, 0, tables_at, nullptr));
  auto* tables = reinterpret_cast<std::uint64_t*>(base + tables_at);
  upload(words, host + tables_at, tables);

  in.samples.data = samples.data;
  for (std::size_t c = 0; c < job.per_channel.size(); ++c) {
    rules[c].point_at(tables + table_at[c]);
    in.outputs[c].axis = rules[c].axes.axis[0];
    in.outputs[c].cells = job.per_channel[c].cells;
    in.outputs[c].slots = reinterpret_cast<unsigned long long*>(base + slots_at[c]);
  }
  cuda::enqueue_channels(in, base + temp_at, nullptr);

  // Every channel's slots back into pinned memory.
  TALLY_CUDA_CHECK(cudaMemcpyAsync(host, base, temp_at, cudaMemcpyDeviceToHost, nullptr));
  TALLY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  const auto added = [&](std::size_t c) { return reinterpret_cast<const std::uint64_t*>(host + slots_at[c]); };
  for (std::size_t c = 0; c < job.per_channel.size(); ++c) check_counts(job.per_channel[c], added(c));
  for (std::size_t c = 0; c < job.per_channel.size(); ++c) {
    const fill_job& j = job.per_channel[c];
    add_counts(j, added(c));
    add_flow(j, added(c) + j.cells);
  }
  return true;
}

/// The device a fill's samples and weights are all in, or -1 (host memory, or several devices).
int device_of_job(const fill_job& job) {
  const int device = device_of(job.columns[0].data);
  for (const view& v : job.columns)
    if (device_of(v.data) != device) return -1;
  if (job.weights && device_of(job.weights->data) != device) return -1;
  return device;
}

/// The CUDA backend's pending copy (core/backend.hpp): a device_histogram of the histogram's axes
/// and options, with u64 counts whatever the storage's width, filled on the legacy default
/// stream as the synchronous fills are. Its f64 sums add each fill's sums into the cells in fill
/// order, as the host does.
class device_pending final : public pending_cells {
 public:
  device_pending(const std::vector<axis>& axes, const options& opts) : h_(axes, opts) {}

  bool fill(const fill_job& job) override {
    if (device_of_job(job) != h_.device()) return false;
    if (job.weights) h_.fill(job.columns, *job.weights, nullptr);
    else h_.fill(job.columns, nullptr);
    const device_guard guard(h_.device());
    TALLY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    return true;
  }

  void settle(const fill_job& into) override {
    const device_guard guard(h_.device());
    scratch& s = scratch_of(h_.device());
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto cells = static_cast<std::size_t>(into.cells);
    const std::size_t cell_bytes = cells * (into.exact ? kWideCellWords * sizeof(std::uint64_t) : sizeof(std::uint64_t));
    const void* from = into.exact ? static_cast<const void*>(device_cells::wide(h_))
                       : into.sums ? static_cast<const void*>(h_.sums_data())
                                   : static_cast<const void*>(h_.counts_data());
    char* host = s.host.reserve(cell_bytes + 3 * sizeof(std::uint64_t));
    TALLY_CUDA_CHECK(cudaMemcpyAsync(host, from, cell_bytes, cudaMemcpyDeviceToHost, nullptr));
    if (into.flow)
      TALLY_CUDA_CHECK(cudaMemcpyAsync(host + cell_bytes, h_.flow_data(), 3 * sizeof(std::uint64_t),
                                       cudaMemcpyDeviceToHost, nullptr));
    TALLY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    // What can throw comes before any change: the counts' check, then the copy's reset; the
    // additions that follow cannot fail.
    if (!into.sums && !into.exact) check_counts(into, reinterpret_cast<const std::uint64_t*>(host));
    h_.reset(nullptr);
    add_result(into, host, reinterpret_cast<const std::uint64_t*>(host + cell_bytes));
  }

 private:
  device_histogram h_;
};

/// A pending copy on the device of the job's samples; none where they are in host memory (or on
/// several devices), or where it cannot be made (no memory for it, say): the fill then runs as
/// before, and reports any error of the device itself.
std::unique_ptr<pending_cells> cuda_pending(const fill_job& job, const options& opts) {
  const int device = device_of_job(job);
  if (device < 0 || opts.flow_bins) return nullptr;  // device_histogram keeps no flow bins
  const device_guard guard(device);
  options o = opts;
  o.backend = backend::cuda;
  o.counts = count_type::u64;
  try {
    return std::make_unique<device_pending>(*job.axes, o);
  } catch (const error&) {
    return nullptr;
  }
}

}  // namespace

namespace cuda {

/// Asked of the driver once per process: every device_histogram's construction and every
/// synchronous fill asks, and cudaGetDeviceProperties (every attribute of every device) is slow
/// beside a small call.
bool usable(std::string& detail) {
  struct probe {
    bool usable = false;
    std::string detail;
  };
  static const probe found = [] {
    probe p;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      p.detail = status == cudaSuccess ? "no CUDA device found"
                                       : std::string("no CUDA device: ") + cudaGetErrorString(status);
      cudaGetLastError();  // leave no error behind for later calls
      return p;
    }
    p.usable = true;
    for (int d = 0; d < count; ++d) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
      p.detail += (d ? "; " : "") + std::to_string(d) + ": " + prop.name + " (sm_" +
                  std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                  std::to_string(prop.multiProcessorCount) + " SMs, " +
                  std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
    }
    return p;
  }();
  detail = found.detail;
  return found.usable;
}

}  // namespace cuda

const backend_ops& cuda_backend() {
  static const backend_ops ops{backend::cuda, &cuda::usable, &cuda_owns, &cuda_describe, &cuda_fill,
                               &cuda_fill_channels, &cuda_pending};
  return ops;
}

}  // namespace tally::detail

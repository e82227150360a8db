// The CUDA backend: device discovery, and fills that run the planner's strategy. The host side
// sets up the rules and their tables, launches the kernels (kernels.hpp) and adds the device's
// counts or sums into the histogram's storage.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/rules.hpp"
#include "cuda/kernels.hpp"

namespace tally::detail {
namespace {

using cuda::device_axes;

/// Device memory owned by one fill (copies of host samples).
class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) {
    if (bytes) TALLY_CUDA_CHECK(cudaMalloc(&p_, bytes));
  }
  ~device_buffer() { cudaFree(p_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
};

/// Per-device scratch that grows and is kept between fills (counters, tables, partial sums),
/// so that a fill allocates nothing once it has run at its size. Fills on one device take
/// turns through `mutex`.
struct scratch {
  std::mutex mutex;
  std::unique_ptr<device_buffer> buffer;
  std::size_t capacity = 0;

  char* reserve(std::size_t bytes) {
    if (bytes > capacity) {
      buffer.reset();
      buffer = std::make_unique<device_buffer>(bytes);
      capacity = bytes;
    }
    return buffer ? buffer->get() : nullptr;
  }
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

/// The device holding p, or -1 for host memory.
int device_of(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  const bool on_device = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  return on_device ? attributes.device : -1;
}

bool cuda_owns(const void* p) { return device_of(p) >= 0; }

void cuda_describe(plan_request& r) {
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&r.device_sms, cudaDevAttrMultiProcessorCount, device));
  int optin = 0, per_sm = 0;
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  r.device_shared_bytes = optin;
  r.device_shared_per_sm = per_sm;
}

/// Makes the device that holds the samples current for the fill, and restores the caller's.
class device_guard {
 public:
  explicit device_guard(int device) {
    TALLY_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device >= 0 && device != previous_) TALLY_CUDA_CHECK(cudaSetDevice(device));
  }
  ~device_guard() { cudaSetDevice(previous_); }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = 0;
};

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

/// The host side of one fill: device columns, rules with their tables, scratch layout.
struct prepared {
  std::vector<device_column> columns;
  device_axes axes{};
  std::vector<std::uint64_t> tables;       // all axes' tables, uploaded by upload_tables
  std::vector<std::size_t> table_offsets;  // per table, in words
};

std::size_t append(std::vector<std::uint64_t>& words, const void* data, std::size_t count) {
  const std::size_t at = words.size();
  words.resize(at + count);
  std::memcpy(words.data() + at, data, count * sizeof(std::uint64_t));
  return at;
}

/// Columns, rules and tables; table pointers are set once the scratch address is known.
/// `first_device` is device_of(column 0), already asked.
prepared prepare(const fill_job& job, int first_device) {
  prepared p;
  p.axes.count = static_cast<int>(job.axes->size());
  for (int d = 0; d < p.axes.count; ++d) {
    const axis& a = (*job.axes)[static_cast<std::size_t>(d)];
    const view& v = job.columns[static_cast<std::size_t>(d)];
    p.columns.push_back(to_device(v, d == 0 ? first_device : device_of(v.data)));
    cuda::device_axis& da = p.axes.axis[d];
    da.kind = a.kind();
    da.type = v.type;
    da.data = p.columns.back().data;
    da.stride_bytes = v.stride * static_cast<std::int64_t>(size_of(v.type));
    da.bins = a.bins();
    switch (a.kind()) {
      case axis_kind::regular: {
        const auto edges = a.edges();
        da.regular.rule = make_regular_rule(a);
        p.table_offsets.push_back(append(p.tables, edges.data(), edges.size()));
        break;
      }
      case axis_kind::variable: {
        const std::vector<std::int64_t> buckets = variable_buckets(a);
        da.variable.rule = make_variable_rule(a, &buckets);  // host pointers until upload_tables
        p.table_offsets.push_back(append(p.tables, a.variable_edges().data(), a.variable_edges().size()));
        p.table_offsets.push_back(append(p.tables, buckets.data(), buckets.size()));
        break;
      }
      case axis_kind::integer:
        da.integer.rule = make_integer_rule(a);
        break;
    }
  }
  return p;
}

/// Copies the tables to `device_tables` (scratch) and points the rules at them there.
void upload_tables(prepared& p, std::uint64_t* device_tables) {
  if (!p.tables.empty())
    TALLY_CUDA_CHECK(cudaMemcpy(device_tables, p.tables.data(), p.tables.size() * sizeof(std::uint64_t),
                                cudaMemcpyHostToDevice));
  std::size_t t = 0;
  for (int d = 0; d < p.axes.count; ++d) {
    cuda::device_axis& da = p.axes.axis[d];
    switch (da.kind) {
      case axis_kind::regular:
        da.regular.rule.table = reinterpret_cast<const double*>(device_tables + p.table_offsets[t++]);
        break;
      case axis_kind::variable:
        da.variable.rule.edges = reinterpret_cast<const double*>(device_tables + p.table_offsets[t++]);
        da.variable.rule.buckets = reinterpret_cast<const std::int64_t*>(device_tables + p.table_offsets[t++]);
        break;
      case axis_kind::integer:
        break;
    }
  }
}

/// Adds the device's three flow counters (underflow, overflow, nan) to the job's.
void add_flow(const fill_job& job, const unsigned long long* dropped) {
  if (!job.flow) return;
  job.flow->underflow += dropped[0];
  job.flow->overflow += dropped[1];
  job.flow->nan += dropped[2];
}

void count_typed(dtype sample, const cuda::device_axis& axis, const cuda::typed_count_args& args,
                 const cuda::launch_shape& shape) {
  switch (sample) {
    case dtype::u8: case dtype::i8: case dtype::u16: case dtype::i16:
      return cuda::count_typed_narrow(sample, axis, args, shape);
    case dtype::u32: case dtype::i32: case dtype::u64: case dtype::i64:
      return cuda::count_typed_wide(sample, axis, args, shape);
    default:
      return cuda::count_typed_floats(sample, axis, args, shape);
  }
}

/// Launches the count strategy over samples [0, n) into `slots`, in pieces small enough that no
/// block's 32-bit shared counter can wrap (2^20 samples per thread and piece).
void launch_counts(const fill_job& job, const prepared& p, unsigned long long* slots, unsigned long long* raw) {
  const policy& plan = job.plan;
  cuda::launch_shape shape;
  shape.grid = static_cast<unsigned>(plan.grid_blocks);
  shape.block = static_cast<unsigned>(plan.block_threads);
  shape.shared_bytes = static_cast<std::size_t>(plan.shared_bytes);
  int shift = 0;
  while ((1 << shift) < plan.replicas) ++shift;
  const dtype sample = p.axes.axis[0].type;
  const std::int64_t piece = plan.grid_blocks * plan.block_threads * (std::int64_t{1} << 20);
  for (std::int64_t begin = 0; begin < job.n; begin += piece) {
    const std::int64_t count = std::min(piece, job.n - begin);
    if (plan.vector_bytes) {
      cuda::typed_count_args a;
      a.data = p.axes.axis[0].data + begin * p.axes.axis[0].stride_bytes;
      a.n = count;
      a.replica_shift = shift;
      a.to_global = plan.chosen == strategy::global_atomic_vec;
      a.stage_tables = plan.tables_in_shared;
      if (plan.value_table) {
        a.cells = 256;
        a.slots = raw;
        cuda::count_values(sample, a, shape);
      } else {
        a.cells = job.cells;
        a.slots = slots;
        count_typed(sample, p.axes.axis[0], a, shape);
      }
    } else {
      device_axes shifted = p.axes;
      for (int d = 0; d < shifted.count; ++d) shifted.axis[d].data += begin * shifted.axis[d].stride_bytes;
      cuda::count_generic(shifted, count, job.cells, plan.chosen, shift, slots, shape);
    }
  }
  if (plan.value_table) cuda::fold_values(sample, p.axes.axis[0], raw, job.cells, slots, shape.stream);
}

void fill_counts(const fill_job& job, prepared& p, scratch& s) {
  carve layout;
  const std::size_t slots_at = layout.add<unsigned long long>(job.cells + 3);
  const std::size_t raw_at = layout.add<unsigned long long>(256 + 3);
  const std::size_t tables_at = layout.add<std::uint64_t>(static_cast<std::int64_t>(p.tables.size()));
  char* base = s.reserve(layout.size());
  auto* slots = reinterpret_cast<unsigned long long*>(base + slots_at);
  auto* raw = reinterpret_cast<unsigned long long*>(base + raw_at);
  TALLY_CUDA_CHECK(cudaMemset(base, 0, tables_at));
  upload_tables(p, reinterpret_cast<std::uint64_t*>(base + tables_at));
  launch_counts(job, p, slots, raw);

  std::vector<std::uint64_t> host(static_cast<std::size_t>(job.cells) + 3);
  TALLY_CUDA_CHECK(cudaMemcpy(host.data(), slots, host.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  const auto cells = static_cast<std::size_t>(job.cells);
  const unsigned long long dropped[3] = {host[cells], host[cells + 1], host[cells + 2]};
  host.resize(cells);
  add_counts(job, host);
  add_flow(job, dropped);
}

/// Weighted sums, window by window; each window's totals are added to the sums in cell order.
void fill_sums(const fill_job& job, prepared& p, scratch& s) {
  const policy& plan = job.plan;
  // An unweighted fill of a weighted histogram adds 1 per sample: one 1.0 (in the scratch)
  // read at stride 0.
  const device_column weights = job.weights ? to_device(*job.weights, device_of(job.weights->data)) : device_column{};
  carve layout;
  const std::size_t flow_at = layout.add<unsigned long long>(3);
  const std::size_t one_at = layout.add<double>(1);
  const std::size_t tables_at = layout.add<std::uint64_t>(static_cast<std::int64_t>(p.tables.size()));
  const std::size_t partials_at = layout.add<double>(plan.grid_blocks * plan.window_cells);
  const std::size_t totals_at = layout.add<double>(plan.window_cells);
  char* base = s.reserve(layout.size());
  TALLY_CUDA_CHECK(cudaMemset(base + flow_at, 0, 3 * sizeof(unsigned long long)));
  if (!job.weights) {
    const double one = 1.0;
    TALLY_CUDA_CHECK(cudaMemcpy(base + one_at, &one, sizeof one, cudaMemcpyHostToDevice));
  }
  upload_tables(p, reinterpret_cast<std::uint64_t*>(base + tables_at));

  cuda::weighted_args a;
  a.axes = p.axes;
  a.weights = job.weights ? weights.data : base + one_at;
  a.weight_type = job.weights ? job.weights->type : dtype::f64;
  a.weight_stride_bytes = job.weights ? job.weights->stride * static_cast<std::int64_t>(size_of(a.weight_type)) : 0;
  a.n = job.n;
  a.cells = job.cells;
  a.partials = reinterpret_cast<double*>(base + partials_at);
  a.totals = reinterpret_cast<double*>(base + totals_at);
  a.flow = reinterpret_cast<unsigned long long*>(base + flow_at);
  cuda::launch_shape shape;
  shape.grid = static_cast<unsigned>(plan.grid_blocks);
  shape.block = static_cast<unsigned>(plan.block_threads);
  std::vector<double> totals(static_cast<std::size_t>(plan.window_cells));
  for (std::int64_t lo = 0; lo < job.cells; lo += plan.window_cells) {
    a.window_lo = lo;
    a.window = std::min(plan.window_cells, job.cells - lo);
    a.count_flow = lo == 0;
    shape.shared_bytes = static_cast<std::size_t>(plan.block_threads / 32 * a.window) * sizeof(double);
    cuda::sum_weighted(a, shape);
    TALLY_CUDA_CHECK(cudaMemcpy(totals.data(), a.totals, static_cast<std::size_t>(a.window) * sizeof(double),
                                cudaMemcpyDeviceToHost));
    for (std::int64_t c = 0; c < a.window; ++c) job.sums[lo + c] += totals[static_cast<std::size_t>(c)];
  }
  unsigned long long dropped[3];
  TALLY_CUDA_CHECK(cudaMemcpy(dropped, a.flow, sizeof dropped, cudaMemcpyDeviceToHost));
  add_flow(job, dropped);
}

void cuda_fill(const fill_job& job) {
  if (job.axes->size() > static_cast<std::size_t>(cuda::kMaxAxes))
    throw error("backend cuda: at most " + std::to_string(cuda::kMaxAxes) + " axes, got " +
                std::to_string(job.axes->size()));
  const int first_device = device_of(job.columns[0].data);
  const device_guard guard(first_device);
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  scratch& s = scratch_of(device);
  std::lock_guard<std::mutex> lock(s.mutex);
  prepared p = prepare(job, first_device);
  if (job.sums) fill_sums(job, p, s);
  else fill_counts(job, p, s);
}

}  // namespace

const backend_ops& cuda_backend() {
  static const backend_ops ops{backend::cuda, &cuda_usable, &cuda_owns, &cuda_describe, &cuda_fill};
  return ops;
}

}  // namespace tally::detail

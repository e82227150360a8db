// device_histogram: cells in device memory, fills enqueued on the caller's stream (fill.hpp's
// steps, as the synchronous backend uses them, without the copy back).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/exact_sum.hpp"
#include "cuda/fill.hpp"
#include "cuda/host_stream.hpp"
#include "tally/device.hpp"

namespace tally::detail::cuda {

cudaMemPool_t pool_of(int device) {
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;
  return remembered(pools, mutex, device, [&] {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    TALLY_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    std::uint64_t keep = ~std::uint64_t{0};
    const cudaError_t set = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (set != cudaSuccess) cudaMemPoolDestroy(pool);
    TALLY_CUDA_CHECK(set);
    return pool;
  });
}

}  // namespace tally::detail::cuda

namespace tally {
namespace {

using detail::cuda::device_guard;
using detail::cuda::device_of;

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

void* default_allocate(void*, std::size_t bytes, void* stream) {
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  void* p = nullptr;
  TALLY_CUDA_CHECK(cudaMallocFromPoolAsync(&p, bytes, detail::cuda::pool_of(device), as_stream(stream)));
  return p;
}

void default_deallocate(void*, void* p, std::size_t, void* stream) {
  TALLY_CUDA_CHECK(cudaFreeAsync(p, as_stream(stream)));
}

device_allocator resolved(device_allocator a) {
  if (!a.allocate != !a.deallocate)
    throw error("device_histogram: the allocator needs both allocate and deallocate, or neither");
  if (!a.allocate) return device_allocator{nullptr, &default_allocate, &default_deallocate};
  return a;
}

/// One allocation from the allocator, returned on the same stream at the end of the scope.
class stream_memory {
 public:
  stream_memory(const device_allocator& a, std::size_t bytes, void* stream) : a_(a), bytes_(bytes), stream_(stream) {
    if (bytes_) p_ = a_.allocate(a_.context, bytes_, stream_);
    if (bytes_ && !p_) throw error("device_histogram: the allocator returned null for " + std::to_string(bytes_) + " bytes");
  }
  ~stream_memory() {
    try {
      if (p_) a_.deallocate(a_.context, p_, bytes_, stream_);
    } catch (const error&) {
      // A destructor cannot throw; the CUDA error stays for the caller's next call to report.
    }
  }
  stream_memory(const stream_memory&) = delete;
  stream_memory& operator=(const stream_memory&) = delete;
  char* get() const { return static_cast<char*>(p_); }
  /// Hands the memory over to the caller (no release at the end of the scope).
  char* release() {
    char* p = get();
    p_ = nullptr;
    return p;
  }

 private:
  device_allocator a_;
  std::size_t bytes_;
  void* stream_;
  void* p_ = nullptr;
};

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// A device's copy of the tables of some axes (and the 1.0 after them), with rules pointed at
/// it. Kept for the process's lifetime: histograms made over the same axes again (Python's
/// one-shot calls make one a call) point their rules here instead of gathering and copying the
/// tables anew (about 10 ms and 8 MiB for 2^20 regular bins). Never freed, so no fill in flight
/// can outlive them; at most kKeptSets sets and kKeptBytes a device, beyond which histograms
/// upload tables of their own.
struct kept_tables {
  std::vector<axis> axes;
  detail::cuda::device_rules rules;
  const std::uint64_t* words = nullptr;
  std::size_t bytes = 0;
};
constexpr std::size_t kKeptSets = 64;
constexpr std::size_t kKeptBytes = std::size_t{64} << 20;

/// The kept tables of `axes` on the current device `device`, uploaded here on first use (on a
/// stream of tally's own, waited for: only this copy is waited for); null where the device's
/// share is full.
const kept_tables* tables_for(int device, const std::vector<axis>& axes) {
  static std::mutex mutex;
  static std::map<int, std::vector<std::unique_ptr<kept_tables>>> kept;
  std::lock_guard<std::mutex> lock(mutex);
  auto& list = kept[device];
  std::size_t used = 0;
  for (const auto& k : list) {
    if (k->axes == axes) return k.get();
    used += k->bytes;
  }
  if (list.size() >= kKeptSets) return nullptr;
  auto k = std::make_unique<kept_tables>(kept_tables{axes, detail::cuda::device_rules(axes), nullptr, 0});
  const std::vector<std::uint64_t> words = k->rules.words();
  k->bytes = words.size() * sizeof(std::uint64_t);
  if (used + k->bytes > kKeptBytes) return nullptr;
  void* memory = nullptr;
  TALLY_CUDA_CHECK(cudaMalloc(&memory, k->bytes));
  cudaStream_t upload = nullptr;
  TALLY_CUDA_CHECK(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking));
  const cudaError_t copied = cudaMemcpyAsync(memory, words.data(), k->bytes, cudaMemcpyHostToDevice, upload);
  const cudaError_t waited = cudaStreamSynchronize(upload);
  cudaStreamDestroy(upload);
  if (copied != cudaSuccess || waited != cudaSuccess) cudaFree(memory);
  TALLY_CUDA_CHECK(copied);
  TALLY_CUDA_CHECK(waited);
  k->words = static_cast<const std::uint64_t*>(memory);
  k->rules.point_at(k->words);
  k->rules.tables.clear();  // on the device now: a histogram copies the rules, not the host tables
  k->rules.tables.shrink_to_fit();
  list.push_back(std::move(k));
  return list.back().get();
}

}  // namespace

/// Device memory: the destination (cells + 3 u64 slots whose last three are the flow counters;
/// or cells f64 sums, with options::exact_sums the cells' wide words and flags, and 3 u64 flow
/// counters), then the tables and a 1.0 (the weight of an unweighted fill of sums). `words` is
/// the host source of the tables' copy, kept for the object's lifetime so that the asynchronous
/// copy never reads freed memory. Where integer
/// samples need no tables (device_rules::integers_need_no_tables), the memory holds only the 1.0, and
/// the first fill of float samples uploads the tables and a 1.0 to memory of their own.
struct device_histogram::state {
  int device = 0;
  device_allocator allocator;
  bool default_allocator = true;
  void* stream = nullptr;  // of the last call: the memory is freed in its order
  cudaEvent_t released = nullptr;  // release_on_default_stream: the work to wait for
  char* memory = nullptr;
  std::size_t bytes = 0;
  std::size_t wide_at = 0;  // options::exact_sums: cells x kWideCellWords words
  std::size_t flow_at = 0;
  std::size_t tables_at = 0;
  detail::cuda::device_rules rules;
  std::vector<std::uint64_t> words;
  const std::uint64_t* device_words = nullptr;  // the tables and the 1.0 the rules point at
  char* late_tables = nullptr;  // the tables uploaded by a later fill, and their size
  std::size_t late_bytes = 0;
  std::vector<std::uint64_t> late_words;
  std::unique_ptr<detail::cuda::host_staging> staging;  // of the streaming fills, made by the first

  explicit state(const std::vector<axis>& axes) : rules(axes, false) {}
  ~state() {
    if (!memory) return;
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    try {
      if (released) cudaStreamWaitEvent(nullptr, released, 0);
      allocator.deallocate(allocator.context, memory, bytes, released ? nullptr : stream);
      if (late_tables) allocator.deallocate(allocator.context, late_tables, late_bytes, released ? nullptr : stream);
    } catch (const error&) {
      // As in ~stream_memory: a destructor cannot throw.
    }
    if (released) cudaEventDestroy(released);
    cudaSetDevice(previous);
  }
  /// Every call names the stream the memory is then freed on.
  void use(void* s) {
    stream = s;
    if (released) cudaEventDestroy(released);
    released = nullptr;
  }
  /// Points the rules at the kept tables of the axes, where there are (tables_for).
  bool adopt_kept(const std::vector<axis>& axes) {
    if (!default_allocator) return false;  // a caller's allocator gives all of its memory
    const kept_tables* k = tables_for(device, axes);
    if (!k) return false;
    rules = k->rules;
    device_words = k->words;
    return true;
  }
  /// Points the rules at tables (kept ones, else gathered and uploaded on `s`) where the
  /// construction left them out.
  void need_tables(const std::vector<axis>& axes, void* s) {
    if (rules.has_tables || adopt_kept(axes)) return;
    rules.add_tables(axes);
    late_words = rules.words();
    late_bytes = late_words.size() * sizeof(std::uint64_t);
    stream_memory m(allocator, late_bytes, s);
    TALLY_CUDA_CHECK(cudaMemcpyAsync(m.get(), late_words.data(), late_bytes, cudaMemcpyHostToDevice, as_stream(s)));
    late_tables = m.release();
    device_words = reinterpret_cast<const std::uint64_t*>(late_tables);
    rules.point_at(device_words);
  }
  /// A streaming fill's rounds (host_stream.hpp) through a device ring from the allocator,
  /// allocated and freed in the order of `s`.
  void stream_rounds(const std::vector<detail::cuda::stream_part>& parts, std::int64_t total_rows,
                     const stream_options& o, void* s, const detail::cuda::produce_fn& produce,
                     const detail::cuda::consume_fn& consume) {
    const detail::cuda::stream_layout layout = detail::cuda::layout_for(parts, total_rows, o);
    if (!staging) staging = std::make_unique<detail::cuda::host_staging>();
    stream_memory ring(allocator, static_cast<std::size_t>(layout.slots) * layout.slot_bytes, s);
    detail::cuda::stream_rounds(*staging, layout, parts, ring.get(), as_stream(s), produce, consume);
  }
};

device_histogram::device_histogram(axis a, options opts, void* stream, device_allocator allocator)
    : device_histogram(std::vector<axis>{std::move(a)}, opts, stream, allocator) {}

device_histogram::device_histogram(std::vector<axis> axes, options opts, void* stream, device_allocator allocator)
    : axes_(std::move(axes)), opts_(opts) {
  cells_ = detail::cell_count(axes_);
  if (opts_.flow_bins) throw error("device_histogram: keeps no flow bins (options.flow_bins is for tally::histogram)");
  if (opts_.backend == backend::cpu)
    throw error("device_histogram: computes on the GPU; options.backend must be automatic or cuda");
  if (opts_.counts != count_type::u64)
    throw error("device_histogram: counts must be u64 (a 32-bit count could only be checked for overflow by "
                "reading it back; use tally::histogram for checked u32 counts)");
  if (opts_.strategy == strategy::cpu_private)
    throw error("device_histogram: strategy cpu_private is a CPU strategy");
  if (opts_.exact_sums && !opts_.weighted)
    throw error("device_histogram: exact_sums keeps sums of weights; construct with options.weighted = true");
  std::string detail;
  if (!detail::cuda::usable(detail)) throw error("device_histogram: " + detail);
  TALLY_CUDA_CHECK(cudaGetDevice(&device_));

  auto s = std::make_unique<state>(axes_);
  s->device = device_;
  s->allocator = resolved(allocator);
  s->default_allocator = allocator.allocate == nullptr;
  s->stream = stream;
  // Tables now unless integer samples need none; kept ones where there are (only the 1.0 is
  // then copied to the histogram's own memory).
  const bool deferred = s->rules.integers_need_no_tables();
  const bool kept = !deferred && s->adopt_kept(axes_);
  if (!deferred && !kept) s->rules.add_tables(axes_);
  s->words = s->rules.words();
  const auto cells = static_cast<std::size_t>(cells_);
  s->wide_at = aligned(cells * sizeof(double));
  const std::size_t wide_bytes = opts_.exact_sums ? aligned(cells * detail::kWideCellWords * sizeof(std::uint64_t)) : 0;
  s->flow_at = opts_.weighted ? s->wide_at + wide_bytes : cells * sizeof(std::uint64_t);
  s->tables_at = aligned(s->flow_at + 3 * sizeof(std::uint64_t));
  s->bytes = s->tables_at + s->words.size() * sizeof(std::uint64_t);
  stream_memory memory(s->allocator, s->bytes, stream);
  TALLY_CUDA_CHECK(cudaMemsetAsync(memory.get(), 0, s->tables_at, as_stream(stream)));
  auto* tables = reinterpret_cast<std::uint64_t*>(memory.get() + s->tables_at);
  // Kept tables end with a 1.0 of their own, and only fills of sums read the 1.0: a histogram
  // of kept tables, or an unweighted one without tables, copies nothing (one operation fewer on
  // the stream of every small one-shot call).
  if (!kept && (opts_.weighted || !deferred))
    TALLY_CUDA_CHECK(cudaMemcpyAsync(tables, s->words.data(), s->words.size() * sizeof(std::uint64_t),
                                     cudaMemcpyHostToDevice, as_stream(stream)));
  if (!kept) {
    s->rules.point_at(tables);
    s->device_words = tables;
  }
  s->memory = memory.release();
  state_ = std::move(s);
}

device_histogram::~device_histogram() = default;
device_histogram::device_histogram(device_histogram&&) noexcept = default;
device_histogram& device_histogram::operator=(device_histogram&&) noexcept = default;

namespace {

void require_state(const void* s) {
  if (!s) throw error("device_histogram: used after it was moved from");
}

/// The device a fill's view lives on must be the histogram's.
/// `column`: the column's index, or -1 for the weights (the message is built only on error).
void require_on(int device, const view& v, int column, const char* call = "device_histogram::fill") {
  if (v.size == 0) return;
  const int at = device_of(v.data);
  if (at == device) return;
  const std::string what = column < 0 ? "the weights" : "column " + std::to_string(column);
  throw error(std::string(call) + ": " + what + (at < 0 ? " is in host memory" : " is on device " + std::to_string(at)) +
              "; this histogram is on device " + std::to_string(device) +
              (at < 0 ? " (use tally::histogram for host samples)" : ""));
}

}  // namespace

void device_histogram::fill(const view& samples, void* stream) { fill_impl({samples}, nullptr, stream); }
void device_histogram::fill(const view& samples, const view& weights, void* stream) {
  fill_impl({samples}, &weights, stream);
}
void device_histogram::fill(const std::vector<view>& columns, void* stream) { fill_impl(columns, nullptr, stream); }
void device_histogram::fill(const std::vector<view>& columns, const view& weights, void* stream) {
  fill_impl(columns, &weights, stream);
}

void device_histogram::fill_impl(const std::vector<view>& columns, const view* weights, void* stream) {
  require_state(state_.get());
  detail::check_fill(axes_, opts_.weighted, columns, weights);
  for (std::size_t d = 0; d < columns.size(); ++d) require_on(device_, columns[d], static_cast<int>(d));
  if (weights) require_on(device_, *weights, -1);
  const std::int64_t n = columns[0].size;
  state_->use(stream);
  if (n == 0) return;
  const device_guard guard(device_);

  plan_request r = detail::make_request(axes_, opts_, backend::cuda, columns[0].type, n, &columns[0], weights);
  for (const auto& c : columns)
    if (is_floating(c.type)) state_->need_tables(axes_, stream);
  std::vector<const char*> data;
  for (const auto& c : columns) data.push_back(static_cast<const char*>(c.data));
  detail::cuda::fill_input in = state_->rules.input(
      columns, data, weights, weights ? static_cast<const char*>(weights->data) : nullptr, state_->device_words);
  in.cells = cells_;
  in.plan = plan(r);

  auto* flow = reinterpret_cast<unsigned long long*>(state_->memory + state_->flow_at);
  if (opts_.weighted) {
    std::uint64_t* wide = detail::device_cells::wide(*this);
    stream_memory temp(state_->allocator, detail::cuda::sums_temp_bytes(in.plan, cells_, wide != nullptr), stream);
    auto* sums = reinterpret_cast<double*>(state_->memory);
    detail::cuda::enqueue_sums(in, sums, flow, temp.get(), as_stream(stream), wide);
    if (wide) detail::cuda::round_wide(wide, cells_, sums, as_stream(stream));
  } else {
    stream_memory temp(state_->allocator, detail::cuda::counts_temp_bytes(in.plan), stream);
    detail::cuda::enqueue_counts(in, reinterpret_cast<unsigned long long*>(state_->memory), temp.get(),
                                 as_stream(stream));
  }
}

void device_histogram::fill_from_host(const view& samples, void* stream, stream_options o) {
  from_host_impl({samples}, nullptr, stream, o);
}
void device_histogram::fill_from_host(const view& samples, const view& weights, void* stream, stream_options o) {
  from_host_impl({samples}, &weights, stream, o);
}
void device_histogram::fill_from_host(const std::vector<view>& columns, void* stream, stream_options o) {
  from_host_impl(columns, nullptr, stream, o);
}
void device_histogram::fill_from_host(const std::vector<view>& columns, const view& weights, void* stream,
                                      stream_options o) {
  from_host_impl(columns, &weights, stream, o);
}

namespace {

/// A streaming fill's host data must not be in device memory (fill() takes that).
void require_host(const view& v, int column) {
  if (v.size == 0) return;
  const int at = device_of(v.data);
  if (at < 0) return;
  throw error("device_histogram::fill_from_host: " + (column < 0 ? std::string("the weights are") : "column " + std::to_string(column) + " is") +
              " in memory of device " + std::to_string(at) + "; fill_from_host takes host memory (use fill)");
}

/// The columns of a round's rows in the device ring: `dims` values of `type` a row, row-major.
std::vector<view> round_columns(const std::vector<const char*>& device, std::int64_t rows, dtype type, int dims) {
  return columns_of(view{device[0], rows * dims, 1, type}, dims);
}

}  // namespace

void device_histogram::from_host_impl(const std::vector<view>& columns, const view* weights, void* stream,
                                      const stream_options& o) {
  require_state(state_.get());
  detail::check_fill(axes_, opts_.weighted, columns, weights);
  for (std::size_t d = 0; d < columns.size(); ++d) require_host(columns[d], static_cast<int>(d));
  if (weights) require_host(*weights, -1);
  state_->use(stream);
  const std::int64_t n = columns[0].size;
  if (n == 0) return;
  const device_guard guard(device_);
  std::vector<view> host = columns;
  if (weights) host.push_back(*weights);
  std::vector<detail::cuda::stream_part> parts;
  for (const view& v : host) parts.push_back({v.type, 1});
  state_->stream_rounds(parts, n, o, stream, detail::cuda::produce_from_views(host, o.copy_threads),
                        [&](const std::vector<const char*>& device, std::int64_t rows) {
                          std::vector<view> round;
                          for (std::size_t d = 0; d < columns.size(); ++d)
                            round.push_back(view{device[d], rows, 1, columns[d].type});
                          if (!weights) return fill_impl(round, nullptr, stream);
                          const view w{device[columns.size()], rows, 1, weights->type};
                          fill_impl(round, &w, stream);
                        });
}

void device_histogram::fill_stream(dtype type, const stream_reader& samples, void* stream, stream_options o) {
  stream_impl(type, samples, nullptr, dtype::f64, stream, o);
}
void device_histogram::fill_stream(dtype type, const stream_reader& samples, dtype weight_type,
                                   const stream_reader& weights, void* stream, stream_options o) {
  stream_impl(type, samples, &weights, weight_type, stream, o);
}

namespace {

/// The parts of a streaming fill from readers, its arguments checked.
std::vector<detail::cuda::stream_part> reader_parts(const char* call, dtype type, std::int64_t per_row,
                                                    const stream_reader& samples, const stream_reader* weights,
                                                    dtype weight_type, bool weighted) {
  if (!samples) throw error(std::string(call) + ": the samples reader is empty");
  std::vector<detail::cuda::stream_part> parts = {{type, per_row}};
  if (!weights) return parts;
  if (!*weights) throw error(std::string(call) + ": the weights reader is empty");
  if (!weighted) throw error(std::string(call) + ": weights given to an unweighted histogram; construct it with options.weighted = true");
  if (weight_type != dtype::f32 && weight_type != dtype::f64)
    throw error(std::string(call) + ": weights must be f32 or f64, got " + std::string(name_of(weight_type)));
  parts.push_back({weight_type, 1});
  return parts;
}

}  // namespace

void device_histogram::stream_impl(dtype type, const stream_reader& samples, const stream_reader* weights,
                                   dtype weight_type, void* stream, const stream_options& o) {
  require_state(state_.get());
  const int dims = static_cast<int>(axes_.size());
  const auto parts = reader_parts("device_histogram::fill_stream", type, dims, samples, weights, weight_type, opts_.weighted);
  state_->use(stream);
  const device_guard guard(device_);
  state_->stream_rounds(parts, -1, o, stream, detail::cuda::produce_from_readers(parts, samples, weights),
                        [&](const std::vector<const char*>& device, std::int64_t rows) {
                          const std::vector<view> round = round_columns(device, rows, type, dims);
                          if (!weights) return fill_impl(round, nullptr, stream);
                          const view w{device[1], rows, 1, weight_type};
                          fill_impl(round, &w, stream);
                        });
}

void fill_channels_stream(std::vector<device_histogram>& per_channel, dtype type, int channels,
                          const stream_reader& pixels, const stream_reader* weights, dtype weight_type, void* stream,
                          stream_options o) {
  const char* call = "tally::fill_channels_stream";
  if (channels < 1) throw error(std::string(call) + ": channels must be 1 or more, got " + std::to_string(channels));
  if (per_channel.size() > static_cast<std::size_t>(channels))
    throw error(std::string(call) + ": " + std::to_string(per_channel.size()) + " histograms for " +
                std::to_string(channels) + " channels");
  if (per_channel.empty()) return;
  bool weighted = true;
  for (const auto& h : per_channel) {
    require_state(h.state_.get());
    if (h.device() != per_channel[0].device()) throw error(std::string(call) + ": the histograms are on different devices");
    weighted = weighted && h.weighted();
  }
  const auto parts = reader_parts(call, type, channels, pixels, weights, weight_type, weighted);
  auto& first = *per_channel[0].state_;
  const device_guard guard(per_channel[0].device());
  first.stream_rounds(parts, -1, o, stream, detail::cuda::produce_from_readers(parts, pixels, weights),
                      [&](const std::vector<const char*>& device, std::int64_t rows) {
                        const view round{device[0], rows * channels, 1, type};
                        if (!weights) return fill_channels(per_channel, round, channels, stream);
                        const view w{device[1], rows, 1, weight_type};
                        for (std::size_t c = 0; c < per_channel.size(); ++c)
                          per_channel[c].fill(detail::channel_of(round, static_cast<int>(c), channels), w, stream);
                      });
}

void fill_channels(std::vector<device_histogram>& per_channel, const view& samples, int channels, void* stream) {
  const char* call = "tally::fill_channels (device)";
  detail::check_channels(samples, channels, per_channel.size(), call);
  for (const auto& h : per_channel) {
    require_state(h.state_.get());
    if (h.axes().size() != 1) throw error(std::string(call) + ": every channel histogram must be 1-D");
    require_on(h.device(), samples, 0, call);
  }
  if (per_channel.empty() || samples.size == 0) return;

  const auto counted = static_cast<int>(per_channel.size());
  const bool eight_bit = samples.type == dtype::u8 || samples.type == dtype::i8;
  bool one_pass = channels >= 2 && channels <= 4 && eight_bit && samples.stride == 1;
  for (const auto& h : per_channel) one_pass = one_pass && !h.weighted() && h.opts().strategy == strategy::automatic;
  const device_guard guard(per_channel[0].device());
  detail::cuda::channels_input in;
  if (one_pass) {
    in = detail::cuda::plan_channels(per_channel[0].axes()[0], samples, channels, counted);
    one_pass = in.plan.value_table;
  }
  if (!one_pass) {
    for (int c = 0; c < counted; ++c) per_channel[static_cast<std::size_t>(c)].fill(detail::channel_of(samples, c, channels), stream);
    return;
  }
  for (std::size_t c = 0; c < per_channel.size(); ++c) {
    auto& s = *per_channel[c].state_;
    s.use(stream);
    in.outputs[c].axis = s.rules.axes.axis[0];
    in.outputs[c].axis.kind = s.rules.integer_kind[0][0];  // 8-bit samples: the integer samples' rule
    in.outputs[c].cells = per_channel[c].size();
    in.outputs[c].slots = reinterpret_cast<unsigned long long*>(s.memory);
  }
  const std::size_t temp_bytes = detail::cuda::channels_temp_bytes(counted);
  stream_memory temp(per_channel[0].state_->allocator, temp_bytes, stream);
  TALLY_CUDA_CHECK(cudaMemsetAsync(temp.get(), 0, temp_bytes, as_stream(stream)));
  detail::cuda::enqueue_channels(in, temp.get(), as_stream(stream));
}

void device_histogram::reset(void* stream) {
  require_state(state_.get());
  const device_guard guard(device_);
  state_->use(stream);
  TALLY_CUDA_CHECK(cudaMemsetAsync(state_->memory, 0, state_->tables_at, as_stream(stream)));
}

void device_histogram::release_on_default_stream() {
  require_state(state_.get());
  // The legacy default stream (torch's default, handle 0) is freed on already, in its order.
  if (state_->stream == nullptr || state_->stream == static_cast<void*>(cudaStreamLegacy)) return;
  const device_guard guard(device_);
  cudaEvent_t done = nullptr;
  TALLY_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  TALLY_CUDA_CHECK(cudaEventRecord(done, as_stream(state_->stream)));
  state_->use(state_->stream);
  state_->released = done;
}

std::vector<std::int64_t> device_histogram::shape() const {
  std::vector<std::int64_t> s;
  for (const auto& a : axes_) s.push_back(a.bins());
  return s;
}

const std::uint64_t* device_histogram::counts_data() const {
  require_state(state_.get());
  return opts_.weighted ? nullptr : reinterpret_cast<const std::uint64_t*>(state_->memory);
}

const double* device_histogram::sums_data() const {
  require_state(state_.get());
  return opts_.weighted ? reinterpret_cast<const double*>(state_->memory) : nullptr;
}

const std::uint64_t* device_histogram::flow_data() const {
  require_state(state_.get());
  return opts_.flow ? reinterpret_cast<const std::uint64_t*>(state_->memory + state_->flow_at) : nullptr;
}

namespace {

template <class T>
std::vector<T> copy_back(const void* from, std::size_t count, int device, void* stream) {
  const device_guard guard(device);
  std::vector<T> host(count);
  TALLY_CUDA_CHECK(cudaMemcpyAsync(host.data(), from, count * sizeof(T), cudaMemcpyDeviceToHost, as_stream(stream)));
  TALLY_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
  return host;
}

/// Page-locked host memory, mapped into the devices' address space, for the flow counts'
/// read-back: one buffer a thread (no lock shared by threads that wait for different streams).
std::uint64_t* pinned_flow_words() {
  struct buffer {
    void* p = nullptr;
    ~buffer() {
      if (p) cudaFreeHost(p);  // at exit the runtime may be gone already; nothing to report
    }
  };
  thread_local buffer b;
  if (!b.p) TALLY_CUDA_CHECK(cudaHostAlloc(&b.p, 3 * sizeof(std::uint64_t), cudaHostAllocPortable | cudaHostAllocMapped));
  return static_cast<std::uint64_t*>(b.p);
}

/// The flow counts written into mapped host memory by the stream itself: a kernel follows the
/// fill's kernel sooner than the copy engine's read-back would.
__global__ void copy_flow_kernel(const std::uint64_t* from, std::uint64_t* to) {
  if (threadIdx.x < 3) to[threadIdx.x] = from[threadIdx.x];
}

}  // namespace

std::vector<std::uint64_t> device_histogram::counts(void* stream) const {
  if (opts_.weighted) throw error("counts: this histogram holds weighted sums; use sums()");
  return copy_back<std::uint64_t>(counts_data(), static_cast<std::size_t>(cells_), device_, stream);
}

std::vector<double> device_histogram::sums(void* stream) const {
  if (!opts_.weighted) throw error("sums: this histogram holds counts; use counts()");
  return copy_back<double>(sums_data(), static_cast<std::size_t>(cells_), device_, stream);
}

flow_counts device_histogram::flow(void* stream) const {
  if (!opts_.flow) throw error("flow: flow counters are off; construct with options.flow = true");
  const device_guard guard(device_);
  std::uint64_t* f = pinned_flow_words();
  std::uint64_t* mapped = nullptr;
  TALLY_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), f, 0));
  copy_flow_kernel<<<1, 32, 0, as_stream(stream)>>>(flow_data(), mapped);
  TALLY_CUDA_CHECK(cudaGetLastError());
  TALLY_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
  return flow_counts{f[0], f[1], f[2]};
}

namespace detail {

std::uint64_t* device_cells::wide(device_histogram& h) {
  require_state(h.state_.get());
  return h.opts_.exact_sums ? reinterpret_cast<std::uint64_t*>(h.state_->memory + h.state_->wide_at) : nullptr;
}

void* device_cells::allocate(const device_histogram& h, std::size_t bytes, void* stream) {
  require_state(h.state_.get());
  return stream_memory(h.state_->allocator, bytes, stream).release();
}

void device_cells::deallocate(const device_histogram& h, void* p, std::size_t bytes, void* stream) {
  const device_allocator& a = h.state_->allocator;
  a.deallocate(a.context, p, bytes, stream);
}

}  // namespace detail

namespace {

/// count_into's request to the planner, for the current device.
plan_request count_into_request(const std::vector<axis>& axes, const view& first, dtype out_type, const options& opts) {
  plan_request r = detail::make_request(axes, opts, backend::cuda, first.type, first.size, &first, nullptr);
  r.write_once = true;
  r.write_type = out_type;
  return r;
}

/// count_into's checks of its arguments (`call` names the caller); returns the current device.
int check_count_into(const std::vector<axis>& axes, const std::vector<view>& columns, dtype out_type,
                     const options& opts, const char* call) {
  const dtype counted[] = {dtype::u64, dtype::i64, dtype::f64, dtype::f32, dtype::f16, dtype::bf16};
  if (std::find(std::begin(counted), std::end(counted), out_type) == std::end(counted))
    throw error(std::string(call) + ": counts are written as u64, i64, f64, f32, f16 or bf16, not " +
                std::string(name_of(out_type)));
  if (opts.weighted || opts.exact_sums || opts.counts != count_type::u64)
    throw error(std::string(call) + ": writes counts; options must be unweighted, without exact_sums, with u64 counts");
  if (opts.backend == backend::cpu) throw error(std::string(call) + ": computes on the GPU; options.backend must be automatic or cuda");
  detail::check_fill(axes, false, columns, nullptr);
  std::string why;
  if (!detail::cuda::usable(why)) throw error(std::string(call) + ": " + why);
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  for (std::size_t d = 0; d < columns.size(); ++d) require_on(device, columns[d], static_cast<int>(d), call);
  return device;
}

void require_out_on(int device, const void* out, const char* call) {
  if (device_of(out) != device)
    throw error(std::string(call) + ": out must be memory of the current device " + std::to_string(device));
}

/// count_into's one launch (write_once, or add_once's memset and launch) where its plan is one
/// and the axes' tables allow it: counts into out() (asked only then) and returns true; else
/// returns false, having asked and written nothing. `check_out`: out() is checked to be memory of
/// the device (count_into checks its out before).
bool count_in_one_launch(const std::vector<axis>& axes, const std::vector<view>& columns,
                         const std::function<void*()>& out, dtype out_type, void* stream, const options& opts,
                         int device, bool check_out, const char* call) {
  const policy p = plan(count_into_request(axes, columns[0], out_type, opts));
  if (!p.write_once && !p.add_once) return false;
  // Integer samples on axes that bin them without tables need none; others read the kept tables
  // (tables_for: uploaded once, with a host wait, then shared with histograms over the same
  // axes). Where the device's share of kept tables is full, a histogram fills instead.
  std::vector<const char*> data;
  for (const auto& c : columns) data.push_back(static_cast<const char*>(c.data));
  const bool floats = std::any_of(columns.begin(), columns.end(), [](const view& c) { return is_floating(c.type); });
  std::optional<detail::cuda::device_rules> bare;
  if (!floats) bare.emplace(axes, false);
  const bool untabled = bare && bare->integers_need_no_tables();
  const kept_tables* k = untabled ? nullptr : tables_for(device, axes);
  if (!untabled && !k) return false;
  void* to = out();
  if (check_out) require_out_on(device, to, call);
  // Unweighted counts never read the 1.0 after the tables, so bare rules need no device words.
  const detail::cuda::fill_input in = untabled ? bare->input(columns, data, nullptr, nullptr, nullptr)
                                               : k->rules.input(columns, data, nullptr, nullptr, k->words);
  detail::cuda::count_once(in.axes, columns[0].size, detail::cell_count(axes), p, to, out_type, as_stream(stream));
  return true;
}

}  // namespace

void count_into(std::vector<axis> axes, const std::vector<view>& columns, void* out, dtype out_type, void* stream,
                options opts) {
  const char* call = "tally::count_into";
  const int device = check_count_into(axes, columns, out_type, opts, call);
  require_out_on(device, out, call);
  if (count_in_one_launch(axes, columns, [out] { return out; }, out_type, stream, opts, device, false, call)) return;
  const std::int64_t cells = detail::cell_count(axes);
  device_histogram h(std::move(axes), opts, stream);
  h.fill(columns, stream);
  detail::cuda::convert_counts(reinterpret_cast<const unsigned long long*>(h.counts_data()), cells, out, out_type,
                               as_stream(stream));
}

bool count_into_if_one_launch(const std::vector<axis>& axes, const std::vector<view>& columns,
                              const std::function<void*()>& out, dtype out_type, void* stream, const options& opts) {
  const char* call = "tally::count_into_if_one_launch";
  const int device = check_count_into(axes, columns, out_type, opts, call);
  return count_in_one_launch(axes, columns, out, out_type, stream, opts, device, true, call);
}

policy device_histogram::plan_for(dtype t, std::int64_t n, dtype weight_type) const {
  const device_guard guard(device_);
  plan_request r = detail::make_request(axes_, opts_, backend::cuda, t, n, nullptr, nullptr);
  r.weight_type = weight_type;
  return plan(r);
}

}  // namespace tally

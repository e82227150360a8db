// The stream-ordered steps of a fill (fill.hpp): rules and their tables, and the launches of the
// planner's strategy into device counts or sums.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "core/backend.hpp"
#include "core/exact_sum.hpp"
#include "core/partition.hpp"
#include "core/rules.hpp"
#include "cuda/fill.hpp"

namespace tally::detail::cuda {

void allow_shared(const void* kernel, std::size_t bytes) {
  if (bytes <= 48 * 1024) return;
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, std::size_t> raised;  // (kernel, device): the limit set
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  std::size_t& limit = raised[{kernel, device}];
  if (bytes <= limit) return;
  TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  limit = bytes;
}

using detail::kPartitionTile;

int device_of(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  const bool on_device = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  return on_device ? attributes.device : -1;
}

device_guard::device_guard(int device) {
  TALLY_CUDA_CHECK(cudaGetDevice(&previous_));
  if (device >= 0 && device != previous_) TALLY_CUDA_CHECK(cudaSetDevice(device));
}

device_guard::~device_guard() { cudaSetDevice(previous_); }

namespace {

/// Appends `bytes` of data as whole words (zero-padded); returns the first word's index.
std::size_t append(std::vector<std::uint64_t>& words, const void* data, std::size_t bytes) {
  const std::size_t at = words.size();
  words.resize(at + (bytes + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t), 0);
  std::memcpy(words.data() + at, data, bytes);
  return at;
}
template <class T> std::size_t append(std::vector<std::uint64_t>& words, const std::vector<T>& v) {
  return append(words, v.data(), v.size() * sizeof(T));
}

}  // namespace

device_rules::device_rules(const std::vector<axis>& list, bool with_tables) {
  if (list.size() > static_cast<std::size_t>(kMaxAxes))
    throw error("backend cuda: at most " + std::to_string(kMaxAxes) + " axes, got " + std::to_string(list.size()));
  axes.count = static_cast<int>(list.size());
  for (int d = 0; d < axes.count; ++d) {
    const axis& a = list[static_cast<std::size_t>(d)];
    device_axis& da = axes.axis[d];
    da.kind = a.kind();
    da.bins = a.bins();
    integer_kind[d][0] = rule_kind(a, dtype::i32);
    integer_kind[d][1] = rule_kind(a, dtype::i64);
    if (a.kind() == axis_kind::regular) da.regular.rule = make_regular_rule(a);  // its table: add_tables
    if (a.kind() == axis_kind::integer || a.unit_integer_edges()) da.integer.rule = make_integer_rule(a);
  }
  if (with_tables) add_tables(list);
}

void device_rules::add_tables(const std::vector<axis>& list) {
  for (int d = 0; d < axes.count; ++d) {
    const axis& a = list[static_cast<std::size_t>(d)];
    device_axis& da = axes.axis[d];
    if (a.kind() == axis_kind::regular) {
      const std::vector<double> edges = a.edges();
      tighten_guard(da.regular.rule, edges.data());
      offsets.push_back(append(tables, edges));
    } else if (a.kind() == axis_kind::variable) {
      const std::vector<std::int64_t> buckets = variable_buckets(a);
      std::vector<float> edges32;
      std::vector<bucket32> buckets32;
      da.variable.rule = make_variable_rule(a, &buckets);  // host pointers until point_at
      da.variable32 = make_variable_rule32(a, edges32, buckets32);
      da.line = variable_line(a);
      offsets.push_back(append(tables, a.variable_edges()));
      offsets.push_back(append(tables, buckets));
      offsets.push_back(append(tables, edges32));
      offsets.push_back(append(tables, buckets32));
      offsets.push_back(append(tables, a.integer_edges()));
    }
  }
  has_tables = true;
  table_words = tables.size();
}

bool device_rules::integers_need_no_tables() const {
  for (int d = 0; d < axes.count; ++d)
    if (integer_kind[d][0] != axis_kind::integer || integer_kind[d][1] != axis_kind::integer) return false;
  return true;
}

void device_rules::point_at(const std::uint64_t* device_tables) {
  if (!has_tables) return;  // no table to point at: the rules read none
  std::size_t t = 0;
  for (int d = 0; d < axes.count; ++d) {
    device_axis& da = axes.axis[d];
    switch (da.kind) {
      case axis_kind::regular:
        da.regular.rule.table = reinterpret_cast<const double*>(device_tables + offsets[t++]);
        break;
      case axis_kind::variable: {
        // Each table's place; the optional ones (buckets, the f32 rule, integer edges) only
        // where the host rule has them.
        const auto at = [&](auto* host) { return host ? device_tables + offsets[t] : nullptr; };
        da.variable.rule.edges = reinterpret_cast<const double*>(device_tables + offsets[t++]);
        da.variable.rule.buckets = reinterpret_cast<const std::int64_t*>(at(da.variable.rule.buckets));
        ++t;
        da.variable32.edges = reinterpret_cast<const float*>(at(da.variable32.edges));
        ++t;
        da.variable32.buckets = reinterpret_cast<const bucket32*>(at(da.variable32.buckets));
        ++t;
        da.variable.rule.int_edges = reinterpret_cast<const std::int64_t*>(at(da.variable.rule.int_edges));
        ++t;
        break;
      }
      case axis_kind::integer:
        break;
    }
  }
}

std::vector<std::uint64_t> device_rules::words() const {
  std::vector<std::uint64_t> w = tables;
  const double one = 1.0;
  w.push_back(0);
  std::memcpy(&w.back(), &one, sizeof one);
  return w;
}

fill_input device_rules::input(const std::vector<view>& columns, const std::vector<const char*>& data, const view* weights,
                        const char* weight_data, const std::uint64_t* device_words) const {
  fill_input in;
  in.axes = axes;
  for (int d = 0; d < in.axes.count; ++d) {
    const view& v = columns[static_cast<std::size_t>(d)];
    in.axes.axis[d].type = v.type;
    // Integer samples on unit integer edges take the integer rule (rule_kind), set up above.
    if (!is_floating(v.type)) in.axes.axis[d].kind = integer_kind[d][size_of(v.type) == 8];
    in.axes.axis[d].data = data[static_cast<std::size_t>(d)];
    in.axes.axis[d].stride_bytes = v.stride * static_cast<std::int64_t>(size_of(v.type));
  }
  if (weights) {
    in.weights = weight_data;
    in.weight_type = weights->type;
    in.weight_stride_bytes = weights->stride * static_cast<std::int64_t>(size_of(weights->type));
  }
  in.one = reinterpret_cast<const double*>(device_words + table_words);  // host tables may be gone (kept)
  in.n = columns[0].size;
  return in;
}

namespace {

std::size_t round16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

/// The partitioned strategy's temporary memory from offset `at` on: a pass's sorted samples (2 bytes
/// each; exact sums: then their f32 weights), each tile's bucket offsets, and two sets of bucket
/// totals (one pass's, and the next's, zeroed by the pass). `end`: the offset past them.
struct partition_layout {
  std::int64_t tiles = 0;  // per pass
  std::size_t entries_at = 0, weights_at = 0, offsets_at = 0, totals_at = 0, end = 0;
  explicit partition_layout(const policy& plan, std::size_t at = 0) {
    tiles = plan.partition_chunk / kPartitionTile;
    const auto chunk = static_cast<std::size_t>(plan.partition_chunk);
    entries_at = at;
    weights_at = entries_at + round16(chunk * 2);
    offsets_at = weights_at + (plan.exact_sums ? round16(chunk * sizeof(float)) : 0);
    totals_at = offsets_at + round16(static_cast<std::size_t>((plan.partition_buckets + 1) * tiles) * 2);
    end = totals_at + static_cast<std::size_t>(2 * plan.partition_buckets) * sizeof(unsigned);
  }
  /// The sorted pass's arrays in `temp` (totals: the first set).
  partition_scratch scratch(const policy& plan, char* temp) const {
    partition_scratch sorted;
    sorted.entries = reinterpret_cast<unsigned short*>(temp + entries_at);
    sorted.offsets = reinterpret_cast<unsigned short*>(temp + offsets_at);
    sorted.tile_stride = tiles;
    sorted.totals = reinterpret_cast<unsigned*>(temp + totals_at);
    sorted.bits = plan.partition_bits;
    sorted.buckets = plan.partition_buckets;
    return sorted;
  }
};

/// Exact sums' words and flags at the start of their temporary memory.
std::size_t exact_words_temp(std::int64_t cells) {
  return static_cast<std::size_t>(cells) * (kExactWords * sizeof(std::uint64_t) + sizeof(unsigned));
}

}  // namespace

std::size_t counts_temp_bytes(const policy& plan) {
  if (plan.partition_bits) return partition_layout(plan).end;
  return plan.value_table ? (256 + 3) * sizeof(unsigned long long) : 0;
}

channels_input plan_channels(const axis& first, const view& samples, int channels, int counted) {
  plan_request r;
  r.where = backend::cuda;
  r.kind = rule_kind(first, samples.type);
  r.cells = first.bins();
  r.channels = channels;
  r.counted_channels = counted;
  r.sample = samples.type;
  r.n = samples.size;
  r.contiguous = samples.stride == 1;
  cuda_backend().describe(r);
  channels_input in;
  in.samples.type = samples.type;
  in.samples.data = static_cast<const char*>(samples.data);
  in.samples.stride_bytes = 1;
  in.n = samples.size;
  in.channels = channels;
  in.plan = tally::plan(r);
  in.outputs.resize(static_cast<std::size_t>(counted));
  return in;
}

std::size_t channels_temp_bytes(int channels) { return static_cast<std::size_t>(256 * channels) * sizeof(unsigned long long); }

std::size_t sums_temp_bytes(const policy& plan, std::int64_t cells, bool wide) {
  if (plan.exact_wide)  // the fill's own wide words where the histogram keeps f64 sums
    return wide ? 0 : static_cast<std::size_t>(cells * kWideCellWords) * sizeof(std::uint64_t);
  if (plan.exact_sums)
    return plan.partition_bits ? partition_layout(plan, round16(exact_words_temp(cells))).end : exact_words_temp(cells);
  return static_cast<std::size_t>(plan.grid_blocks * plan.window_cells) * sizeof(double);
}

namespace {

void count_typed(dtype sample, const device_axis& axis, const typed_count_args& args, const launch_shape& shape) {
  switch (sample) {
    case dtype::u8: case dtype::i8: case dtype::u16: case dtype::i16:
      return count_typed_narrow(sample, axis, args, shape);
    case dtype::u32: case dtype::i32: case dtype::u64: case dtype::i64:
      return count_typed_wide(sample, axis, args, shape);
    default:
      return count_typed_floats(sample, axis, args, shape);
  }
}

launch_shape shape_of(const policy& plan, cudaStream_t stream) {
  launch_shape shape;
  shape.grid = static_cast<unsigned>(plan.grid_blocks);
  shape.block = static_cast<unsigned>(plan.block_threads);
  shape.shared_bytes = static_cast<std::size_t>(plan.shared_bytes);
  shape.stream = stream;
  return shape;
}

/// Samples per launch: small enough that no block's 32-bit shared counter can wrap (2^20
/// samples per thread of the block, or of the cluster that adds into it).
std::int64_t piece_of(const policy& plan) {
  return plan.grid_blocks * plan.block_threads * ((std::int64_t{1} << 20) / std::max(1, plan.cluster_blocks));
}

/// The typed kernels' arguments for samples [begin, begin + count) of a contiguous column.
typed_count_args typed_args(const policy& plan, const device_axis& column, std::int64_t begin, std::int64_t count) {
  typed_count_args a;
  a.data = column.data + begin * column.stride_bytes;
  a.n = count;
  while ((1 << a.replica_shift) < plan.replicas) ++a.replica_shift;
  a.mode = plan.cluster_blocks                         ? count_mode::cluster
           : plan.partition_bits                        ? count_mode::partition
           : plan.chosen == strategy::global_atomic_vec ? count_mode::global
           : plan.chosen == strategy::registers         ? count_mode::registers
           : plan.counter_bits == 16                    ? count_mode::packed
                                                        : count_mode::shared;
  a.stage_tables = plan.tables_in_shared;
  a.merge_runs = plan.merge_runs;
  a.cluster_blocks = plan.cluster_blocks;
  if (a.cluster_blocks)
    while ((std::int64_t{a.cluster_blocks} << a.slice_shift) < column.bins) ++a.slice_shift;
  return a;
}

/// The partitioned strategies' passes over samples [0, in.n) of one contiguous column, their
/// temporary memory laid out by `layout` in temp: the totals zeroed, then each pass's
/// run(begin, count, sorted, next_totals, tiles), sorted.totals this pass's (the sort adds to
/// them), next_totals the other set (the second pass zeroes it for the next), tiles those the
/// sort writes.
template <class Run>
void for_each_pass(const fill_input& in, const partition_layout& layout, char* temp, cudaStream_t stream,
                   const Run& run) {
  const policy& plan = in.plan;
  partition_scratch sorted = layout.scratch(plan, temp);
  unsigned* totals = sorted.totals;
  TALLY_CUDA_CHECK(cudaMemsetAsync(totals, 0, 2 * plan.partition_buckets * sizeof(unsigned), stream));
  const device_axis& column = in.axes.axis[0];
  const std::int64_t size = static_cast<std::int64_t>(size_of(column.type));
  std::int64_t pass = 0;
  for (std::int64_t begin = 0; begin < in.n; begin += plan.partition_chunk, ++pass) {
    const std::int64_t count = std::min(plan.partition_chunk, in.n - begin);
    sorted.totals = totals + (pass % 2) * plan.partition_buckets;
    const column_body body = body_of(reinterpret_cast<std::uintptr_t>(column.data + begin * column.stride_bytes), count, size);
    run(begin, count, sorted, totals + ((pass + 1) % 2) * plan.partition_buckets,
        (body.vectors * 16 / size + kPartitionTile - 1) / kPartitionTile);
  }
}

/// The partitioned strategy, pass by pass: each pass's samples sorted by bucket into temp, then
/// counted bucket by bucket.
void enqueue_partitioned(const fill_input& in, unsigned long long* slots, void* temp, cudaStream_t stream) {
  const policy& plan = in.plan;
  const device_axis& column = in.axes.axis[0];
  for_each_pass(in, partition_layout(plan), static_cast<char*>(temp), stream,
                [&](std::int64_t begin, std::int64_t count, const partition_scratch& sorted, unsigned* next_totals,
                    std::int64_t tiles) {
                  typed_count_args a = typed_args(plan, column, begin, count);
                  a.cells = in.cells;
                  a.slots = slots;
                  a.sorted = sorted;
                  count_typed(column.type, column, a, shape_of(plan, stream));
                  partition_count_args c;
                  c.sorted = sorted;
                  c.tiles = tiles;
                  c.next_totals = next_totals;
                  c.blocks = plan.partition_blocks;
                  c.cells = in.cells;
                  c.slots = slots;
                  count_partitions(c, stream);
                });
}

/// The partitioned exact sums, pass by pass: each pass's pairs sorted by bucket into the temporary
/// memory after the words, then added bucket by bucket into the words.
void enqueue_exact_partitioned(const fill_input& in, const exact_sums_args& sums, char* temp, cudaStream_t stream) {
  const policy& plan = in.plan;
  const device_axis& column = in.axes.axis[0];
  const partition_layout layout(plan, round16(exact_words_temp(in.cells)));
  auto* weights = reinterpret_cast<float*>(temp + layout.weights_at);
  for_each_pass(in, layout, temp, stream,
                [&](std::int64_t begin, std::int64_t count, const partition_scratch& sorted, unsigned* next_totals,
                    std::int64_t tiles) {
                  exact_sort_args a;
                  a.sums = sums;
                  a.sums.n = count;
                  if (sums.weights) a.sums.weights = sums.weights + begin * sums.weight_stride_bytes;
                  a.data = column.data + begin * column.stride_bytes;
                  a.sorted = sorted;
                  a.weights = weights;
                  sort_exact_partitions(column, a, shape_of(plan, stream));
                  exact_partition_sum_args c;
                  c.sorted = sorted;
                  c.weights = weights;
                  c.tiles = tiles;
                  c.next_totals = next_totals;
                  c.blocks = plan.partition_blocks;
                  c.cells = in.cells;
                  c.words = sums.words;
                  c.flags = sums.flags;
                  sum_exact_partitions(c, stream);
                });
}

}  // namespace

/// Launches the count strategy over samples [0, n), piece by piece.
void enqueue_counts(const fill_input& in, unsigned long long* slots, void* temp, cudaStream_t stream) {
  const policy& plan = in.plan;
  if (plan.partition_bits) return enqueue_partitioned(in, slots, temp, stream);
  const launch_shape shape = shape_of(plan, stream);
  const device_axis& first = in.axes.axis[0];
  auto* raw = static_cast<unsigned long long*>(temp);
  if (plan.value_table) TALLY_CUDA_CHECK(cudaMemsetAsync(raw, 0, counts_temp_bytes(plan), stream));
  const std::int64_t piece = piece_of(plan);
  for (std::int64_t begin = 0; begin < in.n; begin += piece) {
    const std::int64_t count = std::min(piece, in.n - begin);
    if (plan.vector_bytes) {
      typed_count_args a = typed_args(plan, first, begin, count);
      if (plan.value_table) {
        a.cells = 256;
        a.slots = raw;
        count_values(first.type, a, shape);
      } else {
        a.cells = in.cells;
        a.slots = slots;
        count_typed(first.type, first, a, shape);
      }
    } else {
      device_axes shifted = in.axes;
      for (int d = 0; d < shifted.count; ++d) shifted.axis[d].data += begin * shifted.axis[d].stride_bytes;
      count_generic(shifted, count, in.cells, plan.chosen, typed_args(plan, first, 0, 0).replica_shift, slots, shape);
    }
  }
  if (plan.value_table) {
    value_folds folds;
    folds.channel[0] = {first, in.cells, slots};
    folds.channels = 1;
    folds.raw = raw;
    fold_values(first.type, folds, stream);
  }
}

void enqueue_channels(const channels_input& in, void* temp, cudaStream_t stream) {
  const launch_shape shape = shape_of(in.plan, stream);
  const int counted = static_cast<int>(in.outputs.size());
  auto* raw = static_cast<unsigned long long*>(temp);
  const std::int64_t piece = piece_of(in.plan);
  for (std::int64_t begin = 0; begin < in.n; begin += piece) {
    typed_count_args a = typed_args(in.plan, in.samples, begin, std::min(piece, in.n - begin));
    a.cells = 256 * counted;
    a.slots = raw;
    count_channel_values(in.samples.type, in.channels, counted, static_cast<int>(begin % in.channels), a, shape);
  }
  value_folds folds;
  for (int c = 0; c < counted; ++c) folds.channel[c] = in.outputs[static_cast<std::size_t>(c)];
  folds.channels = counted;
  folds.raw = raw;
  fold_values(in.samples.type, folds, stream);
}

/// Exact sums (f32 weights, or none): the words of every cell, then their values added (or, with
/// `wide`, the words widened into it). plan.exact_wide (f64 weights, exact or over many cells):
/// the wide atomics. Else
/// window by window: the block partials of a window, then their fixed-order sum added to it.
void enqueue_sums(const fill_input& in, double* sums, unsigned long long* flow, void* temp, cudaStream_t stream,
                  std::uint64_t* wide) {
  const policy& plan = in.plan;
  if (plan.exact_wide) {
    // Without options::exact_sums, the fill's words in `temp`, rounded once and added to `sums`:
    // one pass where the windows below would take many (plan_cuda_weighted).
    std::uint64_t* words = wide ? wide : static_cast<std::uint64_t*>(temp);
    if (!wide) TALLY_CUDA_CHECK(cudaMemsetAsync(words, 0, sums_temp_bytes(plan, in.cells, false), stream));
    enqueue_exact_wide(in, words, flow, stream);
    if (!wide) add_rounded_wide(words, in.cells, sums, stream);
    return;
  }
  if (plan.exact_sums) {
    if (in.weights && in.weight_type != dtype::f32)
      throw error("enqueue_sums: the plan sums f32 weights exactly, the weights are " +
                  std::string(name_of(in.weight_type)));
    exact_sums_args a;
    a.weights = in.weights;
    a.weight_stride_bytes = in.weight_stride_bytes;
    a.n = in.n;
    a.cells = in.cells;
    a.words = static_cast<std::uint64_t*>(temp);
    a.flags = reinterpret_cast<unsigned*>(a.words + in.cells * kExactWords);
    a.flow = flow;
    a.in_shared = plan.chosen == strategy::shared;
    TALLY_CUDA_CHECK(cudaMemsetAsync(temp, 0, exact_words_temp(in.cells), stream));
    if (plan.partition_bits) enqueue_exact_partitioned(in, a, static_cast<char*>(temp), stream);
    else sum_exact(in.axes, plan.vector_bytes != 0, a, shape_of(plan, stream));
    if (wide) widen_exact(a, wide, stream);
    else finish_exact(a, sums, stream);
    return;
  }
  weighted_args a;
  a.weights = in.weights ? in.weights : reinterpret_cast<const char*>(in.one);
  a.weight_type = in.weights ? in.weight_type : dtype::f64;
  a.weight_stride_bytes = in.weights ? in.weight_stride_bytes : 0;
  a.n = in.n;
  a.cells = in.cells;
  a.partials = static_cast<double*>(temp);
  a.sums = sums;
  a.flow = flow;
  launch_shape shape;
  shape.grid = static_cast<unsigned>(plan.grid_blocks);
  shape.block = static_cast<unsigned>(plan.block_threads);
  shape.stream = stream;
  shape.shared_bytes = static_cast<std::size_t>(plan.shared_bytes);  // the warps' copies of the widest window
  for (std::int64_t lo = 0; lo < in.cells; lo += plan.window_cells) {
    a.window_lo = lo;
    a.window = std::min(plan.window_cells, in.cells - lo);
    a.count_flow = lo == 0;
    sum_weighted(in.axes, a, shape);
  }
}

}  // namespace tally::detail::cuda

// The CPU backend: threads fill private histograms tile by tile, merged in a fixed order.
//
// Each thread turns a tile of samples into flat cell indices (one typed loop per axis, the
// bin rule inlined), then counts them into private counters or sums them into a block partial.
// Contiguous columns take the SIMD kernels of cpu/simd_binning.hpp where the rule has one: a tile
// of bin codes, the scalar rule settling the lanes the kernel leaves to it.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "base/type_dispatch.hpp"
#include "core/exact_sum.hpp"
#include "core/memory.hpp"
#include "core/rules.hpp"
#include "cpu/simd_binning.hpp"

namespace tally::detail {
namespace {

/// Private counters are 32-bit; a thread takes at most this many samples between merges.
constexpr std::int64_t kMaxSamplesPerMerge = std::int64_t{1} << 31;

struct local_flow {
  std::uint64_t counts[3] = {0, 0, 0};  // underflow, overflow, nan (indexed by -code - 1)
  void add(std::int64_t code) { ++counts[-code - 1]; }
  void add(const local_flow& other) {
    for (int r = 0; r < 3; ++r) counts[r] += other.counts[r];
  }
  void add_to(flow_counts& f) const {
    f.underflow += counts[0];
    f.overflow += counts[1];
    f.nan += counts[2];
  }
};

/// Counts cells into 2^replica_shift interleaved private copies: sample i uses copy
/// i mod 2^shift, so runs of equal samples touch different addresses and do not wait on
/// each other's store-to-load latency.
struct count_sink {
  std::uint32_t* counters;
  int replica_shift;
  local_flow flow;
  TALLY_HD_HOT void operator()(std::int64_t k, std::int64_t i) {
    if (k >= 0) ++counters[(k << replica_shift) + (i & ((1 << replica_shift) - 1))];
    else flow.add(k);
  }
  /// A tile of codes: sample j of the tile uses copy j mod 2^shift, unrolled so that each
  /// position's copy and the shift are constants (fewer instructions a sample: bench/PERFORMANCE.md,
  /// "CPU backend").
  template <class Code> void add_codes(const Code* codes, std::int64_t n, std::int64_t first) {
    if (replica_shift == 2) add_replicated<2>(codes, n);
    else if (replica_shift == 0) add_replicated<0>(codes, n);
    else
      for (std::int64_t j = 0; j < n; ++j) (*this)(codes[j], first + j);
  }
  template <int Shift, class Code> TALLY_HD_HOT void add_replicated(const Code* codes, std::int64_t n) {
    constexpr std::int64_t copies = std::int64_t{1} << Shift;
    const auto add = [this](std::int64_t k, std::int64_t copy) {
      if (k >= 0) ++counters[(k << Shift) + copy];
      else flow.add(k);
    };
    std::int64_t j = 0;
    for (; j + copies <= n; j += copies)
      for (std::int64_t copy = 0; copy < copies; ++copy) add(codes[j + copy], copy);
    for (; j < n; ++j) add(codes[j], j & (copies - 1));
  }
};

/// Counts cells straight into the histogram's 64-bit storage (one thread, one copy): for
/// fills whose cells outnumber their samples, where private copies would cost memory and
/// time for every cell. A 64-bit count cannot overflow.
struct direct_sink {
  std::uint64_t* counts;
  local_flow flow;
  TALLY_HD_HOT void operator()(std::int64_t k, std::int64_t) {
    if (k >= 0) ++counts[k];
    else flow.add(k);
  }
  template <class Code> TALLY_HD_HOT void add_codes(const Code* codes, std::int64_t n, std::int64_t) {
    for (std::int64_t j = 0; j < n; ++j) (*this)(codes[j], j);
  }
};

/// The weights of a fill (f32 or f64) as doubles, 1 where there are none; their address, step and
/// type are read once, not at every sample.
struct weight_reader {
  const char* data = nullptr;  // null: weight 1
  std::int64_t step = 0;       // bytes
  bool f32 = false;
  explicit weight_reader(const view* weights) {
    if (!weights) return;
    data = static_cast<const char*>(weights->data);
    step = weights->stride * static_cast<std::int64_t>(size_of(weights->type));
    f32 = weights->type == dtype::f32;
  }
  TALLY_HD_HOT double operator()(std::int64_t i) const {
    if (!data) return 1.0;
    const char* p = data + i * step;
    if (f32) {
      float f;
      std::memcpy(&f, p, sizeof f);
      return f;
    }
    double d;
    std::memcpy(&d, p, sizeof d);
    return d;
  }
};

/// Sums weights into a block partial, in sample order; with `touched`, records each cell's
/// first touch so that merging and clearing skip the untouched cells.
struct sum_sink {
  double* partial;
  weight_reader weights;
  char* seen;           // sparse mode only
  std::vector<std::int64_t>* touched;
  local_flow flow;
  TALLY_HD_HOT void operator()(std::int64_t k, std::int64_t i) {
    if (k < 0) {
      flow.add(k);
      return;
    }
    if (seen && !seen[k]) {
      seen[k] = 1;
      touched->push_back(k);
    }
    partial[k] += weights(i);
  }
  /// A tile of codes (bins or negative codes), of samples first, first + 1, ...
  template <class Code> void add_codes(const Code* codes, std::int64_t n, std::int64_t first) {
    for (std::int64_t j = 0; j < n; ++j) (*this)(codes[j], first + j);
  }
};

/// Adds each weight exactly into its cell's wide fixed-point words (core/exact_sum.hpp), with
/// atomic additions where threads share the words: integer additions commute, so any split of
/// the samples among threads gives the same words.
struct exact_sink {
  std::uint64_t* words;  // cells x kWideCellWords
  weight_reader weights;
  bool shared;
  local_flow flow;
  TALLY_HD_HOT void operator()(std::int64_t k, std::int64_t i) {
    if (k < 0) {
      flow.add(k);
      return;
    }
    std::uint64_t* cell = words + k * kWideCellWords;
    const double x = weights(i);
    const unsigned flag = shared ? add_wide(cell, x, [](std::uint64_t* w, std::uint64_t v) {
      return __atomic_fetch_add(w, v, __ATOMIC_RELAXED);
    }) : add_wide(cell, x, plain_fetch_add{});
    if (flag) {
      if (shared) __atomic_fetch_or(cell + kWideWords, std::uint64_t{flag}, __ATOMIC_RELAXED);
      else cell[kWideWords] |= flag;
    }
  }
  template <class Code> void add_codes(const Code* codes, std::int64_t n, std::int64_t first) {
    for (std::int64_t j = 0; j < n; ++j) (*this)(codes[j], first + j);
  }
};

/// Calls f(value, i) for samples [begin, end) of a column of T; contiguous columns get a
/// loop with a constant step.
template <class T, class F>
void for_each_sample(const view& column, std::int64_t begin, std::int64_t end, F&& f) {
  const char* base = static_cast<const char*>(column.data);
  T v;
  if (column.stride == 1) {
    for (std::int64_t i = begin; i < end; ++i) {
      std::memcpy(&v, base + i * static_cast<std::int64_t>(sizeof(T)), sizeof v);
      f(v, i);
    }
  } else {
    const std::int64_t step = column.stride * static_cast<std::int64_t>(sizeof(T));
    for (std::int64_t i = begin; i < end; ++i) {
      std::memcpy(&v, base + i * step, sizeof v);
      f(v, i);
    }
  }
}

struct axis_indexer;

/// The bin codes of `count` contiguous samples of T at `samples`: the axis' SIMD kernel, then its
/// scalar rule for the lanes the kernel left unsettled.
template <class T, class Binner>
void simd_codes(const axis_indexer& a, const char* samples, std::int64_t count, std::int32_t* codes);

/// 1-D: bins samples [begin, end) and hands each cell straight to the sink (a contiguous column
/// with a SIMD kernel: a tile of codes at a time). The binner and the sink are copied to locals so
/// that the compiler keeps them in registers (a counter store could otherwise alias their fields
/// and force reloads every sample).
template <class T, class Binner, class Sink>
void run_1d(const axis_indexer& a, const view& column, std::int64_t begin, std::int64_t end, Sink& sink);

/// N-D: folds this axis' index of samples [begin, begin + count) into flat row-major cells.
/// A negative entry is a dropped sample and keeps the reason of the first axis that dropped it;
/// with flow_bins (options::flow_bins) none is: each index goes to its cell of bins + 3.
template <class T, class Binner>
void index_tile(const axis_indexer& a, const view& column, bool flow_bins, bool first_axis, std::int64_t begin,
                std::int64_t count, std::int64_t* flat);

template <class Sink>
using run_fn = void (*)(const axis_indexer& a, const view& column, std::int64_t begin, std::int64_t end, Sink& sink);
using index_tile_fn = void (*)(const axis_indexer& a, const view& column, bool flow_bins, bool first_axis,
                               std::int64_t begin, std::int64_t count, std::int64_t* flat);

/// One axis, ready to bin its column: the rule, its edge table and the typed loops.
struct axis_indexer {
  regular_binner regular;
  regular_table_binner regular_table;
  variable_binner variable;
  line_binner<double> line;
  integer_binner integer;
  std::vector<double> edge_table;
  std::vector<std::int64_t> buckets;
  simd_variable_rule simd_buckets;  // the variable rule's, for its SIMD kernel
  const void* binner = nullptr;
  /// The SIMD kernel of the rule for contiguous samples (null: none) and the rule it reads.
  simd_tile_fn simd = nullptr;
  const void* simd_rule_data = nullptr;
  index_tile_fn index_fn = nullptr;
  run_fn<count_sink> count_fn = nullptr;
  run_fn<direct_sink> direct_fn = nullptr;
  run_fn<sum_sink> sum_fn = nullptr;
  run_fn<exact_sink> exact_fn = nullptr;
  std::int64_t bins = 0;

  /// `samples`: how many the fill bins (the variable kernel's table pays for itself on many).
  axis_indexer(const axis& a, dtype sample, bool use_edge_table, std::int64_t samples)
      : bins(a.bins()), samples_(samples) {
    switch (rule_kind(a, sample)) {
      case axis_kind::regular:
        if (use_edge_table) {
          // make_regular_rule(a, a.edges()) with the rule made once: axis::edges() makes it
          // too, and its integer bounds' searches are most of a small fill's set-up.
          regular_rule& rule = regular_table.rule;
          rule = make_regular_rule(a);
          edge_table.resize(static_cast<std::size_t>(bins) + 1);
          for (std::int64_t k = 0; k <= bins; ++k) edge_table[static_cast<std::size_t>(k)] = rule.edge(k);
          rule.table = edge_table.data();
          tighten_guard(rule, rule.table);
          bind(regular_table, sample);
        } else {
          regular.rule = make_regular_rule(a);
          bind(regular, sample);
        }
        break;
      case axis_kind::variable:
        if (sample == dtype::f32) {
          // f32 samples near the line: the regular rule's table form over the axis' own edges.
          regular_table.rule = variable_line32(a);
          regular_table.rule.table = a.variable_edges().data();
          if (regular_table.rule.fast32) {
            bind(regular_table, sample);
            break;
          }
        }
        line = {variable_line(a), a.variable_edges().data()};
        if (line.line.bins) {
          bind(line, sample);
          break;
        }
        buckets = variable_buckets(a);
        variable.rule = make_variable_rule(a, &buckets);
        bind(variable, sample);
        break;
      case axis_kind::integer:
        integer.rule = make_integer_rule(a);
        bind(integer, sample);
        break;
    }
  }
  axis_indexer(const axis_indexer&) = delete;
  axis_indexer& operator=(const axis_indexer&) = delete;

  template <class Binner> void bind(const Binner& b, dtype sample) {
    binner = &b;
    // Codes are i32: an axis of more bins keeps the scalar rule.
    if (bins <= std::numeric_limits<std::int32_t>::max()) bind_simd(b, sample);
    with_sample_type(sample, [&](auto tag) {
      using T = typename decltype(tag)::type;
      index_fn = &index_tile<T, Binner>;
      count_fn = &run_1d<T, Binner, count_sink>;
      direct_fn = &run_1d<T, Binner, direct_sink>;
      sum_fn = &run_1d<T, Binner, sum_sink>;
      exact_fn = &run_1d<T, Binner, exact_sink>;
    });
  }

  /// The SIMD kernel of each binner's rule.
  template <class Regular> void bind_regular_simd(const Regular& b, dtype sample) {
    if (sample == dtype::f32 && (b.rule.fast32 || b.rule.dyadic_scale32 != 0.0f)) {
      use_simd(simd_rule::regular32, sample, &b.rule);
    } else if (sample == dtype::i64 || sample == dtype::u64) {  // the exact range test first
      use_simd(simd_rule::regular_wide, sample, &b.rule);
    } else {
      use_simd(simd_rule::line, sample, static_cast<const line_rule*>(&b.rule));
    }
  }
  void bind_simd(const regular_binner& b, dtype sample) { bind_regular_simd(b, sample); }
  void bind_simd(const regular_table_binner& b, dtype sample) { bind_regular_simd(b, sample); }
  void bind_simd(const line_binner<double>& b, dtype sample) { use_simd(simd_rule::line, sample, &b.line); }
  void bind_simd(const variable_binner& b, dtype sample) {
    if (b.rule.int_edges && (sample == dtype::i64 || sample == dtype::u64)) return;  // compared as integers
    // The table costs about 40 ns a bucket to build: a fill of fewer samples than 32 a bucket keeps
    // the scalar rule, as does an axis of more bins than a quarter of the buckets (most buckets
    // would hold more than two bins, left to the rule).
    const std::int64_t buckets = simd_variable_bucket_count(bins);
    if (!b.rule.buckets || samples_ < 32 * buckets || 4 * bins > buckets || !simd_kernel(simd_rule::variable, sample))
      return;
    simd_buckets = make_simd_variable_rule(b.rule, buckets);
    if (simd_buckets.buckets) use_simd(simd_rule::variable, sample, &simd_buckets);
  }
  void bind_simd(const integer_binner& b, dtype sample) { use_simd(simd_rule::integer, sample, &b.rule); }
  void use_simd(simd_rule rule, dtype sample, const void* data) {
    simd = simd_kernel(rule, sample);
    simd_rule_data = data;
  }

 private:
  std::int64_t samples_;
};

constexpr std::int64_t kTile = 2048;

template <class T, class Binner>
void simd_codes(const axis_indexer& a, const char* samples, std::int64_t count, std::int32_t* codes) {
  std::int32_t unsettled[kTile];
  const std::int64_t m = a.simd(a.simd_rule_data, samples, count, codes, unsettled);
  if (m == 0) return;
  const Binner b = *static_cast<const Binner*>(a.binner);
  for (std::int64_t u = 0; u < m; ++u) {
    const std::int32_t j = unsettled[u];
    T v;
    std::memcpy(&v, samples + j * static_cast<std::int64_t>(sizeof(T)), sizeof v);
    codes[j] = static_cast<std::int32_t>(b(v));
  }
}

template <class T, class Binner, class Sink>
void run_1d(const axis_indexer& a, const view& column, std::int64_t begin, std::int64_t end, Sink& sink) {
  Sink local = sink;
  if (a.simd && column.stride == 1) {
    const char* base = static_cast<const char*>(column.data);
    std::int32_t codes[kTile];
    for (std::int64_t i = begin; i < end; i += kTile) {
      const std::int64_t count = std::min(kTile, end - i);
      simd_codes<T, Binner>(a, base + i * static_cast<std::int64_t>(sizeof(T)), count, codes);
      local.add_codes(codes, count, i);
    }
  } else {
    const Binner b = *static_cast<const Binner*>(a.binner);
    for_each_sample<T>(column, begin, end, [&](T v, std::int64_t i) { local(b(v), i); });
  }
  sink = local;
}

template <class T, class Binner>
void index_tile(const axis_indexer& a, const view& column, bool flow_bins, bool first_axis, std::int64_t begin,
                std::int64_t count, std::int64_t* flat) {
  const auto& b = *static_cast<const Binner*>(a.binner);
  const std::int64_t bins = a.bins;
  const std::int64_t extent = flow_bins ? bins + 3 : bins;
  const auto fold = [&](std::int64_t k, std::int64_t j) {
    if (flow_bins) k = flow_bin_of(k, bins);
    std::int64_t& f = flat[j];
    if (first_axis) f = k;
    else if (f >= 0) f = k < 0 ? k : f * extent + k;
  };
  if (column.stride == 0) {  // one value repeated (a broadcast scalar): binned once
    T v;
    std::memcpy(&v, column.data, sizeof v);
    const std::int64_t k = b(v);
    for (std::int64_t j = 0; j < count; ++j) fold(k, j);
    return;
  }
  if (a.simd && column.stride == 1) {
    std::int32_t codes[kTile];
    simd_codes<T, Binner>(a, static_cast<const char*>(column.data) + begin * static_cast<std::int64_t>(sizeof(T)), count,
                          codes);
    for (std::int64_t j = 0; j < count; ++j) fold(codes[j], j);
    return;
  }
  for_each_sample<T>(column, begin, begin + count, [&](T v, std::int64_t i) { fold(b(v), i - begin); });
}
/// Fewer samples than this on one thread count straight into the histogram's cells, replicas
/// or not: the copies' allocation and merge cost more than a hot bin's chain over so few.
/// Measured (2-core VM, i64 over 16 bins, a histogram made and filled): 64 samples 0.83 ->
/// 0.48 us uniform, 0.89 -> 0.50 one hot bin; 1024 samples 1.56 -> 1.04; 4096 samples 2.7-2.9
/// us straight against 4.0 with 4 replicas, hot bin or not (bench/small_calls.py for the calls).
constexpr std::int64_t kDirectSamples = 4096;

/// All axes of a job: bins samples [begin, end) and feeds their cells to a sink.
class job_binner {
 public:
  explicit job_binner(const fill_job& job) : columns_(job.columns), flow_bins_(job.plan.flow_bins) {
    for (std::size_t d = 0; d < job.axes->size(); ++d)
      axes_.emplace_back(new axis_indexer((*job.axes)[d], job.columns[d].type, job.plan.edge_table, job.n));
  }

  template <class Sink> void run(std::int64_t begin, std::int64_t end, Sink& sink) const {
    if (axes_.size() == 1 && !flow_bins_) {
      const auto& a = *axes_.front();
      if constexpr (std::is_same_v<Sink, count_sink>) a.count_fn(a, columns_[0], begin, end, sink);
      else if constexpr (std::is_same_v<Sink, direct_sink>) a.direct_fn(a, columns_[0], begin, end, sink);
      else if constexpr (std::is_same_v<Sink, sum_sink>) a.sum_fn(a, columns_[0], begin, end, sink);
      else a.exact_fn(a, columns_[0], begin, end, sink);
      return;
    }
    std::int64_t flat[kTile];
    for (std::int64_t i = begin; i < end; i += kTile) {
      const std::int64_t count = std::min(kTile, end - i);
      for (std::size_t d = 0; d < axes_.size(); ++d)
        axes_[d]->index_fn(*axes_[d], columns_[d], flow_bins_, d == 0, i, count, flat);
      sink.add_codes(flat, count, i);
    }
  }

 private:
  std::vector<std::unique_ptr<axis_indexer>> axes_;
  const std::vector<view>& columns_;
  bool flow_bins_;
};

int thread_count(const policy& p, std::int64_t work_items) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(p.threads, work_items)));
}

std::string fill_name(const fill_job& job) { return "a fill of " + std::to_string(job.cells) + " cells"; }

/// The most threads, up to `wanted`, whose private copies of `per_thread` bytes (and `shared`
/// bytes besides) fit the available memory; 0 where not even one does. Copies of fewer than
/// kCheckedBytes in all are not checked.
int threads_that_fit(int wanted, std::uint64_t per_thread, std::uint64_t shared) {
  const std::uint64_t all = times(per_thread, static_cast<std::uint64_t>(wanted)) + shared;
  if (all < kCheckedBytes) return wanted;
  const std::uint64_t room = available_memory();
  if (room < shared) return 0;
  return static_cast<int>(std::min<std::uint64_t>(wanted, (room - shared) / std::max<std::uint64_t>(per_thread, 1)));
}

/// body() on the threads of a parallel region, or called directly for one thread outside any
/// region: a region, even of one thread, costs the runtime's team set-up, microseconds of a
/// small call. body's barriers and worksharing loops, orphaned, then run as that one thread's.
/// Inside a caller's region they would bind to the caller's team: there a region of its own.
template <class F> void run_threads(int threads, const F& body) {
  if (threads <= 1 && !omp_in_parallel()) {
    body();
    return;
  }
#pragma omp parallel num_threads(threads)
  body();
}

void fill_counts(const fill_job& job) {
  const job_binner binner(job);
  const int shift = job.plan.replicas == 4 ? 2 : 0;
  const auto cells = static_cast<std::size_t>(job.cells);
  int threads = thread_count(job.plan, (job.n + kTile - 1) / kTile);
  // Private u32 copies a thread, and a u64 total: as many threads as fit the memory.
  threads = threads_that_fit(threads, times(cells << shift, 4), times(cells, 8));
  // Straight into the storage where copies would not fit, would outnumber the samples, or are
  // one unreplicated copy anyway (replicas keep their copies: they break a hot bin's chain), or
  // where one thread has too few samples for replicas to pay for their copies.
  if (job.counts64 && (threads == 0 || cells > static_cast<std::size_t>(job.n) ||
                       (threads == 1 && (shift == 0 || job.n < kDirectSamples)))) {
    direct_sink sink{job.counts64, {}};
    binner.run(0, job.n, sink);
    if (job.flow) sink.flow.add_to(*job.flow);
    return;
  }
  if (threads == 0) ensure_memory(times(cells, 12 << shift), fill_name(job) + "'s counts");  // throws
  // Allocated here, not in the parallel region (where bad_alloc would end the process); zeros
  // that cost memory only where counted, each copy cleared again as it is merged.
  std::vector<zeroed_array<std::uint32_t>> privates;
  for (int t = 0; t < threads; ++t) privates.emplace_back(cells << shift, fill_name(job) + "'s private copies");
  zeroed_array<std::uint64_t> total(cells, fill_name(job) + "'s total");
  std::vector<local_flow> flows(static_cast<std::size_t>(threads));

  const std::int64_t per_pass = kMaxSamplesPerMerge * threads;
  for (std::int64_t pass = 0; pass < job.n; pass += per_pass) {
    const std::int64_t pass_n = std::min(per_pass, job.n - pass);
    run_threads(threads, [&] {
      const int t = omp_get_thread_num();
      count_sink sink{privates[static_cast<std::size_t>(t)].data(), shift, {}};
      binner.run(pass + pass_n * t / threads, pass + pass_n * (t + 1) / threads, sink);
      flows[static_cast<std::size_t>(t)].add(sink.flow);  // one pass of several
#pragma omp barrier
#pragma omp for schedule(static)
      for (std::int64_t k = 0; k < job.cells; ++k) {
        std::uint64_t sum = 0;
        for (auto& c : privates) {
          for (std::int64_t r = 0; r < (1 << shift); ++r) {
            std::uint32_t& v = c[static_cast<std::size_t>((k << shift) + r)];
            if (v) {  // untouched cells stay unwritten
              sum += v;
              v = 0;
            }
          }
        }
        if (sum) total[static_cast<std::size_t>(k)] += sum;
      }
    });
  }
  add_counts(job, total.data());
  if (job.flow)
    for (const auto& f : flows) f.add_to(*job.flow);
}

/// Weighted: blocks of plan.block samples in input order. Each block's weights are summed per
/// cell, sequentially from 0.0, into a partial; partials are added to the sums in block order.
/// Threads compute consecutive blocks' partials in parallel and merge them cell-parallel, so
/// every cell sees the same additions in the same order whatever the thread count.
void fill_sums(const fill_job& job) {
  const job_binner binner(job);
  const std::int64_t block = job.plan.block;
  const std::int64_t blocks = (job.n + block - 1) / block;
  const auto cells = static_cast<std::size_t>(job.cells);
  // Many cells: a block touches at most `block` of them; track those instead of sweeping all.
  const bool sparse = job.cells > block;
  // A partial (and, sparse, a mark a cell) a thread: as many threads as fit the memory.
  const int threads = threads_that_fit(thread_count(job.plan, blocks), times(cells, sparse ? 9 : 8), 0);
  if (threads == 0) ensure_memory(times(cells, sparse ? 9 : 8), fill_name(job) + "'s block sums");  // throws
  // Allocated here, not in the parallel region (where bad_alloc would end the process).
  std::vector<zeroed_array<double>> partials;
  std::vector<zeroed_array<char>> seen;
  std::vector<std::vector<std::int64_t>> touched(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    partials.emplace_back(cells, fill_name(job) + "'s block sums");
    if (sparse) {
      seen.emplace_back(cells, fill_name(job) + "'s block sums");
      // A block's cells at most (one block of a whole fill grows as needed).
      touched[static_cast<std::size_t>(t)].reserve(static_cast<std::size_t>(std::min<std::int64_t>(block, 65536)));
    }
  }
  std::vector<local_flow> flows(static_cast<std::size_t>(threads));

  run_threads(threads, [&] {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    auto& partial = partials[t];
    auto& mine = touched[t];
    sum_sink sink{partial.data(), weight_reader(job.weights), sparse ? seen[t].data() : nullptr, &mine, {}};
    const std::int64_t cell_begin = job.cells * static_cast<std::int64_t>(t) / threads;
    const std::int64_t cell_end = job.cells * static_cast<std::int64_t>(t + 1) / threads;
    for (std::int64_t round = 0; round * threads < blocks; ++round) {
      const std::int64_t b = round * threads + static_cast<std::int64_t>(t);
      if (b < blocks) binner.run(b * block, std::min(job.n, (b + 1) * block), sink);
#pragma omp barrier
      const auto ready = static_cast<std::size_t>(std::min<std::int64_t>(threads, blocks - round * threads));
      for (std::size_t u = 0; u < ready; ++u) {
        const double* p = partials[u].data();
        if (sparse) {
          for (std::int64_t k : touched[u])
            if (k >= cell_begin && k < cell_end) job.sums[k] += p[k];
        } else {
          for (std::int64_t k = cell_begin; k < cell_end; ++k) job.sums[k] += p[k];
        }
      }
#pragma omp barrier
      if (sparse) {
        for (std::int64_t k : mine) {
          partial[static_cast<std::size_t>(k)] = 0.0;
          seen[t][static_cast<std::size_t>(k)] = 0;
        }
        mine.clear();
      } else {
        std::fill(partial.data(), partial.data() + cells, 0.0);
      }
    }
    flows[t] = sink.flow;
  });
  if (job.flow)
    for (const auto& f : flows) f.add_to(*job.flow);
}

/// Exact sums (options::exact_sums): each thread adds the weights of its contiguous range of
/// samples straight into the histogram's words, atomically where there are several threads.
void fill_exact(const fill_job& job) {
  const job_binner binner(job);
  const int threads = thread_count(job.plan, (job.n + kTile - 1) / kTile);
  std::vector<local_flow> flows(static_cast<std::size_t>(threads));
  run_threads(threads, [&] {
    const int t = omp_get_thread_num();
    exact_sink sink{job.exact, weight_reader(job.weights), threads > 1, {}};
    binner.run(job.n * t / threads, job.n * (t + 1) / threads, sink);
    flows[static_cast<std::size_t>(t)] = sink.flow;
  });
  if (job.flow)
    for (const auto& f : flows) f.add_to(*job.flow);
}

bool cpu_usable(std::string& detail) {
  detail = std::to_string(hardware_threads()) + " hardware threads, SIMD binning " + simd_target();
  return true;
}

bool cpu_owns(const void*) { return true; }

void cpu_fill(const fill_job& job) {
  if (job.exact) fill_exact(job);
  else if (job.sums) fill_sums(job);
  else fill_counts(job);
}

}  // namespace

cpu_bin_codes cpu_bin_codes_of(const axis& a, const view& column, bool edge_table) {
  const axis_indexer ix(a, column.type, edge_table, std::numeric_limits<std::int64_t>::max());  // as a large fill
  cpu_bin_codes out;
  out.codes.resize(static_cast<std::size_t>(column.size));
  for (std::int64_t i = 0; i < column.size; i += kTile) {
    const std::int64_t count = std::min(kTile, column.size - i);
    ix.index_fn(ix, column, false, true, i, count, out.codes.data() + i);
    if (ix.simd && column.stride == 1) {
      std::int32_t codes[kTile], unsettled[kTile];
      out.simd_settled += count - ix.simd(ix.simd_rule_data,
                                          static_cast<const char*>(column.data) + i * static_cast<std::int64_t>(size_of(column.type)),
                                          count, codes, unsettled);
    }
  }
  return out;
}

const backend_ops& cpu_backend() {
  static const backend_ops ops{backend::cpu, &cpu_usable, &cpu_owns, nullptr, &cpu_fill, nullptr, nullptr};
  return ops;
}

}  // namespace tally::detail

// The CPU backend: threads fill private histograms tile by tile, merged in a fixed order.
//
// Each thread turns a tile of samples into flat cell indices (one typed loop per axis, the
// bin rule inlined), then counts them into private counters or sums them into a block partial.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.hpp"
#include "core/rules.hpp"

namespace tally::detail {
namespace {

constexpr std::int64_t kTile = 2048;
/// Private counters are 32-bit; a thread takes at most this many samples between merges.
constexpr std::int64_t kMaxSamplesPerMerge = std::int64_t{1} << 31;

template <class T> struct type_tag { using type = T; };

template <class F> void with_sample_type(dtype t, F&& f) {
  switch (t) {
    case dtype::u8: return f(type_tag<std::uint8_t>{});
    case dtype::i8: return f(type_tag<std::int8_t>{});
    case dtype::u16: return f(type_tag<std::uint16_t>{});
    case dtype::i16: return f(type_tag<std::int16_t>{});
    case dtype::u32: return f(type_tag<std::uint32_t>{});
    case dtype::i32: return f(type_tag<std::int32_t>{});
    case dtype::u64: return f(type_tag<std::uint64_t>{});
    case dtype::i64: return f(type_tag<std::int64_t>{});
    case dtype::f16: return f(type_tag<half>{});
    case dtype::bf16: return f(type_tag<bfloat16>{});
    case dtype::f32: return f(type_tag<float>{});
    case dtype::f64: return f(type_tag<double>{});
  }
}

struct regular_binner {
  regular_rule rule;
  template <class T> std::int64_t operator()(T v) const {
    return rule.index(sample_traits<T>::to_value(v));
  }
};
struct variable_binner {
  variable_rule rule;
  template <class T> std::int64_t operator()(T v) const {
    return rule.index(sample_traits<T>::to_value(v));
  }
};
struct integer_binner {
  integer_rule rule;
  template <class T> std::int64_t operator()(T v) const { return integer_index(rule, v); }
};

/// Folds axis `binner`'s index of samples [begin, begin + count) into flat row-major cells.
/// A negative entry is a dropped sample and keeps the reason of the first axis that dropped it.
template <class T, class Binner>
void index_tile(const Binner& binner, const view& column, std::int64_t bins, bool first_axis,
                std::int64_t begin, std::int64_t count, std::int64_t* flat) {
  const std::int64_t step = column.stride * static_cast<std::int64_t>(sizeof(T));
  const char* p = static_cast<const char*>(column.data) + begin * step;
  for (std::int64_t j = 0; j < count; ++j, p += step) {
    T v;
    std::memcpy(&v, p, sizeof v);
    const std::int64_t k = binner(v);
    if (first_axis) flat[j] = k;
    else if (flat[j] >= 0) flat[j] = k < 0 ? k : flat[j] * bins + k;
  }
}

using index_tile_fn = void (*)(const void* binner, const view& column, std::int64_t bins,
                               bool first_axis, std::int64_t begin, std::int64_t count,
                               std::int64_t* flat);

template <class T, class Binner>
void index_tile_erased(const void* binner, const view& column, std::int64_t bins, bool first_axis,
                       std::int64_t begin, std::int64_t count, std::int64_t* flat) {
  index_tile<T>(*static_cast<const Binner*>(binner), column, bins, first_axis, begin, count, flat);
}

/// One axis, ready to index tiles of its column: the rule, its edge table, the typed loop.
struct axis_indexer {
  regular_binner regular;
  variable_binner variable;
  integer_binner integer;
  std::vector<double> edge_table;
  const void* binner = nullptr;
  index_tile_fn fn = nullptr;
  std::int64_t bins = 0;

  axis_indexer(const axis& a, dtype sample, bool use_edge_table) : bins(a.bins()) {
    switch (a.kind()) {
      case axis_kind::regular:
        if (use_edge_table) edge_table = a.edges();
        regular.rule = make_regular_rule(a, use_edge_table ? edge_table.data() : nullptr);
        bind(regular, sample);
        break;
      case axis_kind::variable:
        variable.rule = make_variable_rule(a);
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
    with_sample_type(sample, [&](auto tag) {
      fn = &index_tile_erased<typename decltype(tag)::type, Binner>;
    });
  }
};

/// All axes of a job; indexes a tile of samples into flat cells.
class tile_indexer {
 public:
  explicit tile_indexer(const fill_job& job) : columns_(job.columns) {
    for (std::size_t d = 0; d < job.axes->size(); ++d)
      axes_.emplace_back(new axis_indexer((*job.axes)[d], job.columns[d].type, job.plan.edge_table));
  }
  void operator()(std::int64_t begin, std::int64_t count, std::int64_t* flat) const {
    for (std::size_t d = 0; d < axes_.size(); ++d)
      axes_[d]->fn(axes_[d]->binner, columns_[d], axes_[d]->bins, d == 0, begin, count, flat);
  }

 private:
  std::vector<std::unique_ptr<axis_indexer>> axes_;
  const std::vector<view>& columns_;
};

struct local_flow {
  std::uint64_t counts[3] = {0, 0, 0};  // underflow, overflow, nan (indexed by -code - 1)
  void add_to(flow_counts& f) const {
    f.underflow += counts[0];
    f.overflow += counts[1];
    f.nan += counts[2];
  }
};

/// Counts flat cells into `replicas` interleaved copies: sample j uses copy j % replicas, so
/// equal neighbours touch different addresses.
void count_tile(const std::int64_t* flat, std::int64_t count, std::uint32_t* counters,
                int replicas, local_flow& flow) {
  std::int64_t j = 0;
  if (replicas == 4) {
    for (; j + 4 <= count; j += 4) {
      for (int r = 0; r < 4; ++r) {
        const std::int64_t k = flat[j + r];
        if (k >= 0) ++counters[k * 4 + r];
        else ++flow.counts[-k - 1];
      }
    }
  }
  for (; j < count; ++j) {
    const std::int64_t k = flat[j];
    if (k >= 0) ++counters[k * replicas];
    else ++flow.counts[-k - 1];
  }
}

int thread_count(const policy& p, std::int64_t work_items) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(p.threads, work_items)));
}

/// Adds this fill's counts (`add`, per cell) to the destination, or throws without writing
/// anything if a cell would overflow the storage type.
template <class C>
void add_counts(C* destination, const std::vector<std::uint64_t>& add) {
  const std::uint64_t limit = std::numeric_limits<C>::max();
  for (std::size_t k = 0; k < add.size(); ++k) {
    if (add[k] > limit - destination[k])
      throw error("fill: bin " + std::to_string(k) + " would overflow its " +
                  std::to_string(8 * sizeof(C)) + "-bit count (" + std::to_string(destination[k]) +
                  " + " + std::to_string(add[k]) + "); use 64-bit counts");
  }
  for (std::size_t k = 0; k < add.size(); ++k) destination[k] += static_cast<C>(add[k]);
}

void fill_counts(const fill_job& job) {
  const tile_indexer index(job);
  const int replicas = job.plan.replicas;
  const auto cells = static_cast<std::size_t>(job.cells);
  const int threads = thread_count(job.plan, (job.n + kTile - 1) / kTile);
  std::vector<std::vector<std::uint32_t>> privates(static_cast<std::size_t>(threads));
  std::vector<local_flow> flows(static_cast<std::size_t>(threads));
  std::vector<std::uint64_t> total(cells, 0);

  const std::int64_t per_pass = kMaxSamplesPerMerge * threads;
  for (std::int64_t pass = 0; pass < job.n; pass += per_pass) {
    const std::int64_t pass_n = std::min(per_pass, job.n - pass);
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      auto& counters = privates[static_cast<std::size_t>(t)];
      counters.assign(cells * static_cast<std::size_t>(replicas), 0);
      const std::int64_t begin = pass + pass_n * t / threads;
      const std::int64_t end = pass + pass_n * (t + 1) / threads;
      std::int64_t flat[kTile];
      for (std::int64_t i = begin; i < end; i += kTile) {
        const std::int64_t count = std::min(kTile, end - i);
        index(i, count, flat);
        count_tile(flat, count, counters.data(), replicas, flows[static_cast<std::size_t>(t)]);
      }
#pragma omp barrier
#pragma omp for schedule(static)
      for (std::int64_t k = 0; k < job.cells; ++k) {
        std::uint64_t sum = 0;
        for (const auto& c : privates)
          for (int r = 0; r < replicas; ++r) sum += c[static_cast<std::size_t>(k) * replicas + r];
        total[static_cast<std::size_t>(k)] += sum;
      }
    }
  }
  if (job.counts32) add_counts(job.counts32, total);
  else add_counts(job.counts64, total);
  if (job.flow)
    for (const auto& f : flows) f.add_to(*job.flow);
}

/// Weighted: blocks of plan.block samples in input order. Each block's weights are summed per
/// cell, sequentially from 0.0, into a partial; partials are added to the sums in block order.
/// Threads compute consecutive blocks' partials in parallel and merge them cell-parallel, so
/// every cell sees the same additions in the same order whatever the thread count.
void fill_sums(const fill_job& job) {
  const tile_indexer index(job);
  const std::int64_t block = job.plan.block;
  const std::int64_t blocks = (job.n + block - 1) / block;
  const int threads = thread_count(job.plan, blocks);
  const auto cells = static_cast<std::size_t>(job.cells);
  // Many cells: a block touches at most `block` of them; track those instead of sweeping all.
  const bool sparse = job.cells > block;
  std::vector<std::vector<double>> partials(static_cast<std::size_t>(threads));
  std::vector<std::vector<std::int64_t>> touched(static_cast<std::size_t>(threads));
  std::vector<std::vector<char>> seen(static_cast<std::size_t>(threads));
  std::vector<local_flow> flows(static_cast<std::size_t>(threads));
  const view* w = job.weights;
  const std::int64_t w_step = w ? w->stride * static_cast<std::int64_t>(size_of(w->type)) : 0;
  const bool w_f32 = w && w->type == dtype::f32;

#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    auto& partial = partials[static_cast<std::size_t>(t)];
    auto& mine = touched[static_cast<std::size_t>(t)];
    auto& flow = flows[static_cast<std::size_t>(t)];
    auto& is_touched = seen[static_cast<std::size_t>(t)];
    partial.assign(cells, 0.0);
    if (sparse) is_touched.assign(cells, 0);
    const std::int64_t cell_begin = job.cells * t / threads;
    const std::int64_t cell_end = job.cells * (t + 1) / threads;
    std::int64_t flat[kTile];
    for (std::int64_t round = 0; round * threads < blocks; ++round) {
      const std::int64_t b = round * threads + t;
      if (b < blocks) {
        const std::int64_t end = std::min(job.n, (b + 1) * block);
        for (std::int64_t i = b * block; i < end; i += kTile) {
          const std::int64_t count = std::min(kTile, end - i);
          index(i, count, flat);
          const char* wp = w ? static_cast<const char*>(w->data) + i * w_step : nullptr;
          for (std::int64_t j = 0; j < count; ++j, wp += w_step) {
            const std::int64_t k = flat[j];
            if (k < 0) {
              ++flow.counts[-k - 1];
              continue;
            }
            double weight = 1.0;
            if (w_f32) { float f; std::memcpy(&f, wp, sizeof f); weight = f; }
            else if (w) std::memcpy(&weight, wp, sizeof weight);
            if (sparse && !is_touched[static_cast<std::size_t>(k)]) {
              is_touched[static_cast<std::size_t>(k)] = 1;
              mine.push_back(k);
            }
            partial[static_cast<std::size_t>(k)] += weight;
          }
        }
      }
#pragma omp barrier
      const std::int64_t first_block = round * threads;
      const int ready = static_cast<int>(std::min<std::int64_t>(threads, blocks - first_block));
      for (int u = 0; u < ready; ++u) {
        const auto& p = partials[static_cast<std::size_t>(u)];
        if (sparse) {
          for (std::int64_t k : touched[static_cast<std::size_t>(u)])
            if (k >= cell_begin && k < cell_end) job.sums[k] += p[static_cast<std::size_t>(k)];
        } else {
          for (std::int64_t k = cell_begin; k < cell_end; ++k) job.sums[k] += p[static_cast<std::size_t>(k)];
        }
      }
#pragma omp barrier
      if (sparse) {
        for (std::int64_t k : mine) {
          partial[static_cast<std::size_t>(k)] = 0.0;
          is_touched[static_cast<std::size_t>(k)] = 0;
        }
        mine.clear();
      } else {
        std::fill(partial.begin(), partial.end(), 0.0);
      }
    }
  }
  if (job.flow)
    for (const auto& f : flows) f.add_to(*job.flow);
}

bool cpu_usable(std::string& detail) {
  detail = std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " hardware threads";
  return true;
}

bool cpu_owns(const void*) { return true; }

void cpu_fill(const fill_job& job) {
  if (job.sums) fill_sums(job);
  else fill_counts(job);
}

}  // namespace

const backend_ops& cpu_backend() {
  static const backend_ops ops{backend::cpu, &cpu_usable, &cpu_owns, &cpu_fill};
  return ops;
}

}  // namespace tally::detail

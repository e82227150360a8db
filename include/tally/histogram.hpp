// The histogram: axes x storage, filled chunk by chunk on a backend, read at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "tally/axis.hpp"
#include "tally/dtype.hpp"
#include "tally/error.hpp"
#include "tally/plan.hpp"

namespace tally {

namespace detail {
struct fill_job;
struct backend_ops;
struct pending_slot;  // fills kept on a backend's device (src/core/histogram.cpp)

/// The cells' allocator: calloc's zeros, which cost memory only where they are written (a
/// histogram of 2^31 cells that a fill touches in a few places holds a few pages), and no
/// value-initialisation that would write them all again. Storage is made once, at its size.
template <class T> struct zeroed_allocator {
  using value_type = T;
  zeroed_allocator() = default;
  template <class U> zeroed_allocator(const zeroed_allocator<U>&) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    if (void* p = std::calloc(n, sizeof(T))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <class U> void construct(U*) {}  // value-initialisation: calloc's zeros already
  template <class U, class A, class... More> void construct(U* p, A&& a, More&&... more) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a), std::forward<More>(more)...);
  }
  friend bool operator==(zeroed_allocator, zeroed_allocator) { return true; }
  friend bool operator!=(zeroed_allocator, zeroed_allocator) { return false; }
};
template <class T> using cell_storage = std::vector<T, zeroed_allocator<T>>;
}  // namespace detail

struct options {
  tally::backend backend = tally::backend::automatic;
  tally::strategy strategy = tally::strategy::automatic;
  /// Storage of unweighted counts. u64 by default (numpy returns int64); u32 on request.
  /// Either way a count never overflows silently: a fill that would overflow throws.
  tally::count_type counts = tally::count_type::u64;
  /// Store sums of weights (f64) instead of counts. An unweighted fill adds 1 per sample.
  /// Sums are accumulated in blocks of sum_block samples in input order, blocks added in
  /// order, so the bits are the same on every run and for any number of threads (for
  /// regular axes this is numpy.histogram's order, so the sums equal numpy's bit for bit).
  bool weighted = false;
  /// With weighted, on the CPU: samples a block of the sums' order. 65536 is numpy.histogram's;
  /// 0 is one block, every weight added in input order (numpy.bincount's), on one thread.
  std::int64_t sum_block = 65536;
  /// With weighted: keep each cell's sum of weights exactly, as fixed-point integer words (every
  /// f32 and f64 weight is an integer multiple of 2^-1074) with flags for +inf, -inf and NaN, on
  /// every backend. Integer additions commute, so any split of the data into fills, on any
  /// backends, merged (+=) in any order, gives the same words, and sums() their one correctly
  /// rounded value (the nearest double to the exact sum; NaN for a NaN weight or both infinities,
  /// else the infinity seen, or the one the rounding overflows to). Costs 280 bytes of words a
  /// cell beside the 8-byte rounded sum, and each fill and merge rounds every cell once.
  bool exact_sums = false;
  /// Count underflow, overflow and NaN samples (dropped from the bins either way).
  bool flow = false;
  /// Keep flow bins on every axis, as boost-histogram places them: each axis has bins + 3 cells,
  /// its underflow first, then its bins, its overflow and its NaN bin (shape() says so), and no
  /// sample is dropped: a sample of an N-D histogram lands in the flow bins of every axis it
  /// falls outside. flow() then totals the cells on flow bins by the first such axis, as the
  /// counters would. Counts only (not weighted), not with channels or density().
  bool flow_bins = false;
  /// CPU threads; 0 means as many as OpenMP would start (OMP_NUM_THREADS, omp_set_num_threads),
  /// at most the hardware threads.
  int threads = 0;
};

/// The u64 digits of one cell's exact sum in histogram::exact_digits: each of its 34 fixed-point
/// limbs' two 32-bit halves, then a counter for each of +inf, -inf and NaN.
constexpr int exact_digits_per_cell = 71;

/// Samples dropped from the bins. For N-D, a dropped sample is counted once, under the
/// reason of the first axis (in axis order) that rejects it.
struct flow_counts {
  std::uint64_t underflow = 0;
  std::uint64_t overflow = 0;
  std::uint64_t nan = 0;
  std::uint64_t total() const { return underflow + overflow + nan; }
};

/// Fills of samples (and weights) in one device's memory keep what they add in a copy of the
/// cells on that device, and the storage takes it at its first read (counts(), counts_u64(),
/// sums(), flow(), ==, +=, serialize, a copy, a CPU fill, fill_channels, ...): a loop of such
/// fills brings nothing back to the host until the result is read. Exceptions, which bring each
/// fill back as before: plain f64 sums over a storage that is no longer all zero (after a read, a
/// CPU fill, a merge or assign) gather one fill at a time, since the host adds fills in order;
/// u32 counts whose largest cell could pass 2^32 - 1; fill_channels. The copy holds the cells'
/// size in device memory until reset() or destruction. A fill still returns only once the device
/// has counted (the samples may then be reused), and its errors surface there. Pointers from
/// counts_u64(), counts_u32() and sums_data() show the storage as of that call: ask again after
/// a later fill. Const members may be called from several threads at once.
class histogram {
 public:
  /// A 1-D histogram.
  explicit histogram(axis a, options opts = {});
  /// An N-D histogram over axes.size() >= 1 axes; cells flattened row-major (the last axis
  /// varies fastest), as numpy.histogramdd.
  explicit histogram(std::vector<axis> axes, options opts = {});
  ~histogram();
  /// A copy holds the cells as read from `other` (its pending fills taken first).
  histogram(const histogram& other);
  histogram& operator=(const histogram& other);
  histogram(histogram&& other) noexcept;
  histogram& operator=(histogram&& other) noexcept;

  /// 1-D fill; `samples` holds any sample type.
  void fill(const view& samples);
  /// 1-D weighted fill; `weights` (f32 or f64) has one weight per sample.
  void fill(const view& samples, const view& weights);
  /// N-D fill: one column per axis, all of the same length.
  void fill(const std::vector<view>& columns);
  void fill(const std::vector<view>& columns, const view& weights);
  /// Zero all cells and flow counters.
  void reset();
  /// Sets every cell (size() of them, row-major: counts of a count histogram, sums of a
  /// weighted one), the flow counters (all 0 unless options::flow; ignored with flow bins, which
  /// the cells hold) and samples(): a histogram
  /// counted elsewhere, such as another library's. Throws tally::error, changing nothing, for
  /// the wrong number of cells, the wrong kind, or a count beyond a u32 histogram's storage.
  void assign(const std::vector<std::uint64_t>& counts, flow_counts dropped, std::uint64_t samples);
  void assign(const std::vector<double>& sums, flow_counts dropped, std::uint64_t samples);

  /// options::exact_sums: each cell's exact sum as exact_digits_per_cell u64 digits, row-major,
  /// in a form any integer sum adds without carries (NCCL's, an MPI or torch.distributed
  /// all-reduce): the digit-wise sum of fewer than 2^31 histograms' digits, given to
  /// assign_exact_digits, is their merge bit for bit. Throws tally::error without exact sums.
  std::vector<std::uint64_t> exact_digits() const;
  /// Sets every cell's exact sum from digits as exact_digits gives them (or sums of them), the
  /// flow counters and samples(), as assign does; throws tally::error, changing nothing, for the
  /// wrong number of digits or a histogram without exact sums.
  void assign_exact_digits(const std::vector<std::uint64_t>& digits, flow_counts dropped, std::uint64_t samples);

  /// Adds other's cells, flow counters and samples() into this histogram: the merge of
  /// histograms filled with parts of the data (`h += h` doubles h). `other` must have the same
  /// axes (axis ==: kind, bins, edges bit for bit, edge type, exact range, integer edges), the
  /// same storage (weighted, counts width) and the same flow option, else tally::error; its
  /// backend, strategy and threads may differ (this histogram keeps its own). Counts add
  /// exactly, and a count that would overflow its storage throws before anything changes, as a
  /// fill does. Sums of weights add in f64: each merged cell is fl(a + b), so a merge equals one
  /// fill of all the data bit for bit where every partial sum is exact in f64 (weights that are
  /// small multiples of a power of two), and otherwise within the rounding of the additions.
  /// With options::exact_sums the words add exactly and the flags combine, so a merge always
  /// equals one fill bit for bit; exact and plain f64 sums do not mix (tally::error).
  histogram& operator+=(const histogram& other);
  /// How other's axes, storage or flow option differ from this histogram's, in words; empty
  /// where += can combine them.
  std::string layout_difference(const histogram& other) const;

  /// The same axes, storage and flow option (as +=), and the same cells (sums compared bit for
  /// bit; exact sums by their words and flags), flow counters and samples(). An exact and a plain
  /// histogram of sums are not equal. How a histogram fills (backend, strategy, threads) is
  /// not compared.
  friend bool operator==(const histogram& a, const histogram& b);
  friend bool operator!=(const histogram& a, const histogram& b) { return !(a == b); }

  const std::vector<axis>& axes() const { return axes_; }
  const options& opts() const { return opts_; }
  /// Bins per axis (plus 3 each with options::flow_bins).
  std::vector<std::int64_t> shape() const;
  /// Number of cells (product of the shape).
  std::int64_t size() const { return cells_; }
  bool weighted() const { return opts_.weighted; }

  /// Counts widened to 64 bits (throws for a weighted histogram).
  std::vector<std::uint64_t> counts() const;
  /// Direct access to the storage: the pointer for the storage type in use, else nullptr.
  const std::uint64_t* counts_u64() const;
  const std::uint32_t* counts_u32() const;
  /// Sums of weights, a copy (throws for an unweighted histogram); exact sums correctly rounded.
  std::vector<double> sums() const;
  /// The sums in place: the storage (exact sums: their rounded values, brought up to date by every
  /// read), or nullptr for an unweighted histogram.
  const double* sums_data() const;
  /// Counts or sums as doubles.
  std::vector<double> values() const;
  /// numpy's density: values / bin volume / total, dividing by each axis' widths in axis
  /// order and then by the total, as numpy.histogramdd does (and numpy.histogram for 1-D).
  std::vector<double> density() const;
  /// Dropped samples by reason (throws unless options::flow).
  flow_counts flow() const;
  /// Samples passed to fill since construction or reset, in bins or not.
  std::uint64_t samples() const { return samples_; }

  /// The policy the planner picks for a fill of n samples of type t (with weights of
  /// `weight_type`, f32 or f64, where the histogram is weighted: f32 weights sum exactly on the
  /// GPU).
  policy plan_for(dtype t, std::int64_t n, dtype weight_type = dtype::f64) const;

 private:
  friend histogram deserialize(const void* data, std::size_t size);
  friend std::vector<std::byte> serialize(const histogram& h);
  friend void fill_channels(std::vector<histogram>& per_channel, const view& samples, int channels);
  plan_request request(backend where, dtype t, std::int64_t n, const view* first, const view* weights) const;
  void fill_impl(const std::vector<view>& columns, const view* weights);
  /// Adds the fill to the pending copy on the backend's device where it can; false: not done.
  bool fill_pending(const detail::fill_job& job, const detail::backend_ops& backend);
  /// Brings the pending fills into the storage (the storage members are mutable for this).
  void settle() const;
  /// Before a change of the storage on the host: the pending fills taken, host sums non-zero.
  void before_host_change();
  /// Fresh zero cells of the storage type (checked against the memory this process can have).
  void allocate();
  /// After a fill of n samples: samples() and, where the host's exact words changed, the
  /// rounded sums.
  void filled(std::uint64_t n, bool host_changed = true);
  /// Exact sums: every cell's words rounded into sums_.
  void round_exact() const;
  /// Sets the storage pointers and flow counters of `job` to this histogram's.
  void aim_at_storage(detail::fill_job& job) const;
  /// assign's checks of everything but the cells' values.
  void check_assign(std::size_t cells, bool sums, const flow_counts& dropped) const;
  /// Checks a fill's arguments and sets `job` (storage, plan) and the backend that runs it.
  void prepare(const std::vector<view>& columns, const view* weights, detail::fill_job& job,
               const detail::backend_ops*& backend);

  std::vector<axis> axes_;
  options opts_;
  std::int64_t cells_ = 0;
  // The storage: mutable, since settle() (in const readers) brings pending fills into it.
  mutable detail::cell_storage<std::uint64_t> counts64_;
  mutable detail::cell_storage<std::uint32_t> counts32_;
  mutable detail::cell_storage<double> sums_;          // weighted: the sums (exact sums: rounded)
  mutable detail::cell_storage<std::uint64_t> exact_;  // exact sums: kWideCellWords words a cell
  mutable flow_counts flow_;
  std::uint64_t samples_ = 0;  // every fill's, pending ones included
  std::unique_ptr<detail::pending_slot> pending_;
};

/// Interleaved samples with `channels` values per pixel (RGB: 3, RGBA: 4, any C >= 1):
/// channel c fills per_channel[c]; per_channel may hold fewer histograms than channels (the
/// first ones are active, as CUB's active channels). samples.size must be a multiple of C.
void fill_channels(std::vector<histogram>& per_channel, const view& samples, int channels);

/// The D column views of a row-major n x D sample matrix held in `matrix` (n * D elements).
std::vector<view> columns_of(const view& matrix, int dims);

}  // namespace tally

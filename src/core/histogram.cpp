// The histogram object: validates every argument, owns the storage, hands fills to a backend.
#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <string>

#include "core/backend.hpp"
#include "core/exact_sum.hpp"
#include "core/memory.hpp"
#include "core/rules.hpp"
#include "tally/histogram.hpp"

namespace tally {
namespace detail {

/// A histogram's pending copy (backend.hpp) and what the storage knows of it.
struct pending_slot {
  std::mutex mutex;  // settle() runs in const members, which several threads may call at once
  std::unique_ptr<pending_cells> cells;
  bool holds = false;      // cells hold fills the storage has not taken
  bool host_zero = true;   // the host's sums are still all zero (plain f64 sums may then gather)
  std::uint64_t most = 0;  // while holds, u32 counts: the largest host cell plus the samples gathered
};

std::int64_t cell_count(const std::vector<axis>& axes, bool flow_bins) {
  if (axes.empty()) throw error("histogram: needs at least one axis");
  std::int64_t cells = 1;
  for (const auto& a : axes) {
    const std::int64_t extent = a.bins() + (flow_bins ? 3 : 0);
    if (extent > std::numeric_limits<std::int64_t>::max() / cells)
      throw error("histogram: the number of cells (product of the bins of " +
                  std::to_string(axes.size()) + " axes) overflows 64 bits");
    cells *= extent;
  }
  return cells;
}

void check_view(const view& v, const std::string& what) {
  size_of(v.type);  // throws for an unknown type code
  if (v.size < 0) throw error(what + ": size must be >= 0, got " + std::to_string(v.size));
  if (v.size > 0 && v.data == nullptr)
    throw error(what + ": null data pointer with " + std::to_string(v.size) + " elements");
  if (v.stride < 0) throw error(what + ": stride must be >= 0 elements, got " + std::to_string(v.stride));
}

void check_fill(const std::vector<axis>& axes, bool weighted, const std::vector<view>& columns,
                const view* weights) {
  if (columns.size() != axes.size())
    throw error("fill: " + std::to_string(axes.size()) + " axes need " +
                std::to_string(axes.size()) + " sample columns, got " + std::to_string(columns.size()));
  for (std::size_t d = 0; d < columns.size(); ++d) {
    check_view(columns[d], "fill: column " + std::to_string(d));
    if (columns[d].size != columns[0].size)
      throw error("fill: columns differ in length: column 0 has " + std::to_string(columns[0].size) +
                  " samples, column " + std::to_string(d) + " has " + std::to_string(columns[d].size));
  }
  if (!weights) return;
  const std::int64_t n = columns[0].size;
  if (!weighted)
    throw error("fill: weights given to an unweighted histogram; construct it with options.weighted = true");
  check_view(*weights, "fill: weights");
  if (weights->type != dtype::f32 && weights->type != dtype::f64)
    throw error("fill: weights must be f32 or f64, got " + std::string(name_of(weights->type)));
  if (weights->size != n)
    throw error("fill: " + std::to_string(n) + " samples need " + std::to_string(n) + " weights, got " +
                std::to_string(weights->size));
}

plan_request make_request(const std::vector<axis>& axes, const options& opts, backend where, dtype t,
                          std::int64_t n, const view* first, const view* weights) {
  plan_request r;
  // One aligned, unit-stride column (what plan_for assumes): vector loads apply.
  r.contiguous = axes.size() == 1 && !opts.flow_bins &&
                 (!first || (first->stride == 1 &&
                             reinterpret_cast<std::uintptr_t>(first->data) % size_of(first->type) == 0));
  r.table_bytes = table_bytes(axes.front(), t);
  r.where = where;
  r.wanted = opts.strategy;
  r.kind = rule_kind(axes.front(), t);
  r.cells = cell_count(axes, opts.flow_bins);
  r.flow_bins = opts.flow_bins;
  r.dims = static_cast<int>(axes.size());
  r.sample = t;
  r.weighted = opts.weighted;
  r.exact_sums = opts.exact_sums;
  r.sum_block = opts.sum_block;
  // A fill's weights, or the ones of a fill without (exact in f32); a plan without a fill
  // assumes f64 weights, numpy's default.
  if (first) r.weight_type = weights ? weights->type : dtype::f32;
  r.counts = opts.counts;
  r.n = n;
  r.threads = opts.threads;
  if (const backend_ops* ops = find_backend(where); ops && ops->describe) ops->describe(r);
  return r;
}

void check_channels(const view& samples, int channels, std::size_t histograms, const std::string& call) {
  if (channels < 1) throw error(call + ": channels must be >= 1, got " + std::to_string(channels));
  if (histograms > static_cast<std::size_t>(channels))
    throw error(call + ": " + std::to_string(histograms) + " histograms for " + std::to_string(channels) +
                " channels; at most one per channel");
  check_view(samples, call + ": samples");
  if (samples.size % channels != 0)
    throw error(call + ": " + std::to_string(samples.size) + " samples are not a whole number of " +
                std::to_string(channels) + "-channel pixels");
}

view channel_of(const view& samples, int c, int channels) {
  view v = samples;
  v.data = static_cast<const char*>(samples.data) +
           static_cast<std::int64_t>(c) * samples.stride * static_cast<std::int64_t>(size_of(samples.type));
  v.size = samples.size / channels;
  v.stride = samples.stride * channels;
  return v;
}

}  // namespace detail

namespace {

/// backend::automatic: the first non-CPU backend that owns the memory, else the CPU.
const detail::backend_ops& resolve_backend(backend wanted, const std::vector<view>& columns) {
  if (wanted == backend::automatic) {
    for (const auto& b : detail::backend_table()) {
      if (b.which == backend::cpu) continue;
      for (const auto& c : columns)
        if (c.data && b.owns(c.data)) return b;
    }
    return detail::cpu_backend();
  }
  const auto* ops = detail::find_backend(wanted);
  if (!ops)
    throw error("backend " + std::string(name_of(wanted)) +
                " is not compiled into this build of tally");
  std::string detail;
  if (!ops->usable(detail))
    throw error("backend " + std::string(name_of(wanted)) + " is not usable here: " + detail);
  if (wanted == backend::cpu) {
    for (const auto& b : detail::backend_table())
      for (const auto& c : columns)
        if (b.which != backend::cpu && c.data && b.owns(c.data))
          throw error("backend cpu: the samples are in " + std::string(name_of(b.which)) +
                      " memory; use that backend or copy them to the host");
  }
  return *ops;
}

}  // namespace

histogram::histogram(axis a, options opts) : histogram(std::vector<axis>{std::move(a)}, opts) {}

histogram::histogram(std::vector<axis> axes, options opts)
    : axes_(std::move(axes)), opts_(opts), pending_(std::make_unique<detail::pending_slot>()) {
  if (opts_.threads < 0)
    throw error("histogram: threads must be >= 0 (0: all), got " + std::to_string(opts_.threads));
  if (opts_.sum_block < 0)
    throw error("histogram: sum_block must be >= 0 (0: one block), got " + std::to_string(opts_.sum_block));
  if (opts_.exact_sums && !opts_.weighted)
    throw error("histogram: exact_sums keeps sums of weights; construct with options.weighted = true");
  if (opts_.flow_bins && opts_.weighted)
    throw error("histogram: flow_bins counts samples; a weighted histogram keeps no flow bins");
  cells_ = detail::cell_count(axes_, opts_.flow_bins);
  allocate();
}

histogram::~histogram() = default;
histogram::histogram(histogram&&) noexcept = default;
histogram& histogram::operator=(histogram&&) noexcept = default;

histogram::histogram(const histogram& other)
    : axes_(other.axes_), opts_(other.opts_), cells_(other.cells_), samples_(other.samples_),
      pending_(std::make_unique<detail::pending_slot>()) {
  other.settle();
  counts64_ = other.counts64_;
  counts32_ = other.counts32_;
  sums_ = other.sums_;
  exact_ = other.exact_;
  flow_ = other.flow_;
  pending_->host_zero = !other.pending_ || other.pending_->host_zero;
}

histogram& histogram::operator=(const histogram& other) {
  if (this != &other) *this = histogram(other);
  return *this;
}

void histogram::allocate() {
  const auto n = static_cast<std::size_t>(cells_);
  const std::string what = "a histogram of " + std::to_string(cells_) + " cells";
  const std::size_t words = opts_.exact_sums ? detail::kWideCellWords * sizeof(std::uint64_t) : 0;
  detail::ensure_reservable(
      detail::times(n, opts_.weighted ? sizeof(double) + words : opts_.counts == count_type::u32 ? 4 : 8), what);
  try {
    if (opts_.exact_sums) exact_ = detail::cell_storage<std::uint64_t>(detail::times(n, detail::kWideCellWords));
    if (opts_.weighted) sums_ = detail::cell_storage<double>(n);
    else if (opts_.counts == count_type::u32) counts32_ = detail::cell_storage<std::uint32_t>(n);
    else counts64_ = detail::cell_storage<std::uint64_t>(n);
  } catch (const std::bad_alloc&) {
    throw memory_error(what + ": could not allocate its " + std::to_string(cells_) + " cells");
  }
}

void histogram::fill(const view& samples) { fill_impl({samples}, nullptr); }
void histogram::fill(const view& samples, const view& weights) { fill_impl({samples}, &weights); }
void histogram::fill(const std::vector<view>& columns) { fill_impl(columns, nullptr); }
void histogram::fill(const std::vector<view>& columns, const view& weights) {
  fill_impl(columns, &weights);
}

plan_request histogram::request(backend where, dtype t, std::int64_t n, const view* first,
                                 const view* weights) const {
  return detail::make_request(axes_, opts_, where, t, n, first, weights);
}

policy histogram::plan_for(dtype t, std::int64_t n, dtype weight_type) const {
  const backend where = opts_.backend == backend::automatic ? backend::cpu : opts_.backend;
  plan_request r = request(where, t, n, nullptr, nullptr);
  r.weight_type = weight_type;
  return plan(r);
}

void histogram::prepare(const std::vector<view>& columns, const view* weights, detail::fill_job& job,
                        const detail::backend_ops*& backend) {
  detail::check_fill(axes_, opts_.weighted, columns, weights);
  backend = &resolve_backend(opts_.backend, columns);
  job.axes = &axes_;
  job.columns = columns;
  job.weights = weights;
  job.n = columns[0].size;
  aim_at_storage(job);
  plan_request r = request(backend->which, columns[0].type, job.n, &columns[0], weights);
  job.plan = plan(r);
}

void histogram::aim_at_storage(detail::fill_job& job) const {
  job.cells = cells_;
  job.counts64 = counts64_.empty() ? nullptr : counts64_.data();
  job.counts32 = counts32_.empty() ? nullptr : counts32_.data();
  job.sums = sums_.empty() || opts_.exact_sums ? nullptr : sums_.data();
  job.exact = exact_.empty() ? nullptr : exact_.data();
  job.flow = opts_.flow ? &flow_ : nullptr;
}

void histogram::fill_impl(const std::vector<view>& columns, const view* weights) {
  detail::fill_job job;
  const detail::backend_ops* backend = nullptr;
  prepare(columns, weights, job, backend);
  if (job.n == 0) return;
  if (fill_pending(job, *backend)) return filled(static_cast<std::uint64_t>(job.n), false);
  before_host_change();
  backend->fill(job);
  filled(static_cast<std::uint64_t>(job.n));
}

bool histogram::fill_pending(const detail::fill_job& job, const detail::backend_ops& backend) {
  if (!backend.pending || !pending_) return false;
  detail::pending_slot& slot = *pending_;
  // u32 counts gather only while no cell can pass 2^32 - 1: the largest host cell (found once a
  // gathering) plus every sample gathered. Beyond, each fill is checked on the host before it
  // changes anything.
  constexpr std::uint64_t u32_max = 0xFFFFFFFFu;
  const auto n = static_cast<std::uint64_t>(job.n);
  if (job.counts32) {
    if (!slot.holds) slot.most = counts32_.empty() ? 0 : *std::max_element(counts32_.begin(), counts32_.end());
    if (n > u32_max - slot.most) return false;
  }
  // Plain f64 sums: fl(fl(h + a) + b) is the host's order, and a pending fl(a + b) keeps it only
  // over h = 0; so over other sums the copy takes one fill at a time.
  if (job.sums && slot.holds && !slot.host_zero) settle();
  if (!slot.cells || !slot.cells->fill(job)) {
    settle();  // a copy on other memory: its fills reach the storage before a copy here starts
    slot.cells = backend.pending(job, opts_);
    if (!slot.cells || !slot.cells->fill(job)) return false;
  }
  slot.holds = true;
  slot.most += n;
  return true;
}

void histogram::settle() const {
  if (!pending_) return;
  std::lock_guard<std::mutex> lock(pending_->mutex);
  if (!pending_->holds) return;
  detail::fill_job into;
  into.axes = &axes_;
  into.plan.threads = opts_.threads;  // the host's additions on every thread (0), or the caller's
  aim_at_storage(into);
  pending_->cells->settle(into);
  pending_->holds = false;
  pending_->host_zero = false;
  if (opts_.exact_sums) round_exact();
}

void histogram::before_host_change() {
  settle();
  if (pending_) pending_->host_zero = false;
}

namespace {

/// The storage was overwritten or zeroed: the pending copy and its fills are dropped (its device
/// memory freed; a later fill makes a new one).
void drop_pending(detail::pending_slot* slot, bool host_zero) {
  if (!slot) return;
  slot->cells.reset();
  slot->holds = false;
  slot->host_zero = host_zero;
}

}  // namespace

void histogram::filled(std::uint64_t n, bool host_changed) {
  samples_ += n;
  if (opts_.exact_sums && host_changed) round_exact();
}

void histogram::round_exact() const {
  const std::uint64_t* words = exact_.data();
  for (std::int64_t c = 0; c < cells_; ++c, words += detail::kWideCellWords) {
    const double v = detail::exact_value<detail::wide_exact>(words, static_cast<unsigned>(words[detail::kWideWords]));
    // Written only where it changed: calloc's untouched zeros cost no memory until written.
    double& sum = sums_[static_cast<std::size_t>(c)];
    if (std::memcmp(&sum, &v, sizeof v) != 0) sum = v;
  }
}

void histogram::reset() {
  allocate();  // fresh zeros, not a sweep that would write every cell (and cost its memory)
  drop_pending(pending_.get(), true);
  flow_ = {};
  samples_ = 0;
}

namespace {

/// An axis in a few words, for messages: kind, bins, outer edges and edge type.
std::string summary(const axis& a) {
  const char* kind = a.kind() == axis_kind::regular ? "regular" : a.kind() == axis_kind::variable ? "variable" : "integer";
  return std::string(kind) + "(" + std::to_string(a.bins()) + " bins over [" + detail::exact_text(a.lo()) + ", " +
         detail::exact_text(a.hi()) + "], " + std::string(name_of(a.edge_type())) + " edges" +
         (a.has_exact_range() ? ", exact range" : "") + (a.integer_edges().empty() ? "" : ", integer edges") + ")";
}

const char* storage_name(const options& o) {
  if (o.exact_sums) return "exact sums of weights";
  if (o.weighted) return "f64 sums of weights";
  return o.counts == count_type::u32 ? "u32 counts" : "u64 counts";
}

}  // namespace

std::string histogram::layout_difference(const histogram& other) const {
  if (axes_.size() != other.axes_.size())
    return std::to_string(axes_.size()) + " axes against " + std::to_string(other.axes_.size());
  for (std::size_t d = 0; d < axes_.size(); ++d)
    if (axes_[d] != other.axes_[d])
      return "axis " + std::to_string(d) + " differs: " + summary(axes_[d]) + " against " + summary(other.axes_[d]) +
             (summary(axes_[d]) == summary(other.axes_[d]) ? " (inner edges differ)" : "");
  if (std::string(storage_name(opts_)) != storage_name(other.opts_))
    return std::string(storage_name(opts_)) + " against " + storage_name(other.opts_);
  if (opts_.flow != other.opts_.flow)
    return std::string("flow counters ") + (opts_.flow ? "on against off" : "off against on");
  if (opts_.flow_bins != other.opts_.flow_bins)
    return std::string("flow bins ") + (opts_.flow_bins ? "on against off" : "off against on");
  return {};
}

histogram& histogram::operator+=(const histogram& other) {
  if (const std::string why = layout_difference(other); !why.empty())
    throw error("merge: the histograms differ: " + why);
  // Both histograms' pending fills taken, then every overflow check before the first change.
  other.settle();
  before_host_change();
  constexpr auto u64_max = std::numeric_limits<std::uint64_t>::max();
  const auto check = [&](std::uint64_t a, std::uint64_t b, const char* what) {
    if (b > u64_max - a)
      throw error(std::string("merge: ") + what + " would overflow 64 bits (" + std::to_string(a) + " + " +
                  std::to_string(b) + ")");
  };
  check(samples_, other.samples_, "samples()");
  check(flow_.underflow, other.flow_.underflow, "the underflow count");
  check(flow_.overflow, other.flow_.overflow, "the overflow count");
  check(flow_.nan, other.flow_.nan, "the NaN count");
  const auto n = static_cast<std::size_t>(cells_);
  if (opts_.exact_sums) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t* to = exact_.data() + i * detail::kWideCellWords;
      // A copy of other's cell: other may be this histogram, whose carries would change it.
      std::uint64_t from[detail::kWideCellWords];
      std::memcpy(from, other.exact_.data() + i * detail::kWideCellWords, sizeof from);
      detail::add_wide_cell(to, from, detail::plain_fetch_add{});
    }
  } else if (opts_.weighted) {
    for (std::size_t i = 0; i < n; ++i) sums_[i] += other.sums_[i];
  } else if (opts_.counts == count_type::u32) {
    detail::merge_counts(counts32_.data(), other.counts32_.data(), n);
  } else {
    detail::merge_counts(counts64_.data(), other.counts64_.data(), n);
  }
  flow_.underflow += other.flow_.underflow;
  flow_.overflow += other.flow_.overflow;
  flow_.nan += other.flow_.nan;
  samples_ += other.samples_;
  if (opts_.exact_sums) round_exact();
  return *this;
}

bool operator==(const histogram& a, const histogram& b) {
  if (!a.layout_difference(b).empty() || a.samples_ != b.samples_) return false;
  a.settle();
  b.settle();
  if (a.flow_.underflow != b.flow_.underflow || a.flow_.overflow != b.flow_.overflow || a.flow_.nan != b.flow_.nan)
    return false;
  const auto n = static_cast<std::size_t>(a.cells_);
  if (a.opts_.exact_sums) return std::equal(a.exact_.begin(), a.exact_.end(), b.exact_.begin());
  if (a.opts_.weighted) return std::memcmp(a.sums_.data(), b.sums_.data(), n * sizeof(double)) == 0;
  if (a.opts_.counts == count_type::u32) return std::equal(a.counts32_.begin(), a.counts32_.end(), b.counts32_.begin());
  return std::equal(a.counts64_.begin(), a.counts64_.end(), b.counts64_.begin());
}

void histogram::check_assign(std::size_t cells, bool sums, const flow_counts& dropped) const {
  if (sums != opts_.weighted)
    throw error(sums ? "assign: sums given to a histogram of counts" : "assign: counts given to a weighted histogram");
  if (cells != static_cast<std::size_t>(cells_))
    throw error("assign: " + std::to_string(cells) + " cells given to a histogram of " + std::to_string(cells_));
  if (!opts_.flow && dropped.total() != 0) throw error("assign: flow counts given to a histogram without flow counters");
}

void histogram::assign(const std::vector<std::uint64_t>& counts, flow_counts dropped, std::uint64_t samples) {
  check_assign(counts.size(), false, dropped);
  if (opts_.counts == count_type::u32) {
    const auto big = std::find_if(counts.begin(), counts.end(), [](std::uint64_t c) { return c > 0xFFFFFFFFu; });
    if (big != counts.end())
      throw error("assign: bin " + std::to_string(big - counts.begin()) + "'s count " + std::to_string(*big) +
                  " does not fit a 32-bit count; use 64-bit counts");
    drop_pending(pending_.get(), false);
    std::copy(counts.begin(), counts.end(), counts32_.begin());
  } else {
    drop_pending(pending_.get(), false);
    std::copy(counts.begin(), counts.end(), counts64_.begin());
  }
  flow_ = opts_.flow_bins ? flow_counts{} : dropped;  // flow bins: the cells hold the flow
  samples_ = samples;
}

void histogram::assign(const std::vector<double>& sums, flow_counts dropped, std::uint64_t samples) {
  check_assign(sums.size(), true, dropped);
  drop_pending(pending_.get(), false);
  if (opts_.exact_sums) {
    // Each sum is exactly representable in the words: they are the sum's, or its flag.
    std::fill(exact_.begin(), exact_.end(), 0);
    for (std::size_t i = 0; i < sums.size(); ++i) {
      std::uint64_t* cell = exact_.data() + i * detail::kWideCellWords;
      cell[detail::kWideWords] = detail::add_wide(cell, sums[i], detail::plain_fetch_add{});
    }
    round_exact();
  } else {
    std::copy(sums.begin(), sums.end(), sums_.begin());
  }
  flow_ = dropped;
  samples_ = samples;
}

static_assert(exact_digits_per_cell == detail::kWideDigits, "the public digit count is the core's");

std::vector<std::uint64_t> histogram::exact_digits() const {
  if (!opts_.exact_sums) throw error("exact_digits: the histogram keeps no exact sums (options.exact_sums)");
  settle();
  std::vector<std::uint64_t> digits(detail::times(static_cast<std::size_t>(cells_), detail::kWideDigits));
  for (std::int64_t i = 0; i < cells_; ++i)
    detail::split_wide_digits(exact_.data() + i * detail::kWideCellWords, digits.data() + i * detail::kWideDigits);
  return digits;
}

void histogram::assign_exact_digits(const std::vector<std::uint64_t>& digits, flow_counts dropped, std::uint64_t samples) {
  if (!opts_.exact_sums) throw error("assign_exact_digits: the histogram keeps no exact sums (options.exact_sums)");
  if (digits.size() != static_cast<std::size_t>(cells_) * detail::kWideDigits)
    throw error("assign_exact_digits: " + std::to_string(digits.size()) + " digits given to a histogram of " +
                std::to_string(cells_) + " cells (" + std::to_string(detail::kWideDigits) + " a cell)");
  check_assign(static_cast<std::size_t>(cells_), true, dropped);
  drop_pending(pending_.get(), false);
  for (std::int64_t i = 0; i < cells_; ++i)
    detail::join_wide_digits(digits.data() + i * detail::kWideDigits, exact_.data() + i * detail::kWideCellWords);
  round_exact();
  flow_ = dropped;
  samples_ = samples;
}

std::vector<std::int64_t> histogram::shape() const {
  std::vector<std::int64_t> s;
  for (const auto& a : axes_) s.push_back(a.bins() + (opts_.flow_bins ? 3 : 0));
  return s;
}

std::vector<std::uint64_t> histogram::counts() const {
  if (opts_.weighted) throw error("counts: this histogram holds weighted sums; use sums()");
  settle();
  if (!counts64_.empty()) return std::vector<std::uint64_t>(counts64_.begin(), counts64_.end());
  return std::vector<std::uint64_t>(counts32_.begin(), counts32_.end());
}

const std::uint64_t* histogram::counts_u64() const {
  settle();
  return counts64_.empty() ? nullptr : counts64_.data();
}
const std::uint32_t* histogram::counts_u32() const {
  settle();
  return counts32_.empty() ? nullptr : counts32_.data();
}

std::vector<double> histogram::sums() const {
  if (!opts_.weighted) throw error("sums: this histogram holds counts; use counts()");
  settle();
  return std::vector<double>(sums_.begin(), sums_.end());
}

const double* histogram::sums_data() const {
  settle();
  return sums_.empty() ? nullptr : sums_.data();
}

std::vector<double> histogram::values() const {
  if (opts_.weighted) return sums();
  settle();
  std::vector<double> v(static_cast<std::size_t>(cells_));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = counts64_.empty() ? static_cast<double>(counts32_[i]) : static_cast<double>(counts64_[i]);
  return v;
}

std::vector<double> histogram::density() const {
  if (opts_.flow_bins) throw error("density: the flow bins have no widths; a histogram with flow_bins has no density");
  auto v = values();
  double total = 0;
  for (double x : v) total += x;
  // Divide by each axis' widths, broadcast along that axis, then by the total (numpy's order).
  std::int64_t inner = cells_;
  for (const auto& a : axes_) {
    const auto w = a.widths();
    inner /= a.bins();
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] /= w[static_cast<std::size_t>((static_cast<std::int64_t>(i) / inner) % a.bins())];
  }
  for (double& x : v) x /= total;
  return v;
}

flow_counts histogram::flow() const {
  if (!opts_.flow && !opts_.flow_bins)
    throw error("flow: flow counters are off; construct with options.flow = true");
  settle();
  if (!opts_.flow_bins) return flow_;
  // Each cell on a flow bin of some axis counts under the reason of the first such axis.
  flow_counts out;
  std::vector<std::int64_t> extent;
  for (const auto& a : axes_) extent.push_back(a.bins() + 3);
  for (std::int64_t c = 0; c < cells_; ++c) {
    const std::uint64_t n = counts64_.empty() ? counts32_[static_cast<std::size_t>(c)] : counts64_[static_cast<std::size_t>(c)];
    if (n == 0) continue;
    std::int64_t rest = c, reason = 0, stride = cells_;
    for (std::size_t d = 0; d < axes_.size() && reason == 0; ++d) {
      stride /= extent[d];
      const std::int64_t k = rest / stride;
      rest %= stride;
      reason = k == 0 ? std::int64_t{detail::bin_underflow} : k == extent[d] - 2 ? std::int64_t{detail::bin_overflow}
             : k == extent[d] - 1                      ? std::int64_t{detail::bin_nan}
                                                        : 0;
    }
    if (reason == detail::bin_underflow) out.underflow += n;
    if (reason == detail::bin_overflow) out.overflow += n;
    if (reason == detail::bin_nan) out.nan += n;
  }
  return out;
}

void fill_channels(std::vector<histogram>& per_channel, const view& samples, int channels) {
  detail::check_channels(samples, channels, per_channel.size(), "fill_channels");
  for (const auto& h : per_channel) {
    if (h.axes().size() != 1) throw error("fill_channels: every channel histogram must be 1-D");
    if (h.opts().flow_bins) throw error("fill_channels: channel histograms keep no flow bins");
  }
  for (auto& h : per_channel) h.before_host_change();
  detail::channels_job all;
  all.samples = samples;
  all.channels = channels;
  all.per_channel.resize(per_channel.size());
  std::vector<const detail::backend_ops*> backends(per_channel.size());
  for (std::size_t c = 0; c < per_channel.size(); ++c)
    per_channel[c].prepare({detail::channel_of(samples, static_cast<int>(c), channels)}, nullptr,
                           all.per_channel[c], backends[c]);
  const auto n = static_cast<std::uint64_t>(samples.size / channels);
  if (n == 0 || per_channel.empty()) return;
  // One pass over the pixels where one backend runs every channel with the planner's choice
  // (one channel is a plain fill).
  const bool one_pass =
      channels > 1 &&
      std::all_of(backends.begin(), backends.end(), [&](auto* b) { return b == backends[0]; }) &&
      std::all_of(per_channel.begin(), per_channel.end(),
                  [](const histogram& h) { return h.opts_.strategy == strategy::automatic; });
  if (one_pass && backends[0]->fill_channels && backends[0]->fill_channels(all)) {
    for (auto& h : per_channel) h.filled(n);
    return;
  }
  for (std::size_t c = 0; c < per_channel.size(); ++c) {
    backends[c]->fill(all.per_channel[c]);
    per_channel[c].filled(n);
  }
}

std::vector<view> columns_of(const view& matrix, int dims) {
  if (dims < 1) throw error("columns_of: dims must be >= 1, got " + std::to_string(dims));
  detail::check_view(matrix, "columns_of: matrix");
  if (matrix.size % dims != 0)
    throw error("columns_of: " + std::to_string(matrix.size) + " elements are not a whole number of " +
                std::to_string(dims) + "-column rows");
  std::vector<view> cols;
  for (int d = 0; d < dims; ++d) {
    view v = matrix;
    v.data = static_cast<const char*>(matrix.data) +
             static_cast<std::int64_t>(d) * matrix.stride * static_cast<std::int64_t>(size_of(matrix.type));
    v.size = matrix.size / dims;
    v.stride = matrix.stride * dims;
    cols.push_back(v);
  }
  return cols;
}

}  // namespace tally

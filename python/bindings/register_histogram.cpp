// The histogram class (tally.Histogram's C++ side) with its lock, and the calls over several
// histograms at once (merge, equal, copy, fill_channels), which take their locks in one order.
#include "bindings.hpp"
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

using namespace nb::literals;

namespace tally_bindings {

namespace {

/// Counts as numpy's int64 ('l'): nanobind hands int64 cells over as numpy's longlong ('q').
nb::object as_numpy_int64(const nb::object& counts) {
  return counts.attr("view")(nb::module_::import_("numpy").attr("int64"));
}

/// tally::histogram for Python: axes and options by name, fills from arrays. Safe from any
/// thread: every call that reads or changes the cells holds the histogram's lock, taken with
/// the GIL released (fills run without the GIL, so other Python threads go on meanwhile).
class py_histogram {
 public:
  py_histogram(std::vector<tally::axis> axes, bool weighted, const std::string& strategy,
               const std::string& backend, bool flow, bool counts32, int threads, bool exact_sums,
               std::int64_t sum_block, bool flow_bins)
      : h_(std::move(axes), with_flow_bins(make_options(weighted, strategy, backend_named(backend), flow, counts32,
                                                        threads, exact_sums, sum_block),
                                           flow_bins)) {}
  explicit py_histogram(tally::histogram h) : h_(std::move(h)) {}

  static tally::options with_flow_bins(tally::options o, bool flow_bins) {
    o.flow_bins = flow_bins;
    return o;
  }

  /// f(histogram) under the lock, without the GIL.
  template <class F> decltype(auto) locked(F&& f) const {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return f(h_);
  }
  template <class F> decltype(auto) locked(F&& f) {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return f(h_);
  }

  void fill(const std::vector<any_array>& columns, const std::optional<any_array>& weights) {
    const fill_views v(columns, weights);
    locked([&](tally::histogram& h) {
      if (v.weights) h.fill(v.columns, *v.weights);
      else h.fill(v.columns);
    });
  }

  /// fill's samples, in host memory, streamed through the current CUDA device
  /// (device_histogram::fill_from_host in rounds of `buffer_bytes`); the device's cells are then
  /// added into this histogram, so data larger than the device's memory fill it.
  void fill_streamed(const std::vector<any_array>& columns, const std::optional<any_array>& weights,
                     std::size_t buffer_bytes, int buffers) {
    const fill_views v(columns, weights);
    locked([&](tally::histogram& h) {
      tally::options o = h.opts();
      o.backend = tally::backend::cuda;
      o.counts = tally::count_type::u64;  // the device's; assign and += check a u32 histogram's bound
      tally::device_histogram d(h.axes(), o);
      tally::stream_options so;
      so.buffer_bytes = buffer_bytes;
      so.buffers = buffers;
      if (v.weights) d.fill_from_host(v.columns, *v.weights, nullptr, so);
      else d.fill_from_host(v.columns, nullptr, so);
      tally::histogram part(h.axes(), h.opts());
      const tally::flow_counts dropped = o.flow ? d.flow() : tally::flow_counts{};
      const auto n = static_cast<std::uint64_t>(v.columns[0].size);
      if (h.weighted()) part.assign(d.sums(), dropped, n);
      else part.assign(d.counts(), dropped, n);
      h += part;
    });
  }

  nb::object values() const {
    const auto shape = h_.shape();
    if (h_.weighted())
      return nb::cast(locked([&](const tally::histogram& h) { return cell_copy<double>(h.sums_data(), shape); }).to_numpy());
    return as_numpy_int64(nb::cast(locked([&](const tally::histogram& h) {
                            if (const auto* c = h.counts_u64()) return cell_copy<std::int64_t>(c, shape);
                            return cell_copy<std::int64_t>(h.counts_u32(), shape);
                          }).to_numpy()));
  }

  nb::object density() const {
    const auto shape = h_.shape();
    return nb::cast(locked([&](const tally::histogram& h) { return cell_copy<double>(h.density().data(), shape); }).to_numpy());
  }

  std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> flow() const {
    const auto f = locked([](const tally::histogram& h) { return h.flow(); });
    return {f.underflow, f.overflow, f.nan};
  }

  std::uint64_t samples() const {
    return locked([](const tally::histogram& h) { return h.samples(); });
  }

  void reset() {
    locked([](tally::histogram& h) { h.reset(); });
  }

  /// tally::serialize's bytes.
  nb::bytes to_bytes() const {
    const auto bytes = locked([](const tally::histogram& h) { return tally::serialize(h); });
    return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

  /// The histogram of to_bytes' bytes, filling on `backend` (rebuilt with it where the bytes
  /// name another backend). A `saved` backend (a pickle state's device) is the one the bytes
  /// must name, else an error.
  static py_histogram* from_bytes(const nb::bytes& data, const std::string& backend, const std::string& saved) {
    const tally::backend wanted = backend_named(backend), expected = backend_named(saved);
    nb::gil_scoped_release release;  // the bytes object is immutable and kept alive by the caller
    tally::histogram h = tally::deserialize(data.c_str(), data.size());
    if (!saved.empty() && h.opts().backend != expected)
      throw tally::error("tally.Histogram: the pickle state's device is " + std::string(tally::name_of(expected)) +
                         ", its histogram's bytes name backend " + std::string(tally::name_of(h.opts().backend)));
    if (h.opts().backend == wanted) return new py_histogram(std::move(h));
    tally::options o = h.opts();
    o.backend = wanted;
    tally::histogram on(h.axes(), o);
    on += h;
    return new py_histogram(std::move(on));
  }

  nb::dict plan(const std::string& type, std::int64_t n, const std::string& weight_type) const {
    return policy_dict(h_.plan_for(tally::dtype_from_name(type), n, tally::dtype_from_name(weight_type)));
  }

  /// The histogram, for calls that hold the lock themselves (lock()) or read what never changes
  /// (axes, shape, options).
  tally::histogram& get() { return h_; }
  const tally::histogram& get() const { return h_; }
  std::mutex& lock() { return mutex_; }

 private:
  tally::histogram h_;
  mutable std::mutex mutex_;
};

/// tally::histogram::assign from a flat array of counts (uint64) or sums (float64).
template <class T>
void assign_cells(py_histogram& h, nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu> cells,
                  std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> dropped, std::uint64_t samples) {
  const std::vector<T> v(cells.data(), cells.data() + cells.shape(0));
  const tally::flow_counts f{std::get<0>(dropped), std::get<1>(dropped), std::get<2>(dropped)};
  h.locked([&](tally::histogram& t) { t.assign(v, f, samples); });
}

/// tally::histogram::exact_digits as a (cells, exact_digits_per_cell) uint64 array that owns them.
nb::ndarray<nb::numpy, std::uint64_t, nb::ndim<2>> exact_digits(const py_histogram& h) {
  auto digits = std::make_unique<std::vector<std::uint64_t>>(
      h.locked([](const tally::histogram& t) { return t.exact_digits(); }));
  const std::size_t dims[2] = {static_cast<std::size_t>(h.get().size()),
                               static_cast<std::size_t>(tally::exact_digits_per_cell)};
  nb::capsule owner(digits.get(), [](void* p) noexcept { delete static_cast<std::vector<std::uint64_t>*>(p); });
  return nb::ndarray<nb::numpy, std::uint64_t, nb::ndim<2>>(digits.release()->data(), 2, dims, owner);
}

/// tally::histogram::assign_exact_digits from exact_digits' digits (or their sums), of any shape.
void assign_exact_digits(py_histogram& h, nb::ndarray<const std::uint64_t, nb::c_contig, nb::device::cpu> digits,
                         std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> dropped, std::uint64_t samples) {
  const std::vector<std::uint64_t> v(digits.data(), digits.data() + digits.size());
  const tally::flow_counts f{std::get<0>(dropped), std::get<1>(dropped), std::get<2>(dropped)};
  h.locked([&](tally::histogram& t) { t.assign_exact_digits(v, f, samples); });
}

/// The locks of several histograms (each once, however often it appears), taken in address
/// order: every call that holds more than one lock takes them in this one order, so two calls
/// over the same histograms in different orders (a += b and b += a) cannot deadlock.
std::vector<std::unique_lock<std::mutex>> lock_all(const std::vector<py_histogram*>& hs) {
  std::vector<std::mutex*> mutexes;
  for (auto* h : hs) mutexes.push_back(&h->lock());
  std::sort(mutexes.begin(), mutexes.end(), std::less<std::mutex*>());
  mutexes.erase(std::unique(mutexes.begin(), mutexes.end()), mutexes.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto* m : mutexes) locks.emplace_back(*m);
  return locks;
}

void check_pairs(const std::vector<py_histogram*>& a, const std::vector<py_histogram*>& b) {
  if (a.size() != b.size())
    throw tally::error("tally: " + std::to_string(a.size()) + " histograms against " + std::to_string(b.size()));
}

/// into[c] += from[c] for every c, all or nothing: where one merge would throw (different axes,
/// a count that would overflow), no histogram changes. The histograms are changed in place, never
/// replaced, so what calls read without the lock (axes, shape) stays valid.
void merge_all(const std::vector<py_histogram*>& into, const std::vector<py_histogram*>& from) {
  check_pairs(into, from);
  std::vector<py_histogram*> all(into);
  all.insert(all.end(), from.begin(), from.end());
  nb::gil_scoped_release release;
  const auto locks = lock_all(all);
  for (std::size_t c = 0; c < into.size() && into.size() > 1; ++c) {
    const std::string why = into[c]->get().layout_difference(from[c]->get());
    if (!why.empty()) throw tally::error("merge: the histograms of channel " + std::to_string(c) + " differ: " + why);
    tally::histogram trial = into[c]->get();  // an overflow shows here, before any change
    trial += from[c]->get();
  }
  for (std::size_t c = 0; c < into.size(); ++c) into[c]->get() += from[c]->get();
}

bool equal_all(const std::vector<py_histogram*>& a, const std::vector<py_histogram*>& b) {
  if (a.size() != b.size()) return false;
  std::vector<py_histogram*> all(a);
  all.insert(all.end(), b.begin(), b.end());
  nb::gil_scoped_release release;
  const auto locks = lock_all(all);
  for (std::size_t c = 0; c < a.size(); ++c)
    if (a[c]->get() != b[c]->get()) return false;
  return true;
}

/// Copies of the histograms, taken together (a consistent copy of every channel).
std::vector<py_histogram*> copy_all(const std::vector<py_histogram*>& hs) {
  std::vector<tally::histogram> copies;
  {
    nb::gil_scoped_release release;
    const auto locks = lock_all(hs);
    for (auto* h : hs) copies.push_back(h->get());
  }
  std::vector<py_histogram*> out;
  for (auto& c : copies) out.push_back(new py_histogram(std::move(c)));
  return out;
}

}  // namespace

/// A one-shot fill on the host's side (tally.histogram, bincount, histogramdd of arrays that are
/// not CUDA tensors): the histogram made, filled and handed to numpy as its cells, without a
/// copy. The array owns the histogram, so cells the samples never touch stay calloc's untouched
/// pages, as in numpy's own bincount. Returns (values, (underflow, overflow, nan)), zeros without `flow`.
nb::tuple fill_and_take(std::vector<tally::axis> axes, const std::vector<any_array>& columns,
                        const std::optional<any_array>& weights, const std::string& strategy,
                        const std::string& backend, bool flow, std::int64_t sum_block) {
  const fill_views v(columns, weights);
  auto h = std::make_unique<tally::histogram>(
      std::move(axes), make_options(weights.has_value(), strategy, backend_named(backend), flow, false, 0, false, sum_block));
  void* cells = nullptr;
  {
    nb::gil_scoped_release release;
    if (v.weights) {
      h->fill(v.columns, *v.weights);
      cells = const_cast<double*>(h->sums_data());
    } else {
      h->fill(v.columns);
      cells = const_cast<std::uint64_t*>(h->counts_u64());
    }
  }
  std::vector<std::size_t> dims;
  for (const auto n : h->shape()) dims.push_back(static_cast<std::size_t>(n));
  const tally::flow_counts dropped = flow ? h->flow() : tally::flow_counts{};
  const bool weighted = h->weighted();
  nb::capsule owner(h.release(), [](void* p) noexcept { delete static_cast<tally::histogram*>(p); });
  nb::object values;
  if (weighted) {
    values = nb::cast(nb::ndarray<nb::numpy, double>(static_cast<double*>(cells), dims.size(), dims.data(), owner));
  } else {
    values = as_numpy_int64(nb::cast(
        nb::ndarray<nb::numpy, std::int64_t>(static_cast<std::int64_t*>(cells), dims.size(), dims.data(), owner)));
  }
  return nb::make_tuple(values, nb::make_tuple(dropped.underflow, dropped.overflow, dropped.nan));
}

namespace {

/// The host array `out` as a C-contiguous block of `cells` elements of T, else a ValueError.
template <class T>
T* out_cells(const nb::ndarray<nb::c_contig, nb::device::cpu>& out, std::int64_t cells, const char* what) {
  if (out.dtype() != nb::dtype<T>() || static_cast<std::int64_t>(out.size()) != cells)
    throw tally::error(std::string("fill_into: out must hold the ") + std::to_string(cells) + " cells as " + what);
  return static_cast<T*>(out.data());
}

/// Cells converted into the caller's array, every one written (out need not be zeroed).
template <class In, class Out> void copy_cells(const In* cells, std::int64_t n, Out* out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<Out>(cells[i]);
}

/// The smallest and largest of n > 0 values of T at `data`, `step` bytes apart (read by
/// memcpy, as the backends read samples: unaligned arrays are fine), and whether any is NaN;
/// which of -0.0 and 0.0 is returned is left open (numpy's own reduction answers zeros). Four
/// independent minima and maxima, so that no comparison waits on the one before.
template <class T> std::tuple<T, T, bool> scan_extremes(const char* data, std::int64_t n, std::int64_t step) {
  T lo[4], hi[4];
  std::memcpy(&lo[0], data, sizeof(T));
  for (int j = 0; j < 4; ++j) lo[j] = hi[j] = lo[0];
  bool nan = false;
  const auto take = [&](int j, std::int64_t i) {
    T v;
    std::memcpy(&v, data + i * step, sizeof v);
    if constexpr (std::is_floating_point_v<T>) nan |= v != v;
    lo[j] = v < lo[j] ? v : lo[j];
    hi[j] = hi[j] < v ? v : hi[j];
  };
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) take(j, i + j);
  for (; i < n; ++i) take(0, i);
  for (int j = 1; j < 4; ++j) {
    lo[0] = lo[j] < lo[0] ? lo[j] : lo[0];
    hi[0] = hi[0] < hi[j] ? hi[j] : hi[0];
  }
  return {lo[0], hi[0], nan};
}

template <class T> nb::object extremes_of(const tally::view& v) {
  const char* data = static_cast<const char*>(v.data);
  const auto [lo, hi, nan] = v.stride == 1 ? scan_extremes<T>(data, v.size, sizeof(T))
                                           : scan_extremes<T>(data, v.size, v.stride * static_cast<std::int64_t>(sizeof(T)));
  if constexpr (std::is_floating_point_v<T>) {
    if (nan) return nb::make_tuple(NAN, NAN);
    return nb::make_tuple(static_cast<double>(lo), static_cast<double>(hi));
  } else {
    return nb::make_tuple(lo, hi);
  }
}

}  // namespace

/// fill_and_take's fill of one axis, its cells written into the caller's `out` (the axis' bins,
/// C-contiguous, on the host: int64, float64 or float32 for counts, float64 or float32 for sums) in place
/// of an array that owns the histogram: a small call's numpy.empty costs a tenth of handing a new
/// array to numpy. Always over the automatic backend. Returns the flow counts as (underflow,
/// overflow, nan), zeros without `flow`.
nb::tuple fill_into(tally::axis axis, const any_array& column, const std::optional<any_array>& weights,
                    nb::ndarray<nb::c_contig, nb::device::cpu> out, const std::string& strategy, bool flow,
                    std::int64_t sum_block) {
  const fill_views v({column}, weights);
  const std::int64_t cells = axis.bins();
  tally::histogram h(std::move(axis), make_options(weights.has_value(), strategy, tally::backend::automatic, flow,
                                                   false, 0, false, sum_block));
  // Without the GIL only where the fill takes longer than releasing it.
  constexpr std::int64_t kReleaseFrom = 1 << 14;
  {
    std::optional<nb::gil_scoped_release> release;
    if (v.columns[0].size >= kReleaseFrom) release.emplace();
    if (v.weights) h.fill(v.columns[0], *v.weights);
    else h.fill(v.columns[0]);
  }
  if (h.weighted()) {
    // float32 sums: the float64 sums rounded once, as numpy's float32 result of float32 weights.
    if (out.dtype() == nb::dtype<float>()) copy_cells(h.sums_data(), cells, out_cells<float>(out, cells, "float32"));
    else copy_cells(h.sums_data(), cells, out_cells<double>(out, cells, "float64 or float32"));
  } else if (out.dtype() == nb::dtype<std::int64_t>()) {
    copy_cells(h.counts_u64(), cells, out_cells<std::int64_t>(out, cells, "int64"));
  } else if (out.dtype() == nb::dtype<double>()) {
    copy_cells(h.counts_u64(), cells, out_cells<double>(out, cells, "float64"));
  } else {
    copy_cells(h.counts_u64(), cells, out_cells<float>(out, cells, "int64, float64 or float32"));
  }
  const tally::flow_counts dropped = flow ? h.flow() : tally::flow_counts{};
  return nb::make_tuple(dropped.underflow, dropped.overflow, dropped.nan);
}

/// numpy's a.min(), a.max() of a host array of integers (Python ints) or of float32 or float64
/// (Python floats; NaN for both where any sample is NaN; either sign of a zero), in one scalar
/// pass: for small arrays, where numpy's two reductions cost more than the samples; None for an
/// empty array or another type (the package then asks numpy).
nb::object extremes(const any_array& a) {
  const tally::view v = view_of(a, true, true);
  if (v.size == 0) return nb::none();
  switch (v.type) {
    case tally::dtype::u8: return extremes_of<std::uint8_t>(v);
    case tally::dtype::i8: return extremes_of<std::int8_t>(v);
    case tally::dtype::u16: return extremes_of<std::uint16_t>(v);
    case tally::dtype::i16: return extremes_of<std::int16_t>(v);
    case tally::dtype::u32: return extremes_of<std::uint32_t>(v);
    case tally::dtype::i32: return extremes_of<std::int32_t>(v);
    case tally::dtype::u64: return extremes_of<std::uint64_t>(v);
    case tally::dtype::i64: return extremes_of<std::int64_t>(v);
    case tally::dtype::f32: return extremes_of<float>(v);
    case tally::dtype::f64: return extremes_of<double>(v);
    default: return nb::none();
  }
}

namespace {

/// numpy.empty, looked up once (a reference kept for good) with the GIL held.
nb::handle numpy_empty() {
  static nb::handle empty;
  if (!empty) empty = nb::object(nb::module_::import_("numpy").attr("empty")).release();
  return empty;
}

/// small_bincount's counts (or float64 sums of weights of type W, added in input order as
/// numpy's) of `x`'s values, all in [0, length), into a new numpy array; samples of type T.
template <class T, class W>
nb::object count_values(const tally::view& x, const tally::view* w, std::int64_t length) {
  nb::object out = numpy_empty()(length, w ? "float64" : "int64");
  // The new array's memory through the buffer protocol (cheaper than an ndarray cast back).
  Py_buffer cells;
  if (PyObject_GetBuffer(out.ptr(), &cells, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  const std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> release(&cells, PyBuffer_Release);
  const char* data = static_cast<const char*>(x.data);
  const std::int64_t step = x.stride * static_cast<std::int64_t>(sizeof(T));
  const auto value = [&](std::int64_t i) {
    T v;
    std::memcpy(&v, data + i * step, sizeof v);
    return static_cast<std::int64_t>(v);
  };
  if (w) {
    auto* sums = static_cast<double*>(cells.buf);
    std::fill(sums, sums + length, 0.0);
    const char* weights = static_cast<const char*>(w->data);
    const std::int64_t wstep = w->stride * static_cast<std::int64_t>(sizeof(W));
    for (std::int64_t i = 0; i < x.size; ++i) {
      W v;
      std::memcpy(&v, weights + i * wstep, sizeof v);
      sums[value(i)] += static_cast<double>(v);
    }
  } else {
    auto* counts = static_cast<std::int64_t*>(cells.buf);
    std::fill(counts, counts + length, std::int64_t{0});
    for (std::int64_t i = 0; i < x.size; ++i) ++counts[value(i)];
  }
  return out;
}

template <class T>
nb::object small_bincount_of(const tally::view& x, const tally::view* w, std::int64_t minlength) {
  const char* data = static_cast<const char*>(x.data);
  const auto ends = scan_extremes<T>(data, x.size, x.stride * static_cast<std::int64_t>(sizeof(T)));
  const T lo = std::get<0>(ends), hi = std::get<1>(ends);
  if constexpr (std::is_signed_v<T>) {
    if (lo < 0) return nb::none();  // numpy's ValueError, from the general path
  }
  if (static_cast<std::uint64_t>(hi) >= static_cast<std::uint64_t>(tally::host_call_max_cells)) return nb::none();
  const std::int64_t length = std::max(static_cast<std::int64_t>(hi) + 1, minlength);
  if (length > tally::host_call_max_cells) return nb::none();
  if (!w) return count_values<T, double>(x, nullptr, length);
  return w->type == tally::dtype::f32 ? count_values<T, float>(x, w, length) : count_values<T, double>(x, w, length);
}

}  // namespace

/// numpy.bincount of a small host call in one extension call: a 1-D array of integers of fewer
/// than host_call_max_samples values (at least one), float32 or float64 weights of its shape or
/// None, minlength >= 0. The extremes in one scalar pass, then the counts (int64) or the weights'
/// sums (float64, in input order: numpy's bits) written into a new numpy array of
/// max(max + 1, minlength) cells. None where the general path answers: a negative value (numpy's
/// error), more than host_call_max_cells cells, another type, or a layout the views cannot read.
nb::object small_bincount(const any_array& x, const std::optional<any_array>& weights, std::int64_t minlength) {
  tally::view v, w;
  try {
    v = view_of(x, !weights.has_value());
    if (weights) w = view_of(*weights, false);
  } catch (const not_one_stride&) {
    return nb::none();
  }
  if (v.size == 0 || v.size >= tally::host_call_max_samples || (weights && w.size != v.size)) return nb::none();
  if (weights && w.type != tally::dtype::f32 && w.type != tally::dtype::f64) return nb::none();
  const tally::view* wp = weights ? &w : nullptr;
  switch (v.type) {
    case tally::dtype::u8: return small_bincount_of<std::uint8_t>(v, wp, minlength);
    case tally::dtype::i8: return small_bincount_of<std::int8_t>(v, wp, minlength);
    case tally::dtype::u16: return small_bincount_of<std::uint16_t>(v, wp, minlength);
    case tally::dtype::i16: return small_bincount_of<std::int16_t>(v, wp, minlength);
    case tally::dtype::u32: return small_bincount_of<std::uint32_t>(v, wp, minlength);
    case tally::dtype::i32: return small_bincount_of<std::int32_t>(v, wp, minlength);
    case tally::dtype::u64: return small_bincount_of<std::uint64_t>(v, wp, minlength);
    case tally::dtype::i64: return small_bincount_of<std::int64_t>(v, wp, minlength);
    default: return nb::none();
  }
}

void register_histogram(nb::module_& m) {
  nb::class_<py_histogram>(m, "Hist")
      .def(nb::init<std::vector<tally::axis>, bool, const std::string&, const std::string&, bool, bool, int, bool,
                    std::int64_t, bool>(),
           "axes"_a, "weighted"_a = false, "strategy"_a = "automatic", "backend"_a = "auto",
           "flow"_a = false, "counts32"_a = false, "threads"_a = 0, "exact_sums"_a = false, "sum_block"_a = 65536,
           "flow_bins"_a = false)
      .def("fill", &py_histogram::fill, "columns"_a, "weights"_a = nb::none())
      .def("fill_streamed", &py_histogram::fill_streamed, "columns"_a, "weights"_a.none(), "buffer_bytes"_a, "buffers"_a)
      .def("reset", &py_histogram::reset)
      .def("values", &py_histogram::values)
      .def("density", &py_histogram::density)
      .def("flow", &py_histogram::flow)
      .def("plan", &py_histogram::plan, "sample_type"_a, "n"_a, "weight_type"_a = "f64")
      .def_prop_ro("samples", &py_histogram::samples)
      .def_prop_ro("weighted", [](const py_histogram& h) { return h.get().weighted(); })
      .def_prop_ro("exact_sums", [](const py_histogram& h) { return h.get().opts().exact_sums; })
      // Options a pickle's state is checked against.
      .def_prop_ro("flow_counters", [](const py_histogram& h) { return h.get().opts().flow; })
      .def_prop_ro("flow_bins", [](const py_histogram& h) { return h.get().opts().flow_bins; })
      .def_prop_ro("counts32", [](const py_histogram& h) { return h.get().opts().counts == tally::count_type::u32; })
      .def_prop_ro("shape", [](const py_histogram& h) { return h.get().shape(); })
      .def_prop_ro("axes", [](const py_histogram& h) { return h.get().axes(); })
      .def("assign", &assign_cells<std::uint64_t>, "cells"_a, "flow"_a, "samples"_a)
      .def("assign", &assign_cells<double>, "cells"_a, "flow"_a, "samples"_a)
      .def("exact_digits", &exact_digits)
      .def("assign_exact_digits", &assign_exact_digits, "digits"_a, "flow"_a, "samples"_a)
      .def("to_bytes", &py_histogram::to_bytes)
      .def_static("from_bytes", &py_histogram::from_bytes, "data"_a, "backend"_a, "saved"_a = "",
                  nb::rv_policy::take_ownership);

  m.def("fill_and_take", &fill_and_take, "axes"_a, "columns"_a, "weights"_a.none(), "strategy"_a, "backend"_a,
        "flow"_a, "sum_block"_a);
  m.def("fill_into", &fill_into, "axis"_a, "column"_a, "weights"_a.none(), "out"_a.noconvert(), "strategy"_a,
        "flow"_a, "sum_block"_a);
  m.def("extremes", &extremes, "a"_a);
  m.def("small_bincount", &small_bincount, "x"_a, "weights"_a.none(), "minlength"_a);
  m.def("merge", &merge_all, "into"_a, "other"_a);
  m.def("equal", &equal_all, "a"_a, "b"_a);
  m.def("copy", &copy_all, "histograms"_a, nb::rv_policy::take_ownership);

  m.def("fill_channels", [](std::vector<py_histogram*> per_channel, const any_array& samples, int channels) {
    const tally::view v = view_of(samples, false);
    nb::gil_scoped_release release;
    const auto locks = lock_all(per_channel);
    std::vector<tally::histogram> hs;
    // fill_channels takes the histograms by vector; fill moved copies and move them back.
    for (auto* h : per_channel) hs.push_back(std::move(h->get()));
    try {
      tally::fill_channels(hs, v, channels);
    } catch (...) {
      for (std::size_t c = 0; c < hs.size(); ++c) per_channel[c]->get() = std::move(hs[c]);
      throw;
    }
    for (std::size_t c = 0; c < hs.size(); ++c) per_channel[c]->get() = std::move(hs[c]);
  }, "per_channel"_a, "samples"_a, "channels"_a);
}

}  // namespace tally_bindings

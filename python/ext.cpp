// tally._tally: the C++ API as the Python package sees it. Arrays come in through nanobind's
// ndarray (DLPack or the buffer protocol, any device, any strides) and become tally::view without
// a copy; numpy's rules for edges and arguments live in python/src/tally/.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tally/patterns/elementwise.hpp"
#include "tally/patterns/matmul.hpp"
#include "tally/patterns/reduce.hpp"
#include "tally/patterns/runtime_kernel.hpp"
#include "tally/tally.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using any_array = nb::ndarray<nb::ro>;

/// Raised when an array's elements are not one strided sequence of memory; the package copies
/// such an array once and tries again.
struct not_one_stride {};

tally::dtype dtype_of(const nb::dlpack::dtype& t) {
  using code = nb::dlpack::dtype_code;
  struct entry {
    code c;
    int bits;
    tally::dtype type;
  };
  static constexpr entry table[] = {
      {code::UInt, 8, tally::dtype::u8},    {code::UInt, 16, tally::dtype::u16},
      {code::UInt, 32, tally::dtype::u32},  {code::UInt, 64, tally::dtype::u64},
      {code::Int, 8, tally::dtype::i8},     {code::Int, 16, tally::dtype::i16},
      {code::Int, 32, tally::dtype::i32},   {code::Int, 64, tally::dtype::i64},
      {code::Float, 16, tally::dtype::f16}, {code::Float, 32, tally::dtype::f32},
      {code::Float, 64, tally::dtype::f64}, {code::Bfloat, 16, tally::dtype::bf16},
      // One byte, 0 or 1: the package decides where numpy allows bool.
      {code::Bool, 8, tally::dtype::u8}};
  for (const auto& e : table)
    if (t.lanes == 1 && t.code == static_cast<std::uint8_t>(e.c) && t.bits == e.bits) return e.type;
  throw nb::type_error(("tally: unsupported sample type (DLPack code " + std::to_string(t.code) +
                        ", " + std::to_string(t.bits) + " bits); supported: u8 i8 u16 i16 u32 i32 "
                        "u64 i64 f16 bf16 f32 f64")
                           .c_str());
}

/// The array as one strided view, or not_one_stride. With any_order (unweighted counts, where
/// the order of the samples does not matter) the dimensions may be visited in any order and in
/// either direction, so transposed and reversed arrays need no copy; otherwise the elements
/// must come in C order (numpy's ravel order), as weights must pair with their samples.
tally::view one_view(const any_array& a, bool any_order) {
  tally::view v;
  v.type = dtype_of(a.dtype());
  const std::int64_t item = static_cast<std::int64_t>(tally::size_of(v.type));
  const char* data = static_cast<const char*>(a.data());
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size), innermost first
  std::int64_t n = 1;
  for (std::size_t d = a.ndim(); d-- > 0;) {
    const auto size = static_cast<std::int64_t>(a.shape(d));
    n *= size;
    if (size > 1) dims.emplace_back(a.stride(d), size);
  }
  v.size = n;
  v.data = data;
  if (n <= 1 || dims.empty()) return v;
  if (any_order) {
    for (auto& [stride, size] : dims) {
      if (stride < 0) {
        data += stride * (size - 1) * item;
        stride = -stride;
      }
    }
    std::sort(dims.begin(), dims.end());
  }
  if (dims[0].first < 1) throw not_one_stride{};
  for (std::size_t k = 1; k < dims.size(); ++k)
    if (dims[k].first != dims[k - 1].first * dims[k - 1].second) throw not_one_stride{};
  v.data = data;
  v.stride = dims[0].first;
  return v;
}

/// Weights, in C order: float32 or float64 (the package converts other types).
tally::view weight_view(const any_array& weights) {
  const tally::view w = one_view(weights, false);
  if (w.type != tally::dtype::f32 && w.type != tally::dtype::f64)
    throw nb::type_error("tally: weights must be float32 or float64");
  return w;
}

tally::backend backend_named(const std::string& name) {
  if (name == "auto" || name.empty()) return tally::backend::automatic;
  return tally::backend_from_name(name);
}

tally::options make_options(bool weighted, const std::string& strategy, tally::backend backend, bool flow,
                            bool counts32 = false, int threads = 0, bool exact_sums = false,
                            std::int64_t sum_block = 65536) {
  tally::options o;
  o.weighted = weighted;
  o.exact_sums = exact_sums;
  o.strategy = tally::strategy_from_name(strategy);
  o.backend = backend;
  o.flow = flow;
  o.counts = counts32 ? tally::count_type::u32 : tally::count_type::u64;
  o.threads = threads;
  o.sum_block = sum_block;
  return o;
}

/// A fill's columns and weights as views. One unweighted column is read in any order (its
/// samples pair with nothing); several columns, or weights, pair element by element in C order.
struct fill_views {
  std::vector<tally::view> columns;
  std::optional<tally::view> weights;

  fill_views() = default;
  fill_views(const std::vector<any_array>& cs, const std::optional<any_array>& ws) {
    const bool any_order = cs.size() == 1 && !ws;
    for (const auto& c : cs) columns.push_back(one_view(c, any_order));
    if (ws) weights = weight_view(*ws);
  }
};

nb::dict policy_dict(const tally::policy& p) {
  nb::dict d;
  d["backend"] = std::string(tally::name_of(p.where));
  d["strategy"] = std::string(tally::name_of(p.chosen));
  d["threads"] = p.threads;
  d["replicas"] = p.replicas;
  d["edge_table"] = p.edge_table;
  d["block"] = p.block;
  d["block_threads"] = p.block_threads;
  d["grid_blocks"] = p.grid_blocks;
  d["cluster_blocks"] = p.cluster_blocks;
  d["vector_bytes"] = p.vector_bytes;
  d["unroll"] = p.unroll;
  d["value_table"] = p.value_table;
  d["tables_in_shared"] = p.tables_in_shared;
  d["shared_bytes"] = p.shared_bytes;
  d["window_cells"] = p.window_cells;
  d["exact_sums"] = p.exact_sums;
  d["exact_wide"] = p.exact_wide;
  d["reasons"] = p.reasons;
  d["description"] = tally::describe(p);
  return d;
}

/// Cells copied out of a histogram (work that needs no GIL), then handed to numpy as they are.
/// The copy starts as calloc's zeros and only non-zero cells are written: a huge histogram of
/// few counts costs memory for those, not for every cell (tally::memory_error: MemoryError).
template <class Out> struct cell_copy {
  struct release {
    void operator()(Out* p) const { std::free(p); }
  };
  std::unique_ptr<Out[], release> data;
  std::vector<std::size_t> dims;

  template <class In> cell_copy(const In* values, const std::vector<std::int64_t>& shape) {
    std::size_t n = 1;
    for (auto s : shape) {
      dims.push_back(static_cast<std::size_t>(s));
      n *= static_cast<std::size_t>(s);
    }
    data.reset(static_cast<Out*>(std::calloc(n == 0 ? 1 : n, sizeof(Out))));
    if (!data)
      throw tally::memory_error("tally: the result's " + std::to_string(n) + " cells (" + std::to_string(n * sizeof(Out)) +
                                " bytes) do not fit the memory this process can have");
    Out* out = data.get();
    for (std::size_t i = 0; i < n; ++i)
      if (values[i] != In{}) out[i] = static_cast<Out>(values[i]);
  }
  /// A numpy array that owns the copy (with the GIL held).
  nb::ndarray<nb::numpy, Out> to_numpy() {
    Out* p = data.release();
    nb::capsule owner(p, [](void* q) noexcept { std::free(q); });
    return nb::ndarray<nb::numpy, Out>(p, dims.size(), dims.data(), owner);
  }
};

/// tally::histogram for Python: axes and options by name, fills from arrays. Safe from any
/// thread: every call that reads or changes the cells holds the histogram's lock, taken with
/// the GIL released (fills run without the GIL, so other Python threads go on meanwhile).
class py_histogram {
 public:
  py_histogram(std::vector<tally::axis> axes, bool weighted, const std::string& strategy,
               const std::string& backend, bool flow, bool counts32, int threads, bool exact_sums,
               std::int64_t sum_block)
      : h_(std::move(axes),
           make_options(weighted, strategy, backend_named(backend), flow, counts32, threads, exact_sums, sum_block)) {}
  explicit py_histogram(tally::histogram h) : h_(std::move(h)) {}

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
    nb::object counts = nb::cast(locked([&](const tally::histogram& h) {
                                   if (const auto* c = h.counts_u64()) return cell_copy<std::int64_t>(c, shape);
                                   return cell_copy<std::int64_t>(h.counts_u32(), shape);
                                 }).to_numpy());
    // nanobind hands int64 cells over as numpy's longlong ('q'); numpy's counts are int64 ('l').
    return counts.attr("view")(nb::module_::import_("numpy").attr("int64"));
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

/// The flow counts of a one-shot fill (fill_views_on_stream), read when the caller asks: read()
/// waits for the fill on its stream and returns (underflow, overflow, nan).
struct flow_reader {
  std::shared_ptr<tally::device_histogram> h;
  void* stream;
  nb::tuple read() const {
    tally::flow_counts dropped;
    {
      nb::gil_scoped_release release;
      dropped = h->flow(stream);
    }
    return nb::make_tuple(dropped.underflow, dropped.overflow, dropped.nan);
  }
};

/// A one-shot fill of samples in CUDA memory, enqueued on the caller's stream with no host wait:
/// a tally::device_histogram on the current device, whose cells are handed to Python in place as
/// a DLPack array that owns the histogram (its memory is freed with the array). Counts come as
/// int64 (the u64 counts' bits; no bin reaches 2^63), sums as float64.
/// With `flow`, returns (values, a flow_reader): its read() is the one wait of such a call, left
/// to the caller so that it wraps the values while the fill runs.
nb::object fill_views_on_stream(std::vector<tally::axis> axes, const fill_views& v, const std::string& strategy,
                                std::uintptr_t stream_handle, int device, bool flow) {
  auto* stream = reinterpret_cast<void*>(stream_handle);
  auto h = std::make_shared<tally::device_histogram>(
      std::move(axes), make_options(v.weights.has_value(), strategy, tally::backend::cuda, flow), stream);
  if (h->device() != device)
    throw tally::error("tally: the current CUDA device is " + std::to_string(h->device()) +
                       ", the samples are on device " + std::to_string(device));
  {
    nb::gil_scoped_release release;
    if (v.weights) h->fill(v.columns, *v.weights, stream);
    else h->fill(v.columns, stream);
  }
  std::vector<std::size_t> dims;
  for (auto s : h->shape()) dims.push_back(static_cast<std::size_t>(s));
  void* cells = h->weighted() ? static_cast<void*>(const_cast<double*>(h->sums_data()))
                              : static_cast<void*>(const_cast<std::uint64_t*>(h->counts_data()));
  const auto type = h->weighted() ? nb::dtype<double>() : nb::dtype<std::int64_t>();
  const int at = h->device();
  h->release_on_default_stream();  // the array may outlive the caller's stream
  using shared = std::shared_ptr<tally::device_histogram>;
  nb::capsule owner(new shared(h), [](void* p) noexcept { delete static_cast<shared*>(p); });
  nb::ndarray<> values(cells, dims.size(), dims.data(), owner, nullptr, type, nb::device::cuda::value, at);
  if (!flow) return nb::cast(values);
  return nb::make_tuple(values, flow_reader{std::move(h), stream});
}

nb::object fill_on_stream(std::vector<tally::axis> axes, const std::vector<any_array>& columns,
                          const std::optional<any_array>& weights, const std::string& strategy,
                          std::uintptr_t stream_handle, int device, bool flow) {
  return fill_views_on_stream(std::move(axes), fill_views(columns, weights), strategy, stream_handle, device, flow);
}

/// fill_on_stream of one contiguous column given by its CUDA address, element count and sample
/// type (what a torch tensor's data_ptr() and numel() give), with contiguous weights of
/// `weight_type` at `weights` where that is not 0: the package's repeated calls, for which a
/// DLPack export of each input costs a third of a small fill. The fill checks that the addresses
/// are memory of `device`.
nb::object fill_address(std::vector<tally::axis> axes, std::uintptr_t data, std::int64_t size,
                        const std::string& type, const std::string& strategy, std::uintptr_t stream_handle,
                        int device, bool flow, std::uintptr_t weights, const std::string& weight_type) {
  fill_views v;
  v.columns.push_back({reinterpret_cast<const void*>(data), size, 1, tally::dtype_from_name(type)});
  if (weights) v.weights = tally::view{reinterpret_cast<const void*>(weights), size, 1, tally::dtype_from_name(weight_type)};
  return fill_views_on_stream(std::move(axes), v, strategy, stream_handle, device, flow);
}

/// tally::count_into of one contiguous column given by address, element count and sample type:
/// the counts written as `out_type` into `out`, an array the package allocated in the caller's
/// library (its memory pool, its dtype). The small calls' path: a small fill is one launch.
void count_address(std::vector<tally::axis> axes, std::uintptr_t data, std::int64_t size, const std::string& type,
                   const std::string& strategy, std::uintptr_t stream, std::uintptr_t out,
                   const std::string& out_type) {
  const std::vector<tally::view> columns = {{reinterpret_cast<const void*>(data), size, 1, tally::dtype_from_name(type)}};
  const auto options = make_options(false, strategy, tally::backend::cuda, false);
  const auto counted = tally::dtype_from_name(out_type);
  nb::gil_scoped_release release;
  tally::count_into(std::move(axes), columns, reinterpret_cast<void*>(out), counted, reinterpret_cast<void*>(stream),
                    options);
}

/// UHI's axis traits: tally's axes never wrap around; integer axes are discrete.
struct axis_traits {
  bool circular;
  bool discrete;
};

/// Bin i of the axis as UHI reads it (negative i from the end, as a sequence).
nb::object uhi_bin(const tally::axis& a, std::int64_t i) {
  if (i < 0) i += a.bins();
  if (i < 0 || i >= a.bins())
    throw nb::index_error(("axis index out of range for " + std::to_string(a.bins()) + " bins").c_str());
  if (a.kind() == tally::axis_kind::integer) return nb::int_(a.integer_lo() + i);
  return nb::make_tuple(a.edge(i), a.edge(i + 1));
}

nb::ndarray<nb::numpy, double> numpy_edges(const std::vector<double>& e) {
  return cell_copy<double>(e.data(), {static_cast<std::int64_t>(e.size())}).to_numpy();
}

// ---- the parallel patterns: the package allocates every output in the input's library ----

using out_ndarray = nb::ndarray<>;

template <class Op> Op op_named(const std::string& name, Op last) {
  for (unsigned i = 0; i <= static_cast<unsigned>(last); ++i)
    if (tally::name_of(static_cast<Op>(i)) == name) return static_cast<Op>(i);
  throw tally::error("tally: unknown operation " + name);
}

/// The array's data, which must be C-contiguous (unary patterns, reductions and matmul read and
/// write contiguous memory; the package copies other inputs once).
template <class A> void* contiguous_data(const A& a, const char* what) {
  std::int64_t expected = 1;
  for (std::size_t d = a.ndim(); d-- > 0;) {
    if (a.size() > 1 && a.shape(d) != 1 && a.stride(d) != expected)
      throw tally::error(std::string("tally: ") + what + " must be C-contiguous");
    expected *= static_cast<std::int64_t>(a.shape(d));
  }
  return const_cast<void*>(static_cast<const void*>(a.data()));
}

template <class Array, class A> Array strided(const A& a) {
  Array out;
  out.data = static_cast<decltype(out.data)>(a.data());
  out.type = dtype_of(a.dtype());
  for (std::size_t d = 0; d < a.ndim(); ++d) {
    out.shape.push_back(static_cast<std::int64_t>(a.shape(d)));
    out.strides.push_back(a.stride(d));
  }
  return out;
}

template <class Options = tally::run_options> Options on_stream(std::uintptr_t stream) {
  Options o;
  o.stream = reinterpret_cast<void*>(stream);
  return o;
}

void unary(const std::string& op, const any_array& x, const out_ndarray& y, std::uintptr_t stream) {
  const auto which = op_named(op, tally::unary_op::tanh);
  if (x.size() != y.size() || dtype_of(x.dtype()) != dtype_of(y.dtype()))
    throw tally::error("tally: " + op + ": out must have the input's shape and dtype");
  const void* in = contiguous_data(x, "the input");
  void* out = contiguous_data(y, "out");
  nb::gil_scoped_release release;
  tally::unary(which, dtype_of(x.dtype()), in, out, static_cast<std::int64_t>(x.size()), on_stream(stream));
}

/// unary() of contiguous memory given by address, element type and count: the package's path
/// for torch and cupy CUDA arrays, for which a DLPack export of each array costs more than a
/// small kernel. tally::unary checks the addresses (null, alignment, overlap, where they live).
void unary_address(const std::string& op, const std::string& type, std::uintptr_t x, std::uintptr_t y,
                   std::int64_t n, std::uintptr_t stream) {
  const auto which = op_named(op, tally::unary_op::tanh);
  const auto t = tally::dtype_from_name(type);
  nb::gil_scoped_release release;
  tally::unary(which, t, reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y), n, on_stream(stream));
}

void binary(const std::string& op, const any_array& a, const any_array& b, const out_ndarray& out,
            std::uintptr_t stream) {
  const auto which = op_named(op, tally::binary_op::div);
  const auto x = strided<tally::array>(a), y = strided<tally::array>(b);
  const auto z = strided<tally::out_array>(out);
  nb::gil_scoped_release release;
  tally::binary(which, x, y, z, on_stream(stream));
}

/// op over the whole array (along_rows false) or along its last axis, into `result`: one
/// element, or one per row (the product of the other dimensions).
void reduce(const std::string& op, const any_array& x, bool along_rows, const out_ndarray& result,
            std::uintptr_t stream) {
  const auto which = op_named(op, tally::reduce_op::mean);
  const auto type = dtype_of(x.dtype()), result_type = dtype_of(result.dtype());
  const void* in = contiguous_data(x, "the input");
  void* out = contiguous_data(result, "the result");
  const auto n = static_cast<std::int64_t>(x.size());
  const std::int64_t cols = along_rows && x.ndim() > 0 ? static_cast<std::int64_t>(x.shape(x.ndim() - 1)) : n;
  const auto rows = static_cast<std::int64_t>(result.size());
  if (!along_rows && rows != 1) throw tally::error("tally: " + op + ": the result must be one element");
  if (along_rows && rows * cols != n) throw tally::error("tally: " + op + ": one result per row expected");
  nb::gil_scoped_release release;
  if (along_rows) tally::reduce_rows(which, type, in, rows, cols, cols, result_type, out, on_stream(stream));
  else tally::reduce(which, type, in, n, result_type, out, on_stream(stream));
}

/// reduce() of contiguous memory given by address and element type: the whole of x's `cols`
/// elements into one result (along_rows false), or each of `rows` rows of `cols` elements into
/// one result each; the package's path for torch and cupy CUDA arrays (no DLPack exports).
void reduce_address(const std::string& op, const std::string& type, std::uintptr_t x, std::int64_t rows,
                    std::int64_t cols, bool along_rows, const std::string& result_type, std::uintptr_t result,
                    std::uintptr_t stream) {
  const auto which = op_named(op, tally::reduce_op::mean);
  const auto t = tally::dtype_from_name(type), rt = tally::dtype_from_name(result_type);
  const auto* in = reinterpret_cast<const void*>(x);
  auto* out = reinterpret_cast<void*>(result);
  nb::gil_scoped_release release;
  if (along_rows) tally::reduce_rows(which, t, in, rows, cols, cols, rt, out, on_stream(stream));
  else tally::reduce(which, t, in, cols, rt, out, on_stream(stream));
}

void matmul(const any_array& a, const any_array& b, const out_ndarray& c, std::uintptr_t stream) {
  const auto f32 = tally::dtype::f32;
  if (dtype_of(a.dtype()) != f32 || dtype_of(b.dtype()) != f32 || dtype_of(c.dtype()) != f32)
    throw nb::type_error("tally: matmul takes float32 matrices");
  if (a.ndim() != 2 || b.ndim() != 2 || c.ndim() != 2 || a.shape(1) != b.shape(0) || c.shape(0) != a.shape(0) ||
      c.shape(1) != b.shape(1))
    throw tally::error("tally: matmul: shapes must be (m, k) x (k, n) -> (m, n)");
  const auto* pa = static_cast<const float*>(contiguous_data(a, "a"));
  const auto* pb = static_cast<const float*>(contiguous_data(b, "b"));
  auto* pc = static_cast<float*>(contiguous_data(c, "out"));
  const auto m = static_cast<std::int64_t>(a.shape(0)), k = static_cast<std::int64_t>(a.shape(1)),
             n = static_cast<std::int64_t>(b.shape(1));
  nb::gil_scoped_release release;
  tally::matmul(pa, pb, pc, m, n, k, on_stream<tally::matmul_options>(stream));
}

// ---- user-defined kernels (tally.ElementwiseKernel, tally.ReductionKernel) ----

/// Binds the run-time kernel API: the package generates the source and packs each kernel
/// parameter's bytes; here they are compiled (once per source and architecture) and launched.
void bind_runtime_kernels(nb::module_& m) {
  m.def("runtime_kernels_compiled", &tally::runtime_kernels_compiled);
  m.def("runtime_device", [] {
    const auto d = tally::current_runtime_device();
    return std::make_tuple(d.ordinal, d.arch, d.multiprocessors);
  });
  m.def("runtime_compile", [](const std::string& source, int arch) {
    nb::gil_scoped_release release;
    return tally::compile_runtime_source(source, arch);
  }, "source"_a, "arch"_a);
  m.def("runtime_kernel", [](const std::string& source, const std::string& name) {
    nb::gil_scoped_release release;
    return reinterpret_cast<std::uintptr_t>(tally::get_runtime_kernel(source, name));
  }, "source"_a, "name"_a);
  m.def("runtime_compilations", &tally::runtime_compilations);
  m.def("runtime_launch", [](std::uintptr_t kernel, std::int64_t blocks, int threads, const std::vector<nb::bytes>& args,
                             std::uintptr_t stream) {
    std::vector<const void*> pointers;
    for (const auto& a : args) pointers.push_back(a.c_str());
    tally::launch_runtime_kernel(reinterpret_cast<tally::runtime_kernel>(kernel), blocks, threads, pointers,
                                 reinterpret_cast<void*>(stream));
  }, "kernel"_a, "blocks"_a, "threads"_a, "args"_a, "stream"_a);
}

}  // namespace

NB_MODULE(_tally, m) {
  m.doc() = "tally's C++ library; use the package `tally`, which gives numpy's semantics.";

  static nb::object layout_error =
      nb::steal(PyErr_NewException("tally._tally.LayoutError", PyExc_Exception, nullptr));
  m.attr("LayoutError") = layout_error;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const not_one_stride&) {
      PyErr_SetString(layout_error.ptr(), "the array is not one strided sequence of memory");
    } catch (const tally::memory_error& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const tally::error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def("version", [] { return std::string(tally::version()); });
  m.def("backends", [] {
    std::vector<std::tuple<std::string, bool, bool, std::string>> out;
    for (const auto& b : tally::backends())
      out.emplace_back(std::string(tally::name_of(b.which)), b.compiled, b.usable, b.detail);
    return out;
  });
  m.def("strategy_names", [] {
    std::vector<std::string> names;
    for (unsigned i = 0; i <= static_cast<unsigned>(tally::strategy::registers); ++i)
      names.emplace_back(tally::name_of(static_cast<tally::strategy>(i)));
    return names;
  });
  m.def("sample_type", [](const any_array& a) { return std::string(tally::name_of(dtype_of(a.dtype()))); },
        "array"_a, "The tally sample type of an array (raises TypeError for other types).");

  nb::class_<tally::axis>(m, "Axis")
      .def_static("regular", [](std::int64_t bins, double lo, double hi, const std::string& edge_type) {
        return tally::axis::regular(bins, lo, hi, tally::dtype_from_name(edge_type));
      }, "bins"_a, "lo"_a, "hi"_a, "edge_type"_a = "f64")
      .def_static("regular_exact", [](std::int64_t bins, bool lo_negative, std::uint64_t lo_magnitude,
                                      bool hi_negative, std::uint64_t hi_magnitude) {
        tally::integer_value lo, hi;
        lo.negative = lo_negative;
        lo.magnitude = lo_magnitude;
        hi.negative = hi_negative;
        hi.magnitude = hi_magnitude;
        return tally::axis::regular_exact(bins, lo, hi);
      }, "bins"_a, "lo_negative"_a, "lo_magnitude"_a, "hi_negative"_a, "hi_magnitude"_a)
      .def_static("variable", [](nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu> e) {
        return tally::axis::variable(std::vector<double>(e.data(), e.data() + e.shape(0)));
      }, "edges"_a)
      .def_static("variable_integers", [](nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> e) {
        return tally::axis::variable_integers(std::vector<std::int64_t>(e.data(), e.data() + e.shape(0)));
      }, "edges"_a)
      .def_static("variable_integers", [](nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> e) {
        return tally::axis::variable_integers(std::vector<std::uint64_t>(e.data(), e.data() + e.shape(0)));
      }, "edges"_a)
      .def_static("integer", &tally::axis::integer, "lo"_a, "hi"_a)
      .def_prop_ro("kind", [](const tally::axis& a) {
        switch (a.kind()) {
          case tally::axis_kind::regular: return "regular";
          case tally::axis_kind::variable: return "variable";
          default: return "integer";
        }
      })
      .def_prop_ro("bins", &tally::axis::bins)
      .def_prop_ro("edge_type", [](const tally::axis& a) { return std::string(tally::name_of(a.edge_type())); })
      .def_prop_ro("lo", &tally::axis::lo)
      .def_prop_ro("hi", &tally::axis::hi)
      .def("edges", [](const tally::axis& a) { return numpy_edges(a.edges()); })
      .def("widths", [](const tally::axis& a) { return numpy_edges(a.widths()); })
      .def("__eq__", [](const tally::axis& a, const tally::axis& b) { return a == b; })
      // UHI's PlottableAxis: bins as (lower, upper) edge pairs, or for an integer axis (discrete)
      // as the integer each bin holds, as boost-histogram's Integer axis.
      .def_prop_ro("traits", [](const tally::axis& a) { return axis_traits{false, a.kind() == tally::axis_kind::integer}; })
      .def("__len__", [](const tally::axis& a) { return a.bins(); })
      .def("__getitem__", [](const tally::axis& a, std::int64_t i) { return uhi_bin(a, i); }, "index"_a)
      .def("__iter__", [](const tally::axis& a) {
        nb::list bins;
        for (std::int64_t i = 0; i < a.bins(); ++i) bins.append(uhi_bin(a, i));
        return bins.attr("__iter__")();
      });

  nb::class_<flow_reader>(m, "FlowReader").def("read", &flow_reader::read);
  nb::class_<axis_traits>(m, "AxisTraits")
      .def_ro("circular", &axis_traits::circular)
      .def_ro("discrete", &axis_traits::discrete)
      .def("__repr__", [](const axis_traits& t) {
        return std::string("AxisTraits(circular=") + (t.circular ? "True" : "False") +
               ", discrete=" + (t.discrete ? "True" : "False") + ")";
      });

  nb::class_<py_histogram>(m, "Hist")
      .def(nb::init<std::vector<tally::axis>, bool, const std::string&, const std::string&, bool, bool, int, bool,
                    std::int64_t>(),
           "axes"_a, "weighted"_a = false, "strategy"_a = "automatic", "backend"_a = "auto",
           "flow"_a = false, "counts32"_a = false, "threads"_a = 0, "exact_sums"_a = false, "sum_block"_a = 65536)
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

  m.def("merge", &merge_all, "into"_a, "other"_a);
  m.def("equal", &equal_all, "a"_a, "b"_a);
  m.def("copy", &copy_all, "histograms"_a, nb::rv_policy::take_ownership);

  m.def("fill_on_stream", &fill_on_stream, "axes"_a, "columns"_a, "weights"_a.none(), "strategy"_a,
        "stream"_a, "device"_a, "flow"_a = false);
  m.attr("write_once_max_samples") = tally::write_once_max_samples;
  m.attr("write_once_max_cells") = tally::write_once_max_cells;
  m.def("count_address", &count_address, "axes"_a, "data"_a, "size"_a, "type"_a, "strategy"_a, "stream"_a, "out"_a,
        "out_type"_a);
  m.def("fill_address", &fill_address, "axes"_a, "data"_a, "size"_a, "type"_a, "strategy"_a, "stream"_a,
        "device"_a, "flow"_a = false, "weights"_a = 0, "weight_type"_a = "");

  m.def("fill_channels", [](std::vector<py_histogram*> per_channel, const any_array& samples, int channels) {
    const tally::view v = one_view(samples, false);
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

  m.def("unary", &unary, "op"_a, "x"_a, "out"_a.noconvert(), "stream"_a);
  m.def("unary_address", &unary_address, "op"_a, "type"_a, "x"_a, "out"_a, "n"_a, "stream"_a);
  m.def("binary", &binary, "op"_a, "a"_a, "b"_a, "out"_a.noconvert(), "stream"_a);
  m.def("reduce", &reduce, "op"_a, "x"_a, "along_rows"_a, "out"_a.noconvert(), "stream"_a);
  m.def("reduce_address", &reduce_address, "op"_a, "type"_a, "x"_a, "rows"_a, "cols"_a, "along_rows"_a,
        "result_type"_a, "result"_a, "stream"_a);
  m.def("matmul", &matmul, "a"_a, "b"_a, "out"_a.noconvert(), "stream"_a);

  bind_runtime_kernels(m);
}

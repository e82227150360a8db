// Array views: nanobind arrays as tally::view (no copy), and cells copied out as numpy arrays.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "bindings.hpp"
#include <nanobind/stl/string.h>

using namespace nb::literals;

namespace tally_bindings {

namespace {

/// Weights, in C order: float32 or float64 (the package converts other types).
tally::view weight_view(const any_array& weights) {
  const tally::view w = view_of(weights, false, true);
  if (w.type != tally::dtype::f32 && w.type != tally::dtype::f64)
    throw nb::type_error("tally: weights must be float32 or float64");
  return w;
}

}  // namespace

tally::dtype dtype_of(const nb::dlpack::dtype& t) {
  using code = nb::dlpack::dtype_code;
  struct entry {
    code c;
    int bits;
    tally::dtype type;
  };
  // DLPack's code and width of each sample type, from the core's table; bool (one byte, 0 or
  // 1) is read as u8, and the package decides where numpy allows it.
  static const std::vector<entry> table = [] {
    std::vector<entry> rows;
    for (tally::dtype d : tally::sample_types()) {
      const code c = d == tally::dtype::bf16        ? code::Bfloat
                     : tally::is_floating(d)        ? code::Float
                     : tally::is_signed_integer(d)  ? code::Int
                                                    : code::UInt;
      rows.push_back({c, static_cast<int>(8 * tally::size_of(d)), d});
    }
    rows.push_back({code::Bool, 8, tally::dtype::u8});
    return rows;
  }();
  for (const auto& e : table)
    if (t.lanes == 1 && t.code == static_cast<std::uint8_t>(e.c) && t.bits == e.bits) return e.type;
  throw nb::type_error(("tally: unsupported sample type (DLPack code " + std::to_string(t.code) +
                        ", " + std::to_string(t.bits) + " bits); supported: " + tally::sample_type_names())
                           .c_str());
}

tally::view view_of(const any_array& a, bool any_order, bool repeat_ok) {
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
  if (repeat_ok && std::all_of(dims.begin(), dims.end(), [](const auto& d) { return d.first == 0; })) {
    v.stride = 0;  // one value broadcast to every element (numpy's broadcast_to, torch's expand)
    return v;
  }
  if (dims[0].first < 1) throw not_one_stride{};
  for (std::size_t k = 1; k < dims.size(); ++k)
    if (dims[k].first != dims[k - 1].first * dims[k - 1].second) throw not_one_stride{};
  v.data = data;
  v.stride = dims[0].first;
  return v;
}

fill_views::fill_views(const std::vector<any_array>& cs, const std::optional<any_array>& ws) {
  const bool any_order = cs.size() == 1 && !ws;
  for (const auto& c : cs) columns.push_back(view_of(c, any_order, true));
  if (ws) weights = weight_view(*ws);
}

template <class Out>
template <class In>
cell_copy<Out>::cell_copy(const In* values, const std::vector<std::int64_t>& shape) {
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
  // calloc's pages hold the zeros: only other values are written (a negative zero too).
  for (std::size_t i = 0; i < n; ++i) {
    bool zero = values[i] == In{};
    if constexpr (std::is_floating_point_v<In>) zero = zero && !std::signbit(values[i]);
    if (!zero) out[i] = static_cast<Out>(values[i]);
  }
}

template <class Out> nb::ndarray<nb::numpy, Out> cell_copy<Out>::to_numpy() {
  Out* p = data.release();
  nb::capsule owner(p, [](void* q) noexcept { std::free(q); });
  return nb::ndarray<nb::numpy, Out>(p, dims.size(), dims.data(), owner);
}

// The copies the histograms and axes make: sums and edges as float64, counts as int64.
template struct cell_copy<double>;
template struct cell_copy<std::int64_t>;
template cell_copy<double>::cell_copy(const double*, const std::vector<std::int64_t>&);
template cell_copy<std::int64_t>::cell_copy(const std::uint64_t*, const std::vector<std::int64_t>&);
template cell_copy<std::int64_t>::cell_copy(const std::uint32_t*, const std::vector<std::int64_t>&);

void register_arrays(nb::module_& m) {
  m.def("sample_types", [] {  // tally's one table: (name, numpy's name, bytes, floating)
    nb::list rows;
    for (tally::dtype t : tally::sample_types())
      rows.append(nb::make_tuple(std::string(tally::name_of(t)), std::string(tally::numpy_name_of(t)),
                                 tally::size_of(t), tally::is_floating(t)));
    return rows;
  });
  m.def("sample_type", [](const any_array& a) { return std::string(tally::name_of(dtype_of(a.dtype()))); },
        "array"_a, "The tally sample type of an array (raises TypeError for other types).");
}

}  // namespace tally_bindings

// Fills of samples in CUDA memory on the caller's stream (the package's path for torch, cupy and
// other device arrays): the cells come back as a device array, or are written into one.
#include "bindings.hpp"
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <utility>

using namespace nb::literals;

namespace tally_bindings {

namespace {

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

/// One fill of one contiguous column given by its CUDA address, element count and sample type
/// (what a torch tensor's data_ptr() and numel() give; a DLPack export costs a third of a small
/// fill), with contiguous weights of `weight_type` at `weights` where that is not 0, on the
/// caller's stream: the package's one entry for such calls, whose result the caller takes whole.
/// The planner decides where the values go: unweighted counts without flow that
/// tally::count_into writes in one launch, or that are wanted as another type than int64
/// (histc's floats), are written by count_into into allocate(bins, out_type)'s array (the
/// caller's library's memory pool; allocate returns it and its address); other fills fill a
/// device_histogram whose cells are handed over in place as wrap(cells) (no second buffer, no
/// conversion). With flow: (values, a FlowReader). The addresses must be memory of `device`, the
/// current device (the fills check them against it).
nb::object fill_once(std::vector<tally::axis> axes, std::uintptr_t data, std::int64_t size, const std::string& type,
                     const std::string& strategy, std::uintptr_t stream, int device, bool flow, std::uintptr_t weights,
                     const std::string& weight_type, const std::string& out_type, const nb::callable& allocate,
                     const nb::callable& wrap) {
  const tally::view column{reinterpret_cast<const void*>(data), size, 1, tally::dtype_from_name(type)};
  if (!weights && !flow) {
    const auto counted = tally::dtype_from_name(out_type);
    const auto options = make_options(false, strategy, tally::backend::cuda, false);
    nb::object made;
    const auto out = [&]() -> void* {
      made = allocate(axes.front().bins(), out_type);
      return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(nb::cast<nb::tuple>(made)[1]));
    };
    // Planning and the one launch take microseconds (the first call for a set of axes also uploads
    // their tables, with a wait): the GIL stays held, so allocate's call needs no switch back.
    if (tally::count_into_if_one_launch(axes, {column}, out, counted, reinterpret_cast<void*>(stream), options))
      return nb::cast<nb::tuple>(made)[0];
    if (counted != tally::dtype::i64) {  // another type than the histogram's cells: converted
      void* to = out();
      {
        nb::gil_scoped_release release;
        tally::count_into(std::move(axes), {column}, to, counted, reinterpret_cast<void*>(stream), options);
      }
      return nb::cast<nb::tuple>(made)[0];
    }
  }
  fill_views v;
  v.columns.push_back(column);
  if (weights) v.weights = tally::view{reinterpret_cast<const void*>(weights), size, 1, tally::dtype_from_name(weight_type)};
  nb::object out = fill_views_on_stream(std::move(axes), v, strategy, stream, device, flow);
  if (!flow) return wrap(out);
  const nb::tuple values_and_reader = nb::cast<nb::tuple>(out);
  return nb::make_tuple(wrap(values_and_reader[0]), values_and_reader[1]);
}

}  // namespace

void register_device_fills(nb::module_& m) {
  nb::class_<flow_reader>(m, "FlowReader").def("read", &flow_reader::read);
  m.def("fill_on_stream", &fill_on_stream, "axes"_a, "columns"_a, "weights"_a.none(), "strategy"_a,
        "stream"_a, "device"_a, "flow"_a = false);
  m.def("fill_once", &fill_once, "axes"_a, "data"_a, "size"_a, "type"_a, "strategy"_a, "stream"_a, "device"_a,
        "flow"_a, "weights"_a, "weight_type"_a, "out_type"_a, "allocate"_a, "wrap"_a);
}

}  // namespace tally_bindings

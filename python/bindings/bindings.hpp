// tally._tally's internals shared by its binding files (python/bindings/): each register_*.cpp
// binds one area of the C++ API into the module, module.cpp calls them in turn. Arrays come in
// through nanobind's ndarray (DLPack or the buffer protocol, any device, any strides) and become
// tally::view without a copy; numpy's rules for edges and arguments live in python/src/tally/.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tally/tally.hpp"

namespace nb = nanobind;

namespace tally_bindings {

// ---- the areas, in the order module.cpp registers them ----

void register_plan(nb::module_& m);             // version, backends, strategy names
void register_arrays(nb::module_& m);           // sample_type
void register_axes(nb::module_& m);             // Axis, AxisTraits (UHI)
void register_histogram(nb::module_& m);        // Hist, merge, equal, copy, fill_channels
void register_device_fills(nb::module_& m);     // fill_on_stream, fill_once
void register_patterns(nb::module_& m);         // unary, binary, reduce, matmul
void register_runtime_kernels(nb::module_& m);  // NVRTC kernels of tally.ElementwiseKernel & co

// ---- array views (register_arrays.cpp) ----

/// Any array, read only.
using any_array = nb::ndarray<nb::ro>;

/// Raised when an array's elements are not one strided sequence of memory; the package copies
/// such an array once and tries again (module.cpp translates it to tally._tally.LayoutError).
struct not_one_stride {};

/// The tally sample type of a DLPack type (nb::type_error for others).
tally::dtype dtype_of(const nb::dlpack::dtype& t);

/// The array as one strided view, or not_one_stride. With any_order (unweighted counts, where
/// the order of the samples does not matter) the dimensions may be visited in any order and in
/// either direction, so transposed and reversed arrays need no copy; otherwise the elements
/// must come in C order (numpy's ravel order), as weights must pair with their samples. With
/// repeat_ok, an array of one value repeated (every stride 0: a broadcast scalar) is a view of
/// stride 0, which histogram fills read without a copy.
tally::view view_of(const any_array& a, bool any_order, bool repeat_ok = false);

/// A fill's columns and weights as views. One unweighted column is read in any order (its
/// samples pair with nothing); several columns, or weights, pair element by element in C order.
struct fill_views {
  std::vector<tally::view> columns;
  std::optional<tally::view> weights;

  fill_views() = default;
  fill_views(const std::vector<any_array>& cs, const std::optional<any_array>& ws);
};

/// Cells copied out of a histogram (work that needs no GIL), then handed to numpy as they are.
/// The copy starts as calloc's zeros and only non-zero cells are written: a huge histogram of
/// few counts costs memory for those, not for every cell (tally::memory_error: MemoryError).
/// Defined for Out double (from double) and std::int64_t (from std::uint64_t, std::uint32_t).
template <class Out> struct cell_copy {
  struct release {
    void operator()(Out* p) const { std::free(p); }
  };
  std::unique_ptr<Out[], release> data;
  std::vector<std::size_t> dims;

  template <class In> cell_copy(const In* values, const std::vector<std::int64_t>& shape);
  /// A numpy array that owns the copy (with the GIL held).
  nb::ndarray<nb::numpy, Out> to_numpy();
};

// ---- options and plans by name (register_plan.cpp) ----

tally::backend backend_named(const std::string& name);

tally::options make_options(bool weighted, const std::string& strategy, tally::backend backend, bool flow,
                            bool counts32 = false, int threads = 0, bool exact_sums = false,
                            std::int64_t sum_block = 65536);

/// A plan as a dict: where, which strategy, its launch shape and the planner's reasons.
nb::dict policy_dict(const tally::policy& p);

}  // namespace tally_bindings

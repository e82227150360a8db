// User-defined kernels (tally.ElementwiseKernel, tally.ReductionKernel, tally.RawKernel): the
// package generates the source or takes the user's, and packs each kernel parameter's bytes; here
// they are compiled with NVRTC (once per source, options and architecture) and launched.
#include "bindings.hpp"
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <tuple>

#include "tally/patterns/runtime_kernel.hpp"

using namespace nb::literals;

namespace tally_bindings {

namespace {

/// NVRTC's options: the given ones, or (None) the generated kernels' defaults.
std::vector<std::string> options_or_defaults(const std::optional<std::vector<std::string>>& options) {
  return options ? *options : tally::runtime_default_options();
}

std::vector<const void*> pointers_of(const std::vector<nb::bytes>& args) {
  std::vector<const void*> pointers;
  for (const auto& a : args) pointers.push_back(a.c_str());
  return pointers;
}

}  // namespace

void register_runtime_kernels(nb::module_& m) {
  m.def("runtime_kernels_compiled", &tally::runtime_kernels_compiled);
  m.def("runtime_device", [] {
    const auto d = tally::current_runtime_device();
    return std::make_tuple(d.ordinal, d.arch, d.multiprocessors);
  });
  m.def("runtime_compile", [](const std::string& source, int arch, const std::optional<std::vector<std::string>>& options) {
    const auto o = options_or_defaults(options);
    nb::gil_scoped_release release;
    return tally::compile_runtime_source(source, arch, o);
  }, "source"_a, "arch"_a, "options"_a = nb::none());
  m.def("runtime_kernel", [](const std::string& source, const std::string& name,
                             const std::optional<std::vector<std::string>>& options) {
    const auto o = options_or_defaults(options);
    nb::gil_scoped_release release;
    return reinterpret_cast<std::uintptr_t>(tally::get_runtime_kernel(source, name, o));
  }, "source"_a, "name"_a, "options"_a = nb::none());
  m.def("runtime_load", [](const std::string& source, const std::optional<std::vector<std::string>>& options) {
    const auto o = options_or_defaults(options);
    nb::gil_scoped_release release;
    tally::load_runtime_source(source, o);
  }, "source"_a, "options"_a = nb::none());
  m.def("runtime_compilations", &tally::runtime_compilations);
  m.def("runtime_launch", [](std::uintptr_t kernel, std::int64_t blocks, int threads, const std::vector<nb::bytes>& args,
                             std::uintptr_t stream) {
    tally::launch_runtime_kernel(reinterpret_cast<tally::runtime_kernel>(kernel), blocks, threads, pointers_of(args),
                                 reinterpret_cast<void*>(stream));
  }, "kernel"_a, "blocks"_a, "threads"_a, "args"_a, "stream"_a);
  m.def("runtime_launch_raw", [](std::uintptr_t kernel, const tally::runtime_dims& grid, const tally::runtime_dims& block,
                                 std::int64_t shared_mem, const std::vector<nb::bytes>& args, std::uintptr_t stream) {
    tally::launch_runtime_kernel(reinterpret_cast<tally::runtime_kernel>(kernel), grid, block, shared_mem,
                                 pointers_of(args), reinterpret_cast<void*>(stream));
  }, "kernel"_a, "grid"_a, "block"_a, "shared_mem"_a, "args"_a, "stream"_a);
}

}  // namespace tally_bindings

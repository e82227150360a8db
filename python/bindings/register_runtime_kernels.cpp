// User-defined kernels (tally.ElementwiseKernel, tally.ReductionKernel): the package generates
// the source and packs each kernel parameter's bytes; here they are compiled with NVRTC (once per
// source and architecture) and launched.
#include "bindings.hpp"
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>

#include "tally/patterns/runtime_kernel.hpp"

using namespace nb::literals;

namespace tally_bindings {

void register_runtime_kernels(nb::module_& m) {
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

}  // namespace tally_bindings

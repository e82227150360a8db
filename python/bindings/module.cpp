// tally._tally: the C++ API as the Python package sees it, one register_*.cpp per area. Errors
// come out as Python's: a layout the package must copy (LayoutError), MemoryError, ValueError.
#include <exception>

#include "bindings.hpp"

using namespace tally_bindings;

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

  register_plan(m);
  register_arrays(m);
  register_axes(m);
  register_histogram(m);
  register_device_fills(m);
  register_patterns(m);
  register_runtime_kernels(m);
}

// Axes (tally.axis's C++ side) and UHI's PlottableAxis protocol on them.
#include "bindings.hpp"
#include <nanobind/stl/string.h>

#include <algorithm>

using namespace nb::literals;

namespace tally_bindings {

namespace {

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

/// A range end as the package describes it (tally._edges.estimator_end): (kind, value,
/// negative, magnitude, beyond), kind 'int' or 'float' for a Python number, else the numpy
/// scalar's tally type name.
tally::range_end range_end_of(const nb::handle& end) {
  const nb::tuple t = nb::cast<nb::tuple>(end);
  if (t.size() != 5) throw nb::value_error("tally: a range end is (kind, value, negative, magnitude, beyond)");
  const std::string kind = nb::cast<std::string>(t[0]);
  const double value = nb::cast<double>(t[1]);
  tally::integer_value v;
  v.negative = nb::cast<bool>(t[2]);
  v.magnitude = nb::cast<std::uint64_t>(t[3]);
  if (kind == "float") return tally::range_end::python_float(value);
  if (kind == "int") return nb::cast<bool>(t[4]) ? tally::range_end::python_int_beyond(value) : tally::range_end::python_int(v);
  const tally::dtype type = tally::dtype_from_name(kind);
  return tally::is_floating(type) ? tally::range_end::of_float(type, value) : tally::range_end::of_integer(type, v);
}

const char* exception_name(tally::bin_estimate::failure f) {
  switch (f) {
    case tally::bin_estimate::failure::value_error: return "ValueError";
    case tally::bin_estimate::failure::index_error: return "IndexError";
    case tally::bin_estimate::failure::overflow_error: return "OverflowError";
    default: return nullptr;
  }
}

/// Python's repr of a double (the shortest text that reads back as it).
std::string float_text(double x) { return nb::cast<std::string>(nb::repr(nb::float_(x))); }

/// The call of tally.axis that makes `a` (a variable axis' edges abridged past 10).
std::string axis_repr(const tally::axis& a) {
  switch (a.kind()) {
    case tally::axis_kind::regular: {
      const bool exact = a.has_exact_range();
      const auto bound = [&](tally::integer_value v) {
        return (v.negative && v.magnitude ? "-" : "") + std::to_string(v.magnitude);
      };
      std::string out = "tally.axis.regular(" + std::to_string(a.bins()) + ", " +
                        (exact ? bound(a.exact_lo()) : float_text(a.regular_lo())) + ", " +
                        (exact ? bound(a.exact_hi()) : float_text(a.regular_hi()));
      if (a.edge_type() != tally::dtype::f64) out += ", edge_type='" + std::string(tally::name_of(a.edge_type())) + "'";
      return out + ")";
    }
    case tally::axis_kind::integer:
      return "tally.axis.integer(" + std::to_string(a.integer_lo()) + ", " + std::to_string(a.integer_lo() + a.bins()) +
             ")";
    default: {
      // Integer edges (variable_integers) as integers, others as Python's floats.
      const std::vector<std::int64_t>& ints = a.integer_edges();
      const std::vector<double> e = a.edges();
      const auto edge = [&](std::size_t k) {
        if (ints.empty()) return float_text(e[k]);
        return a.integer_edges_unsigned() ? std::to_string(static_cast<std::uint64_t>(ints[k])) : std::to_string(ints[k]);
      };
      std::string out = "tally.axis.variable([";
      for (std::size_t k = 0; k < e.size(); ++k) {
        if (e.size() > 10 && k == 3) {
          out += "..., ";
          k = e.size() - 3;
        }
        out += edge(k) + (k + 1 < e.size() ? ", " : "");
      }
      out += "])";
      if (e.size() > 10) out += "  # " + std::to_string(a.bins()) + " bins";
      return out;
    }
  }
}

}  // namespace

void register_axes(nb::module_& m) {
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
      // Arrays that own their copies (a property's default policy would tie them to the axis).
      .def_prop_ro("edges", [](const tally::axis& a) { return numpy_edges(a.edges()); }, nb::rv_policy::move)
      .def_prop_ro("widths", [](const tally::axis& a) { return numpy_edges(a.widths()); }, nb::rv_policy::move)
      .def_prop_ro("centers", [](const tally::axis& a) {  // each bin's midpoint, as boost-histogram's
        std::vector<double> c = a.edges();
        for (std::size_t k = 0; k + 1 < c.size(); ++k) c[k] += (c[k + 1] - c[k]) / 2;
        c.pop_back();
        return numpy_edges(c);
      }, nb::rv_policy::move)
      // UHI's bin of a value, as boost-histogram's (bh.loc calls it): bins [e_k, e_k+1), -1 below
      // the first edge, bins from the last edge on and for NaN.
      .def("index", [](const tally::axis& a, double v) -> std::int64_t {
        const std::vector<double> e = a.edges();
        if (v < e.front()) return -1;
        if (!(v < e.back())) return a.bins();
        return std::upper_bound(e.begin(), e.end(), v) - e.begin() - 1;
      }, "value"_a)
      .def("__eq__", [](const tally::axis& a, const tally::axis& b) { return a == b; })
      .def("__repr__", &axis_repr)
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

  // numpy.histogram's edge rules (tally/edges.hpp); types by tally's names (f16, f32, f64).
  m.def("linspace_edges", [](std::int64_t bins, double first, double last, const std::string& arithmetic,
                             const std::string& edge_type) {
    return numpy_edges(tally::linspace_edges(bins, first, last, tally::dtype_from_name(arithmetic),
                                             tally::dtype_from_name(edge_type)));
  }, "bins"_a, "first"_a, "last"_a, "arithmetic"_a, "edge_type"_a);
  m.def("equal_bins", [](std::int64_t bins, double first, double last, const std::string& arithmetic,
                         const std::string& edge_type) {
    return tally::equal_bins(bins, first, last, tally::dtype_from_name(arithmetic), tally::dtype_from_name(edge_type));
  }, "bins"_a, "first"_a, "last"_a, "arithmetic"_a, "edge_type"_a);
  // numpy's bin estimators over host samples in C order (tally/edges.hpp: estimate_bins): returns
  // (numpy's ceil(delta / width) as a float, whether stone's search ended at its bound, the name
  // of the exception numpy raises or None, its message, the estimator's width).
  m.def("estimate_bins", [](const std::string& name, const any_array& a, const nb::object& range) {
    const auto e = tally::bin_estimator_from_name(name);
    if (!e) throw nb::value_error(("'" + name + "' is not a valid estimator for `bins`").c_str());
    if (a.device_type() != nb::device::cpu::value)
      throw nb::value_error("tally: estimate_bins reads samples in host memory");
    const tally::view v = view_of(a, false);
    std::optional<std::pair<tally::range_end, tally::range_end>> ends;
    if (!range.is_none()) {
      const nb::tuple r = nb::cast<nb::tuple>(range);
      if (r.size() != 2) throw nb::value_error("tally: the range is two ends");
      ends.emplace(range_end_of(r[0]), range_end_of(r[1]));
    }
    tally::bin_estimate out;
    {
      nb::gil_scoped_release unlocked;
      out = tally::estimate_bins(*e, v, ends);
    }
    const char* failed = exception_name(out.failed);
    return nb::make_tuple(out.estimate, out.at_search_bound, failed ? nb::object(nb::str(failed)) : nb::none(),
                          out.message, out.width);
  }, "name"_a, "samples"_a, "range"_a.none());
  m.def("axis_of_edges", [](nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu> e) {
    return tally::axis_of_edges(std::vector<double>(e.data(), e.data() + e.shape(0)));
  }, "edges"_a);

  nb::class_<axis_traits>(m, "AxisTraits")
      .def_ro("circular", &axis_traits::circular)
      .def_ro("discrete", &axis_traits::discrete)
      .def("__repr__", [](const axis_traits& t) {
        return std::string("AxisTraits(circular=") + (t.circular ? "True" : "False") +
               ", discrete=" + (t.discrete ? "True" : "False") + ")";
      });
}

}  // namespace tally_bindings

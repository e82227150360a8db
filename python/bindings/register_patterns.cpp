// The parallel patterns (tally.patterns): elementwise, reductions and matmul over arrays or
// addresses, on the caller's stream. The package allocates every output in the input's library.
#include "bindings.hpp"
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "tally/patterns/elementwise.hpp"
#include "tally/patterns/matmul.hpp"
#include "tally/patterns/reduce.hpp"

using namespace nb::literals;

namespace tally_bindings {

namespace {

using out_ndarray = nb::ndarray<>;

template <class Op> Op op_named(const std::string& name, Op last, const char* kind = "operation") {
  for (unsigned i = 0; i <= static_cast<unsigned>(last); ++i)
    if (tally::name_of(static_cast<Op>(i)) == name) return static_cast<Op>(i);
  throw tally::error(std::string("tally: unknown ") + kind + " " + name);
}

/// Every name of an enum whose values run from 0 to `last` (the strategies), in its order.
template <class E> std::vector<std::string> names_of(E last) {
  std::vector<std::string> names;
  for (unsigned i = 0; i <= static_cast<unsigned>(last); ++i) names.emplace_back(tally::name_of(static_cast<E>(i)));
  return names;
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

tally::unary_options unary_on_stream(std::uintptr_t stream, const std::string& strategy) {
  auto o = on_stream<tally::unary_options>(stream);
  o.strategy = op_named(strategy, tally::map_strategy::packed128_resident, "strategy");
  return o;
}

void unary(const std::string& op, const any_array& x, const out_ndarray& y, std::uintptr_t stream,
           const std::string& strategy) {
  const auto which = op_named(op, tally::unary_op::tanh);
  const auto options = unary_on_stream(stream, strategy);
  if (x.size() != y.size() || dtype_of(x.dtype()) != dtype_of(y.dtype()))
    throw tally::error("tally: " + op + ": out must have the input's shape and dtype");
  const void* in = contiguous_data(x, "the input");
  void* out = contiguous_data(y, "out");
  nb::gil_scoped_release release;
  tally::unary(which, dtype_of(x.dtype()), in, out, static_cast<std::int64_t>(x.size()), options);
}

/// unary() of contiguous memory given by address, element type and count: the package's path
/// for torch and cupy CUDA arrays, for which a DLPack export of each array costs more than a
/// small kernel. tally::unary checks the addresses (null, alignment, overlap, where they live).
void unary_address(const std::string& op, const std::string& type, std::uintptr_t x, std::uintptr_t y,
                   std::int64_t n, std::uintptr_t stream, const std::string& strategy) {
  const auto which = op_named(op, tally::unary_op::tanh);
  const auto t = tally::dtype_from_name(type);
  const auto options = unary_on_stream(stream, strategy);
  nb::gil_scoped_release release;
  tally::unary(which, t, reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y), n, options);
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

void matmul(const any_array& a, const any_array& b, const out_ndarray& c, std::uintptr_t stream,
            const std::string& strategy) {
  auto options = on_stream<tally::matmul_options>(stream);
  options.strategy = op_named(strategy, tally::matmul_strategy::warptiled, "strategy");
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
  tally::matmul(pa, pb, pc, m, n, k, options);
}

}  // namespace

void register_patterns(nb::module_& m) {
  m.def("unary", &unary, "op"_a, "x"_a, "out"_a.noconvert(), "stream"_a, "strategy"_a = "automatic");
  m.def("unary_address", &unary_address, "op"_a, "type"_a, "x"_a, "out"_a, "n"_a, "stream"_a,
        "strategy"_a = "automatic");
  m.def("binary", &binary, "op"_a, "a"_a, "b"_a, "out"_a.noconvert(), "stream"_a);
  m.def("reduce", &reduce, "op"_a, "x"_a, "along_rows"_a, "out"_a.noconvert(), "stream"_a);
  m.def("reduce_address", &reduce_address, "op"_a, "type"_a, "x"_a, "rows"_a, "cols"_a, "along_rows"_a,
        "result_type"_a, "result"_a, "stream"_a);
  m.def("matmul", &matmul, "a"_a, "b"_a, "out"_a.noconvert(), "stream"_a, "strategy"_a = "automatic");
  // The strategies' names, in their enums' order (automatic first).
  m.def("unary_strategies", [] { return names_of(tally::map_strategy::packed128_resident); });
  m.def("matmul_strategies", [] { return names_of(tally::matmul_strategy::warptiled); });
}

}  // namespace tally_bindings

// The parallel patterns' public entry points: every argument is checked here, before any backend
// runs, then the job goes to the backend where the data live.
#include "patterns/core/patterns.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "tally/error.hpp"

#if defined(TALLY_HAVE_CUDA)
#include "base/cuda_devices.hpp"
#endif

namespace tally {
namespace detail {

byte_span span_of(int rank, const std::int64_t* shape, const std::int64_t* strides, std::size_t element_size) {
  byte_span s;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 0) return {};
    const std::int64_t reach = (shape[d] - 1) * strides[d];
    (reach < 0 ? s.lo : s.hi) += reach;
  }
  const auto size = static_cast<std::int64_t>(element_size);
  return {s.lo * size, (s.hi + 1) * size};
}

}  // namespace detail

namespace {

using detail::byte_span;
using detail::pattern_ops;

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

bool is_float_type(dtype t) { return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16; }

void require_float_type(dtype t, const std::string& what) {
  if (!is_float_type(t))
    throw error(what + ": unsupported dtype " + std::string(name_of(t)) + "; expected f32, f16 or bf16");
}

/// Throws unless p is a multiple of the element size (vector loads and typed access need it).
void require_aligned(const void* p, dtype t, const std::string& what) {
  if (reinterpret_cast<std::uintptr_t>(p) % size_of(t) != 0)
    throw error(what + ": address " + std::to_string(reinterpret_cast<std::uintptr_t>(p)) +
                " is not aligned to its " + std::to_string(size_of(t)) + "-byte elements");
}

bool overlaps(const void* a, byte_span sa, const void* b, byte_span sb) {
  if (sa.hi == sa.lo || sb.hi == sb.lo) return false;
  const auto pa = reinterpret_cast<std::intptr_t>(a), pb = reinterpret_cast<std::intptr_t>(b);
  return pa + sa.lo < pb + sb.hi && pb + sb.lo < pa + sa.hi;
}

/// backend::automatic: CUDA where any argument is in device memory, else the CPU. An explicit
/// backend must be compiled in and usable, and the CPU cannot read device memory.
const pattern_ops& resolve(backend wanted, std::initializer_list<const void*> pointers, const char* what) {
  bool on_device = false;
#if defined(TALLY_HAVE_CUDA)
  for (const void* p : pointers) on_device = on_device || (p && detail::cuda::device_of(p) >= 0);
#else
  static_cast<void>(pointers);
#endif
  if (wanted == backend::automatic) wanted = on_device ? backend::cuda : backend::cpu;
  if (wanted == backend::cpu) {
    if (on_device)
      throw error(std::string(what) + ": backend cpu cannot read device memory; use backend cuda or automatic");
    return detail::cpu_patterns();
  }
  if (wanted != backend::cuda) throw error(std::string(what) + ": unknown backend");
#if defined(TALLY_HAVE_CUDA)
  std::string why;
  if (!detail::cuda::usable(why)) throw error(std::string(what) + ": backend cuda is not usable here: " + why);
  return detail::cuda_patterns();
#else
  throw error(std::string(what) + ": backend cuda is not compiled into this build of tally");
#endif
}

std::int64_t checked_count(const std::vector<std::int64_t>& shape, const std::string& what) {
  std::int64_t n = 1;
  for (auto s : shape) {
    if (s < 0) throw error(what + ": negative dimension in shape " + shape_string(shape));
    if (s && n > std::numeric_limits<std::int64_t>::max() / 4 / s)
      throw error(what + ": shape " + shape_string(shape) + " has too many elements");
    n *= s;
  }
  return n;
}

/// One side of a binary job: the shape and strides right-aligned to `rank` dimensions.
struct layout {
  std::int64_t shape[max_dims];
  std::int64_t strides[max_dims];
  byte_span span;
  std::int64_t count;
};

template <class A>
layout layout_of(const A& x, int rank, const std::string& what) {
  const int own = static_cast<int>(x.shape.size());
  if (own > max_dims)
    throw error(what + ": " + std::to_string(own) + " dimensions; at most " + std::to_string(max_dims));
  if (!x.strides.empty() && x.strides.size() != x.shape.size())
    throw error(what + ": " + std::to_string(x.strides.size()) + " strides for shape " + shape_string(x.shape));
  require_float_type(x.type, what);
  layout l{};
  l.count = checked_count(x.shape, what);
  std::int64_t contiguous = 1;
  for (int d = rank - 1, e = own - 1; d >= 0; --d, --e) {
    if (e < 0) {
      l.shape[d] = 1;
      l.strides[d] = 0;
      continue;
    }
    l.shape[d] = x.shape[static_cast<std::size_t>(e)];
    l.strides[d] = x.strides.empty() ? contiguous : x.strides[static_cast<std::size_t>(e)];
    contiguous *= std::max<std::int64_t>(l.shape[d], 1);
  }
  l.span = detail::span_of(rank, l.shape, l.strides, size_of(x.type));
  if (l.count > 0 && x.data == nullptr) throw error(what + ": null data with " + std::to_string(l.count) + " elements");
  if (l.count > 0) require_aligned(x.data, x.type, what);
  return l;
}

/// Whether distinct indices of the layout reach distinct elements (no stride 0 over a
/// dimension longer than 1, no dimension stepping inside another).
bool elements_distinct(int rank, const std::int64_t* shape, const std::int64_t* strides) {
  // The dimensions longer than 1 by increasing |stride| (insertion sort of at most 8).
  std::vector<int> dims;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] <= 1) continue;
    auto at = dims.begin();
    while (at != dims.end() && std::abs(strides[*at]) <= std::abs(strides[d])) ++at;
    dims.insert(at, d);
  }
  std::int64_t needed = 1;
  for (int d : dims) {
    const std::int64_t s = std::abs(strides[d]);
    if (s < needed) return false;
    needed = s * shape[d];
  }
  return true;
}

/// Drops dimensions of length 1 and merges neighbours that are one dimension for all three.
void collapse(detail::binary_job& job) {
  int rank = 0;
  for (int d = 0; d < job.rank; ++d) {
    if (job.shape[d] == 1) continue;
    if (rank > 0) {
      const int p = rank - 1;
      const std::int64_t len = job.shape[d];
      if (job.a_strides[p] == job.a_strides[d] * len && job.b_strides[p] == job.b_strides[d] * len &&
          job.out_strides[p] == job.out_strides[d] * len) {
        job.shape[p] *= len;
        job.a_strides[p] = job.a_strides[d];
        job.b_strides[p] = job.b_strides[d];
        job.out_strides[p] = job.out_strides[d];
        continue;
      }
    }
    job.shape[rank] = job.shape[d];
    job.a_strides[rank] = job.a_strides[d];
    job.b_strides[rank] = job.b_strides[d];
    job.out_strides[rank] = job.out_strides[d];
    ++rank;
  }
  if (rank == 0) {  // a scalar
    job.shape[0] = 1;
    job.a_strides[0] = job.b_strides[0] = job.out_strides[0] = 0;
    rank = 1;
  }
  job.rank = rank;
}

}  // namespace

std::string_view name_of(unary_op op) {
  switch (op) {
    case unary_op::sigmoid: return "sigmoid";
    case unary_op::relu: return "relu";
    case unary_op::silu: return "silu";
    case unary_op::gelu_tanh: return "gelu_tanh";
    case unary_op::gelu_erf: return "gelu_erf";
    case unary_op::tanh: return "tanh";
  }
  return "?";
}

std::string_view name_of(binary_op op) {
  switch (op) {
    case binary_op::add: return "add";
    case binary_op::sub: return "sub";
    case binary_op::mul: return "mul";
    case binary_op::div: return "div";
  }
  return "?";
}

std::string_view name_of(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
    case reduce_op::mean: return "mean";
  }
  return "?";
}

std::string_view name_of(matmul_strategy s) {
  switch (s) {
    case matmul_strategy::automatic: return "automatic";
    case matmul_strategy::tiled16: return "tiled16";
    case matmul_strategy::blocked128: return "blocked128";
    case matmul_strategy::warptiled: return "warptiled";
  }
  return "?";
}

const std::vector<matmul_tiling>& matmul_tilings() {
  static const std::vector<matmul_tiling> all(std::begin(detail::cuda_matmul_tilings),
                                              std::end(detail::cuda_matmul_tilings));
  return all;
}

int matmul_default_tiling() { return detail::cuda_matmul_default_tiling; }

std::string name_of(const matmul_tiling& t) {
  const auto s = [](int v) { return std::to_string(v); };
  return s(t.bm) + "x" + s(t.bn) + "x" + s(t.bk) + " w" + s(t.wm) + "x" + s(t.wn) + " t" + s(t.tm) + "x" + s(t.tn) +
         " s" + s(t.stages);
}

dtype promote(dtype a, dtype b) {
  require_float_type(a, "promote");
  require_float_type(b, "promote");
  return a == b ? a : dtype::f32;
}

std::vector<std::int64_t> broadcast_shape(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      throw error("shapes " + shape_string(a) + " and " + shape_string(b) + " do not broadcast (dimension " +
                  std::to_string(rank - 1 - i) + ": " + std::to_string(x) + " vs " + std::to_string(y) + ")");
    out[rank - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

void unary(unary_op op, dtype type, const void* x, void* y, std::int64_t n, const unary_options& options) {
  const std::string what = "tally::" + std::string(name_of(op));
  if (static_cast<unsigned>(op) > static_cast<unsigned>(unary_op::tanh)) throw error(what + ": unknown operation");
  if (static_cast<unsigned>(options.strategy) > static_cast<unsigned>(map_strategy::packed128_resident))
    throw error(what + ": unknown strategy");
  require_float_type(type, what);
  if (n < 0) throw error(what + ": n must be >= 0, got " + std::to_string(n));
  if (n > 0 && (x == nullptr || y == nullptr)) throw error(what + ": null pointer with n = " + std::to_string(n));
  const auto& ops = resolve(options.backend, {x, y}, what.c_str());
  if (&ops == &detail::cpu_patterns() && options.strategy != map_strategy::automatic)
    throw error(what + ": strategy " + std::string(name_of(options.strategy)) +
                " is a CUDA strategy; on the CPU backend (host memory) only automatic");
  if (n == 0) return;
  require_aligned(x, type, what + " input");
  require_aligned(y, type, what + " output");
  const byte_span span{0, n * static_cast<std::int64_t>(size_of(type))};
  if (x != y && overlaps(x, span, y, span))
    throw error(what + ": the output overlaps the input without being the same array (that would corrupt the result)");
  ops.unary({op, type, x, y, n, options, options.strategy});
}

void unary(unary_op op, dtype type, const void* x, void* y, std::int64_t n, const run_options& options) {
  unary_options o;
  static_cast<run_options&>(o) = options;
  unary(op, type, x, y, n, o);
}

void binary(binary_op op, const array& a, const array& b, const out_array& out, const run_options& options) {
  const std::string what = "tally::" + std::string(name_of(op));
  if (static_cast<unsigned>(op) > static_cast<unsigned>(binary_op::div)) throw error(what + ": unknown operation");
  const std::vector<std::int64_t> shape = broadcast_shape(a.shape, b.shape);
  if (out.shape != shape)
    throw error(what + ": output shape " + shape_string(out.shape) + ", expected the broadcast shape " +
                shape_string(shape) + " of " + shape_string(a.shape) + " and " + shape_string(b.shape));
  const int rank = static_cast<int>(shape.size());
  const layout la = layout_of(a, rank, what + " a"), lb = layout_of(b, rank, what + " b");
  const layout lo = layout_of(out, rank, what + " out");
  const dtype result = promote(a.type, b.type);
  if (out.type != result)
    throw error(what + ": output dtype " + std::string(name_of(out.type)) + ", expected " +
                std::string(name_of(result)) + " (numpy's result type of " + std::string(name_of(a.type)) + " and " +
                std::string(name_of(b.type)) + ")");
  if (!elements_distinct(rank, lo.shape, lo.strides))
    throw error(what + ": the output's strides make several elements share memory");

  detail::binary_job job{};
  job.op = op;
  job.rank = rank;
  job.n = lo.count;
  job.a = a.data;
  job.a_type = a.type;
  job.b = b.data;
  job.b_type = b.type;
  job.out = out.data;
  job.out_type = out.type;
  job.run = options;
  for (int d = 0; d < rank; ++d) {
    job.shape[d] = shape[static_cast<std::size_t>(d)];
    // A dimension of length 1 broadcasts: its stride is never used; 0 makes that explicit.
    job.a_strides[d] = la.shape[d] == 1 ? 0 : la.strides[d];
    job.b_strides[d] = lb.shape[d] == 1 ? 0 : lb.strides[d];
    job.out_strides[d] = lo.strides[d];
  }
  // In place is the same array: same memory, type and layout over the whole output shape.
  auto same_array = [&](const array& x, const std::int64_t* strides) {
    if (x.data != out.data || x.type != out.type) return false;
    for (int d = 0; d < rank; ++d)
      if (shape[static_cast<std::size_t>(d)] > 1 && strides[d] != lo.strides[d]) return false;
    return true;
  };
  if (overlaps(a.data, la.span, out.data, lo.span) && !same_array(a, job.a_strides))
    throw error(what + ": the output overlaps input a without being the same array (that would corrupt the result)");
  if (overlaps(b.data, lb.span, out.data, lo.span) && !same_array(b, job.b_strides))
    throw error(what + ": the output overlaps input b without being the same array (that would corrupt the result)");
  const auto& ops = resolve(options.backend, {a.data, b.data, out.data}, what.c_str());
  if (job.n == 0) return;
  collapse(job);
  ops.binary(job);
}

bool reduce_supported(reduce_op op, dtype input, dtype result) {
  const bool floating = is_float_type(input);
  switch (op) {
    case reduce_op::sum:
      return floating ? (result == dtype::f32 || result == dtype::f64) : input == dtype::i32 && result == dtype::i64;
    case reduce_op::mean:
      return floating ? (result == dtype::f32 || result == dtype::f64) : input == dtype::i32 && result == dtype::f64;
    case reduce_op::min:
    case reduce_op::max: return input != dtype::f64 && result == input;
  }
  return false;
}

namespace {

void run_reduce(reduce_op op, bool whole, dtype type, const void* x, std::int64_t rows, std::int64_t cols,
                std::int64_t row_stride, dtype result_type, void* result, const run_options& options) {
  const std::string what = "tally::" + std::string(whole ? "reduce " : "reduce_rows ") + std::string(name_of(op));
  if (static_cast<unsigned>(op) > static_cast<unsigned>(reduce_op::mean)) throw error(what + ": unknown operation");
  if (!reduce_supported(op, type, result_type))
    throw error(what + ": unsupported dtypes " + std::string(name_of(type)) + " -> " +
                std::string(name_of(result_type)) +
                " (sum, mean: f32/f16/bf16 -> f32 or f64, i32 -> i64 (sum) or f64 (mean); min, max: "
                "f32/f16/bf16 or any integer type -> the same type)");
  if (rows < 0 || cols < 0)
    throw error(what + ": rows and cols must be >= 0, got " + std::to_string(rows) + " x " + std::to_string(cols));
  if (row_stride < cols)
    throw error(what + ": row_stride " + std::to_string(row_stride) + " < cols " + std::to_string(cols));
  if (cols == 0 && rows > 0 && (op == reduce_op::min || op == reduce_op::max))
    throw error(what + ": the " + std::string(name_of(op)) + " of an empty " + (whole ? "array" : "row") +
                " is undefined");
  if (rows > 0 && cols > 0 && row_stride > std::numeric_limits<std::int64_t>::max() / 8 / rows)
    throw error(what + ": the matrix is too large to address");
  if (rows > 0 && result == nullptr) throw error(what + ": null result pointer");
  if (rows > 0 && cols > 0 && x == nullptr) throw error(what + ": null input pointer");
  const auto& ops = resolve(options.backend, {x, result}, what.c_str());
  if (rows == 0) return;
  require_aligned(result, result_type, what + " result");
  if (cols > 0) require_aligned(x, type, what + " input");
  const std::int64_t in_size = static_cast<std::int64_t>(size_of(type));
  const byte_span xs{0, cols == 0 ? 0 : ((rows - 1) * row_stride + cols) * in_size};
  const byte_span rs{0, rows * static_cast<std::int64_t>(size_of(result_type))};
  if (overlaps(x, xs, result, rs)) throw error(what + ": the result overlaps the input");
  ops.reduce({op, whole, type, x, rows, cols, row_stride, result_type, result, options});
}

}  // namespace

void reduce(reduce_op op, dtype type, const void* x, std::int64_t n, dtype result_type, void* result,
            const run_options& options) {
  if (n < 0) throw error("tally::reduce: n must be >= 0, got " + std::to_string(n));
  run_reduce(op, true, type, x, 1, n, n, result_type, result, options);
}

void reduce_rows(reduce_op op, dtype type, const void* x, std::int64_t rows, std::int64_t cols,
                 std::int64_t row_stride, dtype result_type, void* result, const run_options& options) {
  run_reduce(op, false, type, x, rows, cols, row_stride, result_type, result, options);
}

void matmul(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
            const matmul_options& options) {
  const std::string what = "tally::matmul";
  if (m < 0 || n < 0 || k < 0)
    throw error(what + ": m, n, k must be >= 0, got " + std::to_string(m) + ", " + std::to_string(n) + ", " +
                std::to_string(k));
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 8;
  if ((m && k > limit / m) || (k && n > limit / k) || (m && n > limit / m))
    throw error(what + ": the matrices are too large to address");
  if (static_cast<unsigned>(options.strategy) > static_cast<unsigned>(matmul_strategy::warptiled))
    throw error(what + ": unknown strategy");
  if (options.tiling < -1 || options.tiling >= detail::cuda_matmul_tiling_count)
    throw error(what + ": tiling " + std::to_string(options.tiling) + " is neither -1 nor an index into matmul_tilings() (0 .. " +
                std::to_string(detail::cuda_matmul_tiling_count - 1) + ")");
  if (options.tiling != -1 && options.strategy != matmul_strategy::warptiled)
    throw error(what + ": a tiling applies only to strategy warptiled, not " + std::string(name_of(options.strategy)));
  if ((m * k > 0 && !a) || (k * n > 0 && !b) || (m * n > 0 && !c)) throw error(what + ": null matrix pointer");
  const auto& ops = resolve(options.backend, {a, b, c}, what.c_str());
  if (m * n == 0) return;
  for (const void* p : {static_cast<const void*>(a), static_cast<const void*>(b), static_cast<const void*>(c)})
    if (p) require_aligned(p, dtype::f32, what);
  const byte_span sa{0, m * k * 4}, sb{0, k * n * 4}, sc{0, m * n * 4};
  if (overlaps(c, sc, a, sa) || overlaps(c, sc, b, sb))
    throw error(what + ": c overlaps a or b (that would corrupt the result)");
  if (&ops == &detail::cpu_patterns()) {
    if (options.strategy != matmul_strategy::automatic)
      throw error(what + ": strategy " + std::string(name_of(options.strategy)) +
                  " is a CUDA strategy; on the CPU backend (host memory) only automatic");
  } else {
    constexpr std::int64_t tile = detail::cuda_matmul_min_tile, max_dim = detail::cuda_matmul_max_dim;
    if (m > max_dim || n > max_dim || k > max_dim || ((m + tile - 1) / tile) * ((n + tile - 1) / tile) >= (std::int64_t{1} << 31))
      throw error(what + ": the CUDA kernels take m, n, k up to 2^31 - 256 and fewer than 2^31 tiles of 128 x 128");
  }
  ops.matmul({a, b, c, m, n, k, options});
}

}  // namespace tally

// The CPU backend of the parallel patterns (OpenMP): the reference and the fallback. The same
// f32 formulas as the CUDA backend (tally/patterns/ops.hpp); reductions in a fixed order.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "patterns/core/patterns.hpp"
#include "patterns/core/reduce_rule.hpp"
#include "tally/patterns/ops.hpp"

namespace tally::detail {
namespace {

int threads_of(const run_options& run) { return run.threads > 0 ? run.threads : omp_get_max_threads(); }

// Element access in f32, the compute type: f16 and bf16 widen exactly and narrow once, to nearest.
float load_f32(const float* p) { return *p; }
float load_f32(const half* p) { return static_cast<float>(to_double(*p)); }
float load_f32(const bfloat16* p) { return static_cast<float>(to_double(*p)); }
void store_f32(float* p, float v) { *p = v; }
void store_f32(half* p, float v) { *p = to_half(v); }
void store_f32(bfloat16* p, float v) { *p = to_bfloat16(v); }

void cpu_unary(const unary_job& job) {
  with_float_type(job.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(job.x);
    T* y = static_cast<T*>(job.y);
    with_unary_op(job.op, [&](auto f) {
#pragma omp parallel for num_threads(threads_of(job.run)) schedule(static)
      for (std::int64_t i = 0; i < job.n; ++i) store_f32(y + i, f(load_f32(x + i)));
    });
  });
}

void cpu_binary(const binary_job& job) {
  const int last = job.rank - 1;
  const std::int64_t cols = job.shape[last];
  const std::int64_t rows = job.n / cols;
  with_float_type(job.a_type, [&](auto ta) {
    with_float_type(job.b_type, [&](auto tb) {
      with_float_type(job.out_type, [&](auto to) {
        using A = typename decltype(ta)::type;
        using B = typename decltype(tb)::type;
        using O = typename decltype(to)::type;
        with_binary_op(job.op, [&](auto f) {
#pragma omp parallel for num_threads(threads_of(job.run)) schedule(static)
          for (std::int64_t r = 0; r < rows; ++r) {
            std::int64_t oa = 0, ob = 0, oo = 0, rest = r;
            for (int d = last - 1; d >= 0; --d) {
              const std::int64_t i = rest % job.shape[d];
              rest /= job.shape[d];
              oa += i * job.a_strides[d];
              ob += i * job.b_strides[d];
              oo += i * job.out_strides[d];
            }
            const A* a = static_cast<const A*>(job.a) + oa;
            const B* b = static_cast<const B*>(job.b) + ob;
            O* out = static_cast<O*>(job.out) + oo;
            for (std::int64_t j = 0; j < cols; ++j)
              store_f32(out + j * job.out_strides[last],
                        f(load_f32(a + j * job.a_strides[last]), load_f32(b + j * job.b_strides[last])));
          }
        });
      });
    });
  });
}

template <class T> auto load_value(const T* p) {
  if constexpr (std::is_integral_v<T>) return *p;
  else return load_f32(p);
}

template <class Out, class Acc> void store_value(Out* p, Acc v) {
  if constexpr (std::is_same_v<Out, half> || std::is_same_v<Out, bfloat16>) store_f32(p, v);
  else *p = static_cast<Out>(v);
}

/// Reduces x[0 .. n) into Acc in index order.
template <class Acc, bool Extreme, class T>
Acc reduce_span(const reducer<Acc, Extreme>& f, const T* x, std::int64_t n) {
  Acc acc = f.start();
  for (std::int64_t i = 0; i < n; ++i) acc = f(acc, static_cast<Acc>(load_value(x + i)));
  return acc;
}

template <class T, class Acc, class Out, bool Extreme> void cpu_reduce_typed(const reduce_job& job) {
  const reducer<Acc, Extreme> f{job.op == reduce_op::min};
  const T* x = static_cast<const T*>(job.x);
  Out* out = static_cast<Out*>(job.result);
  const int threads = threads_of(job.run);
  auto finish = [&](Acc acc, Out* to) {
    if constexpr (!Extreme) {
      if (job.op == reduce_op::mean) return store_value(to, static_cast<Out>(acc) / static_cast<Out>(job.cols));
    }
    store_value(to, acc);
  };
  if (job.whole) {
    // Blocks of a fixed size reduced independently, then combined in block order: the same
    // bits for any number of threads.
    constexpr std::int64_t block = 1 << 16;
    const std::int64_t blocks = (job.cols + block - 1) / block;
    std::vector<Acc> partial(static_cast<std::size_t>(blocks));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t k = 0; k < blocks; ++k)
      partial[static_cast<std::size_t>(k)] = reduce_span(f, x + k * block, std::min(block, job.cols - k * block));
    Acc acc = f.start();
    for (Acc p : partial) acc = f(acc, p);
    finish(acc, out);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t r = 0; r < job.rows; ++r) finish(reduce_span(f, x + r * job.row_stride, job.cols), out + r);
}

void cpu_reduce(const reduce_job& job) {
  with_reduce_types(job, [&](auto t, auto acc, auto out, auto extreme) {
    cpu_reduce_typed<typename decltype(t)::type, typename decltype(acc)::type, typename decltype(out)::type,
                     decltype(extreme)::value>(job);
  });
}

void cpu_matmul(const matmul_job& job) {
  const std::int64_t m = job.m, n = job.n, k = job.k;
#pragma omp parallel for num_threads(threads_of(job.options)) schedule(static)
  for (std::int64_t i = 0; i < m; ++i) {
    float* c = job.c + i * n;
    for (std::int64_t j = 0; j < n; ++j) c[j] = 0.0f;
    for (std::int64_t p = 0; p < k; ++p) {
      const float a = job.a[i * k + p];
      const float* b = job.b + p * n;
      for (std::int64_t j = 0; j < n; ++j) c[j] += a * b[j];
    }
  }
}

}  // namespace

const pattern_ops& cpu_patterns() {
  static const pattern_ops table{&cpu_unary, &cpu_binary, &cpu_reduce, &cpu_matmul};
  return table;
}

}  // namespace tally::detail

// The validated jobs of the parallel patterns, and the table of what each backend implements.
// src/patterns/core/patterns.cpp checks every argument and builds these; a backend only computes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/type_dispatch.hpp"
#include "tally/patterns/elementwise.hpp"
#include "tally/patterns/matmul.hpp"
#include "tally/patterns/ops.hpp"
#include "tally/patterns/reduce.hpp"

namespace tally::detail {

struct unary_job {
  unary_op op;
  dtype type;  // f32, f16 or bf16
  const void* x;
  void* y;  // == x for in place; else not overlapping x
  std::int64_t n;
  run_options run;
  map_strategy strategy;  // automatic on the CPU backend
};

/// out[i] = a[i] op b[i] over a common shape, dimensions of length 1 dropped and neighbours
/// merged where all three layouts allow (rank >= 1; the last dimension varies fastest).
/// Strides in elements; an input's stride is 0 along a broadcast dimension.
struct binary_job {
  binary_op op;
  int rank;
  std::int64_t shape[max_dims];
  std::int64_t n;  // elements of out
  const void* a;
  dtype a_type;
  std::int64_t a_strides[max_dims];
  const void* b;
  dtype b_type;
  std::int64_t b_strides[max_dims];
  void* out;
  dtype out_type;
  std::int64_t out_strides[max_dims];
  run_options run;
};

/// whole: result[0] = op over x[0 .. cols) (rows == 1). Else result[r] = op over
/// x[r * row_stride .. + cols) for r < rows. cols >= 1 for min and max.
struct reduce_job {
  reduce_op op;
  bool whole;
  dtype type;
  const void* x;
  std::int64_t rows, cols, row_stride;
  dtype result_type;
  void* result;
  run_options run;
};

/// What the CUDA matmul kernels take (tally::matmul checks it before running): dimensions of
/// 32-bit indices with room for the largest tile past them, and fewer than 2^31 blocks when one
/// block takes a tile of the smallest side.
inline constexpr std::int64_t cuda_matmul_min_tile = 128, cuda_matmul_max_tile = 256;
inline constexpr std::int64_t cuda_matmul_max_dim = (std::int64_t{1} << 31) - cuda_matmul_max_tile;

/// The warptiled kernel's tilings (matmul.cu compiles one kernel per entry; the tests run each,
/// the benchmark's --sgemm-sweep times each): 8x8 outputs per thread in 256-thread blocks of
/// 2x4 warps, two blocks per multiprocessor; 8x16 per thread in 64x64 warp tiles, as 4 warps of
/// 128 threads (cuBLAS's fp32 kernels' shape), two blocks per multiprocessor, or 8 warps in a
/// 128x256 tile, one block. H100 sweep at 2^12 / 2^13 (TFLOP/s, cuBLAS 51.1 / 51.5): 45.7 / 46.7,
/// 45.6 / 45.9, 47.4 / 48.1; also measured and dropped: 4 stages instead of 3 (-1 to -3%), BK = 8
/// (42.6 / 43.3), 256x128 (45.9 / 46.2) (bench/PERFORMANCE.md, "Patterns").
inline constexpr matmul_tiling cuda_matmul_tilings[] = {
    {128, 128, 16, 64, 32, 8, 8, 3, 2},
    {128, 128, 16, 64, 64, 8, 16, 3, 2},
    {128, 256, 16, 64, 64, 8, 16, 3, 1},
};
inline constexpr int cuda_matmul_tiling_count = sizeof cuda_matmul_tilings / sizeof cuda_matmul_tilings[0];
/// The tiling of warptiled and automatic (an index above): the fastest in the sweep, 128x256
/// (92.7% / 93.4% of cuBLAS): a block's 256 threads each own 8x16 outputs, and its 8 warps share
/// one A and one B panel per step.
inline constexpr int cuda_matmul_default_tiling = 2;

struct matmul_job {
  const float* a;
  const float* b;
  float* c;
  std::int64_t m, n, k;
  matmul_options options;
};

struct pattern_ops {
  void (*unary)(const unary_job&);
  void (*binary)(const binary_job&);
  void (*reduce)(const reduce_job&);
  void (*matmul)(const matmul_job&);
};

const pattern_ops& cpu_patterns();
#if defined(TALLY_HAVE_CUDA)
const pattern_ops& cuda_patterns();
#endif

/// Calls f(type_tag<T>{}) for one of the float element types f32, f16, bf16.
template <class F> void with_float_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f16: return f(type_tag<half>{});
    case dtype::bf16: return f(type_tag<bfloat16>{});
    default: return f(type_tag<float>{});
  }
}

/// Calls f with the operation's functor (tally/patterns/ops.hpp).
template <class F> void with_unary_op(unary_op op, F&& f) {
  switch (op) {
    case unary_op::sigmoid: return f(ops::sigmoid{});
    case unary_op::relu: return f(ops::relu{});
    case unary_op::silu: return f(ops::silu{});
    case unary_op::gelu_tanh: return f(ops::gelu_tanh{});
    case unary_op::gelu_erf: return f(ops::gelu_erf{});
    case unary_op::tanh: return f(ops::tanh{});
  }
}

/// Calls f with the operation's functor.
template <class F> void with_binary_op(binary_op op, F&& f) {
  switch (op) {
    case binary_op::add: return f(ops::add{});
    case binary_op::sub: return f(ops::sub{});
    case binary_op::mul: return f(ops::mul{});
    case binary_op::div: return f(ops::div{});
  }
}

/// The types of a validated reduction, the same on every backend: calls
/// f(type_tag<T>{}, type_tag<Acc>{}, type_tag<Out>{}, std::bool_constant<Extreme>{}) with the
/// element type, the accumulation type, the result type and whether it is a min or max.
template <class F> void with_reduce_types(const reduce_job& job, F&& f) {
  const bool extreme = job.op == reduce_op::min || job.op == reduce_op::max;
  if (extreme && job.type != dtype::f32 && job.type != dtype::f16 && job.type != dtype::bf16) {
    // The extreme of integers: found and stored in their own type.
    return with_sample_type(job.type, [&](auto tag) {
      if constexpr (std::is_integral_v<typename decltype(tag)::type>) f(tag, tag, tag, std::true_type{});
    });
  }
  if (job.type == dtype::i32) {
    if (job.result_type == dtype::i64)
      return f(type_tag<std::int32_t>{}, type_tag<std::int64_t>{}, type_tag<std::int64_t>{}, std::false_type{});
    // The mean of i32: the exact i64 sum, divided once in f64.
    return f(type_tag<std::int32_t>{}, type_tag<std::int64_t>{}, type_tag<double>{}, std::false_type{});
  }
  with_float_type(job.type, [&](auto tag) {
    // The extreme is one of the elements: found in f32, stored back in T exactly.
    if (extreme) return f(tag, type_tag<float>{}, tag, std::true_type{});
    if (job.result_type == dtype::f64) return f(tag, type_tag<double>{}, type_tag<double>{}, std::false_type{});
    return f(tag, type_tag<float>{}, type_tag<float>{}, std::false_type{});
  });
}

/// The bytes [lo, hi) a strided layout touches, relative to its data pointer.
struct byte_span {
  std::int64_t lo = 0, hi = 0;
};
byte_span span_of(int rank, const std::int64_t* shape, const std::int64_t* strides, std::size_t element_size);

}  // namespace tally::detail

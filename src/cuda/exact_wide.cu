// Exact sums kept in the histogram (options::exact_sums): the wide fixed-point words of
// core/exact_sum.hpp on the device, filled from the f32 exact kernel's words or, for f64 weights,
// by global 64-bit atomics, a run of a thread's terms of one cell at a time. Integer additions
// commute, so the words are the same on every run, grid and device, and equal the CPU backend's.
#include <algorithm>

#include "core/exact_sum.hpp"
#include "cuda/common.cuh"
#include "cuda/fill.hpp"
#include "cuda/kernels.hpp"

namespace tally::detail::cuda {
namespace {

/// A cell's f32-format words (units of 2^-149) added into its wide words, its flags or-ed in
/// (for_each_cell: each cell's words are one thread's alone, so plain additions).
struct widen_op {
  const std::uint64_t* words;
  const unsigned* flags;
  std::uint64_t* wide;
  __device__ void operator()(std::int64_t c) const {
    std::uint64_t* cell = wide + c * kWideCellWords;
    add_f32_words_to_wide(cell, words + c * kExactWords, plain_fetch_add{});
    cell[kWideWords] |= flags[c];
  }
};

/// A cell's wide words and flags correctly rounded into its f64 sum (with `add`, added to it).
struct round_op {
  const std::uint64_t* wide;
  double* sums;
  bool add;
  __device__ void operator()(std::int64_t c) const {
    const std::uint64_t* cell = wide + c * kWideCellWords;
    const double v = exact_value<wide_exact>(cell, static_cast<unsigned>(cell[kWideWords]));
    sums[c] = add ? sums[c] + v : v;
  }
};

struct split_op {
  const std::uint64_t* wide;
  std::uint64_t* digits;
  __device__ void operator()(std::int64_t c) const { split_wide_digits(wide + c * kWideCellWords, digits + c * kWideDigits); }
};

struct join_op {
  const std::uint64_t* digits;
  std::uint64_t* wide;
  __device__ void operator()(std::int64_t c) const { join_wide_digits(digits + c * kWideDigits, wide + c * kWideCellWords); }
};

/// The wide atomics' arguments: the fill's samples and weights, the cells' wide words.
struct exact_wide_args {
  device_axes axes{};
  const char* weights = nullptr;  // f32 or f64 (W), any alignment; null: every weight is 1
  std::int64_t weight_stride_bytes = 0;
  std::int64_t n = 0;
  std::int64_t cells = 0;
  std::uint64_t* wide = nullptr;      // cells x kWideCellWords, added to
  unsigned long long* flow = nullptr; // underflow, overflow, nan: added to
};

/// Samples a lane takes from each tile of its warp: t, t + 32, ... of 32 x kWideTile samples.
constexpr int kWideTile = 16;

/// Each lane sums its samples' terms in two runs of one cell and limb in registers (wide_runs)
/// and adds a run into its cell's words when it is full or makes way: a hot cell takes an atomic a
/// run instead of one a sample. Integer additions: any order gives the same words.
template <class W> __global__ void exact_wide_kernel(exact_wide_args a) {
  unsigned long long under = 0, over = 0, nan = 0;
  const int lane = threadIdx.x & 31;
  const std::int64_t warp = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
  wide_runs runs;
  const auto flush = [&](std::int64_t cell, const wide_run& run) {
    add_wide_run(a.wide + cell * kWideCellWords, run, atomic_fetch_add{});
  };
  // Whole tiles a warp, so that every lane of it reaches add_warp_flow.
  for (std::int64_t base = warp * 32 * kWideTile; base < a.n; base += warps * 32 * kWideTile) {
    for (int j = 0; j < kWideTile; ++j) {
      const std::int64_t i = base + 32 * j + lane;
      if (i >= a.n) break;
      const std::int64_t s = slot_of(a.axes, i, a.cells);
      if (s >= a.cells) {
        under += s == a.cells;
        over += s == a.cells + 1;
        nan += s == a.cells + 2;
        continue;
      }
      const double w = a.weights ? static_cast<double>(load_unaligned<W>(a.weights + i * a.weight_stride_bytes)) : 1.0;
      std::uint64_t bits;
      memcpy(&bits, &w, sizeof bits);
      if (const unsigned flag = exact_flag_of_f64(bits)) {
        atomicOr(reinterpret_cast<unsigned long long*>(a.wide + s * kWideCellWords + kWideWords),
                 static_cast<unsigned long long>(flag));
        continue;
      }
      runs.take(s, wide_term_of_finite(bits), flush);
    }
  }
  runs.finish(flush);
  add_warp_flow(under, over, nan, a.flow);
}

}  // namespace

void round_wide(const std::uint64_t* wide, std::int64_t cells, double* sums, cudaStream_t stream) {
  for_each_cell(cells, round_op{wide, sums, false}, stream);
}

void add_rounded_wide(const std::uint64_t* wide, std::int64_t cells, double* sums, cudaStream_t stream) {
  for_each_cell(cells, round_op{wide, sums, true}, stream);
}

void split_wide(const std::uint64_t* wide, std::int64_t cells, std::uint64_t* digits, cudaStream_t stream) {
  for_each_cell(cells, split_op{wide, digits}, stream);
}

void join_wide(const std::uint64_t* digits, std::int64_t cells, std::uint64_t* wide, cudaStream_t stream) {
  for_each_cell(cells, join_op{digits, wide}, stream);
}

void widen_exact(const exact_sums_args& args, std::uint64_t* wide, cudaStream_t stream) {
  for_each_cell(args.cells, widen_op{args.words, args.flags, wide}, stream);
}

void enqueue_exact_wide(const fill_input& in, std::uint64_t* wide, unsigned long long* flow, cudaStream_t stream) {
  exact_wide_args a;
  a.axes = in.axes;
  a.weights = in.weights;
  a.weight_stride_bytes = in.weight_stride_bytes;
  a.n = in.n;
  a.cells = in.cells;
  a.wide = wide;
  a.flow = flow;
  const auto grid = static_cast<unsigned>(in.plan.grid_blocks), block = static_cast<unsigned>(in.plan.block_threads);
  if (in.weights && in.weight_type == dtype::f32) exact_wide_kernel<float><<<grid, block, 0, stream>>>(a);
  else exact_wide_kernel<double><<<grid, block, 0, stream>>>(a);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

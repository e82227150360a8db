// Exact sums kept in the histogram (options::exact_sums): the wide fixed-point words of
// core/exact_sum.hpp on the device, filled from the f32 exact kernel's words or, for f64 weights,
// by global 64-bit atomics, one sample per thread. Integer additions commute, so the words are
// the same on every run, grid and device, and equal the CPU backend's.
#include "core/exact_sum.hpp"
#include "cuda/common.cuh"
#include "cuda/kernels.hpp"

namespace tally::detail::cuda {
namespace {

/// Each cell's f32-format words (units of 2^-149) added into its wide words, and its flags or-ed in.
/// One thread a cell: the wide words are the launch's own, so plain additions.
__global__ void widen_exact_kernel(const std::uint64_t* words, const unsigned* flags, std::int64_t cells,
                                   std::uint64_t* wide) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < cells; c += stride) {
    std::uint64_t* cell = wide + c * kWideCellWords;
    add_f32_words_to_wide(cell, words + c * kExactWords, plain_fetch_add{});
    cell[kWideWords] |= flags[c];
  }
}

template <class W> __global__ void exact_wide_kernel(exact_wide_args a) {
  unsigned long long under = 0, over = 0, nan = 0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  // Whole rounds of the grid, so that every lane of a warp reaches add_warp_flow.
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x); base < a.n; base += stride) {
    const std::int64_t i = base + threadIdx.x;
    if (i >= a.n) continue;
    const std::int64_t s = slot_of(a.axes, i, a.cells);
    if (s >= a.cells) {
      under += s == a.cells;
      over += s == a.cells + 1;
      nan += s == a.cells + 2;
      continue;
    }
    const double w = a.weights ? static_cast<double>(load_unaligned<W>(a.weights + i * a.weight_stride_bytes)) : 1.0;
    std::uint64_t* cell = a.wide + s * kWideCellWords;
    if (const unsigned flag = add_wide(cell, w, atomic_fetch_add{}))
      atomicOr(reinterpret_cast<unsigned long long*>(cell + kWideWords), static_cast<unsigned long long>(flag));
  }
  add_warp_flow(under, over, nan, a.flow);
}

}  // namespace

void widen_exact(const exact_sums_args& args, std::uint64_t* wide, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((args.cells + 255) / 256, 4096));
  widen_exact_kernel<<<blocks, 256, 0, stream>>>(args.words, args.flags, args.cells, wide);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void sum_exact_wide(const exact_wide_args& args, const launch_shape& shape) {
  if (args.weights && args.weight_type == dtype::f32)
    exact_wide_kernel<float><<<shape.grid, shape.block, 0, shape.stream>>>(args);
  else
    exact_wide_kernel<double><<<shape.grid, shape.block, 0, shape.stream>>>(args);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

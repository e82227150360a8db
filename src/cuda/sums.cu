// Exact weighted sums of f32 weights: each weight becomes a signed integer addition to one word of
// its cell's fixed-point sum (core/exact_sum.hpp), in a block's shared-memory copy of the words or
// straight in device memory. Integer additions commute, so the words, and the one correctly
// rounded conversion of each cell's words at the end, are the same on every run, grid and device.
#include "core/exact_sum.hpp"
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {
namespace {

constexpr int kSumThreads = 512;
constexpr int kRunTerms = 128;  // terms one run may sum: 128 x 2^55 < 2^63

/// Samples of the generic kernels: any type, stride and number of axes.
struct any_samples {
  device_axes axes;
  __device__ __forceinline__ std::int64_t slot(std::int64_t i, std::int64_t cells) const {
    return slot_of(axes, i, cells);
  }
};

/// One contiguous column of T, with the typed kernels' binner for it.
template <class T, class Binner> struct column_samples {
  const T* x;
  Binner binner;
  __device__ __forceinline__ std::int64_t slot(std::int64_t i, std::int64_t cells) const {
    return slot_for(binner, __ldg(x + i), cells);
  }
};

struct atomic_fetch_add {
  __device__ __forceinline__ std::uint64_t operator()(std::uint64_t* word, std::uint64_t addend) const {
    return atomicAdd(reinterpret_cast<unsigned long long*>(word), static_cast<unsigned long long>(addend));
  }
};

/// Grid-stride over the samples, kUnroll loads in flight per thread. A thread keeps a run: the
/// sum of its consecutive terms for one word of one cell, added with one atomic when a term goes
/// elsewhere (a hot bin costs an atomic per kRunTerms samples, not per sample). InShared: a block
/// copy of the words and flags, added to device memory at the end.
template <class Samples, bool InShared>
__global__ void __launch_bounds__(kSumThreads, 2) exact_sums_kernel(Samples samples, exact_sums_args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const std::int64_t cells = a.cells;
  std::uint64_t* words = a.words;
  unsigned* flags = a.flags;
  if constexpr (InShared) {
    words = reinterpret_cast<std::uint64_t*>(smem);
    flags = reinterpret_cast<unsigned*>(words + cells * kExactWords);
    for (std::int64_t k = threadIdx.x; k < cells * kExactWords; k += blockDim.x) words[k] = 0;
    for (std::int64_t k = threadIdx.x; k < cells; k += blockDim.x) flags[k] = 0;
    __syncthreads();
  }
  const bool aligned = reinterpret_cast<std::uintptr_t>(a.weights) % alignof(float) == 0;
  const auto weight = [&](std::int64_t i) -> float {
    if (!a.weights) return 1.0f;
    const char* p = a.weights + i * a.weight_stride_bytes;
    return aligned ? __ldg(reinterpret_cast<const float*>(p)) : load_unaligned<float>(p);
  };

  unsigned long long under = 0, over = 0, nan = 0;
  std::int64_t run_cell = -1;
  int run_word = 0, run_terms = 0;
  std::int64_t run_value = 0;
  const auto end_run = [&] {
    if (run_value != 0) add_exact(words + run_cell * kExactWords, run_word, run_value, atomic_fetch_add{});
  };
  const auto take = [&](std::int64_t s, float w) {
    if (s >= cells) {
      under += s == cells;
      over += s == cells + 1;
      nan += s == cells + 2;
      return;
    }
    const exact_term t = exact_term_of(w);
    if (t.flag) {
      atomicOr(flags + s, t.flag);
    } else if (s == run_cell && t.word == run_word && run_terms < kRunTerms) {
      run_value += t.value;
      ++run_terms;
    } else {
      end_run();
      run_cell = s;
      run_word = t.word;
      run_value = t.value;
      run_terms = 1;
    }
  };

  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < a.n;
       i += stride * kUnroll) {
    std::int64_t s[kUnroll];
    float w[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t j = i + u * stride;
      s[u] = j < a.n ? samples.slot(j, cells) : -1;
      w[u] = j < a.n ? weight(j) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (s[u] >= 0) take(s[u], w[u]);
  }
  end_run();

  for (int offset = 16; offset > 0; offset /= 2) {
    under += __shfl_down_sync(0xffffffffu, under, offset);
    over += __shfl_down_sync(0xffffffffu, over, offset);
    nan += __shfl_down_sync(0xffffffffu, nan, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    if (under) atomicAdd(&a.flow[0], under);
    if (over) atomicAdd(&a.flow[1], over);
    if (nan) atomicAdd(&a.flow[2], nan);
  }
  if constexpr (InShared) {
    __syncthreads();
    for (std::int64_t k = threadIdx.x; k < cells * kExactWords; k += blockDim.x) {
      const std::int64_t cell = k / kExactWords;
      if (words[k]) add_exact_bits(a.words + cell * kExactWords, static_cast<int>(k - cell * kExactWords), words[k],
                                   false, atomic_fetch_add{});
    }
    for (std::int64_t c = threadIdx.x; c < cells; c += blockDim.x)
      if (flags[c]) atomicOr(a.flags + c, flags[c]);
  }
}

__global__ void finish_exact_kernel(const std::uint64_t* words, const unsigned* flags, std::int64_t cells,
                                    double* sums) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < cells; c += stride)
    sums[c] += exact_value(words + c * kExactWords, flags[c]);
}

template <class Samples> void launch_exact(const Samples& samples, const exact_sums_args& a, const launch_shape& shape) {
  const auto launch = [&](auto* kernel) {
    if (shape.shared_bytes > 48 * 1024)
      TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shape.shared_bytes)));
    kernel<<<resident_grid(kernel, shape), shape.block, shape.shared_bytes, shape.stream>>>(samples, a);
  };
  if (shape.shared_bytes) launch(&exact_sums_kernel<Samples, true>);
  else launch(&exact_sums_kernel<Samples, false>);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void sum_exact(const device_axes& axes, bool column, const exact_sums_args& args, const launch_shape& shape) {
  if (column && axes.count == 1) {
    // The typed loop where a 32-bit rule applies (integers within the sample type, f32 samples);
    // every other column takes the generic one.
    const device_axis& axis = axes.axis[0];
    bool launched = false;
    with_typed_binner<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, float>(
        axis.type, axis, [&](auto tag, const auto& binner) {
          using T = typename decltype(tag)::type;
          using B = std::decay_t<decltype(binner)>;
          if constexpr (gives_slots<B>::value || std::is_same_v<B, fast32_binner> ||
                        std::is_same_v<B, variable32_binner>) {
            launch_exact(column_samples<T, B>{reinterpret_cast<const T*>(axis.data), binner}, args, shape);
            launched = true;
          }
        });
    if (launched) return;
  }
  launch_exact(any_samples{axes}, args, shape);
}

void finish_exact(const exact_sums_args& args, double* sums, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((args.cells + 255) / 256, 4096));
  finish_exact_kernel<<<blocks, 256, 0, stream>>>(args.words, args.flags, args.cells, sums);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

// What the CUDA backend's translation units share: the device view of an axis, the generic (any
// type, any stride, N-D) slot computation, and slot numbering (error checks: base/cuda_check.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/cuda_check.cuh"
#include "base/type_dispatch.hpp"
#include "core/bin_rule.hpp"
#include "tally/axis.hpp"
#include "tally/error.hpp"

namespace tally::detail::cuda {

/// Slots are the cells followed by three flow counters: underflow, overflow, nan.
TALLY_HD_HOT std::int64_t slot_of_index(std::int64_t k, std::int64_t cells) {
  return k >= 0 ? k : cells - 1 - k;  // bin_underflow (-1) -> cells, ..., bin_nan (-3) -> cells + 2
}

/// One axis as the generic kernels see it: its column and its rule, chosen at run time.
struct device_axis {
  axis_kind kind;
  dtype type;
  const char* data;
  std::int64_t stride_bytes;
  std::int64_t bins;
  regular_table_binner regular;
  variable_binner variable;
  variable_rule32 variable32;  // the same variable rule for f32 samples (the typed kernel's)
  line_rule line;              // a variable axis' line (variable_line; bins 0: none), f32 samples
  integer_binner integer;
};

/// Calls f with the axis' rule as its own binner type: the one switch on the axis kind. Host
/// launchers and device kernels both call it, each with lambdas of its own side (the pragma
/// lets a host-device template call either, as CCCL's own dispatch helpers do).
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class F> TALLY_HD void with_binner(const device_axis& a, F&& f) {
  switch (a.kind) {
    case axis_kind::regular: return f(a.regular);
    case axis_kind::variable: return f(a.variable);
    case axis_kind::integer: return f(a.integer);
  }
}

constexpr int kMaxAxes = 8;
struct device_axes {
  device_axis axis[kMaxAxes];
  int count;
  bool flow_bins = false;  // options::flow_bins: every axis bins + 3 cells, nothing dropped
};

#if defined(__CUDACC__)

/// The T at p: one load where `aligned` says p is aligned to T, else byte by byte.
template <class T> __device__ __forceinline__ T load_as(const char* p, bool aligned) {
  if (aligned) return *reinterpret_cast<const T*>(p);
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

/// The T at p, which need not be aligned: one load where it is (a view's usual case), else byte by
/// byte.
template <class T> __device__ __forceinline__ T load_unaligned(const char* p) {
  return load_as<T>(p, reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0);
}

/// Calls f(type_tag<T>{}, binner) with the axis' sample type and its rule: the generic kernels'
/// one dispatch on both.
template <class F> __device__ __forceinline__ void with_axis_rule(const device_axis& a, F&& f) {
  with_sample_type(a.type, [&](auto tag) { with_binner(a, [&](const auto& binner) { f(tag, binner); }); });
}

__device__ __forceinline__ std::int64_t axis_index(const device_axis& a, std::int64_t i) {
  std::int64_t k = bin_nan;
  with_axis_rule(a, [&](auto tag, const auto& binner) {
    k = binner(load_unaligned<typename decltype(tag)::type>(a.data + i * a.stride_bytes));
  });
  return k;
}

/// The slot of sample i: its flat row-major cell, or the flow counter of the first axis that
/// drops it; with flow bins, its cell on every axis (flow_bin_of), none dropped.
__device__ __forceinline__ std::int64_t slot_of(const device_axes& axes, std::int64_t i,
                                                std::int64_t cells) {
  std::int64_t flat = 0;
  for (int d = 0; d < axes.count; ++d) {
    const std::int64_t bins = axes.axis[d].bins;
    std::int64_t k = axis_index(axes.axis[d], i);
    if (axes.flow_bins) {
      flat = flat * (bins + 3) + flow_bin_of(k, bins);
      continue;
    }
    if (k < 0) return slot_of_index(k, cells);
    flat = flat * bins + k;
  }
  return flat;
}

/// The inclusive prefix sum of v over the lanes of a warp (all 32 take part).
template <class T> __device__ __forceinline__ T warp_inclusive_sum(T v) {
  const unsigned lane = threadIdx.x & 31;
#pragma unroll
  for (unsigned d = 1; d < 32; d *= 2) {
    const T other = __shfl_up_sync(~0u, v, d);
    if (lane >= d) v += other;
  }
  return v;
}

/// The sum of v over the lanes of a warp, in every lane (all 32 take part).
template <class T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int d = 16; d; d /= 2) v += __shfl_xor_sync(~0u, v, d);
  return v;
}

/// Adds a warp's samples dropped below the axis, above it and as NaN to flow[0..3) (all 32 lanes
/// take part; lane 0 adds).
__device__ __forceinline__ void add_warp_flow(unsigned long long under, unsigned long long over,
                                              unsigned long long nan, unsigned long long* flow) {
  const unsigned long long dropped[3] = {warp_sum(under), warp_sum(over), warp_sum(nan)};
  if ((threadIdx.x & 31) == 0)
    for (int k = 0; k < 3; ++k)
      if (dropped[k]) atomicAdd(&flow[k], dropped[k]);
}

/// The end of a shared-memory count: adds each slot's 2^shift interleaved copies (slot s, copy r
/// at counters[(s << shift) + r]) to the device counters. Copy (r + s) mod 2^shift is read r-th,
/// so that neighbouring threads read different banks. Call after a barrier.
__device__ __forceinline__ void flush_copies(const unsigned* counters, std::int64_t slots, int shift,
                                             unsigned long long* out) {
  const std::int64_t copies = std::int64_t{1} << shift;
  for (std::int64_t s = threadIdx.x; s < slots; s += blockDim.x) {
    unsigned long long sum = 0;
    for (std::int64_t r = 0; r < copies; ++r) sum += counters[(s << shift) + ((r + s) & (copies - 1))];
    if (sum) atomicAdd(&out[s], sum);
  }
}

/// op(c) for every cell c, one thread a cell, grid-stride: each cell is that thread's alone.
template <class Op> __global__ void each_cell_kernel(std::int64_t cells, Op op) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < cells; c += stride) op(c);
}

/// Launches each_cell_kernel on `stream` in blocks of 256 threads (at most 4096 blocks,
/// grid-stride beyond).
template <class Op> void for_each_cell(std::int64_t cells, Op op, cudaStream_t stream) {
  if (cells < 1) return;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((cells + 255) / 256, 4096));
  each_cell_kernel<<<blocks, 256, 0, stream>>>(cells, op);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

#endif

}  // namespace tally::detail::cuda

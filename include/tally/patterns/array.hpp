// Strided N-D arrays and the run options shared by the parallel patterns (elementwise,
// reduction, matmul). CUDA-free: streams travel as void*.
#pragma once

#include <cstdint>
#include <vector>

#include "tally/backend.hpp"
#include "tally/dtype.hpp"

namespace tally {

/// The most dimensions an array of the patterns may have (numpy broadcasting over up to 8).
inline constexpr int max_dims = 8;

/// A read-only strided N-D array, numpy's layout: element (i0, ..., ik) is at
/// `data + (i0 * strides[0] + ... + ik * strides[k]) * size_of(type)` bytes. Strides are in
/// elements and may be 0 (broadcast) or negative; empty strides mean C-contiguous. An empty
/// shape is a scalar (one element). Host or device memory: backend::automatic follows it.
struct array {
  const void* data = nullptr;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
};

/// A writable strided N-D array (the output of a pattern); same layout rules as array. Its
/// elements must not overlap one another (no stride 0 over a dimension longer than 1).
struct out_array {
  void* data = nullptr;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
};

template <class T>
array make_array(const T* data, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides = {}) {
  return array{data, dtype_of<T>, std::move(shape), std::move(strides)};
}
template <class T>
out_array make_out_array(T* data, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides = {}) {
  return out_array{data, dtype_of<T>, std::move(shape), std::move(strides)};
}

/// How a pattern runs. backend::automatic: CUDA when any argument is in device memory (the
/// current device), else the CPU. With device memory only, a CUDA call is enqueued on `stream`
/// (a cudaStream_t; nullptr: the default stream) and returns without waiting; with host memory
/// on backend::cuda the arguments are copied to the device and back, and the call waits.
struct run_options {
  tally::backend backend = tally::backend::automatic;
  void* stream = nullptr;
  /// CPU threads; 0 means OpenMP's limit (OMP_NUM_THREADS, omp_set_num_threads).
  int threads = 0;
};

}  // namespace tally

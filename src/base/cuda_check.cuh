// CUDA error checks and the per-device memos and memory pool, shared by the histogram and the
// patterns libraries' CUDA code.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>

#include "tally/error.hpp"

#define TALLY_CUDA_CHECK(expr) ::tally::detail::cuda::check((expr), #expr, __FILE__, __LINE__)

namespace tally::detail::cuda {

/// Throws tally::error with the CUDA message and the failing call's location (memory_error
/// where the device's memory ran out).
inline void check(cudaError_t status, const char* expr, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky launch error so that later calls start clean
  const std::string what = std::string("CUDA error: ") + cudaGetErrorString(status) + " in " + expr + " at " + file +
                           ":" + std::to_string(line);
  if (status == cudaErrorMemoryAllocation) throw memory_error(what);
  throw error(what);
}

/// The value for `key` in `known`: made by make() the first time, under `mutex`, and kept (device
/// figures, occupancies, memory pools: driver calls that every fill would otherwise repeat). A
/// make() that throws keeps nothing.
template <class Key, class T, class Make>
T remembered(std::map<Key, T>& known, std::mutex& mutex, const Key& key, Make&& make) {
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto at = known.find(key); at != known.end()) return at->second;
  return known.emplace(key, make()).first->second;
}

/// tally's own stream-ordered memory pool on `device` (made once): unlike the device's default
/// pool, whose release threshold is 0 unless the application raises it, it keeps freed memory
/// for the next call instead of returning it to the driver at every synchronisation, so a call
/// after a wait does not map its temporary memory again (bench/PERFORMANCE.md, "Synchronous fills,
/// fixed costs and temporary memory").
cudaMemPool_t pool_of(int device);

}  // namespace tally::detail::cuda

// What the GPU benchmarks share: a CUDA check that ends the run, and the median of timed runs
// with CUDA events after warm-up.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(expr)                                                                               \
  do {                                                                                            \
    cudaError_t e = (expr);                                                                       \
    if (e != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e)); \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

/// True, after saying so, in a build without NDEBUG, whose timings mean nothing: a benchmark's
/// main returns 1 then.
inline bool refuses_debug_build(const char* program) {
#ifndef NDEBUG
  std::fprintf(stderr, "%s: refusing to time a debug build\n", program);
  return true;
#else
  (void)program;
  return false;
#endif
}

/// Median of timed runs after warm-up: runs until at least two of them and 20 ms have passed
/// (the GPU's clocks take a few ms to rise after a pause, an allocation's say: a block's first row
/// measured up to 12% slow after two warm-up runs; bench/PERFORMANCE.md, "Patterns"); then 15 timed
/// runs, or 3 where one run takes over 20 ms (the slow rungs of the ladder on hot data).
inline double median_ms(const std::function<void()>& run) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const auto timed = [&] {
    float m = 0;
    CHECK(cudaEventRecord(a));
    run();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    CHECK(cudaEventElapsedTime(&m, a, b));
    return m;
  };
  const float first = timed();
  const int runs = first > 20 ? 3 : 15;
  float warm = first;
  for (int done = 1; runs == 15 && (done < 2 || warm < 20); ++done) warm += timed();
  std::vector<float> ms(static_cast<std::size_t>(runs));
  for (auto& m : ms) m = timed();
  std::sort(ms.begin(), ms.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return ms[ms.size() / 2];
}


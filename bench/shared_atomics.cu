// The shared-atomic probe behind the typed kernel's run merging (bench/PERFORMANCE.md, "GPU
// counting in shared memory"):
// five ways to add 1 GiB of u8 or i32 samples into 256 bins kept in 32 interleaved shared-memory
// copies (lane l adds to copy l), on uniform, one-value and 80%-one-value data. CUDA events,
// warm-up, median (bench/timing.cuh); the counts must sum to n.
//   V0 runs of equal slots in a 16-byte load merged, one predicated add per run
//   V1 one reduction per sample
//   V2 groups of 4 samples: one add where all 4 are equal, else 4
//   V3 atomicAdd(p, 1) per sample (compiles to ATOMS.POPC.INC)
//   V4 one add where the whole load is one slot, else one per sample
//   V5 a 32-bit atomicAdd per sample in device memory (no shared counters)
//   V6 a 64-bit atomicAdd per sample in device memory
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "timing.cuh"

__device__ __forceinline__ void red_if(unsigned addr, unsigned n, bool when) {
  if (when) asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(addr), "r"(n));
}
__device__ __forceinline__ void red(unsigned addr, unsigned n) {
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(addr), "r"(n));
}

template <class T, int V>
__global__ void __launch_bounds__(512) k(const T* x, long long n, unsigned long long* out, int bins) {
  extern __shared__ unsigned c[];
  const int slots = bins + 3;
  for (int i = threadIdx.x; i < slots * 32; i += blockDim.x) c[i] = 0;
  __syncthreads();
  const unsigned mine = (unsigned)__cvta_generic_to_shared(c + (threadIdx.x & 31));
  constexpr int per = 16 / sizeof(T);
  const long long vectors = n / per;
  const uint4* body = reinterpret_cast<const uint4*>(x);
  const long long stride = (long long)gridDim.x * blockDim.x;
  auto slot = [&](T v) -> int {
    unsigned d = (unsigned)v;
    return d < (unsigned)bins ? (int)d : bins + 1;
  };
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < vectors; i += stride * 4) {
    uint4 l[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) if (i + u * stride < vectors) l[u] = __ldg(body + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (i + u * stride < vectors) {
        T v[per];
        memcpy(v, &l[u], sizeof v);
        if constexpr (V == 0) {  // runs, branch per add
          int prev = slot(v[0]); unsigned run = 1;
#pragma unroll
          for (int j = 1; j < per; ++j) {
            int s = slot(v[j]); bool cut = s != prev;
            red_if(mine + prev * 128u, run, cut);
            run = cut ? 1u : run + 1u; prev = s;
          }
          red(mine + prev * 128u, run);
        } else if constexpr (V == 1) {  // one atomic per sample
#pragma unroll
          for (int j = 0; j < per; ++j) red(mine + slot(v[j]) * 128u, 1);
        } else if constexpr (V == 2) {  // groups of 4: all equal -> one add
#pragma unroll
          for (int g = 0; g < per; g += 4) {
            int s0 = slot(v[g]), s1 = slot(v[g+1]), s2 = slot(v[g+2]), s3 = slot(v[g+3]);
            if (s0 == s1 && s1 == s2 && s2 == s3) red(mine + s0 * 128u, 4);
            else { red(mine + s0 * 128u, 1); red(mine + s1 * 128u, 1); red(mine + s2 * 128u, 1); red(mine + s3 * 128u, 1); }
          }
        } else if constexpr (V == 3) {  // atomicAdd(p, 1) (POPC.INC)
#pragma unroll
          for (int j = 0; j < per; ++j) atomicAdd(c + (threadIdx.x & 31) + slot(v[j]) * 32, 1u);
        } else if constexpr (V == 4) {  // whole vector equal -> one add, else one per sample
          bool same = true; int s0 = slot(v[0]);
#pragma unroll
          for (int j = 1; j < per; ++j) same &= slot(v[j]) == s0;
          if (same) red(mine + s0 * 128u, per);
          else {
#pragma unroll
            for (int j = 0; j < per; ++j) red(mine + slot(v[j]) * 128u, 1);
          }
        } else if constexpr (V == 5) {
#pragma unroll
          for (int j = 0; j < per; ++j) atomicAdd(reinterpret_cast<unsigned*>(out) + slot(v[j]), 1u);
        } else if constexpr (V == 6) {
#pragma unroll
          for (int j = 0; j < per; ++j) atomicAdd(out + slot(v[j]), 1ull);
        }
      }
    }
  }
  __syncthreads();
  for (int s = threadIdx.x; s < slots; s += blockDim.x) {
    unsigned long long sum = 0;
    for (int r = 0; r < 32; ++r) sum += c[s * 32 + ((r + s) & 31)];
    if (sum) atomicAdd(out + s, sum);
  }
}

template <class T> __global__ void gen(T* x, long long n, int mode, int bins) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761ull) ^ (unsigned)(i >> 13) * 40503u;
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    int v = mode == 0 ? (int)(h % bins) : mode == 1 ? 7 : ((h % 10) < 8 ? 7 : (int)((h >> 8) % bins));
    x[i] = (T)v;
  }
}

template <class T, int V> void run(const char* name, const T* d, long long n, unsigned long long* out, int mode) {
  auto* kernel = &k<T, V>;
  const std::size_t shared = (256 + 3) * 32 * 4;
  int per_sm = 0, sms = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 512, shared));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaFuncAttributes attributes;
  CHECK(cudaFuncGetAttributes(&attributes, kernel));
  // The counters' reset is timed with each run (2 KiB, about 1% of a run).
  const double ms = median_ms([&] {
    CHECK(cudaMemsetAsync(out, 0, 259 * 8));
    kernel<<<per_sm * sms, 512, shared>>>(d, n, out, 256);
  });
  std::vector<unsigned long long> counts(259);
  CHECK(cudaMemcpy(counts.data(), out, 259 * 8, cudaMemcpyDeviceToHost));
  unsigned long long total = 0;
  for (auto c : counts) total += V == 5 ? (c & 0xFFFFFFFFull) + (c >> 32) : c;  // V5: 32-bit counts
  std::printf("%-4s %-8s V%d %2d registers, %d blocks/SM: %.3f ms %7.1f GB/s  %s\n", name,
              mode == 0 ? "uniform" : mode == 1 ? "one" : "80% one", V, attributes.numRegs, per_sm, ms,
              n * sizeof(T) / ms / 1e6, total == static_cast<unsigned long long>(n) ? "sum ok" : "SUM WRONG");
}

int main() {
  const long long bytes = 1ll << 30;
  void* d;
  CHECK(cudaMalloc(&d, bytes));
  unsigned long long* out;
  CHECK(cudaMalloc(&out, 259 * 8));
  auto* u8 = static_cast<unsigned char*>(d);
  auto* i32 = static_cast<int*>(d);
  for (int mode : {0, 1, 2}) {
    gen<<<1024, 256>>>(u8, bytes, mode, 256);
    CHECK(cudaDeviceSynchronize());
    run<unsigned char, 0>("u8", u8, bytes, out, mode);
    run<unsigned char, 1>("u8", u8, bytes, out, mode);
    run<unsigned char, 2>("u8", u8, bytes, out, mode);
    run<unsigned char, 3>("u8", u8, bytes, out, mode);
    run<unsigned char, 4>("u8", u8, bytes, out, mode);
    gen<<<1024, 256>>>(i32, bytes / 4, mode, 256);
    CHECK(cudaDeviceSynchronize());
    run<int, 0>("i32", i32, bytes / 4, out, mode);
    run<int, 1>("i32", i32, bytes / 4, out, mode);
    run<int, 2>("i32", i32, bytes / 4, out, mode);
    run<int, 3>("i32", i32, bytes / 4, out, mode);
    run<int, 4>("i32", i32, bytes / 4, out, mode);
    if (mode == 2) continue;
    run<int, 5>("i32", i32, bytes / 4, out, mode);
    run<int, 6>("i32", i32, bytes / 4, out, mode);
  }
  CHECK(cudaFree(out));
  CHECK(cudaFree(d));
}

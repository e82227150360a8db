// CUDA f32 matrix multiplication, C = A x B row-major, any M, N, K: the textbook 16x16 shared
// tile kernel, and the register-blocked, vectorized, double-buffered 128x128 kernel. Products are
// explicit fmaf (the library compiles with --fmad=false for the histogram's bin edges).
#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "patterns/cuda/patterns.hpp"

namespace tally::detail::cuda {
namespace {

constexpr int kTile16 = 16;

/// One output per thread; the block stages 16x16 tiles of A and B through shared memory.
/// Loads outside the matrices read as 0 (the seed's kernel needed N to be a multiple of 16).
__global__ void __launch_bounds__(kTile16* kTile16) matmul_tiled16_kernel(const float* a, const float* b, float* c,
                                                                          int m, int n, int k) {
  __shared__ float as[kTile16][kTile16];
  __shared__ float bs[kTile16][kTile16];
  const int tx = threadIdx.x % kTile16, ty = threadIdx.x / kTile16;
  const int col = blockIdx.x * kTile16 + tx;
  const int tiles_m = (m + kTile16 - 1) / kTile16;
  for (int tile_m = blockIdx.y; tile_m < tiles_m; tile_m += gridDim.y) {  // the same count in the block
    const int row = tile_m * kTile16 + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += kTile16) {
      as[ty][tx] = row < m && k0 + tx < k ? a[static_cast<std::int64_t>(row) * k + k0 + tx] : 0.0f;
      bs[ty][tx] = k0 + ty < k && col < n ? b[static_cast<std::int64_t>(k0 + ty) * n + col] : 0.0f;
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTile16; ++kk) acc = fmaf(as[ty][kk], bs[kk][tx], acc);
      __syncthreads();
    }
    if (row < m && col < n) c[static_cast<std::int64_t>(row) * n + col] = acc;
  }
}

// The blocked kernel's shape: a 128x128 tile of C per block of 256 threads, 8 columns of k per
// step; each thread holds an 8x8 block of C as two 4-row by two 4-column pieces 64 apart, so
// that its shared-memory reads are 16-byte and conflict-free.
constexpr int kBM = 128, kBN = 128, kBK = 8, kThreads = 256;
static_assert(kBM * kBK == kThreads * 4 && kBN * kBK == kThreads * 4, "one float4 of A and of B per thread");

struct tile_loads {
  float a[4];  // A[row][k .. k + 3] of this thread's slot
  float b[4];  // B[k][col .. col + 3]
};

/// Loads tile k0 of A and B into registers. Vec: float4 loads (the host checked that K and N
/// are multiples of 4 and the matrices 16-byte aligned, so a float4 is wholly inside or outside);
/// else one predicated load per element. Outside the matrices: 0.
template <bool Vec>
__device__ __forceinline__ tile_loads load_tiles(const float* a, const float* b, int m, int n, int k, int row0,
                                                 int col0, int k0) {
  tile_loads t;
  const int a_row = row0 + static_cast<int>(threadIdx.x >> 1), a_k = k0 + (threadIdx.x & 1) * 4;
  const int b_k = k0 + static_cast<int>(threadIdx.x >> 5), b_col = col0 + (threadIdx.x & 31) * 4;
  const float* pa = a + static_cast<std::int64_t>(a_row) * k + a_k;
  const float* pb = b + static_cast<std::int64_t>(b_k) * n + b_col;
  if (Vec) {
    const float4 va = a_row < m && a_k < k ? *reinterpret_cast<const float4*>(pa) : make_float4(0, 0, 0, 0);
    const float4 vb = b_k < k && b_col < n ? *reinterpret_cast<const float4*>(pb) : make_float4(0, 0, 0, 0);
    t.a[0] = va.x, t.a[1] = va.y, t.a[2] = va.z, t.a[3] = va.w;
    t.b[0] = vb.x, t.b[1] = vb.y, t.b[2] = vb.z, t.b[3] = vb.w;
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      t.a[j] = a_row < m && a_k + j < k ? pa[j] : 0.0f;
      t.b[j] = b_k < k && b_col + j < n ? pb[j] : 0.0f;
    }
  }
  return t;
}

/// Stores the registers of load_tiles into one shared buffer: A transposed (as[k][row]) so that
/// a thread's 4 rows for one k are one float4; B as it is.
__device__ __forceinline__ void store_tiles(const tile_loads& t, float (*as)[kBM], float (*bs)[kBN]) {
  const int a_row = threadIdx.x >> 1, a_k = (threadIdx.x & 1) * 4;
#pragma unroll
  for (int j = 0; j < 4; ++j) as[a_k + j][a_row] = t.a[j];
  *reinterpret_cast<float4*>(&bs[threadIdx.x >> 5][(threadIdx.x & 31) * 4]) = make_float4(t.b[0], t.b[1], t.b[2], t.b[3]);
}

template <bool Vec>
__global__ void __launch_bounds__(kThreads, 2) matmul_blocked_kernel(const float* a, const float* b, float* c,
                                                                     int m, int n, int k) {
  __shared__ __align__(16) float as[2][kBK][kBM];
  __shared__ __align__(16) float bs[2][kBK][kBN];

  // Blocks walk the tiles of C in groups of 8 tile rows, column by column within a group, so
  // that the blocks resident together share panels of A and B in L2.
  constexpr int kGroup = 8;
  const int tiles_m = (m + kBM - 1) / kBM, tiles_n = (n + kBN - 1) / kBN;
  const int per_group = kGroup * tiles_n;
  const int group = blockIdx.x / per_group, in_group = blockIdx.x % per_group;
  const int group_rows = min(tiles_m - group * kGroup, kGroup);
  const int row0 = (group * kGroup + in_group % group_rows) * kBM;
  const int col0 = (in_group / group_rows) * kBN;

  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[8][8] = {};

  tile_loads next = load_tiles<Vec>(a, b, m, n, k, row0, col0, 0);
  store_tiles(next, as[0], bs[0]);
  __syncthreads();
  const int steps = (k + kBK - 1) / kBK;
  for (int step = 0; step < steps; ++step) {
    const int buffer = step & 1;
    // The next tile's global loads are in flight while this one's FMAs run.
    if (step + 1 < steps) next = load_tiles<Vec>(a, b, m, n, k, row0, col0, (step + 1) * kBK);
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&as[buffer][kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&as[buffer][kk][ty * 4 + 64]);
      const float4 b0 = *reinterpret_cast<const float4*>(&bs[buffer][kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&bs[buffer][kk][tx * 4 + 64]);
      const float ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    // The other buffer was last read in the previous step, before the barrier that ended it.
    if (step + 1 < steps) store_tiles(next, as[buffer ^ 1], bs[buffer ^ 1]);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (row >= m) continue;
    float* out = c + static_cast<std::int64_t>(row) * n;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int col = col0 + half * 64 + tx * 4;
      const float* v = &acc[i][half * 4];
      if (Vec && col < n) {
        *reinterpret_cast<float4*>(out + col) = make_float4(v[0], v[1], v[2], v[3]);
      } else if (!Vec) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < n) out[col + j] = v[j];
      }
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

void launch_matmul(const matmul_job& job) {
  static_assert(kBM <= cuda_matmul_tile && kBN <= cuda_matmul_tile, "tally::matmul checks the CUDA limits");
  const int m = static_cast<int>(job.m), n = static_cast<int>(job.n), k = static_cast<int>(job.k);
  const cudaStream_t stream = stream_of(job.options);
  if (job.options.strategy == matmul_strategy::tiled16) {
    const dim3 grid(static_cast<unsigned>((n + kTile16 - 1) / kTile16),
                    static_cast<unsigned>(std::min((m + kTile16 - 1) / kTile16, 65535)));
    matmul_tiled16_kernel<<<grid, kTile16 * kTile16, 0, stream>>>(job.a, job.b, job.c, m, n, k);
  } else {
    const auto blocks = static_cast<unsigned>(((job.m + kBM - 1) / kBM) * ((job.n + kBN - 1) / kBN));
    const bool vec = k % 4 == 0 && n % 4 == 0 && aligned16(job.a) && aligned16(job.b) && aligned16(job.c);
    if (vec) matmul_blocked_kernel<true><<<blocks, kThreads, 0, stream>>>(job.a, job.b, job.c, m, n, k);
    else matmul_blocked_kernel<false><<<blocks, kThreads, 0, stream>>>(job.a, job.b, job.c, m, n, k);
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

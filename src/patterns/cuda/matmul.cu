// CUDA f32 matrix multiplication, C = A x B row-major, any M, N, K: the textbook 16x16 shared
// tile kernel, the register-blocked, double-buffered 128x128 kernel, and the warp-tiled kernel
// with a cp.async pipeline (one template over matmul_tiling). Products are explicit fmaf (the
// library compiles with --fmad=false for the histogram's bin edges).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "base/cuda_check.cuh"
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

// ---- warptiled ---------------------------------------------------------------------------------

/// The warptiled kernel's shape, from entry I of cuda_matmul_tilings, and what follows from it.
template <int I> struct warp_tiling {
  static constexpr matmul_tiling t = cuda_matmul_tilings[I];
  static constexpr int bm = t.bm, bn = t.bn, bk = t.bk, wm = t.wm, wn = t.wn, tm = t.tm, tn = t.tn;
  static constexpr int stages = t.stages, min_blocks = t.min_blocks;
  static constexpr int warps_n = bn / wn, warps = (bm / wm) * warps_n, threads = warps * 32;
  // A warp's lanes form a lanes_m x lanes_n grid; a thread's tm x tn outputs are 4x4 pieces
  // 4 * lanes_m rows and 4 * lanes_n columns apart, so that a warp's float4 reads of one piece
  // are 4 * lanes_m (or 4 * lanes_n) consecutive floats of one shared row: broadcast, no conflict.
  static constexpr int lanes_m = wm / tm, lanes_n = wn / tn;
  // A is stored transposed, as[k][row], rows padded by 4 floats: the loaders' 4-byte stores of
  // 8 k x 4 rows per warp then fall in 32 different banks, and float4 reads stay aligned.
  static constexpr int a_pitch = bm + 4, a_stage = bk * a_pitch, b_stage = bk * bn;
  static constexpr std::size_t shared_bytes = std::size_t{stages} * (a_stage + b_stage) * sizeof(float);
  // A loads: each warp copies 4 rows x 8 columns of k per pass (lane / 8, lane % 8).
  static constexpr int a_k_groups = bk / 8, a_rows_per_pass = warps / a_k_groups * 4, a_passes = bm / a_rows_per_pass;
  // B loads: float4s (vectorized) or single floats, rows of the tile one after another.
  static constexpr int b_rows_per_pass4 = threads * 4 / bn, b_passes4 = bk / b_rows_per_pass4;
  static constexpr int b_rows_per_pass1 = threads / bn, b_passes1 = bk / b_rows_per_pass1;

  static_assert(bm % wm == 0 && bn % wn == 0, "warp tiles cover the block tile");
  static_assert(threads == 128 || threads == 256, "4 or 8 warps");
  static_assert(wm % tm == 0 && wn % tn == 0 && lanes_m * lanes_n == 32, "thread tiles cover the warp tile");
  static_assert(tm % 4 == 0 && tn % 4 == 0, "thread tiles are 4x4 pieces (float4 reads and stores)");
  static_assert(bk % 8 == 0 && warps % a_k_groups == 0 && bm % a_rows_per_pass == 0, "A loads cover the tile");
  static_assert(a_pitch % 32 == 4, "the padding that spreads the A stores over the banks");
  static_assert(a_passes <= 32, "the A loader keeps one bit per pass");
  static_assert(bn % 128 == 0 && threads % bn == 0 && bk % b_rows_per_pass1 == 0 && bk % b_rows_per_pass4 == 0,
                "B loads cover the tile");
  static_assert(stages >= 2, "a pipeline has at least two stages");
  static_assert(bm >= cuda_matmul_min_tile && bn >= cuda_matmul_min_tile && bm <= cuda_matmul_max_tile &&
                    bn <= cuda_matmul_max_tile, "tally::matmul checks the CUDA limits for these tile sides");
  static_assert(shared_bytes * min_blocks <= 227 * 1024, "the blocks fit one multiprocessor's shared memory");
};

struct matmul_params {
  const float* a;
  const float* b;
  float* c;
  int m, n, k;
};

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// cp.async of Bytes (4 or 16) from global to shared memory; when !copy, Bytes of zeros instead
/// (src-size 0 reads nothing: the tails of the matrices).
template <int Bytes> __device__ __forceinline__ void copy_async(std::uint32_t to, const float* from, bool copy) {
  static_assert(Bytes == 4 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes; 16 bypasses L1");
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from), "r"(copy ? 16 : 0) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(to), "l"(from), "r"(copy ? 4 : 0) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
/// Waits until at most Pending of this thread's committed groups are still in flight.
template <int Pending> __device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

/// C = A x B with a T::bm x T::bn tile of C per block. The k loop runs a T::stages-deep pipeline
/// of cp.async copies into shared memory, one barrier per T::bk columns of k. Vec: B's rows and C
/// are 16-byte aligned with n % 4 == 0 (float4 copies and stores); else single floats. A is copied
/// by single floats always, into its transposed layout.
template <class T, bool Vec>
__global__ void __launch_bounds__(T::threads, T::min_blocks) matmul_warptiled_kernel(const matmul_params p) {
  extern __shared__ __align__(16) float shared[];
  float* const as = shared;                        // [stages][bk][a_pitch]
  float* const bs = shared + T::stages * T::a_stage;  // [stages][bk][bn]

  // Blocks walk the tiles of C in groups of 8 tile rows, column by column within a group, so
  // that the blocks resident together share panels of A and B in L2.
  constexpr int kGroup = 8;
  const int tiles_m = (p.m + T::bm - 1) / T::bm, tiles_n = (p.n + T::bn - 1) / T::bn;
  const int per_group = kGroup * tiles_n;
  const int group = blockIdx.x / per_group, in_group = blockIdx.x % per_group;
  const int group_rows = min(tiles_m - group * kGroup, kGroup);
  const int row0 = (group * kGroup + in_group % group_rows) * T::bm;
  const int col0 = (in_group / group_rows) * T::bn;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  // This thread's A copies: row a_row + pass * a_rows_per_pass of the tile, column a_col of k.
  const int a_row = warp / T::a_k_groups * 4 + lane / 8, a_col = warp % T::a_k_groups * 8 + lane % 8;
  const float* const a_from = p.a + static_cast<std::int64_t>(row0 + a_row) * p.k + a_col;
  const std::int64_t a_pass_step = static_cast<std::int64_t>(T::a_rows_per_pass) * p.k;
  const std::uint32_t a_to = shared_address(as + a_col * T::a_pitch + a_row);
  std::uint32_t a_rows_inside = 0;  // bit pass: the row is inside A
#pragma unroll
  for (int pass = 0; pass < T::a_passes; ++pass)
    if (row0 + a_row + pass * T::a_rows_per_pass < p.m) a_rows_inside |= 1u << pass;

  // This thread's B copies: row b_row + pass * rows per pass of the tile, columns b_col...
  constexpr int b_width = Vec ? 4 : 1;
  constexpr int b_rows_per_pass = Vec ? T::b_rows_per_pass4 : T::b_rows_per_pass1;
  constexpr int b_passes = Vec ? T::b_passes4 : T::b_passes1;
  const int b_row = tid / (T::bn / b_width), b_col = tid % (T::bn / b_width) * b_width;
  const bool b_col_inside = col0 + b_col < p.n;  // Vec: n % 4 == 0, so the float4 is inside or outside
  const float* const b_from = p.b + static_cast<std::int64_t>(b_row) * p.n + col0 + b_col;
  const std::int64_t b_pass_step = static_cast<std::int64_t>(b_rows_per_pass) * p.n;
  const std::uint32_t b_to = shared_address(bs + b_row * T::bn + b_col);

  // Copies the tile of k columns k0 .. k0 + bk into pipeline stage `stage`. Guarded: zeros
  // outside the matrices (copies of no bytes from the matrix's start); unguarded, for tiles wholly
  // inside, the copies take no predicate and no address select.
  const auto copy_tile = [&](int stage, int k0, auto guarded) {
    constexpr bool kGuarded = decltype(guarded)::value;
    const bool a_col_inside = !kGuarded || k0 + a_col < p.k;
    const std::uint32_t a_stage_to = a_to + stage * T::a_stage * sizeof(float);
#pragma unroll
    for (int pass = 0; pass < T::a_passes; ++pass) {
      const bool inside = !kGuarded || (a_col_inside && (a_rows_inside >> pass & 1u));
      copy_async<4>(a_stage_to + pass * T::a_rows_per_pass * sizeof(float), inside ? a_from + pass * a_pass_step + k0 : p.a,
                    inside);
    }
    const float* const b_tile = b_from + static_cast<std::int64_t>(k0) * p.n;
    const std::uint32_t b_stage_to = b_to + stage * T::b_stage * sizeof(float);
#pragma unroll
    for (int pass = 0; pass < b_passes; ++pass) {
      const bool inside = !kGuarded || (b_col_inside && k0 + b_row + pass * b_rows_per_pass < p.k);
      copy_async<4 * b_width>(b_stage_to + pass * b_rows_per_pass * T::bn * sizeof(float),
                              inside ? b_tile + pass * b_pass_step : p.b, inside);
    }
  };
  // Tile `step` of k, guarded unless it lies wholly inside A and B (the same for the whole block).
  const bool block_inside = row0 + T::bm <= p.m && col0 + T::bn <= p.n;
  const auto copy_step = [&](int stage, int step) {
    if (block_inside && (step + 1) * T::bk <= p.k) copy_tile(stage, step * T::bk, std::false_type{});
    else copy_tile(stage, step * T::bk, std::true_type{});
  };

  // This thread's outputs: pieces at rows m_base + i * 4 * lanes_m, columns n_base + j * 4 * lanes_n.
  const int m_base = warp / T::warps_n * T::wm + lane / T::lanes_n * 4;
  const int n_base = warp % T::warps_n * T::wn + lane % T::lanes_n * 4;
  float acc[T::tm][T::tn] = {};

  const int steps = (p.k + T::bk - 1) / T::bk;
#pragma unroll
  for (int s = 0; s < T::stages - 1; ++s) {
    if (s < steps) copy_step(s, s);
    commit_copies();  // one group per stage, empty or not, so that wait_copies counts tiles
  }
  int read_stage = 0, write_stage = T::stages - 1;
  for (int step = 0; step < steps; ++step) {
    wait_copies<T::stages - 2>();  // this thread's copies of tile `step` have landed
    // Everyone's copies of tile `step` are visible, and everyone is done with tile step - 1,
    // whose stage the copies of tile step + stages - 1 overwrite.
    __syncthreads();
    if (step + T::stages - 1 < steps) copy_step(write_stage, step + T::stages - 1);
    commit_copies();

    const float* const a_tile = as + read_stage * T::a_stage + m_base;
    const float* const b_tile = bs + read_stage * T::b_stage + n_base;
#pragma unroll
    for (int kk = 0; kk < T::bk; ++kk) {
      float ra[T::tm], rb[T::tn];
#pragma unroll
      for (int i = 0; i < T::tm / 4; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(a_tile + kk * T::a_pitch + i * 4 * T::lanes_m);
        ra[i * 4] = v.x, ra[i * 4 + 1] = v.y, ra[i * 4 + 2] = v.z, ra[i * 4 + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < T::tn / 4; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(b_tile + kk * T::bn + j * 4 * T::lanes_n);
        rb[j * 4] = v.x, rb[j * 4 + 1] = v.y, rb[j * 4 + 2] = v.z, rb[j * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < T::tm; ++i)
#pragma unroll
        for (int j = 0; j < T::tn; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    read_stage = read_stage + 1 == T::stages ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == T::stages ? 0 : write_stage + 1;
  }

#pragma unroll
  for (int i = 0; i < T::tm; ++i) {
    const int row = row0 + m_base + i / 4 * 4 * T::lanes_m + i % 4;
    if (row >= p.m) continue;
    float* const out = p.c + static_cast<std::int64_t>(row) * p.n;
#pragma unroll
    for (int j = 0; j < T::tn / 4; ++j) {
      const int col = col0 + n_base + j * 4 * T::lanes_n;
      const float* const v = &acc[i][j * 4];
      if (Vec) {
        if (col < p.n) *reinterpret_cast<float4*>(out + col) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (col + e < p.n) out[col + e] = v[e];
      }
    }
  }
}

template <int I> void launch_warptiled(const matmul_params& p, bool vec, cudaStream_t stream) {
  using T = warp_tiling<I>;
  const auto kernel = vec ? matmul_warptiled_kernel<T, true> : matmul_warptiled_kernel<T, false>;
  // Above 48 KiB, dynamic shared memory must be asked for (per device: asked at every launch).
  if (T::shared_bytes > 48 * 1024)
    TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(T::shared_bytes)));
  const auto blocks = static_cast<unsigned>(((static_cast<std::int64_t>(p.m) + T::bm - 1) / T::bm) *
                                            ((static_cast<std::int64_t>(p.n) + T::bn - 1) / T::bn));
  kernel<<<blocks, T::threads, T::shared_bytes, stream>>>(p);
}

/// launch_warptiled<I> for every entry of cuda_matmul_tilings, by index.
template <int... I> constexpr auto warptiled_launchers(std::integer_sequence<int, I...>) {
  return std::array<void (*)(const matmul_params&, bool, cudaStream_t), sizeof...(I)>{&launch_warptiled<I>...};
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// automatic's kernel: warptiled at its default tiling (128x256 tiles), unless that tiling gives
/// fewer blocks than the device has multiprocessors; then blocked128's 128x128 tiles, which keep
/// more of them busy (H200, N = 1024: 0.137 ms against warptiled's 0.218; bench/PERFORMANCE.md).
matmul_strategy chosen(matmul_strategy asked, int m, int n) {
  if (asked != matmul_strategy::automatic) return asked;
  constexpr matmul_tiling t = cuda_matmul_tilings[cuda_matmul_default_tiling];
  const std::int64_t blocks = std::int64_t{(m + t.bm - 1) / t.bm} * ((n + t.bn - 1) / t.bn);
  return blocks < multiprocessors() ? matmul_strategy::blocked128 : matmul_strategy::warptiled;
}

}  // namespace


void launch_matmul(const matmul_job& job) {
  static_assert(kBM == cuda_matmul_min_tile && kBN == cuda_matmul_min_tile, "tally::matmul checks the CUDA limits");
  const int m = static_cast<int>(job.m), n = static_cast<int>(job.n), k = static_cast<int>(job.k);
  const cudaStream_t stream = stream_of(job.options);
  switch (chosen(job.options.strategy, m, n)) {
    case matmul_strategy::tiled16: {
      const dim3 grid(static_cast<unsigned>((n + kTile16 - 1) / kTile16),
                      static_cast<unsigned>(std::min((m + kTile16 - 1) / kTile16, 65535)));
      matmul_tiled16_kernel<<<grid, kTile16 * kTile16, 0, stream>>>(job.a, job.b, job.c, m, n, k);
      break;
    }
    case matmul_strategy::blocked128: {
      const auto blocks = static_cast<unsigned>(((job.m + kBM - 1) / kBM) * ((job.n + kBN - 1) / kBN));
      const bool vec = k % 4 == 0 && n % 4 == 0 && aligned16(job.a) && aligned16(job.b) && aligned16(job.c);
      if (vec) matmul_blocked_kernel<true><<<blocks, kThreads, 0, stream>>>(job.a, job.b, job.c, m, n, k);
      else matmul_blocked_kernel<false><<<blocks, kThreads, 0, stream>>>(job.a, job.b, job.c, m, n, k);
      break;
    }
    case matmul_strategy::automatic:  // resolved by chosen()
    case matmul_strategy::warptiled: {
      static constexpr auto launchers =
          warptiled_launchers(std::make_integer_sequence<int, cuda_matmul_tiling_count>{});
      const int tiling = job.options.tiling < 0 ? cuda_matmul_default_tiling : job.options.tiling;
      // A is copied by single floats; B and C take float4s where their rows are 16-byte aligned.
      const bool vec = n % 4 == 0 && aligned16(job.b) && aligned16(job.c);
      launchers[static_cast<std::size_t>(tiling)]({job.a, job.b, job.c, m, n, k}, vec, stream);
      break;
    }
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

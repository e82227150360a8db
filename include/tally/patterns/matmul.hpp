// Matrix multiplication C = A x B of row-major f32 matrices, any M, N, K. CUDA-free header.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tally/patterns/array.hpp"

namespace tally {

/// How the CUDA backend multiplies (the CPU backend has one blocked loop nest).
///  - tiled16: the textbook kernel, one output per thread, 16x16 tiles of A and B in shared
///    memory (kept for learners and as a baseline);
///  - blocked128: 128x128 block tiles, 8x8 outputs per thread in registers, 16-byte loads, the
///    A tile transposed in shared memory, register-staged double buffering;
///  - warptiled: one kernel template over matmul_tiling: each warp owns a sub-tile of the block
///    tile (so that its shared-memory reads are few and broadcast), and a multi-stage cp.async
///    pipeline copies the next tiles of A and B while the current one is multiplied;
///  - automatic: warptiled with its default tiling, or blocked128 where that tiling would give
///    fewer blocks than the device has multiprocessors (small products).
enum class matmul_strategy : std::uint8_t { automatic, tiled16, blocked128, warptiled };
std::string_view name_of(matmul_strategy s);

/// One shape of the warptiled kernel: a bm x bn tile of C per block, bk columns of A (rows of B)
/// per pipeline stage; warps of wm x wn outputs, threads of tm x tn outputs; `stages` tiles in
/// flight; launch bounds of min_blocks blocks per multiprocessor. Threads: (bm / wm) (bn / wn) 32.
struct matmul_tiling {
  int bm, bn, bk, wm, wn, tm, tn, stages, min_blocks;
};
/// The tilings the CUDA backend compiles, which matmul_options::tiling indexes (for tuning sweeps
/// and tests); matmul_default_tiling() is the one warptiled and automatic use.
const std::vector<matmul_tiling>& matmul_tilings();
int matmul_default_tiling();
/// "128x128x16 w64x32 t8x8 s3" (block, warp and thread tiles, stages).
std::string name_of(const matmul_tiling& t);

struct matmul_options : run_options {
  matmul_strategy strategy = matmul_strategy::automatic;
  /// With strategy warptiled: an index into matmul_tilings(), or -1 for the default tiling.
  int tiling = -1;
};

/// c (m x n) = a (m x k) x b (k x n), all row-major and contiguous (leading dimensions k, n, n),
/// f32 with f32 accumulation. k == 0 gives zeros. c must not overlap a or b.
void matmul(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
            const matmul_options& options = {});

}  // namespace tally

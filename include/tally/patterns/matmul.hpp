// Matrix multiplication C = A x B of row-major f32 matrices, any M, N, K. CUDA-free header.
#pragma once

#include <cstdint>
#include <string_view>

#include "tally/patterns/array.hpp"

namespace tally {

/// How the CUDA backend multiplies (the CPU backend has one blocked loop nest).
///  - tiled16: the textbook kernel, one output per thread, 16x16 tiles of A and B in shared
///    memory (kept for learners and as a baseline);
///  - blocked128: 128x128 block tiles, 8x8 outputs per thread in registers, 16-byte loads, the
///    A tile transposed in shared memory, double-buffered so that loads overlap the FMAs.
///  - automatic: blocked128.
enum class matmul_strategy : std::uint8_t { automatic, tiled16, blocked128 };
std::string_view name_of(matmul_strategy s);

struct matmul_options : run_options {
  matmul_strategy strategy = matmul_strategy::automatic;
};

/// c (m x n) = a (m x k) x b (k x n), all row-major and contiguous (leading dimensions k, n, n),
/// f32 with f32 accumulation. k == 0 gives zeros. c must not overlap a or b.
void matmul(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
            const matmul_options& options = {});

}  // namespace tally

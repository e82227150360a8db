// The generic shared kernel's shape (cuda/count_generic.cu's shared_kernel), which the planner
// (core/planner.cpp) sizes its launches by: one definition for both.
#pragma once

namespace tally::detail {

/// Threads a block (64 registers a thread: one block a multiprocessor).
inline constexpr int kGenericThreads = 1024;
/// Samples of each column a thread loads before it bins any (more spill registers).
inline constexpr int kGenericLoads = 4;
/// The columns whose samples all load before the first axis bins (their bits kept in registers):
/// the first kGenericAhead with samples of at most 4 bytes that are not one repeated value.
inline constexpr int kGenericAhead = 3;

}  // namespace tally::detail

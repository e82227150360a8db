// The CUDA patterns' launchers (elementwise.cu, reduce.cu, matmul.cu), called by patterns.cu with
// jobs whose pointers are already device pointers. Each enqueues on the job's stream.
#pragma once

#include <cuda_runtime_api.h>

#include "patterns/core/patterns.hpp"

namespace tally::detail::cuda {

void launch_unary(const unary_job& job);
void launch_binary(const binary_job& job);
/// Enqueues the reduction; whole-array jobs take `scratch` (reduce_scratch_bytes of device memory
/// whose first reduce_ticket_bytes are zero: the chunk claims and the blocks' ticket, then the
/// chunks' partial results).
inline constexpr std::size_t reduce_ticket_bytes = 16;
void launch_reduce(const reduce_job& job, void* scratch);
std::size_t reduce_scratch_bytes(const reduce_job& job);
void launch_matmul(const matmul_job& job);

inline cudaStream_t stream_of(const run_options& run) { return static_cast<cudaStream_t>(run.stream); }

/// Multiprocessors of the current device (asked once per device).
int multiprocessors();

}  // namespace tally::detail::cuda

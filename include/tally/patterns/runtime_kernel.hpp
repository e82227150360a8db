// Kernels compiled at run time: CUDA C++ source compiled with NVRTC for the current device's
// architecture, kept for the process's lifetime, and launched on a caller's stream. The Python
// package's ElementwiseKernel and ReductionKernel generate the source; this is the part that
// needs the CUDA toolkit. CUDA-free header: streams travel as void*.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tally {

/// Whether this build can compile and launch run-time kernels (the CUDA backend is compiled in).
bool runtime_kernels_compiled();

/// The current CUDA device as run-time kernels see it.
struct runtime_device {
  int ordinal = 0;
  int arch = 0;  // compute capability, major * 10 + minor (90 for an H100)
  int multiprocessors = 0;
};
runtime_device current_runtime_device();

/// Compiles `source` with NVRTC for compute capability `arch` (e.g. 90) without loading it (no
/// device needed) and returns the PTX. Throws tally::error with NVRTC's log where it does not
/// compile.
std::string compile_runtime_source(const std::string& source, int arch);

/// A kernel of compiled source, valid for the process's lifetime (a cudaKernel_t).
using runtime_kernel = const void*;

/// The kernel `name` (an extern "C" __global__ function) of `source`, compiled for the current
/// device's architecture the first time a (source, architecture) pair is asked for and kept:
/// later calls only look it up. Safe from any thread. Throws tally::error with NVRTC's log
/// where the source does not compile, and where `name` is not one of its kernels.
runtime_kernel get_runtime_kernel(const std::string& source, const std::string& name);

/// How many (source, architecture) pairs have been compiled in this process.
std::size_t runtime_compilations();

/// Enqueues `kernel` on `stream` (a cudaStream_t; nullptr: the default stream) on the current
/// device: `blocks` blocks (1 .. 2^31 - 1) of `threads` threads. args[k] points to the bytes of
/// the kernel's parameter k (as cudaLaunchKernel takes them); they are copied before the call
/// returns. Returns without waiting; launch errors throw tally::error.
void launch_runtime_kernel(runtime_kernel kernel, std::int64_t blocks, int threads,
                           const std::vector<const void*>& args, void* stream);

}  // namespace tally

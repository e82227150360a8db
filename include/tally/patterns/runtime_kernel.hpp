// Kernels compiled at run time: CUDA C++ source compiled with NVRTC for the current device's
// architecture, kept for the process's lifetime, and launched on a caller's stream. The Python
// package's ElementwiseKernel and ReductionKernel generate the source, RawKernel and RawModule
// take the user's; this is the part that needs the CUDA toolkit. CUDA-free header: streams
// travel as void*.
#pragma once

#include <array>
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

/// The NVRTC options of the generated kernels (beside the architecture, which is always the
/// device's): C++17, functions without an annotation are device functions, no fused multiply-add
/// (as tally's own kernels).
inline const std::vector<std::string>& runtime_default_options() {
  static const std::vector<std::string> options{"--std=c++17", "--device-as-default-execution-space", "--fmad=false"};
  return options;
}

/// Compiles `source` with NVRTC for compute capability `arch` (e.g. 90) without loading it (no
/// device needed) and returns the PTX. `options`: NVRTC's options, in place of the defaults
/// (never --gpu-architecture: `arch` gives it). Throws tally::error with NVRTC's log where it
/// does not compile.
std::string compile_runtime_source(const std::string& source, int arch,
                                   const std::vector<std::string>& options = runtime_default_options());

/// A kernel of compiled source, valid for the process's lifetime (a cudaKernel_t).
using runtime_kernel = const void*;

/// The kernel `name` (an extern "C" __global__ function) of `source`, compiled with `options`
/// (as compile_runtime_source) for the current device's architecture the first time a (source,
/// options, architecture) triple is asked for and kept: later calls only look it up. Safe from
/// any thread. Throws tally::error with NVRTC's log where the source does not compile, and
/// where `name` is not one of its kernels.
runtime_kernel get_runtime_kernel(const std::string& source, const std::string& name,
                                  const std::vector<std::string>& options = runtime_default_options());

/// Compiles and loads `source` with `options` for the current device as get_runtime_kernel's
/// first call does, without asking for a kernel (to see compile errors early).
void load_runtime_source(const std::string& source,
                         const std::vector<std::string>& options = runtime_default_options());

/// How many (source, options, architecture) triples have been compiled in this process.
std::size_t runtime_compilations();

/// Enqueues `kernel` on `stream` (a cudaStream_t; nullptr: the default stream) on the current
/// device: `blocks` blocks (1 .. 2^31 - 1) of `threads` threads. args[k] points to the bytes of
/// the kernel's parameter k (as cudaLaunchKernel takes them); they are copied before the call
/// returns. Returns without waiting; launch errors throw tally::error.
void launch_runtime_kernel(runtime_kernel kernel, std::int64_t blocks, int threads,
                           const std::vector<const void*>& args, void* stream);

/// A launch shape: x, y, z.
using runtime_dims = std::array<std::int64_t, 3>;

/// Enqueues `kernel` as the user shapes it: `grid` blocks (x up to 2^31 - 1, y and z up to
/// 65535) of `block` threads (x and y up to 1024, z up to 64, at most 1024 in all, and at most
/// what the kernel's registers allow), with `shared_memory` bytes of dynamic shared memory a
/// block. Beyond what a kernel has unasked (48 KiB less its static shared memory) its limit is
/// raised for the current device (cudaFuncAttributeMaxDynamicSharedMemorySize), up to what the
/// device lets a block opt in to beside the kernel's static shared memory. Otherwise as the launch above; a shape or size out
/// of those bounds throws tally::error, naming it, before anything is enqueued.
void launch_runtime_kernel(runtime_kernel kernel, const runtime_dims& grid, const runtime_dims& block,
                           std::int64_t shared_memory, const std::vector<const void*>& args, void* stream);

}  // namespace tally

// Run-time kernels: NVRTC compiles a source for the current device's architecture (a cubin where
// NVRTC knows the architecture, else PTX of the newest one it knows, which the driver finishes),
// the CUDA runtime loads it as a context-independent library, and each (source, architecture)
// is compiled once per process.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/cuda_check.cuh"
#include "patterns/cuda/nvrtc_library.hpp"
#include "tally/error.hpp"
#include "tally/patterns/runtime_kernel.hpp"

namespace tally {
namespace {

void check_nvrtc(nvrtcResult status, const char* what) {
  if (status != NVRTC_SUCCESS)
    throw error(std::string("NVRTC error: ") + detail::nvrtc().GetErrorString(status) + " in " + what);
}

/// An NVRTC program, destroyed on every path.
class program {
 public:
  explicit program(const std::string& source) {
    check_nvrtc(detail::nvrtc().CreateProgram(&p_, source.c_str(), "tally_user_kernel.cu", 0, nullptr, nullptr),
                "nvrtcCreateProgram");
  }
  ~program() { detail::nvrtc().DestroyProgram(&p_); }
  program(const program&) = delete;
  program& operator=(const program&) = delete;

  /// Compiles for `target` ("sm_90" or "compute_90") with `options` beside it; throws with the
  /// compiler's log on failure.
  void compile(const std::string& target, const std::vector<std::string>& options) {
    const std::string arch = "--gpu-architecture=" + target;
    std::vector<const char*> all{arch.c_str()};
    for (const auto& o : options) all.push_back(o.c_str());
    const nvrtcResult status = detail::nvrtc().CompileProgram(p_, static_cast<int>(all.size()), all.data());
    if (status == NVRTC_SUCCESS) return;
    if (status != NVRTC_ERROR_COMPILATION) check_nvrtc(status, "nvrtcCompileProgram");
    throw error("tally: the kernel does not compile (NVRTC, " + target + "):\n" + log());
  }

  std::string log() const {
    std::size_t size = 0;
    check_nvrtc(detail::nvrtc().GetProgramLogSize(p_, &size), "nvrtcGetProgramLogSize");
    std::string text(size, '\0');
    check_nvrtc(detail::nvrtc().GetProgramLog(p_, text.data()), "nvrtcGetProgramLog");
    while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
    return text;
  }

  std::string ptx() const {
    std::size_t size = 0;
    check_nvrtc(detail::nvrtc().GetPTXSize(p_, &size), "nvrtcGetPTXSize");
    std::string code(size, '\0');
    check_nvrtc(detail::nvrtc().GetPTX(p_, code.data()), "nvrtcGetPTX");
    return code;  // keeps its terminating NUL, which cudaLibraryLoadData needs for PTX
  }

  std::string cubin() const {
    std::size_t size = 0;
    check_nvrtc(detail::nvrtc().GetCUBINSize(p_, &size), "nvrtcGetCUBINSize");
    std::string code(size, '\0');
    check_nvrtc(detail::nvrtc().GetCUBIN(p_, code.data()), "nvrtcGetCUBIN");
    return code;
  }

 private:
  nvrtcProgram p_ = nullptr;
};

/// The architectures NVRTC compiles cubins for, ascending.
const std::vector<int>& nvrtc_architectures() {
  static const std::vector<int> archs = [] {
    int n = 0;
    check_nvrtc(detail::nvrtc().GetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
    std::vector<int> a(static_cast<std::size_t>(n));
    if (n > 0) check_nvrtc(detail::nvrtc().GetSupportedArchs(a.data()), "nvrtcGetSupportedArchs");
    std::sort(a.begin(), a.end());
    return a;
  }();
  return archs;
}

/// A loaded library and the kernels asked of it so far.
struct compiled {
  cudaLibrary_t library = nullptr;
  std::map<std::string, cudaKernel_t> kernels;
};

using cache_key = std::tuple<std::string, std::vector<std::string>, int>;  // (source, options, arch)
std::mutex cache_mutex;
std::map<cache_key, compiled> cache;  // never unloaded

compiled load(const std::string& source, const std::vector<std::string>& options, int arch) {
  const auto& known = nvrtc_architectures();
  program p(source);
  std::string code;
  if (std::find(known.begin(), known.end(), arch) != known.end()) {
    p.compile("sm_" + std::to_string(arch), options);
    code = p.cubin();
  } else {
    // A device newer than this NVRTC: PTX of the newest architecture below it, for the driver's JIT.
    const auto below = std::upper_bound(known.begin(), known.end(), arch);
    if (below == known.begin())
      throw error("tally: NVRTC compiles for no architecture up to the device's sm_" + std::to_string(arch));
    p.compile("compute_" + std::to_string(*std::prev(below)), options);
    code = p.ptx();
  }
  compiled c;
  TALLY_CUDA_CHECK(cudaLibraryLoadData(&c.library, code.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  return c;
}

}  // namespace

bool runtime_kernels_compiled() { return true; }

runtime_device current_runtime_device() {
  runtime_device d;
  TALLY_CUDA_CHECK(cudaGetDevice(&d.ordinal));
  int major = 0, minor = 0;
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d.ordinal));
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d.ordinal));
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&d.multiprocessors, cudaDevAttrMultiProcessorCount, d.ordinal));
  d.arch = major * 10 + minor;
  return d;
}

std::string compile_runtime_source(const std::string& source, int arch, const std::vector<std::string>& options) {
  if (arch < 50) throw error("tally: compile_runtime_source: arch " + std::to_string(arch) + " is below sm_50");
  program p(source);
  p.compile("compute_" + std::to_string(arch), options);
  return p.ptx();
}

namespace {

/// The source compiled with `options` for the current device's architecture and loaded: kept
/// from an earlier call, or made now. The caller holds cache_mutex.
compiled& loaded(const std::string& source, const std::vector<std::string>& options) {
  const int arch = current_runtime_device().arch;
  cache_key key{source, options, arch};
  auto at = cache.find(key);
  if (at == cache.end()) at = cache.emplace(std::move(key), load(source, options, arch)).first;
  return at->second;
}

}  // namespace

void load_runtime_source(const std::string& source, const std::vector<std::string>& options) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  loaded(source, options);
}

runtime_kernel get_runtime_kernel(const std::string& source, const std::string& name,
                                  const std::vector<std::string>& options) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  compiled& c = loaded(source, options);
  auto& kernels = c.kernels;
  if (const auto k = kernels.find(name); k != kernels.end()) return reinterpret_cast<runtime_kernel>(k->second);
  cudaKernel_t kernel = nullptr;
  const cudaError_t status = cudaLibraryGetKernel(&kernel, c.library, name.c_str());
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw error("tally: the compiled source has no kernel named " + name + " (" + cudaGetErrorString(status) +
                "; a kernel is an extern \"C\" __global__ function: C++ names are mangled)");
  }
  kernels.emplace(name, kernel);
  return reinterpret_cast<runtime_kernel>(kernel);
}

std::size_t runtime_compilations() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache.size();
}

namespace {

/// What a launch checks of a kernel on a device, asked of the driver once: the most threads a
/// block of it may have, its static shared memory, the device's most shared memory a block may
/// opt in to, and the dynamic shared memory the kernel is allowed so far (at first what the
/// static leaves of the 48 KiB every kernel has without the attribute).
struct kernel_limits {
  int max_threads = 0;
  std::int64_t static_shared = 0;
  std::int64_t shared_optin = 0;
  std::int64_t dynamic_allowed = 0;
};

std::mutex limits_mutex;
std::map<std::pair<runtime_kernel, int>, kernel_limits> limits;  // (kernel, device)

std::string dims_string(const runtime_dims& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

}  // namespace

void launch_runtime_kernel(runtime_kernel kernel, const runtime_dims& grid, const runtime_dims& block,
                           std::int64_t shared_memory, const std::vector<const void*>& args, void* stream) {
  const std::string what = "tally: launch_runtime_kernel: ";
  if (!kernel) throw error(what + "null kernel");
  const runtime_dims grid_max{0x7fffffff, 65535, 65535}, block_max{1024, 1024, 64};
  for (int d = 0; d < 3; ++d) {
    if (grid[d] < 1 || grid[d] > grid_max[d])
      throw error(what + "grid " + dims_string(grid) + " is not a grid: each dimension from 1 to " +
                  dims_string(grid_max));
    if (block[d] < 1 || block[d] > block_max[d])
      throw error(what + "block " + dims_string(block) + " is not a block: each dimension from 1 to " +
                  dims_string(block_max));
  }
  const std::int64_t threads = block[0] * block[1] * block[2];
  if (threads > 1024)
    throw error(what + "block " + dims_string(block) + " has " + std::to_string(threads) +
                " threads; a block has at most 1024");
  if (shared_memory < 0) throw error(what + "shared_mem " + std::to_string(shared_memory) + " is negative");
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  const void* function = kernel;  // the runtime's function calls take a cudaKernel_t as it is
  {
    std::lock_guard<std::mutex> lock(limits_mutex);
    auto at = limits.find({kernel, device});
    if (at == limits.end()) {
      cudaFuncAttributes attributes{};
      TALLY_CUDA_CHECK(cudaFuncGetAttributes(&attributes, function));
      int optin = 0;
      TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
      kernel_limits l;
      l.max_threads = attributes.maxThreadsPerBlock;
      l.static_shared = static_cast<std::int64_t>(attributes.sharedSizeBytes);
      l.shared_optin = optin;
      l.dynamic_allowed = std::max<std::int64_t>(0, 48 * 1024 - l.static_shared);
      at = limits.emplace(std::make_pair(kernel, device), l).first;
    }
    kernel_limits& l = at->second;
    if (threads > l.max_threads)
      throw error(what + "block " + dims_string(block) + " has " + std::to_string(threads) +
                  " threads; this kernel takes at most " + std::to_string(l.max_threads) +
                  " (its registers or __launch_bounds__)");
    if (shared_memory > l.dynamic_allowed) {
      const std::int64_t most = l.shared_optin - l.static_shared;
      if (shared_memory > most)
        throw error(what + "shared_mem " + std::to_string(shared_memory) + " bytes; device " +
                    std::to_string(device) + " allows this kernel at most " + std::to_string(most) +
                    " bytes of dynamic shared memory a block (" + std::to_string(l.shared_optin) + " less its " +
                    std::to_string(l.static_shared) + " static bytes)");
      TALLY_CUDA_CHECK(cudaFuncSetAttribute(function, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(shared_memory)));
      l.dynamic_allowed = shared_memory;
    }
  }
  // cudaLaunchKernel takes a cudaKernel_t in place of a function symbol.
  TALLY_CUDA_CHECK(cudaLaunchKernel(
      function, dim3(static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2])),
      dim3(static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]), static_cast<unsigned>(block[2])),
      const_cast<void**>(args.data()), static_cast<std::size_t>(shared_memory), static_cast<cudaStream_t>(stream)));
}

void launch_runtime_kernel(runtime_kernel kernel, std::int64_t blocks, int threads,
                           const std::vector<const void*>& args, void* stream) {
  launch_runtime_kernel(kernel, {blocks, 1, 1}, {threads, 1, 1}, 0, args, stream);
}

}  // namespace tally

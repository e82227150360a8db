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

  /// Compiles for `target` ("sm_90" or "compute_90"); throws with the compiler's log on failure.
  void compile(const std::string& target) {
    const std::string arch = "--gpu-architecture=" + target;
    // C++17 as the rest of tally; functions without an annotation are device functions (the
    // user's preamble); no fused multiply-add, as tally's own kernels.
    const char* options[] = {arch.c_str(), "--std=c++17", "--device-as-default-execution-space", "--fmad=false"};
    const nvrtcResult status = detail::nvrtc().CompileProgram(p_, static_cast<int>(std::size(options)), options);
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

std::mutex cache_mutex;
std::map<std::pair<std::string, int>, compiled> cache;  // (source, arch); never unloaded

compiled load(const std::string& source, int arch) {
  const auto& known = nvrtc_architectures();
  program p(source);
  std::string code;
  if (std::find(known.begin(), known.end(), arch) != known.end()) {
    p.compile("sm_" + std::to_string(arch));
    code = p.cubin();
  } else {
    // A device newer than this NVRTC: PTX of the newest architecture below it, for the driver's JIT.
    const auto below = std::upper_bound(known.begin(), known.end(), arch);
    if (below == known.begin())
      throw error("tally: NVRTC compiles for no architecture up to the device's sm_" + std::to_string(arch));
    p.compile("compute_" + std::to_string(*std::prev(below)));
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

std::string compile_runtime_source(const std::string& source, int arch) {
  if (arch < 50) throw error("tally: compile_runtime_source: arch " + std::to_string(arch) + " is below sm_50");
  program p(source);
  p.compile("compute_" + std::to_string(arch));
  return p.ptx();
}

runtime_kernel get_runtime_kernel(const std::string& source, const std::string& name) {
  const int arch = current_runtime_device().arch;
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto at = cache.find({source, arch});
  if (at == cache.end()) at = cache.emplace(std::make_pair(source, arch), load(source, arch)).first;
  auto& kernels = at->second.kernels;
  if (const auto k = kernels.find(name); k != kernels.end()) return reinterpret_cast<runtime_kernel>(k->second);
  cudaKernel_t kernel = nullptr;
  const cudaError_t status = cudaLibraryGetKernel(&kernel, at->second.library, name.c_str());
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw error("tally: the compiled source has no kernel named " + name + " (" + cudaGetErrorString(status) + ")");
  }
  kernels.emplace(name, kernel);
  return reinterpret_cast<runtime_kernel>(kernel);
}

std::size_t runtime_compilations() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache.size();
}

void launch_runtime_kernel(runtime_kernel kernel, std::int64_t blocks, int threads,
                           const std::vector<const void*>& args, void* stream) {
  if (!kernel) throw error("tally: launch_runtime_kernel: null kernel");
  if (blocks < 1 || blocks > 0x7fffffff || threads < 1 || threads > 1024)
    throw error("tally: launch_runtime_kernel: " + std::to_string(blocks) + " blocks of " + std::to_string(threads) +
                " threads is not a launch shape");
  // cudaLaunchKernel takes a cudaKernel_t in place of a function symbol.
  TALLY_CUDA_CHECK(cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)),
                                    const_cast<void**>(args.data()), 0, static_cast<cudaStream_t>(stream)));
}

}  // namespace tally

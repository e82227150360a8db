// NVRTC by dlopen (nvrtc_library.hpp).
#include "patterns/cuda/nvrtc_library.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>
#include <vector>

#include "tally/error.hpp"

namespace tally::detail {
namespace {

template <class F>
void bind(void* handle, F& f, const char* symbol) {
  f = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!f) throw error(std::string("tally: NVRTC lacks ") + symbol + " (" + dlerror() + ")");
}

nvrtc_library load() {
  const std::string name = "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000);
  const std::vector<std::string> candidates = {name, std::string(TALLY_CUDA_LIBRARY_DIR) + "/" + name};
  void* handle = nullptr;
  std::string errors;
  for (const std::string& path : candidates) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    errors += std::string("\n  ") + dlerror();
  }
  if (!handle)
    throw error("tally: user-defined CUDA kernels need NVRTC (" + name +
                "), which was not found: install the CUDA toolkit's runtime compiler (Debian/Ubuntu: "
                "cuda-nvrtc-13-0; pip: nvidia-cuda-nvrtc, with its lib directory on LD_LIBRARY_PATH)" + errors);
  nvrtc_library l{};
#define TALLY_NVRTC_BIND(name) bind(handle, l.name, "nvrtc" #name);
  TALLY_NVRTC_FUNCTIONS(TALLY_NVRTC_BIND)
#undef TALLY_NVRTC_BIND
  return l;  // the handle stays open for the process' life
}

}  // namespace

const nvrtc_library& nvrtc() {
  static const nvrtc_library library = load();  // a failed load throws, and the next call tries again
  return library;
}

}  // namespace tally::detail

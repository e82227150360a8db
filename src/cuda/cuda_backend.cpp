// The CUDA backend's entry in the backend table: device discovery and pointer ownership.
// The histogram kernels themselves are the CUDA engine's work (not built yet).
#include <cuda_runtime_api.h>

#include <string>

#include "core/backend.hpp"

namespace tally::detail {
namespace {

bool cuda_usable(std::string& detail) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    detail = status == cudaSuccess ? "no CUDA device found"
                                   : std::string("no CUDA device: ") + cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  detail.clear();
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    detail += (d ? "; " : "") + std::to_string(d) + ": " + prop.name + " (sm_" +
              std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
              std::to_string(prop.multiProcessorCount) + " SMs, " +
              std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
  }
  return true;
}

bool cuda_owns(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

void cuda_fill(const fill_job&) {
  throw error("the CUDA histogram engine is not built yet: use backend cpu");
}

}  // namespace

const backend_ops& cuda_backend() {
  static const backend_ops ops{backend::cuda, &cuda_usable, &cuda_owns, &cuda_fill};
  return ops;
}

}  // namespace tally::detail

// Run-time kernels in a build without the CUDA backend: every call says so.
#include "tally/error.hpp"
#include "tally/patterns/runtime_kernel.hpp"

namespace tally {
namespace {

[[noreturn]] void unavailable() {
  throw error("tally: run-time kernels need the CUDA backend, which is not compiled into this build of tally "
              "(configure with -DTALLY_CUDA=ON where nvcc is found)");
}

}  // namespace

bool runtime_kernels_compiled() { return false; }
runtime_device current_runtime_device() { unavailable(); }
std::string compile_runtime_source(const std::string&, int, const std::vector<std::string>&) { unavailable(); }
runtime_kernel get_runtime_kernel(const std::string&, const std::string&, const std::vector<std::string>&) {
  unavailable();
}
void load_runtime_source(const std::string&, const std::vector<std::string>&) { unavailable(); }
std::size_t runtime_compilations() { return 0; }
void launch_runtime_kernel(runtime_kernel, std::int64_t, int, const std::vector<const void*>&, void*) { unavailable(); }
void launch_runtime_kernel(runtime_kernel, const runtime_dims&, const runtime_dims&, std::int64_t,
                           const std::vector<const void*>&, void*) {
  unavailable();
}

}  // namespace tally

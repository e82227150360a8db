// tally/nccl.hpp in a build without NCCL support: every function says so.
#include <string>

#include "tally/nccl.hpp"

namespace tally {
namespace {

[[noreturn]] void unavailable(const char* what) {
  throw error(std::string(what) +
              ": this build of tally has no NCCL support (configure with the CUDA backend and "
              "-DTALLY_NCCL=ON where nccl.h is found: the CUDA toolkit's NCCL, the Python wheel "
              "nvidia-nccl-cu13, or NCCL_ROOT)");
}

}  // namespace

bool nccl_available() { return false; }
void all_reduce(device_histogram&, ncclComm*, void*) { unavailable("all_reduce"); }
void reduce(device_histogram&, int, ncclComm*, void*) { unavailable("reduce"); }
void check_same_layout(const device_histogram&, ncclComm*, void*) { unavailable("check_same_layout"); }
void sharded_fill(std::vector<device_histogram>&, const std::vector<view>&, const std::vector<ncclComm*>&,
                  const std::vector<void*>&, const std::vector<view>&) {
  unavailable("sharded_fill");
}

}  // namespace tally

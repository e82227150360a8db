// NVRTC loaded at its first use (dlopen), not linked: the library and the Python extension load
// where the CUDA toolkit is absent (a wheel on a machine with only a driver, or none), and only
// user-defined kernels need NVRTC.
#pragma once

#include <nvrtc.h>

namespace tally::detail {

/// The NVRTC functions the user-defined kernels call, each as X(name without its nvrtc prefix).
#define TALLY_NVRTC_FUNCTIONS(X)                                                                            \
  X(GetErrorString) X(CreateProgram) X(DestroyProgram) X(CompileProgram) X(GetProgramLogSize) X(GetProgramLog) \
  X(GetPTXSize) X(GetPTX) X(GetCUBINSize) X(GetCUBIN) X(GetNumSupportedArchs) X(GetSupportedArchs)

/// Pointers to those functions, by the same names.
struct nvrtc_library {
#define TALLY_NVRTC_POINTER(name) decltype(&::nvrtc##name) name;
  TALLY_NVRTC_FUNCTIONS(TALLY_NVRTC_POINTER)
#undef TALLY_NVRTC_POINTER
};

/// NVRTC of the CUDA major version tally was built with: libnvrtc.so.<major> by the loader's
/// search (LD_LIBRARY_PATH, the system's libraries, one already loaded), else in the toolkit tally
/// was built against. Loaded once; throws tally::error saying what to install where it is missing.
const nvrtc_library& nvrtc();

}  // namespace tally::detail

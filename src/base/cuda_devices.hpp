// Where memory lives and whether CUDA runs here: what both libraries (histograms, patterns) ask
// before they choose a backend. Defined by the CUDA backend (builds with CUDA only).
#pragma once

#include <string>

namespace tally::detail::cuda {

/// Whether a CUDA device is usable here; `detail` lists the devices found or says why none is.
/// Asked of the driver once per process.
bool usable(std::string& detail);

/// The CUDA device holding p, or -1 for host memory.
int device_of(const void* p);

}  // namespace tally::detail::cuda

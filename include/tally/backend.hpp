// Where work runs: shared by the histograms (tally/plan.hpp) and the parallel patterns.
#pragma once

#include <cstdint>

namespace tally {

/// Where a histogram or a pattern is computed. automatic: where the data live (device memory ->
/// cuda).
enum class backend : std::uint8_t { automatic, cpu, cuda };

}  // namespace tally

// How a reduction combines two values, written once for the CPU and the CUDA backend.
#pragma once

#include <math.h>

#include <cstdint>
#include <type_traits>

#include "base/hd.hpp"

namespace tally::detail {

/// Extreme: min or max (chosen by `minimum`), which keep a NaN once one is seen (numpy's rule);
/// else a sum. Acc is the accumulation type.
template <class Acc, bool Extreme> struct reducer {
  bool minimum = false;

  TALLY_HD_HOT Acc start() const {
    if constexpr (!Extreme) {
      return Acc{0};
    } else if constexpr (std::is_integral_v<Acc>) {
      using U = std::make_unsigned_t<Acc>;
      constexpr Acc lowest = std::is_signed_v<Acc> ? static_cast<Acc>(U{1} << (8 * sizeof(Acc) - 1)) : Acc{0};
      constexpr Acc highest = static_cast<Acc>(~lowest);
      return minimum ? highest : lowest;
    } else {
      return minimum ? static_cast<Acc>(INFINITY) : static_cast<Acc>(-INFINITY);
    }
  }
  TALLY_HD_HOT Acc operator()(Acc a, Acc b) const {
    if constexpr (!Extreme) {
      return a + b;
    } else {
      const bool take = minimum ? b < a : b > a;
      return (take || b != b) ? b : a;
    }
  }
};

}  // namespace tally::detail

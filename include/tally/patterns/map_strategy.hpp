// How a map (tally::transform, and the activations of tally/patterns/elementwise.hpp on the CUDA
// backend) reads and writes its arrays. CUDA-free header.
#pragma once

#include <cstdint>
#include <string_view>

namespace tally {

/// How the map reads and writes (the ladder of the seeds; automatic is packed128):
///  - scalar: one element per thread;
///  - x2, x4, x8: 2, 4 or 8 neighbouring elements per thread, one load each;
///  - packed128: 16-byte vector loads and stores (of the widest type; narrower types load
///    the same number of elements), two vectors per thread in flight. The aligned body only:
///    a scalar head reaches the first aligned output address, a scalar tail the end, and nothing
///    is ever loaded past n. Where the arrays' addresses differ modulo 16 bytes, elements
///    are loaded one by one instead. One block per 512 vectors;
///  - packed128_resident: the same on a grid capped at the blocks the device holds at once,
///    each striding over the array (fewer block launches; to compare at small sizes).
/// Every strategy gives the same bits; they differ only in speed.
enum class map_strategy : std::uint8_t { automatic, scalar, x2, x4, x8, packed128, packed128_resident };

inline std::string_view name_of(map_strategy s) {
  switch (s) {
    case map_strategy::automatic: return "automatic";
    case map_strategy::scalar: return "scalar";
    case map_strategy::x2: return "x2";
    case map_strategy::x4: return "x4";
    case map_strategy::x8: return "x8";
    case map_strategy::packed128: return "packed128";
    case map_strategy::packed128_resident: return "packed128_resident";
  }
  return "?";
}

}  // namespace tally

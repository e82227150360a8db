// Exact decoding of f16/bf16 bits and correctly rounded narrowing of doubles, host and device.
// (C math functions from the global namespace: CUDA device code has those, not std::.)
#pragma once

#include <math.h>
#include <string.h>

#include <cstdint>

#include "base/hd.hpp"
#include "tally/dtype.hpp"

namespace tally::detail {

/// A binary float format narrower than double: fraction bits, smallest normal exponent,
/// largest exponent.
struct float_format {
  int fraction_bits;
  int min_exponent;
  int max_exponent;
};
inline constexpr float_format f16_format{10, -14, 15};
inline constexpr float_format bf16_format{7, -126, 127};
inline constexpr float_format f32_format{23, -126, 127};

/// x rounded to the nearest value of `f` (ties to even), as a double; overflow gives +-inf.
/// Works by scaling x so that the format's quantum at x's exponent is 1 and rounding to an
/// integer with rint (round-to-nearest-even): exact, since all steps are powers of two.
TALLY_HD double round_to_format(double x, float_format f) {
  if (!(x == x) || x == 0.0 || x - x != 0.0) return x;
  int e = 0;
  ::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  int exponent = e - 1 < f.min_exponent ? f.min_exponent : e - 1;
  double quantum = ::ldexp(1.0, exponent - f.fraction_bits);
  double r = ::rint(x / quantum) * quantum;
  double max_finite = ::ldexp(2.0 - ::ldexp(1.0, -f.fraction_bits), f.max_exponent);
  if (::fabs(r) > max_finite) return ::copysign(HUGE_VAL, x);
  return r;
}

TALLY_HD double half_bits_to_double(std::uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  double magnitude;
  if (exponent == 0) {
    magnitude = ::ldexp(static_cast<double>(fraction), -24);
  } else if (exponent == 31) {
    magnitude = fraction ? NAN : HUGE_VAL;
  } else {
    magnitude = ::ldexp(static_cast<double>(fraction | 0x400), exponent - 25);
  }
  return (bits & 0x8000) ? -magnitude : magnitude;
}

TALLY_HD double bfloat16_bits_to_double(std::uint16_t bits) {
  std::uint32_t word = static_cast<std::uint32_t>(bits) << 16;
  float f;
  ::memcpy(&f, &word, sizeof f);
  return static_cast<double>(f);
}

}  // namespace tally::detail

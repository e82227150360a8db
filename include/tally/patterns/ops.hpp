// The activation functions as f32 functors, one formula for both backends: the CPU backend
// calls them on the host, the CUDA backend and tally::transform users on the device. CUDA-free:
// the functions are marked __host__ __device__ only when nvcc compiles them.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TALLY_OP_HD __host__ __device__ __forceinline__
#else
#define TALLY_OP_HD inline
#endif

namespace tally::ops {

namespace detail {

/// The sigmoid family's form f(x) = s * sigmoid(t): each such functor's args(x) gives t and s.
struct sigmoid_args {
  float t, s;
};

/// s * sigmoid(t) = s / (1 + e^-t) to about one ulp, with no overflow for any t. With
/// e^-|t| = 2^k (1 + p) (k <= 0 an integer, |p| < 0.42), the power of two stays exact and p
/// is found by Cody-Waite reduction and a degree-8 polynomial; the numerator s * (1 or e^-|t|)
/// and the denominator 1 + e^-|t| are each carried as a sum of two floats, and the
/// quotient's remainder (exact through fma) is folded back. Only +, -, *, /, fma and integer
/// bit operations: correctly rounded on every IEEE machine, so both backends give the same bits.
TALLY_OP_HD float scaled_sigmoid(float t, float s) {
  // e^a, a in [-200, 0] (FLT_MAX e^-200 < 2^-149); NaN stays NaN and makes the result NaN.
  const float a = fabsf(t) > 200.0f ? -200.0f : -fabsf(t);
  // k = a / ln 2 rounded to an integer, by adding 1.5 * 2^23: the sum's last bits are k (two's
  // complement), and subtracting the constant again leaves k exactly (cheaper than rintf + a
  // conversion, which the GPU runs at a quarter of the fma rate).
  constexpr float round_shift = 12582912.0f;  // 1.5 * 2^23
  const float shifted = fmaf(a, 1.44269504088896341f, round_shift);
  const float k = shifted - round_shift;
  float r = fmaf(k, -0.693145751953125f, a);  // ln 2's upper 16 bits: k * them is exact
  r = fmaf(k, -1.42860682030941723e-6f, r);   // ln 2's lower bits; |r| <= 0.35
  float q = 1.0f / 40320.0f;
  q = fmaf(q, r, 1.0f / 5040.0f);
  q = fmaf(q, r, 1.0f / 720.0f);
  q = fmaf(q, r, 1.0f / 120.0f);
  q = fmaf(q, r, 1.0f / 24.0f);
  q = fmaf(q, r, 1.0f / 6.0f);
  q = fmaf(q, r, 0.5f);
  const float p = fmaf(r * r, q, r);  // e^r - 1 (truncation below 2^-32)
  // 2^k and s 2^k: for k >= -126 (|t| below about 87, nearly always) 2^k is built from its
  // exponent bits and s 2^k is one multiplication by it, which rounds exactly as ldexpf does.
  std::int32_t k_bits;
  std::memcpy(&k_bits, &shifted, sizeof k_bits);
  const std::int32_t ki = k_bits - 0x4B400000;  // the bits of round_shift
  float e, se;
  if (ki >= -126) {
    const std::int32_t e_bits = (ki + 127) * (1 << 23);
    std::memcpy(&e, &e_bits, sizeof e);
    se = s * e;
  } else {
    e = ldexpf(1.0f, ki);  // 0 below 2^-149
    se = ldexpf(s, ki);    // s e, rounded once even where subnormal
  }
  const float ep = e * p;
  // 1 + e^-|t| = d + d_lo (two Fast2Sums: each larger term comes first).
  const float one_e = 1.0f + e;
  const float lo = (e - (one_e - 1.0f)) + ep;
  const float d = one_e + lo;
  const float d_lo = lo - (d - one_e);
  // s * sigmoid(|t|) = s / D; s * sigmoid(-|t|) = s e^-|t| / D.
  float n = s, n_lo = 0.0f;
  if (t < 0.0f) {
    const float sep = se * p;
    n = se + sep;
    n_lo = sep - (n - se);
  }
  // One correctly rounded reciprocal instead of two divisions (each costs as much on the GPU):
  // y within about an ulp, its remainder exact through fma, then corrected in one rounding.
  const float inv = 1.0f / d;
  const float y = n * inv;
  const float remainder = fmaf(-y, d, n) + (n_lo - y * d_lo);
  // The result has the sign of s, zeros included (a sum of an underflowed -0 and +0 gives +0).
  return copysignf(isfinite(y) ? fmaf(remainder, inv, y) : y, s);
}

TALLY_OP_HD float scaled_sigmoid(sigmoid_args a) { return scaled_sigmoid(a.t, a.s); }

/// 0.5 x erfc(z), z = -x / sqrt 2 rounded to f32 as gelu_erf rounds it, by one short formula: the
/// CUDA backend's fast path for 16-bit results (src/patterns/cuda/elementwise.cu states its error
/// bound; tests/patterns/patterns_test.cpp checks it on every f16 and bf16 input). With a = |z|:
/// erfc(a) = e^-a^2 r S(t), r = 1 / (a + 2), t = (a - 2) r in [-1, 1), S a degree-8 polynomial
/// fitted to erfcx(a) (a + 2) for a in [0, 9.5]; erfc(-a) = 2 - erfc(a). For e^-a^2, a^2 = q + q_lo
/// exactly (fma), 2^(-q log2 e) is taken at its f32 rounding u and multiplied by 1 + c for the
/// rest, c = (-q log2 e - u) ln 2 - q_lo (|c| < 2^-16: c^2 is negligible). ex2(u) = 2^u and
/// rcp(v) = 1 / v are passed in: the GPU's fast approximations, or exact ones on the host.
template <class Ex2, class Rcp> TALLY_OP_HD float gelu_erf_estimate(float x, Ex2 ex2, Rcp rcp) {
  constexpr float inv_sqrt2 = 0.70710678118654752f;
  constexpr float log2e = 1.44269504088896341f;
  constexpr float log2e_lo_ln2 = 1.33497582e-8f;  // (log2 e - log2e) ln 2
  constexpr float ln2 = 0.693147180559945309f;
  const float a = fabsf(x) * inv_sqrt2;  // |-x * inv_sqrt2|: rounding is symmetric
  const float q = a * a, q_lo = fmaf(a, a, -q);
  const float u = -q * log2e;
  const float c = fmaf(fmaf(-q, log2e, -u), ln2, fmaf(-q, log2e_lo_ln2, -q_lo));
  const float r = rcp(a + 2.0f);
  const float t = (a - 2.0f) * r;
  float p = -0x1.e26ea4p-12f;
  p = fmaf(p, t, -0x1.8a5a42p-11f);
  p = fmaf(p, t, 0x1.8680e4p-9f);
  p = fmaf(p, t, 0x1.a5c712p-8f);
  p = fmaf(p, t, -0x1.5ffe8ep-6f);
  p = fmaf(p, t, -0x1.2a799ep-5f);
  p = fmaf(p, t, 0x1.1e2d4ep-2f);
  p = fmaf(p, t, -0x1.5fd390p-1f);
  p = fmaf(p, t, 0x1.058672p+0f);
  float e = ex2(u);
  e = fmaf(e, c, e);
  const float w = e * r * p;  // erfc(a)
  const float h = 0.5f * x;
  return x > 0.0f ? fmaf(-h, w, x) : h * w;
}

}  // namespace detail

/// 1 / (1 + e^-x), within 1.5 ulp of the exact value over all f32 (tests/patterns/patterns_test.cpp
/// measures it); exactly 0 or 1 far out, never NaN for a number; NaN stays NaN.
struct sigmoid {
  static TALLY_OP_HD detail::sigmoid_args args(float x) { return {x, 1.0f}; }
  TALLY_OP_HD float operator()(float x) const { return detail::scaled_sigmoid(args(x)); }
};

/// max(x, 0); NaN stays NaN (as torch.relu).
struct relu {
  TALLY_OP_HD float operator()(float x) const { return x > 0.0f || x != x ? x : 0.0f; }
};

/// x * sigmoid(x) (also called swish).
struct silu {
  static TALLY_OP_HD detail::sigmoid_args args(float x) { return {x, x}; }
  TALLY_OP_HD float operator()(float x) const { return detail::scaled_sigmoid(args(x)); }
};

/// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as
/// x * sigmoid(2u), which equals it and does not cancel for negative x.
struct gelu_tanh {
  static TALLY_OP_HD detail::sigmoid_args args(float x) {
    constexpr float c1 = 1.5957691216057308f;  // 2 sqrt(2/pi)
    constexpr float c3 = 0.0713548162726009f;  // 2 sqrt(2/pi) * 0.044715
    return {x * (c1 + c3 * (x * x)), x};
  }
  TALLY_OP_HD float operator()(float x) const { return detail::scaled_sigmoid(args(x)); }
};

/// GELU, exact form: 0.5 x (1 + erf(x / sqrt 2)), computed as 0.5 x erfc(-x / sqrt 2), which
/// does not cancel for negative x.
struct gelu_erf {
  TALLY_OP_HD float operator()(float x) const {
    constexpr float inv_sqrt2 = 0.70710678118654752f;
    return 0.5f * x * erfcf(-x * inv_sqrt2);
  }
};

struct tanh {
  TALLY_OP_HD float operator()(float x) const { return tanhf(x); }
};

/// The binary operations of tally::binary, computed in f32 (f16 and bf16 results are then
/// rounded once, which gives the correctly rounded f16/bf16 result: f32 carries more than
/// twice their precision plus two bits).
struct add {
  TALLY_OP_HD float operator()(float a, float b) const { return a + b; }
};
struct sub {
  TALLY_OP_HD float operator()(float a, float b) const { return a - b; }
};
struct mul {
  TALLY_OP_HD float operator()(float a, float b) const { return a * b; }
};
struct div {
  TALLY_OP_HD float operator()(float a, float b) const { return a / b; }
};

}  // namespace tally::ops

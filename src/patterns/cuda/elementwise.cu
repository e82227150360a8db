// CUDA elementwise kernels: the activations through tally::transform (16-byte vectors on the
// aligned body; 16-bit results of the sigmoid family and gelu_erf by fast paths that round
// exactly as the accurate formula), and binary arithmetic with broadcasting over strided N-D arrays.
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "base/cuda_check.cuh"
#include "patterns/cuda/patterns.hpp"
#include "tally/patterns/ops.hpp"
#include "tally/patterns/transform.cuh"

namespace tally::detail::cuda {
namespace {

/// 2^u and 1/v by the special function unit: ex2.approx.ftz.f32 is documented within 2 ulp of
/// the correctly rounded result, rcp.approx.ftz.f32 within 1 ulp (PTX ISA; counted below as
/// 1 ulp from the correctly rounded result too); both flush subnormal results to zero.
__device__ __forceinline__ float ex2_approx(float u) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(u));
  return y;
}
__device__ __forceinline__ float rcp_approx(float v) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(v));
  return y;
}

/// a and b rounded to T (half or bfloat16) in one paired conversion: the word that stores both
/// (a in its low half).
template <class T> __device__ __forceinline__ std::uint32_t round_pair(float a, float b) {
  std::uint32_t both;
  if constexpr (std::is_same_v<T, half>) {
    const __half2 h = __floats2half2_rn(a, b);
    memcpy(&both, &h, sizeof both);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    memcpy(&both, &h, sizeof both);
  }
  return both;
}

/// min(a, b), NaN where either is NaN (min.NaN: one instruction where a compare and select
/// would take two).
__device__ __forceinline__ float min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

/// A 16-bit activation (T: half or bfloat16) from a cheap estimate y that is used where it
/// surely rounds to the T that the accurate result rounds to: Fast's bound E puts that result in
/// [y (1 - E), y (1 + E)], both ends round to the same T, and Fast::smallest <= |y| <= FLT_MAX
/// (NaN fails); otherwise Fast::accurate runs. Fast gives estimate(x) and accurate(x).
template <class T, class Fast> struct rounded_activation {
  static __device__ __forceinline__ bool in_range(float y) {
    if constexpr (Fast::smallest == 0.0f) return fabsf(y) <= FLT_MAX;  // NaN fails this alone
    else return (fabsf(y) >= Fast::smallest) & (fabsf(y) <= FLT_MAX);
  }
  /// One element (the scalar head and tail of tally::transform).
  __device__ float operator()(float x) const {
    const float y = Fast::estimate(x);
    const std::uint32_t ends = round_pair<T>(y * (1.0f - Fast::E), y * (1.0f + Fast::E));
    return (ends >> 16) == (ends & 0xffffu) && in_range(y) ? y : Fast::accurate(x);
  }
  /// A vector of N elements (tally::transform's packed body), two at a time: the lower ends of
  /// both in one paired conversion, the upper ends in another, and where all four agree and
  /// both estimates are in range (nearly always) the lower word is the two results, rounded
  /// as operator() gives them: no conversion of the output and one test per pair.
  template <int N> __device__ void map_vector(map::pack<T, N>& out, const map::pack<T, N>& in) const {
    static_assert(N % 2 == 0, "pairs of elements");
    std::uint32_t words[N / 2];
    memcpy(words, &in, sizeof words);
#pragma unroll
    for (int k = 0; k < N / 2; ++k) {
      float x0, x1;
      if constexpr (std::is_same_v<T, half>) {
        __half2 h;
        memcpy(&h, &words[k], sizeof h);
        x0 = __low2float(h);
        x1 = __high2float(h);
      } else {
        x0 = __uint_as_float(words[k] << 16);
        x1 = __uint_as_float(words[k] & 0xffff0000u);
      }
      const float y0 = Fast::estimate(x0), y1 = Fast::estimate(x1);
      const std::uint32_t lo = round_pair<T>(y0 * (1.0f - Fast::E), y1 * (1.0f - Fast::E));
      const std::uint32_t hi = round_pair<T>(y0 * (1.0f + Fast::E), y1 * (1.0f + Fast::E));
      std::uint32_t w = lo;
      // One branch for the pair (&, not &&: the terms are cheaper than a branch each).
      if (!((lo == hi) & in_range(y0) & in_range(y1))) {
        const std::uint32_t differ = lo ^ hi;
        if ((differ & 0xffffu) || !in_range(y0)) w = (w & 0xffff0000u) | map::narrow<T>(Fast::accurate(x0)).bits;
        if ((differ >> 16) || !in_range(y1))
          w = (w & 0xffffu) | static_cast<std::uint32_t>(map::narrow<T>(Fast::accurate(x1)).bits) << 16;
      }
      words[k] = w;
    }
    memcpy(&out, words, sizeof out);
  }
};

/// The sigmoid family's estimate (Op's s * sigmoid(t)) for results rounded to T (half or
/// bfloat16), by rounded_activation: the same T as the accurate ops::detail::scaled_sigmoid
/// rounded to T, for every t and s, in about a third of its work.
/// A cheap y (ex2 and rcp approximations) is within eps = 6 * 2^-23 of the exact value F:
/// ex2 2.5 ulp and its fma correction 0.5, 1 + e 0.5, rcp 1.5, the products 0.5 each (the
/// error of e counts once: its weight is 1 / (1 + e) for s e / (1 + e), e / (1 + e) for
/// s / (1 + e)). The argument u = -|t| log2 e is carried exactly as u_hi + u_lo, so it adds
/// nothing. The accurate result A is within delta = 2^-23 of F (a CPU test checks every f16
/// and bf16 input). With E = 9 * 2^-23 >= eps + delta + 2^-24 (the rounding of y (1 -+ E))
/// and 1.5 ulp of room, [y (1 - E), y (1 + E)] holds F and A: where both ends
/// round to the same T, A rounds to it too. Otherwise (for inputs uniform in (-4, 4): 0.2-0.4%
/// of f16 elements, 0.02-0.2% of bf16 ones), for y infinite or NaN, and for bf16 results below
/// 2^-125 (where the flushes to zero and subnormal products break the relative bound) the
/// accurate formula runs.
/// For f16 the flushes are harmless: a flushed e < 2^-126 leaves |y| < 65504 * 2^-126, which
/// rounds to a zero of the sign of s, as the accurate result does.
template <class T, class Op> struct sigmoid_family_fast {
  static constexpr float E = 9.0f * 0x1p-23f;
  static constexpr float smallest = std::is_same_v<T, half> ? 0.0f : 0x1p-125f;
  static __device__ __forceinline__ float estimate(float x) {
    constexpr float log2e = 1.44269504088896341f, log2e_lo = 1.925963033e-8f;  // log2 e - log2e
    constexpr float ln2 = 0.693147180559945309f;
    const ops::detail::sigmoid_args a = Op::args(x);
    const float m = min_nan(fabsf(a.t), 200.0f);  // as the accurate formula; NaN stays NaN
    // u = -m log2 e = u_hi + u_lo exactly, carried negated: v = -u_hi, v_lo = -u_lo.
    const float v = m * log2e;
    const float v_lo = fmaf(m, log2e_lo, fmaf(m, log2e, -v));
    float e = ex2_approx(-v);
    e = fmaf(e, v_lo * -ln2, e);  // 2^u_lo = 1 + u_lo ln 2 (|u_lo| < 2^-15: the square is below 2^-31)
    return (a.t < 0.0f ? a.s * e : a.s) * rcp_approx(1.0f + e);
  }
  static __device__ __forceinline__ float accurate(float x) { return ops::detail::scaled_sigmoid(Op::args(x)); }
};

/// gelu_erf's estimate 0.5 x erfc(-x / sqrt 2) for results rounded to T (half or bfloat16), by
/// rounded_activation: the same T as the accurate ops::gelu_erf rounded to T, for every x, in
/// about three quarters of its instructions. Its estimate y (ops::detail::gelu_erf_estimate,
/// with the ex2 and rcp approximations) is within
/// eps = 9.5 * 2^-23 of F = 0.5 x erfc(z), z = -x / sqrt 2 rounded to f32 as the accurate
/// formula rounds it: ex2 2.5 ulp and its fma correction 0.5; rcp 1.5 and the rounding of a + 2
/// 0.5, weighted by at most 1.63 (r scales the result and moves t), the rounding of a - 2 and of
/// t 1, weighted by at most 0.63 (|t S'(t) / S(t)|); S and its f32 evaluation 1.1; the three
/// products 0.5 each (for x > 0, x - h w, the error of w is weighted by w / (2 - w) <= 1). The
/// host model (exact 2^u and 1/v: 5.9 * 2^-23 by the same count) measures at most 2.4 * 2^-23 on
/// every f16 and bf16 input (tests/patterns/patterns_test.cpp). The accurate result A is within
/// delta = 4.5 * 2^-23 of F (erfcf: 4 ulp, CUDA's documented bound; the product 0.5). With
/// E = 15 * 2^-23 >= eps + delta + 2^-24 (the rounding of y (1 -+ E)), [y (1 - E), y (1 + E)]
/// holds F and A: where both ends round to the same T, A rounds to it too. Otherwise (for inputs
/// uniform in (-4, 4): about 0.5% of f16 elements, 0.02% of bf16 ones), for y infinite or NaN
/// (infinite inputs, bf16 ones beyond 2^64), and for bf16 results below 2^-122 (where erfc(z)
/// or a product may be subnormal and the relative bounds fail) the accurate formula runs.
/// For f16 the flushes are harmless: where ex2 flushes (a > 9.3), w = 0 gives y = x for x > 0
/// (off by less than 2^-126 relative) and y = -0 for x < 0, where F and A lie far below 2^-25 and
/// round to -0 too.
template <class T> struct gelu_erf_fast {
  static constexpr float E = 15.0f * 0x1p-23f;
  static constexpr float smallest = std::is_same_v<T, half> ? 0.0f : 0x1p-122f;
  static __device__ __forceinline__ float estimate(float x) {
    return ops::detail::gelu_erf_estimate(
        x, [](float u) { return ex2_approx(u); }, [](float v) { return rcp_approx(v); });
  }
  static __device__ __forceinline__ float accurate(float x) { return ops::gelu_erf{}(x); }
};

template <class Op, class = void> struct in_sigmoid_family : std::false_type {};
template <class Op>
struct in_sigmoid_family<Op, std::void_t<decltype(Op::args(0.0f))>> : std::true_type {};

/// Division by a fixed divisor d >= 1 as a multiplication (round-up method, 33-bit multiplier):
/// with l = ceil(log2 d) and M = ceil(2^(32 + l) / d) = 2^32 + mul, a / d = (a M) >> (32 + l)
/// = (umulhi(a, mul) + a) >> l for every a < 2^32 (M d - 2^(32 + l) < d <= 2^l). The sum stays
/// below 2^32 for a < 2^31, the only dividends it gets. Several times cheaper than a 32-bit `/`.
struct divisor {
  std::uint32_t mul = 0, shift = 0;
};
divisor divisor_of(std::int64_t d) {
  divisor r;
  if (d <= 0 || d >= (std::int64_t{1} << 31)) return r;  // never used: divide() takes 64 bits
  while ((std::int64_t{1} << r.shift) < d) ++r.shift;
  const std::uint64_t m = ((std::uint64_t{1} << (32 + r.shift)) + static_cast<std::uint64_t>(d) - 1) /
                          static_cast<std::uint64_t>(d);
  r.mul = static_cast<std::uint32_t>(m - (std::uint64_t{1} << 32));
  return r;
}

/// Quotient and remainder of a by b (fast: b's divisor), by multiplication where both are below
/// 2^31, else in 64 bits.
__device__ __forceinline__ std::int64_t divide(std::int64_t a, std::int64_t b, divisor fast, std::int64_t& remainder) {
  if (((a | b) >> 31) == 0) {
    const auto a32 = static_cast<std::uint32_t>(a);
    const std::uint32_t q = (__umulhi(a32, fast.mul) + a32) >> fast.shift;
    remainder = a - static_cast<std::int64_t>(q) * b;
    return q;
  }
  const std::int64_t q = a / b;
  remainder = a - q * b;
  return q;
}

struct binary_layout {
  int rank;
  std::int64_t shape[max_dims];
  std::int64_t a[max_dims], b[max_dims], out[max_dims];  // strides in elements
  divisor fast[max_dims];                                   // shape's
};

__device__ __forceinline__ float apply(binary_op op, float a, float b) {
  switch (op) {
    case binary_op::add: return ops::add{}(a, b);
    case binary_op::sub: return ops::sub{}(a, b);
    case binary_op::mul: return ops::mul{}(a, b);
    case binary_op::div: return ops::div{}(a, b);
  }
  return 0.0f;
}

/// Loads V neighbouring elements along the last dimension (stride 0: one element repeated;
/// vector: V at once, the host checked their alignment; else one by one).
template <int V, bool Vector, class T>
__device__ __forceinline__ void load_row(const T* p, std::int64_t stride, float (&v)[V]) {
  if (stride == 0) {
    const float x = map::widen(*p);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = x;
  } else if (Vector) {
    const auto pk = map::pack<T, V>::load(p);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = map::widen(pk.v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = map::widen(p[j * stride]);
  }
}

/// One unit is V neighbouring outputs of one row (the last dimension); each thread maps
/// kUnits units, blockDim.x apart: all their loads are issued before the first store, so that
/// they are in flight together (the pointers may alias in place, which rules out __restrict__).
/// The row's offsets are recomputed only when the row changes. Vector: V > 1 and the host
/// checked rows of a multiple of V elements, output and stride-1 inputs aligned to V elements.
template <int V, bool Vector, class A, class B, class O>
__global__ void __launch_bounds__(256) binary_kernel(binary_op op, binary_layout l, std::int64_t units,
                                                     const A* a, const B* b, O* out) {
  constexpr int kUnits = 4;
  const int last = l.rank - 1;
  const std::int64_t cols = l.shape[last];
  std::int64_t row = -1, oa = 0, ob = 0, oo = 0;
  for (std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x) * kUnits; first < units;
       first += static_cast<std::int64_t>(gridDim.x) * blockDim.x * kUnits) {
    float x[kUnits][V], y[kUnits][V];
    O* o[kUnits];
    int count = 0;  // units of this round that exist: a prefix, as u grows with k
#pragma unroll
    for (int k = 0; k < kUnits; ++k) {
      const std::int64_t u = first + k * blockDim.x + threadIdx.x;
      if (u >= units) break;
      std::int64_t col;
      const std::int64_t r = divide(u * V, cols, l.fast[last], col);
      if (r != row) {
        row = r;
        oa = ob = oo = 0;
        std::int64_t rest = r;
        for (int d = last - 1; d >= 0; --d) {
          std::int64_t i = rest;  // the outermost index is what is left (r < the rows)
          if (d > 0) rest = divide(rest, l.shape[d], l.fast[d], i);
          oa += i * l.a[d];
          ob += i * l.b[d];
          oo += i * l.out[d];
        }
      }
      load_row<V, Vector>(a + oa + col * l.a[last], l.a[last], x[k]);
      load_row<V, Vector>(b + ob + col * l.b[last], l.b[last], y[k]);
      o[k] = out + oo + col * l.out[last];
      count = k + 1;
    }
#pragma unroll
    for (int k = 0; k < kUnits; ++k) {
      if (k >= count) break;
      if (Vector) {
        map::pack<O, V> pk;
#pragma unroll
        for (int j = 0; j < V; ++j) pk.v[j] = map::narrow<O>(apply(op, x[k][j], y[k][j]));
        pk.store(o[k]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) o[k][j * l.out[last]] = map::narrow<O>(apply(op, x[k][j], y[k][j]));
      }
    }
  }
}

bool aligned_rows(const void* p, int rank, const std::int64_t* strides, std::size_t element, int v) {
  if (reinterpret_cast<std::uintptr_t>(p) % (element * v)) return false;
  for (int d = 0; d < rank - 1; ++d)
    if (strides[d] % v) return false;
  return true;
}

/// Calls f(std::integral_constant<map_strategy, S>{}) for the strategy S named by `s`.
template <class F> void with_map_strategy(map_strategy s, F&& f) {
  using S = map_strategy;
  switch (s) {
    case S::scalar: return f(std::integral_constant<S, S::scalar>{});
    case S::x2: return f(std::integral_constant<S, S::x2>{});
    case S::x4: return f(std::integral_constant<S, S::x4>{});
    case S::x8: return f(std::integral_constant<S, S::x8>{});
    case S::packed128: return f(std::integral_constant<S, S::packed128>{});
    case S::packed128_resident: return f(std::integral_constant<S, S::packed128_resident>{});
    case S::automatic: return f(std::integral_constant<S, S::automatic>{});
  }
}

}  // namespace

void launch_unary(const unary_job& job) {
  with_float_type(job.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_unary_op(job.op, [&](auto f) {
      using Op = decltype(f);
      auto* y = static_cast<T*>(job.y);
      const auto* x = static_cast<const T*>(job.x);
      with_map_strategy(job.strategy, [&](auto strategy) {
        constexpr map_strategy S = decltype(strategy)::value;
        if constexpr (!std::is_same_v<T, float> && in_sigmoid_family<Op>::value)
          tally::transform<S>(stream_of(job.run), job.n, y, rounded_activation<T, sigmoid_family_fast<T, Op>>{}, x);
        else if constexpr (!std::is_same_v<T, float> && std::is_same_v<Op, ops::gelu_erf>)
          tally::transform<S>(stream_of(job.run), job.n, y, rounded_activation<T, gelu_erf_fast<T>>{}, x);
        else
          tally::transform<S>(stream_of(job.run), job.n, y, f, x);
      });
    });
  });
}

void launch_binary(const binary_job& job) {
  binary_layout l{};
  l.rank = job.rank;
  for (int d = 0; d < job.rank; ++d) {
    l.shape[d] = job.shape[d];
    l.a[d] = job.a_strides[d];
    l.b[d] = job.b_strides[d];
    l.out[d] = job.out_strides[d];
    l.fast[d] = divisor_of(job.shape[d]);
  }
  const int last = job.rank - 1;
  constexpr int kVector = 4;
  // 4-element vectors where every row splits into them and each array is either repeated along
  // the row (stride 0) or contiguous and aligned along it.
  bool vector = job.shape[last] % kVector == 0 && l.out[last] == 1 &&
                aligned_rows(job.out, job.rank, l.out, size_of(job.out_type), kVector);
  for (auto [p, strides, type] : {std::tuple{job.a, l.a, job.a_type}, std::tuple{job.b, l.b, job.b_type}})
    vector = vector && (strides[last] == 0 || (strides[last] == 1 && aligned_rows(p, job.rank, strides, size_of(type), kVector)));
  const int v = vector ? kVector : 1;
  const std::int64_t units = job.n / v;
  const std::int64_t per_block = 256 * 4;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((units + per_block - 1) / per_block, 1 << 30));
  const cudaStream_t stream = stream_of(job.run);
  with_float_type(job.a_type, [&](auto ta) {
    with_float_type(job.b_type, [&](auto tb) {
      using A = typename decltype(ta)::type;
      using B = typename decltype(tb)::type;
      // The result type: the common type, or f32 for a mix (promote()).
      using O = std::conditional_t<std::is_same_v<A, B>, A, float>;
      const auto* a = static_cast<const A*>(job.a);
      const auto* b = static_cast<const B*>(job.b);
      auto* out = static_cast<O*>(job.out);
      if (vector) binary_kernel<kVector, true><<<blocks, 256, 0, stream>>>(job.op, l, units, a, b, out);
      else binary_kernel<1, false><<<blocks, 256, 0, stream>>>(job.op, l, units, a, b, out);
      TALLY_CUDA_CHECK(cudaGetLastError());
    });
  });
}

}  // namespace tally::detail::cuda

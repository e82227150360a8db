// The device side of tally's user-defined kernels (tally.ElementwiseKernel, ReductionKernel):
// NVRTC compiles this in front of every generated kernel. No #include: NVRTC has no standard
// library headers, so the 16-bit float types and the constants users write are defined here.

// 16-bit floats with one conversion, to float: arithmetic and comparisons on them happen in f32
// (as in CuPy), and assigning any number (=, +=, ...) rounds it once to nearest even.
struct tally_float16 {
  unsigned short bits;
  tally_float16() = default;
  __device__ tally_float16(float v) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v)); }
  __device__ tally_float16(double v) { asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(v)); }
  __device__ tally_float16(int v) : tally_float16(static_cast<double>(v)) {}
  __device__ tally_float16(unsigned v) : tally_float16(static_cast<double>(v)) {}
  __device__ tally_float16(long long v) : tally_float16(static_cast<double>(v)) {}
  __device__ tally_float16(unsigned long long v) : tally_float16(static_cast<double>(v)) {}
  template <class V> __device__ tally_float16& operator+=(const V& v) { return *this = tally_float16(static_cast<float>(*this) + v); }
  template <class V> __device__ tally_float16& operator-=(const V& v) { return *this = tally_float16(static_cast<float>(*this) - v); }
  template <class V> __device__ tally_float16& operator*=(const V& v) { return *this = tally_float16(static_cast<float>(*this) * v); }
  template <class V> __device__ tally_float16& operator/=(const V& v) { return *this = tally_float16(static_cast<float>(*this) / v); }
  __device__ operator float() const {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
  }
};

struct tally_bfloat16 {
  unsigned short bits;
  tally_bfloat16() = default;
  __device__ tally_bfloat16(float v) {
    const unsigned u = __float_as_uint(v);
    // NaN stays a (quiet) NaN; otherwise round the upper 16 bits to nearest even.
    bits = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<unsigned short>((u >> 16) | 0x40u)
                                            : static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  // f64 -> f32 rounded to odd, then to nearest even: one correct rounding (f32 has more than
  // twice bf16's precision plus two bits).
  __device__ tally_bfloat16(double v) {
    float f = __double2float_rz(v);
    if (static_cast<double>(f) != v && f == f) f = __uint_as_float(__float_as_uint(f) | 1u);
    *this = tally_bfloat16(f);
  }
  __device__ tally_bfloat16(int v) : tally_bfloat16(static_cast<double>(v)) {}
  __device__ tally_bfloat16(unsigned v) : tally_bfloat16(static_cast<double>(v)) {}
  __device__ tally_bfloat16(long long v) : tally_bfloat16(static_cast<double>(v)) {}
  __device__ tally_bfloat16(unsigned long long v) : tally_bfloat16(static_cast<double>(v)) {}
  template <class V> __device__ tally_bfloat16& operator+=(const V& v) { return *this = tally_bfloat16(static_cast<float>(*this) + v); }
  template <class V> __device__ tally_bfloat16& operator-=(const V& v) { return *this = tally_bfloat16(static_cast<float>(*this) - v); }
  template <class V> __device__ tally_bfloat16& operator*=(const V& v) { return *this = tally_bfloat16(static_cast<float>(*this) * v); }
  template <class V> __device__ tally_bfloat16& operator/=(const V& v) { return *this = tally_bfloat16(static_cast<float>(*this) / v); }
  __device__ operator float() const { return __uint_as_float(static_cast<unsigned>(bits) << 16); }
};

#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
#define CUDART_INF __longlong_as_double(0x7ff0000000000000LL)
#define CUDART_NAN __longlong_as_double(0x7fffffffffffffffLL)

namespace tally_rt {

constexpr int max_dims = 8;

/// The iteration space: `rank` dimensions of sizes dim[0..rank), C order, n elements. The host
/// packs it as 10 int64.
struct shape {
  long long rank, n, dim[max_dims];
};
/// An array's strides in elements over a shape's dimensions (0 along broadcast dimensions).
struct strides {
  long long s[max_dims];
};

/// `_ind`, `_in_ind`, `_out_ind` of a kernel: size() is the element count.
struct index {
  long long n;
  __device__ long long size() const { return n; }
};

/// A raw argument: a contiguous array the operation indexes itself, x[k], of x.size() elements.
template <class T> struct raw {
  T* p;
  long long n;
  __device__ T& operator[](long long k) const { return p[k]; }
  __device__ long long size() const { return n; }
};

/// The C-order coordinates c[0 .. rank) of element i of `sh` (int64 index math).
__device__ __forceinline__ void unravel(const shape& sh, long long i, long long (&c)[max_dims]) {
#pragma unroll
  for (int d = max_dims - 1; d > 0; --d) {
    if (d < sh.rank) {
      const long long q = i / sh.dim[d];
      c[d] = i - q * sh.dim[d];
      i = q;
    }
  }
  c[0] = i;
}

/// The offset, in elements, of coordinates c under `st`.
__device__ __forceinline__ long long dot(const shape& sh, const strides& st, const long long (&c)[max_dims]) {
  long long at = 0;
#pragma unroll
  for (int d = 0; d < max_dims; ++d)
    if (d < sh.rank) at += c[d] * st.s[d];
  return at;
}

/// N elements loaded or stored as one aligned vector.
template <class T, int N> struct alignas(sizeof(T) * N) pack {
  T v[N];
};

/// v from the lane `delta` above, for any value of at most 8 bytes (shuffled as 32-bit words).
template <class T> __device__ __forceinline__ T shfl_down(const T& v, int delta) {
  static_assert(sizeof(T) <= 8, "reduce types are at most 8 bytes");
  unsigned words[2] = {0u, 0u};
  memcpy(words, &v, sizeof(T));
  words[0] = __shfl_down_sync(0xffffffffu, words[0], delta);
  if (sizeof(T) > 4) words[1] = __shfl_down_sync(0xffffffffu, words[1], delta);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

/// The warp's fold of acc with `combine` (a fixed tree: the same bits on every run), in lane 0.
template <class T, class F> __device__ __forceinline__ T warp_fold(T acc, const F& combine) {
#pragma unroll
  for (int delta = 16; delta > 0; delta >>= 1) acc = combine(acc, shfl_down(acc, delta));
  return acc;
}

/// The block's fold (blockDim.x a multiple of 32, at most 1024), in thread 0. Every thread
/// calls it; `identity` fills the missing warps.
template <class T, class F> __device__ T block_fold(T acc, const F& combine, const T& identity) {
  __shared__ T warps[32];
  acc = warp_fold(acc, combine);
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) warps[warp] = acc;
  __syncthreads();
  if (warp == 0) acc = warp_fold(threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : identity, combine);
  __syncthreads();  // warps[] is reused by the next fold
  return acc;
}

}  // namespace tally_rt

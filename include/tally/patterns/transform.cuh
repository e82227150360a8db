// tally::transform: a parallel map of a user's device functor or lambda over one or more arrays,
// vectorized and tail-safe by the library. The one CUDA header of the public API (a template over
// device code needs nvcc): include it only from .cu files. The rest of tally is CUDA-free.
//
//   tally::transform(stream, n, y, [] __device__ (float v) { return v * v; }, x);
//
// Elements of tally::half and tally::bfloat16 reach the functor as float and its result is
// rounded once to the output type; other element types are passed as they are.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "tally/dtype.hpp"
#include "tally/error.hpp"
#include "tally/patterns/map_strategy.hpp"

namespace tally {

namespace detail::map {

/// What the functor sees of an element type: f32 for tally's 16-bit floats, else the type.
template <class T> struct compute_of { using type = T; };
template <> struct compute_of<half> { using type = float; };
template <> struct compute_of<bfloat16> { using type = float; };

template <class T> __device__ __forceinline__ typename compute_of<T>::type widen(T v) { return v; }
__device__ __forceinline__ float widen(half v) { return __half2float(__ushort_as_half(v.bits)); }
__device__ __forceinline__ float widen(bfloat16 v) { return __uint_as_float(static_cast<unsigned>(v.bits) << 16); }

template <class T, class V> __device__ __forceinline__ T narrow(V v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ half narrow<half, float>(float v) {
  return half{__half_as_ushort(__float2half_rn(v))};
}
template <> __device__ __forceinline__ bfloat16 narrow<bfloat16, float>(float v) {
  return bfloat16{__bfloat16_as_ushort(__float2bfloat16_rn(v))};
}

/// An unsigned integer type, or CUDA vector of them, of Bytes bytes (a power of two <= 16).
template <std::size_t Bytes> struct word_of;
template <> struct word_of<1> { using type = unsigned char; };
template <> struct word_of<2> { using type = unsigned short; };
template <> struct word_of<4> { using type = unsigned; };
template <> struct word_of<8> { using type = uint2; };
template <> struct word_of<16> { using type = uint4; };

/// Stores one word with one instruction. nvcc splits a plain assignment of an 8- or 16-byte
/// word into 4-byte stores where its parts come from branchy code (the activations' slow paths),
/// hence the vector store in PTX for those.
template <class W> __device__ __forceinline__ void store_word(W* p, W w) { *p = w; }
__device__ __forceinline__ void store_word(uint2* p, uint2 w) {
  asm("st.global.v2.u32 [%0], {%1, %2};" ::"l"(__cvta_generic_to_global(p)), "r"(w.x), "r"(w.y) : "memory");
}
__device__ __forceinline__ void store_word(uint4* p, uint4 w) {
  asm("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(__cvta_generic_to_global(p)), "r"(w.x), "r"(w.y), "r"(w.z),
      "r"(w.w)
      : "memory");
}

/// N elements loaded or stored as one aligned vector (N * sizeof(T) a power of two <= 16), moved
/// as one integer word (a copy of the struct itself may become one access per element).
template <class T, int N> struct alignas(N * sizeof(T)) pack {
  using word = typename word_of<N * sizeof(T)>::type;
  T v[N];
  static __device__ __forceinline__ pack load(const T* p) {
    const word w = *reinterpret_cast<const word*>(p);
    pack r;
    memcpy(&r, &w, sizeof r);
    return r;
  }
  __device__ __forceinline__ void store(T* p) const {
    word w;
    memcpy(&w, this, sizeof w);
    store_word(reinterpret_cast<word*>(p), w);
  }
};

/// A thread's Unroll vectors of one input.
template <class T, int Items, int Unroll> struct round_of {
  pack<T, Items> chunk[Unroll];
};

/// The launch shape of a strategy: Items elements per chunk, chunks loaded as vectors or not,
/// Unroll chunks per thread, the grid capped at the resident blocks or not.
template <map_strategy S, std::size_t Widest> struct shape_of {
  static constexpr bool packed =
      S == map_strategy::packed128 || S == map_strategy::packed128_resident || S == map_strategy::automatic;
  static constexpr bool resident = S == map_strategy::packed128_resident;
  static constexpr int items = packed ? static_cast<int>(16 / Widest)
                               : S == map_strategy::x2 ? 2
                               : S == map_strategy::x4 ? 4
                               : S == map_strategy::x8 ? 8
                                                       : 1;
  static constexpr int unroll = packed ? 2 : 1;
  static constexpr int threads = 256;
};

/// Whether F maps a whole vector itself, f.map_vector(pack<Out, Items>&, const pack<In, Items>&...),
/// on the packed body (the library's 16-bit activations pair their roundings so); each element
/// must come out as f of that element alone gives it.
template <class F, class Out, int Items, class Void, class... In> struct maps_vectors : std::false_type {};
template <class F, class Out, int Items, class... In>
struct maps_vectors<F, Out, Items,
                    std::void_t<decltype(std::declval<const F&>().map_vector(
                        std::declval<pack<Out, Items>&>(), std::declval<const pack<In, Items>&>()...))>,
                    In...> : std::true_type {};

template <class F, class Out, class... In>
__device__ __forceinline__ void map_one(std::int64_t i, const F& f, Out* out, const In*... in) {
  out[i] = narrow<Out>(f(widen(in[i])...));
}

/// Chunk c covers elements [head + c * Items, + Items). The head [0, head) and the tail after
/// the last whole chunk are mapped one element per thread by block 0. `vectors`: the chunks'
/// addresses are aligned for pack loads (else element loads; the branch is uniform).
template <int Items, bool Packed, int Unroll, class F, class Out, class... In>
__global__ void __launch_bounds__(256) map_kernel(std::int64_t n, std::int64_t head, std::int64_t chunks,
                                                  bool vectors, F f, Out* out, const In*... in) {
  const std::int64_t tail = head + chunks * Items;
  if (blockIdx.x == 0) {
    if (threadIdx.x < head) map_one(threadIdx.x, f, out, in...);
    if (tail + threadIdx.x < n) map_one(tail + threadIdx.x, f, out, in...);
  }
  const std::int64_t per_block = static_cast<std::int64_t>(blockDim.x) * Unroll;
  for (std::int64_t first = blockIdx.x * per_block; first < chunks; first += per_block * gridDim.x) {
    if constexpr (Packed) {
      if (vectors) {
        // Every vector of the round is loaded before the first store, so that all are in flight
        // together (in place this is still exact: each output chunk is its own input chunk).
        const auto load = [&](const auto* p) {
          using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
          round_of<T, Items, Unroll> r;
#pragma unroll
          for (int u = 0; u < Unroll; ++u) {
            const std::int64_t c = first + u * blockDim.x + threadIdx.x;
            if (c < chunks) r.chunk[u] = pack<T, Items>::load(p + head + c * Items);
          }
          return r;
        };
        [&](const auto&... r) {
#pragma unroll
          for (int u = 0; u < Unroll; ++u) {
            const std::int64_t c = first + u * blockDim.x + threadIdx.x;
            if (c >= chunks) break;
            pack<Out, Items> o;
            if constexpr (maps_vectors<F, Out, Items, void, In...>::value) {
              f.map_vector(o, r.chunk[u]...);
            } else {
#pragma unroll
              for (int j = 0; j < Items; ++j) o.v[j] = narrow<Out>(f(widen(r.chunk[u].v[j])...));
            }
            o.store(out + head + c * Items);
          }
        }(load(in)...);
        continue;
      }
    }
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::int64_t c = first + u * blockDim.x + threadIdx.x;
      if (c >= chunks) break;
#pragma unroll
      for (int j = 0; j < Items; ++j) map_one(head + c * Items + j, f, out, in...);
    }
  }
}

inline void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw error(std::string("tally::transform: CUDA error ") + cudaGetErrorString(status) + " in " + what);
}

template <class T> std::uintptr_t address(const T* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// The blocks of `threads` threads of `kernel` that the current device holds at once, asked of
/// the driver once per kernel and device (a launch would otherwise repeat three driver calls).
inline int resident_blocks(const void* kernel, int threads) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, int> known;  // (kernel, device) -> blocks
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::lock_guard<std::mutex> lock(mutex);
  int& blocks = known[{kernel, device}];
  if (blocks == 0) {
    int sms = 0, per_sm = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    blocks = std::max(1, sms * per_sm);
  }
  return blocks;
}

/// Throws unless every input is either the output itself (same address and type: in place) or
/// apart from it.
template <class Out, class In> void check_aliasing(const Out* out, const In* in, std::int64_t n) {
  if (static_cast<const void*>(out) == static_cast<const void*>(in) && sizeof(Out) == sizeof(In)) return;
  const std::uintptr_t o = address(out), i = address(in);
  if (o < i + n * sizeof(In) && i < o + n * sizeof(Out))
    throw error("tally::transform: the output overlaps an input without being the same array");
}

}  // namespace detail::map

/// out[i] = f(in[i]...) for i < n, enqueued on `stream` (nullptr: the default stream). Pointers
/// are device pointers aligned to their element types; out may be one of the inputs (in place:
/// same address and element size); any other overlap, a null pointer or n < 0 throws
/// tally::error before anything is launched. Returns without waiting for the device.
template <map_strategy S = map_strategy::automatic, class Out, class F, class... In>
void transform(cudaStream_t stream, std::int64_t n, Out* out, F f, const In*... in) {
  static_assert(sizeof...(In) >= 1, "tally::transform maps at least one input");
  if (n < 0) throw error("tally::transform: n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;
  if (!out || ((in == nullptr) || ...)) throw error("tally::transform: null pointer with n = " + std::to_string(n));
  if (detail::map::address(out) % alignof(Out) || ((detail::map::address(in) % alignof(In)) || ...))
    throw error("tally::transform: a pointer is not aligned to its element type");
  (detail::map::check_aliasing(out, in, n), ...);

  constexpr std::size_t widest = std::max({sizeof(Out), sizeof(In)...});
  using shape = detail::map::shape_of<S, widest>;
  constexpr int items = shape::items;
  std::int64_t head = 0;
  bool vectors = false;
  if constexpr (shape::packed) {
    static_assert(16 % widest == 0 && widest <= 16, "packed128 needs element sizes dividing 16 bytes");
    // Elements up to the output's first vector-aligned address; the inputs share that alignment
    // or fall back to element loads.
    constexpr std::uintptr_t out_align = items * sizeof(Out);
    head = std::min<std::int64_t>(n, static_cast<std::int64_t>((out_align - detail::map::address(out) % out_align) %
                                                               out_align / sizeof(Out)));
    vectors = ((detail::map::address(in + head) % (items * sizeof(In)) == 0) && ...);
  }
  const std::int64_t chunks = (n - head) / items;
  const std::int64_t per_block = static_cast<std::int64_t>(shape::threads) * shape::unroll;
  std::int64_t blocks = std::clamp<std::int64_t>((chunks + per_block - 1) / per_block, 1, 1 << 30);
  const auto kernel = detail::map::map_kernel<items, shape::packed, shape::unroll, F, Out, In...>;
  if constexpr (shape::resident) {
    // The kernel strides over the chunks: as many blocks as the current device holds at once.
    blocks = std::min<std::int64_t>(blocks, detail::map::resident_blocks(reinterpret_cast<const void*>(kernel),
                                                                        shape::threads));
  }
  kernel<<<static_cast<unsigned>(blocks), shape::threads, 0, stream>>>(n, head, chunks, vectors, f, out, in...);
  detail::map::check(cudaGetLastError(), "the map kernel's launch");
}

}  // namespace tally

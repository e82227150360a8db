// Exact weighted sums of f32 weights: each weight becomes a signed integer addition to one word of
// its cell's fixed-point sum (core/exact_sum.hpp), in a block's shared-memory copy of the words or
// straight in device memory. Integer additions commute, so the words, and the one correctly
// rounded conversion of each cell's words at the end, are the same on every run, grid and device.
#include "core/exact_sum.hpp"
#include "cuda/count_typed.cuh"

namespace tally::detail::cuda {
namespace {

// A run ends once its sum's magnitude reaches 2^45: a term is below 2^39, so a sum stays below
// 2^45 + 2^39 < 2^46, three 16-bit digits (below 2^47 for add_exact_at_digit).
constexpr double kRunLimit = 0x1p45;
constexpr int kEpochSamples = 88;  // samples per thread between drains of the shared digits
// A run's end adds its sum v (|v| < 2^46) to three counters as digits v mod 2^16, v / 2^16 mod
// 2^16 and the signed v >> 32 (above -2^14). So a counter takes at most one addition in
// [-2^14, 2^16) per sample, and up to 4 more per thread (the head, the tail and the last two
// runs), between drains: its sum S lies in [-2^30, 3 x 2^30), so that its 32 bits say which S.
constexpr std::int64_t kEpochAdditions = std::int64_t{kExactThreads} * (kEpochSamples + 4);
static_assert(kEpochAdditions << 14 <= (std::int64_t{1} << 30) && kEpochAdditions << 16 < (std::int64_t{3} << 30),
              "a drain must come before a counter's sum leaves [-2^30, 3 x 2^30)");
/// A drained counter's sum.
__device__ __forceinline__ std::int64_t counter_sum(unsigned bits) {
  return bits >= (3u << 30) ? std::int64_t{bits} - (std::int64_t{1} << 32) : std::int64_t{bits};
}
static_assert(kEpochSamples % 4 == 0 && kEpochSamples % kUnroll == 0, "rounds end exactly at an epoch's end");

/// Samples of the generic kernels: any type, stride and number of axes.
struct any_samples {
  device_axes axes;
  __device__ __forceinline__ std::int64_t slot(std::int64_t i, std::int64_t cells) const {
    return slot_of(axes, i, cells);
  }
};

/// One contiguous column of T, with the typed kernels' binner for it.
template <class T, class Binner> struct column_samples {
  using type = T;
  const T* x;
  Binner binner;
  __device__ __forceinline__ std::int64_t slot(std::int64_t i, std::int64_t cells) const {
    return slot_for(binner, __ldg(x + i), cells);
  }
};
template <class S> struct is_column : std::false_type {};
template <class T, class B> struct is_column<column_samples<T, B>> : std::true_type {};

/// Four samples of T in one load.
template <int Bytes> struct load_of;
template <> struct load_of<4> { using type = unsigned; };
template <> struct load_of<8> { using type = uint2; };
template <> struct load_of<16> { using type = uint4; };

/// A thread's pending sum of terms at one digit of one cell: key = cell x 16 + digit (the planner
/// keeps cells below 2^27). An empty run is a sum of nothing at cell 0, digit 0. The sum is an
/// integer below 2^46 in an f64: every partial sum is an integer below 2^53, so each addition is
/// exact, and one DADD replaces a 64-bit integer addition's two instructions.
struct run {
  int key = 0;
  double value = 0;
};

/// A finite f32 weight (w, with its bits) as a term at its 16-bit digit d = s / 16 (exact_term_of_finite's):
/// the weight, an integer m times 2^(s - 149), times 2^(149 - 16 d) is m << (s mod 16), exact in an
/// f64. A conversion and a multiplication by a power of two built from d: half the integer
/// shifts, selects and negation.
__device__ __forceinline__ int term_of(float w, unsigned bits, double& value) {
  const unsigned e = (bits >> 23) & 0xFFu;
  const unsigned s = e ? e - 1 : 0;  // subnormals share the smallest normal's scale
  // 2^(149 - 16 d): the f64 exponent field 1023 + 149 - 16 d in the high word.
  value = static_cast<double>(w) * __hiloint2double(static_cast<int>((1172u - (s & ~15u)) << 20), 0);
  return static_cast<int>(s >> 4);
}

/// Copies Bytes (4, 8 or 16) from global to shared memory asynchronously, in the thread's open group.
template <int Bytes> __device__ __forceinline__ void copy_async(void* to, const void* from) {
  const auto at = static_cast<unsigned>(__cvta_generic_to_shared(to));
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(at), "l"(from) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(at), "l"(from), "n"(Bytes) : "memory");
  }
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/// Waits until at most Pending of the thread's groups are still in flight.
template <int Pending> __device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}

/// Adds d to the 32-bit shared counter at address `at`, with no returned value.
__device__ __forceinline__ void red_shared(unsigned at, unsigned d) {
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(at), "r"(d) : "memory");
}

/// Grid-stride over the samples: a group of four samples and four weights a round where the column
/// and the weights line up (through the ring where a.staged), else kUnroll samples a round, one
/// load each. A thread keeps two runs, the one last added to first: a term at the digit of either
/// adds to it in a register, any other ends the older run (a hot bin's run, up to a sum of kRunLimit,
/// costs one end unless two other keys come between its samples; ending the shorter run
/// instead diverged, PERFORMANCE.md 23).
/// InShared: a block's copy of each cell's sum (kExactCellCounters per cell, core/exact_sum.hpp),
/// so that a run's end is three reductions, one per digit, without a returned value or a carry;
/// every kEpochSamples samples per thread the block drains them into the device words. Else the
/// runs add to the device words directly.
template <class Samples, bool InShared>
__global__ void __launch_bounds__(kExactThreads, 2) exact_sums_kernel(Samples samples, exact_sums_args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int cells = static_cast<int>(a.cells);
  auto* digits = reinterpret_cast<unsigned*>(smem);  // InShared: cells x kExactCellCounters
  const int counters = InShared ? cells * kExactCellCounters : 0;
  if constexpr (InShared) {
    for (int k = threadIdx.x; k < counters; k += blockDim.x) digits[k] = 0;
    __syncthreads();
  }
  const auto flags_of = [&](int cell) { return InShared ? digits + cell * kExactCellCounters + kExactDigits : a.flags + cell; };
  const auto base = static_cast<unsigned>(__cvta_generic_to_shared(digits));

  // A run's sum (|value| < 2^46) added at its digit.
  const auto emit = [&](const run& r) {
    const int cell = r.key >> 4, digit = r.key & 15;
    const auto value = static_cast<std::int64_t>(r.value);  // exact: an integer
    if constexpr (InShared) {
      const auto low = static_cast<unsigned>(value);
      const unsigned at = base + 4u * static_cast<unsigned>(cell * kExactCellCounters + digit);
      // Three reductions whatever the digits: a branch around each costs more than adding 0.
      red_shared(at, low & 0xFFFFu);
      red_shared(at + 4, low >> 16);
      red_shared(at + 8, static_cast<unsigned>(value >> 32));  // signed, two's complement
    } else if (value) {
      add_exact_at_digit(a.words + static_cast<std::int64_t>(cell) * kExactWords, digit, value, atomic_fetch_add{});
    }
  };
  // Each counter's sum, added to the device words (below 2^46 at a digit), then zeroed.
  const auto drain = [&] {
    if constexpr (InShared) {
      __syncthreads();
      for (int k = threadIdx.x; k < counters; k += blockDim.x) {
        const int cell = k / kExactCellCounters, j = k - cell * kExactCellCounters;
        const unsigned d = digits[k];
        if (!d || j == kExactDigits) continue;  // the flags stay to the end
        digits[k] = 0;
        add_exact_at_digit(a.words + cell * kExactWords, j, counter_sum(d), atomic_fetch_add{});
      }
      __syncthreads();
    }
  };

  // Per-thread flow counts: a thread takes fewer than 2^32 samples.
  unsigned under = 0, over = 0, nan = 0;
  run newer, older;
  // s: the sample's slot, below cells + 3.
  const auto take = [&](auto s, float w) {
    const unsigned bits = __float_as_uint(w);
    if (s >= cells || (bits & 0x7F800000u) == 0x7F800000u) {  // one branch for both rare cases
      if (s < cells) {
        atomicOr(flags_of(static_cast<int>(s)), exact_flag_of(bits));
      } else {
        under += s == cells;
        over += s == cells + 1;
        nan += s == cells + 2;
      }
      return;
    }
    double term;
    const int key = static_cast<int>(s) * 16 + term_of(w, bits, term);
    if (key == newer.key) {
      newer.value += term;
    } else if (key == older.key) {
      const run hit{key, older.value + term};
      older = newer;
      newer = hit;
    } else {
      emit(older);
      older = newer;
      newer = run{key, term};
    }
    if (fabs(newer.value) >= kRunLimit) {
      emit(newer);
      newer = run{};
    }
  };

  const bool aligned = reinterpret_cast<std::uintptr_t>(a.weights) % alignof(float) == 0;
  const auto weight = [&](std::int64_t i) -> float {
    if (!a.weights) return 1.0f;
    const char* p = a.weights + i * a.weight_stride_bytes;
    return aligned ? __ldg(reinterpret_cast<const float*>(p)) : load_unaligned<float>(p);
  };
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = blockIdx.x * static_cast<std::int64_t>(blockDim.x);
  int since_drain = 0;  // the same in every thread of the block: rounds are block-uniform
  const auto round_done = [&](int samples_per_thread) {
    since_drain += samples_per_thread;
    if (since_drain >= kEpochSamples) {
      drain();
      since_drain = 0;
    }
  };
  // Every sample, one per load.
  const auto one_by_one = [&] {
    const std::int64_t hi = a.n;
    for (std::int64_t round = first; round < hi; round += stride * kUnroll) {
      std::int64_t s[kUnroll];
      float w[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::int64_t i = round + threadIdx.x + u * stride;
        s[u] = i < hi ? samples.slot(i, cells) : -1;
        w[u] = i < hi ? weight(i) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (s[u] >= 0) take(s[u], w[u]);
      round_done(kUnroll);
    }
  };

  bool done = false;
  if constexpr (is_column<Samples>::value) {
    // Groups of four samples and four weights, each one load, where the weights are unit-stride
    // and 16-byte aligned where the samples' group is aligned to its size (or there are none).
    using T = typename Samples::type;
    using load_t = typename load_of<4 * sizeof(T)>::type;
    const auto xa = reinterpret_cast<std::uintptr_t>(samples.x), wa = reinterpret_cast<std::uintptr_t>(a.weights);
    constexpr std::uintptr_t group = 4 * sizeof(T);
    std::int64_t head = a.weights ? static_cast<std::int64_t>((16 - wa % 16) % 16 / 4)
                                  : static_cast<std::int64_t>((group - xa % group) % group / sizeof(T));
    const bool grouped = (!a.weights || (a.weight_stride_bytes == 4 && wa % 4 == 0)) &&
                         (xa + head * sizeof(T)) % group == 0;
    if (grouped) {
      head = head < a.n ? head : a.n;
      const std::int64_t groups = (a.n - head) / 4, tail = head + 4 * groups;
      const auto* xs = reinterpret_cast<const load_t*>(samples.x + head);
      const auto* ws = reinterpret_cast<const float4*>(a.weights + head * 4);
      // The ring (a.staged, core/exact_sum.hpp): kExactStages slots of every thread's x, then as
      // many of its weights; thread t's part of a slot is its t-th entry. Else each round loads its
      // group itself.
      constexpr unsigned w_slots = kExactStages * sizeof(load_t) * kExactThreads;  // a multiple of 16
      unsigned char* ring = smem + exact_ring_offset(std::int64_t{counters} * 4);
      auto* ring_x = reinterpret_cast<load_t*>(ring) + threadIdx.x;
      auto* ring_w = reinterpret_cast<float4*>(ring + w_slots) + threadIdx.x;
      const auto issue = [&](std::int64_t g, int k) {
        if (g < groups) {
          copy_async<sizeof(load_t)>(ring_x + k * kExactThreads, xs + g);
          if (a.weights) copy_async<16>(ring_w + k * kExactThreads, ws + g);
        }
        commit_async();
      };
      if (a.staged)
        for (int k = 0; k < kExactStages - 1; ++k) issue(first + threadIdx.x + k * stride, k);
      int k = 0;  // the ring's slot of this round
      for (std::int64_t round = first; round < groups; round += stride) {
        const std::int64_t g = round + threadIdx.x;
        load_t x{};
        float4 w = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
        if (a.staged) {
          // The slot read last round refills kExactStages - 1 rounds ahead; this round's has landed.
          issue(g + (kExactStages - 1) * stride, k == 0 ? kExactStages - 1 : k - 1);
          wait_async<kExactStages - 1>();
          if (g < groups) {
            x = ring_x[k * kExactThreads];
            if (a.weights) w = ring_w[k * kExactThreads];
          }
          k = k == kExactStages - 1 ? 0 : k + 1;
        } else if (g < groups) {
          x = __ldg(xs + g);
          if (a.weights) w = __ldg(ws + g);
        }
        if (g < groups) {
          T v[4];
          memcpy(v, &x, sizeof v);
          take(slot_for(samples.binner, v[0], cells), w.x);
          take(slot_for(samples.binner, v[1], cells), w.y);
          take(slot_for(samples.binner, v[2], cells), w.z);
          take(slot_for(samples.binner, v[3], cells), w.w);
        }
        round_done(4);
      }
      // The head and the tail: fewer than four samples each.
      const std::int64_t t = first + threadIdx.x;
      if (t < head) take(samples.slot(t, cells), weight(t));
      if (t < a.n - tail) take(samples.slot(tail + t, cells), weight(tail + t));
      done = true;
    }
  }
  if (!done) one_by_one();
  emit(newer);
  emit(older);

  add_warp_flow(under, over, nan, a.flow);
  if constexpr (InShared) {
    drain();
    for (int c = threadIdx.x; c < cells; c += blockDim.x)
      if (*flags_of(c)) atomicOr(a.flags + c, *flags_of(c));
  }
}

__global__ void finish_exact_kernel(const std::uint64_t* words, const unsigned* flags, std::int64_t cells,
                                    double* sums) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < cells; c += stride)
    sums[c] += exact_value(words + c * kExactWords, flags[c]);
}

template <class Samples> void launch_exact(const Samples& samples, const exact_sums_args& a, const launch_shape& shape) {
  if (a.in_shared) launch_resident(&exact_sums_kernel<Samples, true>, shape, samples, a);
  else launch_resident(&exact_sums_kernel<Samples, false>, shape, samples, a);
}

}  // namespace

void sum_exact(const device_axes& axes, bool column, const exact_sums_args& exact_args, const launch_shape& shape) {
  exact_sums_args args = exact_args;
  const std::int64_t words = args.in_shared ? exact_words_bytes(args.cells) : 0;
  args.staged = static_cast<std::int64_t>(shape.shared_bytes) >= exact_ring_offset(words) + kExactRingBytes;
  if (column && axes.count == 1) {
    // The typed loop where a 32-bit rule applies (integers within the sample type, f32 samples);
    // every other column takes the generic one.
    const device_axis& axis = axes.axis[0];
    bool launched = false;
    with_typed_binner<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, float>(
        axis.type, axis, [&](auto tag, const auto& binner) {
          using T = typename decltype(tag)::type;
          using B = std::decay_t<decltype(binner)>;
          if constexpr (gives_slots<B>::value || std::is_same_v<B, variable32_binner>) {
            launch_exact(column_samples<T, B>{reinterpret_cast<const T*>(axis.data), binner}, args, shape);
            launched = true;
          }
        });
    if (launched) return;
  }
  launch_exact(any_samples{axes}, args, shape);
}

void finish_exact(const exact_sums_args& args, double* sums, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((args.cells + 255) / 256, 4096));
  finish_exact_kernel<<<blocks, 256, 0, stream>>>(args.words, args.flags, args.cells, sums);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

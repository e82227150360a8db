// Exact sums of f32 weights on the GPU: each weight becomes a signed integer addition to one word
// of its cell's fixed-point sum (core/exact_sum.hpp), in a block's shared-memory copy of the words
// or straight in device memory; the partitioned form first sorts (cell, weight) pairs by bucket.
// Integer additions commute, so the words, and the one correctly rounded conversion of each cell's
// words at the end, are the same on every run, grid and device. The wide words of f64 weights'
// exact sums are exact_wide.cu's.
#include "core/exact_sum.hpp"
#include "cuda/count_typed.cuh"
#include "cuda/sums_common.cuh"

namespace tally::detail::cuda {
namespace {

// A run ends once its sum's magnitude reaches 2^45: a term is below 2^39, so a sum stays below
// 2^45 + 2^39 < 2^46, three 16-bit digits (below 2^47 for add_exact_at_digit).
constexpr double kRunLimit = 0x1p45;
constexpr int kEpochSamples = 88;  // samples per thread between drains of the shared digits
// A run's end adds its sum v (|v| < 2^46) to three counters as digits v mod 2^16, v / 2^16 mod
// 2^16 and the signed v >> 32 (above -2^14). So a counter takes at most one addition in
// [-2^14, 2^16) per sample, and up to 4 more per thread (the head, the tail and the last two
// runs; or the two runs that end before the window moves), between drains: its sum S lies in
// [-2^30, 3 x 2^30), so that its 32 bits say which S.
constexpr std::int64_t kEpochAdditions = std::int64_t{kExactThreads} * (kEpochSamples + 4);
static_assert(kEpochAdditions << 14 <= (std::int64_t{1} << 30) && kEpochAdditions << 16 < (std::int64_t{3} << 30),
              "a drain must come before a counter's sum leaves [-2^30, 3 x 2^30)");
/// A drained counter's sum.
__device__ __forceinline__ std::int64_t counter_sum(unsigned bits) {
  return bits >= (3u << 30) ? std::int64_t{bits} - (std::int64_t{1} << 32) : std::int64_t{bits};
}
static_assert(kEpochSamples % 4 == 0 && kEpochSamples % kUnroll == 0, "rounds end exactly at an epoch's end");

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

/// 2^(149 - 16 d), the scale of digit d's terms, given 16 d: the f64 exponent field 1023 + 149 - 16 d
/// in the high word.
__device__ __forceinline__ double digit_scale(unsigned sixteen_d) {
  return __hiloint2double(static_cast<int>((1172u - sixteen_d) << 20), 0);
}

/// A finite f32 weight (w, with its bits) as a term at its 16-bit digit d = s / 16 (exact_term_of_finite's):
/// the weight, an integer m times 2^(s - 149), times 2^(149 - 16 d) is m << (s mod 16), exact in an
/// f64. A conversion and a multiplication by a power of two built from d: half the integer
/// shifts, selects and negation.
__device__ __forceinline__ int term_of(float w, unsigned bits, double& value) {
  const unsigned e = (bits >> 23) & 0xFFu;
  const unsigned s = e ? e - 1 : 0;  // subnormals share the smallest normal's scale
  value = static_cast<double>(w) * digit_scale(s & ~15u);
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

/// The digit of a term of a finite f32 weight (given as its bits), -1 for a zero or non-finite one.
__device__ __forceinline__ int digit_of_weight(unsigned bits) {
  return exact_flag_of(bits) || !(bits & 0x7FFFFFFFu) ? -1 : exact_term_of_finite(bits).digit;
}

/// The highest window's lowest digit: its runs reach digit 13 (weights below 2^98), and a
/// non-finite weight's scale (254) lies above every window's (digit_window::offset).
constexpr int kHighestWindow = 10;
static_assert(254 - 16 * kHighestWindow > 4 * 16 - 1, "a non-finite weight falls outside every window");
static_assert(kHighestWindow + kExactWindowDigits <= kExactDigits, "the highest window's digits are the cell's");

/// The lowest window (its lowest digit, even) whose runs reach digit d, or the highest window.
__device__ __forceinline__ int window_reaching(int d) {
  const int lo = (max(d - (kExactWindowDigits - 3), 0) + 1) & ~1;
  return min(lo, kHighestWindow);
}

/// A thread's two runs, the one last added to first: a term at the digit of either adds to it in a
/// register, any other ends the older run (a hot bin's run, up to a sum of kRunLimit, costs one
/// end unless two other keys come between its samples; ending the shorter run instead diverged;
/// bench/PERFORMANCE.md, "Exact sums of weights"). emit(run) adds an ended run's sum.
struct run_pair {
  run newer, older;
  template <class Emit> __device__ __forceinline__ void add(int key, double term, const Emit& emit) {
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
  }
  /// Ends both runs, and leaves them empty.
  template <class Emit> __device__ __forceinline__ void finish(const Emit& emit) {
    emit(newer);
    emit(older);
    newer = older = run{};
  }
};

/// Adds a run outside a block's window (absolute digits) to the device words of its block's cells,
/// and returns an empty run.
__device__ __forceinline__ run end_outside_run(const run& out, std::uint64_t* words) {
  if (const auto value = static_cast<std::int64_t>(out.value))
    add_exact_at_digit(words + static_cast<std::int64_t>(out.key >> 4) * kExactWords, out.key & 15, value,
                       atomic_fetch_add{});
  return run{};
}

/// A finite weight (w, with its bits) of `cell` whose term lies outside the window from digit lo:
/// it joins the thread's outside run `out` (a hot cell's terms add to the device words once a run),
/// and counts in the epoch's record by side; returns the run after it. Not inlined: the rare path
/// stays out of the hot loop's code (inlined at each sample of an unrolled round it doubled the
/// kernel).
__device__ __noinline__ run outside_term(run out, int cell, float w, unsigned bits, int lo, std::uint64_t* words,
                                         exact_window_epoch* e) {
  double term;
  const int digit = term_of(w, bits, term);
  if (term == 0) return out;  // a zero weight
  const int at = cell * 16 + digit;
  if (at != out.key) out = end_outside_run(out, words);
  out.key = at;
  out.value += term;
  if (fabs(out.value) >= kRunLimit) out = end_outside_run(out, words);
  if (digit > lo) {  // above (digits lo .. lo + 3 are inside)
    atomicAdd(&e->above, 1);
    atomicMax(&e->highest_above, digit);
  } else if (digit < lo) {
    atomicAdd(&e->below, 1);
    atomicMax(&e->highest_below, digit);
  }
  return out;
}

/// An epoch's record before any term fell outside the window.
constexpr exact_window_epoch kEmptyEpoch{0, 0, -1, -1};

/// A block's copy of its cells' sums (core/exact_sum.hpp): for each cell, the counters of the
/// window's digits lo .. lo + kExactWindowDigits - 1 and the cell's flags. A term inside the window
/// joins the thread's runs, keyed by its cell and its digit less lo (key), and a run's end is three
/// shared reductions, one per 16-bit digit, without a returned value or a carry (emit). A term
/// outside it joins the thread's one outside run, which adds to the device words (outside). Every
/// thread keeps the same lo: the block picks it from its first weights (start) and moves it at a
/// drain after an epoch in which more than half of its samples fell on one side of it.
struct digit_window {
  unsigned* counters;         // shared: cells x kExactCellCounters
  std::uint64_t* words;       // the device words of the cells (counters' cell 0 first)
  exact_window_stats* stats;  // shared
  unsigned at = 0;             // counters' shared-memory address, for emit's reductions
  int lo = 0;
  unsigned base = 1;  // 16 lo + 1: offset()'s
  int epoch = 0;  // the same in every thread: drains are block-uniform
  run out;                      // the thread's run of terms outside the window (absolute digits)

  /// Every thread: zeroes the counters of `cells` cells and the record, and picks the window that
  /// holds the most of one weight per thread (`probe`: its bits), the lowest of equals (so that
  /// one outlier does not move it); the window of 1.0's digit where every probed weight is zero or
  /// not finite.
  __device__ __forceinline__ void start(int cells, unsigned probe) {
    at = static_cast<unsigned>(__cvta_generic_to_shared(counters));
    for (int k = threadIdx.x; k < cells * kExactCellCounters; k += blockDim.x) counters[k] = 0;
    if (threadIdx.x < 2) stats->epoch[threadIdx.x] = kEmptyEpoch;
    if (threadIdx.x < 16) stats->probes[threadIdx.x] = 0;
    __syncthreads();
    const int d = digit_of_weight(probe);
    if (d >= 0) atomicAdd(&stats->probes[d], 1);
    __syncthreads();
    int best = window_reaching(7), most = 0;
    for (int from = 0; from <= kHighestWindow; from += 2) {
      int held = 0;
      for (int k = from; k < from + kExactWindowDigits - 2 && k < 16; ++k) held += stats->probes[k];
      if (held > most) {
        most = held;
        best = from;
      }
    }
    set(best);
  }

  __device__ __forceinline__ void set(int from) {
    lo = from;
    base = 16u * static_cast<unsigned>(from) + 1u;
  }

  /// The term scale of a weight with exponent field e (term_of's s) less 16 lo: below 64 exactly
  /// where a finite weight's term lies inside the window (digits lo .. lo + 3; a non-finite
  /// weight's is not, kHighestWindow), and then t >> 4 is its digit less lo, which with cell x 16
  /// makes its run key. Two instructions on the hot path where digits and compares took seven.
  __device__ __forceinline__ unsigned offset(unsigned e) const { return max(e, 1u) - base; }
  static constexpr unsigned kInside = 16 * (kExactWindowDigits - 2);

  /// term_of's value of a weight w whose offset t lies inside the window: its digit d is lo + t / 16
  /// (s = t + 16 lo), so 16 d = 16 lo + (t & ~15) = base - 1 + (t & ~15).
  __device__ __forceinline__ double term(float w, unsigned t) const {
    return static_cast<double>(w) * digit_scale(base - 1 + (t & ~15u));
  }

  /// A run's sum (|value| < 2^46) inside the window.
  __device__ __forceinline__ void emit(const run& r) const {
    const auto value = static_cast<std::int64_t>(r.value);  // exact: an integer
    const auto low = static_cast<unsigned>(value);
    const unsigned to = at + 4u * static_cast<unsigned>((r.key >> 4) * kExactCellCounters + (r.key & 15));
    // Three reductions whatever the digits: a branch around each costs more than adding 0.
    red_shared(to, low & 0xFFFFu);
    red_shared(to + 4, low >> 16);
    red_shared(to + 8, static_cast<unsigned>(value >> 32));  // signed, two's complement
  }

  /// Adds the outside run to the device words and empties it.
  __device__ __forceinline__ void flush() { out = end_outside_run(out, words); }

  /// A finite weight (w, with its bits) of `cell` whose term lies outside the window: it joins the
  /// outside run and is counted by side (outside_term).
  __device__ __forceinline__ void outside(int cell, float w, unsigned bits) {
    out = outside_term(out, cell, w, bits, lo, words, &stats->epoch[epoch & 1]);
  }

  /// Every thread: adds the counters of `cells` cells to the device words, a word's two digits'
  /// sums as one value (below 2^48), and zeroes them (the flags stay). Where more than half of the
  /// epoch's `samples` fell outside the window on one side, the window moves to reach their highest
  /// digit: first the thread's `runs` end in the old one (their keys are its digits).
  __device__ __forceinline__ void drain(int cells, int samples, run_pair& runs) {
    __syncthreads();
    const exact_window_epoch e = stats->epoch[epoch & 1];
    const int next = 2 * e.above > samples   ? window_reaching(e.highest_above)
                     : 2 * e.below > samples ? window_reaching(e.highest_below)
                                             : lo;
    if (next != lo) {  // the same in every thread
      runs.finish([&](const run& r) { emit(r); });
      __syncthreads();
    }
    // The next epoch's record was last read in the drain before this one, which every thread has left.
    if (threadIdx.x == 0) stats->epoch[(epoch + 1) & 1] = kEmptyEpoch;
    for (int k = threadIdx.x; k < cells * kExactWindowWords; k += blockDim.x) {
      const int cell = k / kExactWindowWords, word = k - cell * kExactWindowWords;
      unsigned* pair = counters + cell * kExactCellCounters + 2 * word;
      const unsigned low = pair[0], high = pair[1];
      if (!(low | high)) continue;
      pair[0] = 0;
      pair[1] = 0;
      add_exact(words + static_cast<std::int64_t>(cell) * kExactWords, lo / 2 + word,
                counter_sum(low) + counter_sum(high) * 65536, atomic_fetch_add{});
    }
    set(next);
    ++epoch;
    __syncthreads();
  }
};

/// Weight i of a fill's f32 weights (none: every weight is 1); `aligned`: they are 4-byte aligned.
__device__ __forceinline__ float weight_at(const exact_sums_args& a, bool aligned, std::int64_t i) {
  if (!a.weights) return 1.0f;
  const char* p = a.weights + i * a.weight_stride_bytes;
  return aligned ? __ldg(reinterpret_cast<const float*>(p)) : load_unaligned<float>(p);
}

/// Grid-stride over the samples: a group of four samples and four weights a round where the column
/// and the weights line up (through the ring where a.staged), else kUnroll samples a round, one
/// load each. A thread keeps two runs (run_pair).
/// InShared: a block's copy of each cell's sum (kExactCellCounters per cell, core/exact_sum.hpp),
/// so that a run's end is three reductions, one per digit, without a returned value or a carry;
/// every kEpochSamples samples per thread the block drains them into the device words. Else the
/// runs add to the device words directly.
template <class Samples, bool InShared>
__global__ void __launch_bounds__(kExactThreads, 2) exact_sums_kernel(Samples samples, exact_sums_args a) {
  // Its own name: count_typed.cuh's kernels declare `smem` 16-byte aligned, and one symbol has
  // one alignment; the ring needs 128.
  extern __shared__ __align__(128) unsigned char exact_smem[];
  unsigned char* const smem = exact_smem;
  const int cells = static_cast<int>(a.cells);
  const bool aligned = reinterpret_cast<std::uintptr_t>(a.weights) % alignof(float) == 0;
  const auto weight = [&](std::int64_t i) { return weight_at(a, aligned, i); };
  // InShared: the record of the window, then the counters (core/exact_sum.hpp).
  digit_window window{reinterpret_cast<unsigned*>(smem + kExactStatsBytes), a.words,
                      reinterpret_cast<exact_window_stats*>(smem)};
  if constexpr (InShared) {
    // Each thread probes a weight near its first (thread t's first group starts at about 4t).
    const std::int64_t probe = 4 * (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x);
    window.start(cells, a.n ? __float_as_uint(weight(probe < a.n ? probe : a.n - 1)) : 0u);
  }
  const auto flags_of = [&](int cell) {
    return InShared ? window.counters + cell * kExactCellCounters + kExactWindowDigits : a.flags + cell;
  };

  // A run's sum (|value| < 2^46) added at its digit (inside the window where InShared).
  const auto emit = [&](const run& r) {
    if constexpr (InShared) {
      window.emit(r);
    } else if (const auto value = static_cast<std::int64_t>(r.value)) {  // exact: an integer
      add_exact_at_digit(a.words + static_cast<std::int64_t>(r.key >> 4) * kExactWords, r.key & 15, value,
                         atomic_fetch_add{});
    }
  };
  // Per-thread flow counts: a thread takes fewer than 2^32 samples.
  unsigned under = 0, over = 0, nan = 0;
  run_pair runs;
  // Each counter's sum, added to the device words, then zeroed.
  const auto drain = [&] {
    if constexpr (InShared) window.drain(cells, kEpochSamples * kExactThreads, runs);
  };
  // s: the sample's slot, below cells + 3.
  const auto take = [&](auto s, float w) {
    const unsigned bits = __float_as_uint(w);
    const unsigned e = (bits >> 23) & 0xFFu;
    const unsigned t = InShared ? window.offset(e) : 0;
    // One branch for the rare cases: a sample no cell takes, a non-finite weight, a term outside
    // the window (InShared: the window's test takes the non-finite weights too).
    if (s >= cells || (InShared ? t >= digit_window::kInside : e == 0xFFu)) {
      if constexpr (InShared) {
        if (s < cells && e != 0xFFu) {
          if (bits << 1) window.outside(static_cast<int>(s), w, bits);  // a zero adds nothing
          return;
        }
      }
      if (s < cells) {
        atomicOr(flags_of(static_cast<int>(s)), exact_flag_of(bits));
      } else {
        under += s == cells;
        over += s == cells + 1;
        nan += s == cells + 2;
      }
      return;
    }
    if constexpr (InShared) {
      runs.add(static_cast<int>(s) * 16 + static_cast<int>(t >> 4), window.term(w, t), emit);
    } else {
      double term;
      const int digit = term_of(w, bits, term);
      runs.add(static_cast<int>(s) * 16 + digit, term, emit);
    }
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
      unsigned char* ring = smem + exact_ring_offset(InShared ? exact_shared_bytes(cells) : 0);
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
  runs.finish(emit);
  if constexpr (InShared) window.flush();

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

/// N floats from p (aligned to min(16, 4 N) bytes), in as few loads as that allows.
template <int N> __device__ __forceinline__ void load_floats(const char* p, float* to) {
  if constexpr (N == 2) {
    const float2 f = __ldg(reinterpret_cast<const float2*>(p));
    to[0] = f.x;
    to[1] = f.y;
  } else {
#pragma unroll
    for (int k = 0; k < N / 4; ++k) {
      const float4 f = __ldg(reinterpret_cast<const float4*>(p) + k);
      to[4 * k] = f.x;
      to[4 * k + 1] = f.y;
      to[4 * k + 2] = f.z;
      to[4 * k + 3] = f.w;
    }
  }
}

/// The partitioned exact sums' first pass: each block sorts tiles of (cell, weight) pairs by bucket,
/// cell >> bits (sort_tiles), the cells' low bits into sorted.entries and the weights into
/// a.weights at the same places. A block keeps its buckets' totals and its flow counts in shared
/// memory and adds them to device memory once, at the end (up to 1024 buckets a tile). Samples that
/// no cell takes are counted and sorted past every bucket; a non-finite weight is sorted with its
/// cell, for the summing pass to flag. The head and tail are added to the device words directly.
template <class T, class Binner>
__global__ void __launch_bounds__(kTypedThreads, 2) exact_sort_kernel(Binner binner, exact_sort_args a) {
  constexpr int per_vector = 16 / sizeof(T);
  extern __shared__ __align__(16) unsigned char smem[];
  const partition_scratch& out = a.sorted;
  const int buckets = out.buckets;
  auto* sorted = reinterpret_cast<unsigned short*>(smem);                         // the cells' low bits
  auto* sorted_weights = reinterpret_cast<float*>(smem + kPartitionTile * 2);     // beside them
  auto* counts = reinterpret_cast<unsigned*>(sorted_weights + kPartitionTile);    // buckets + 1
  unsigned* starts = counts + buckets + 1;                                        // buckets + 1
  unsigned* totals = starts + buckets + 1;                                        // buckets
  unsigned* flow = totals + buckets;  // underflow, overflow, NaN: rare, so not in registers
  for (int k = threadIdx.x; k <= buckets; k += blockDim.x) counts[k] = 0;
  for (int k = threadIdx.x; k < buckets + 3; k += blockDim.x) totals[k] = 0;

  const exact_sums_args& e = a.sums;
  const int cells = static_cast<int>(e.cells);
  const int past = buckets << out.bits;  // the sort key of a pair that takes no bucket
  const T* x = static_cast<const T*>(a.data);
  const column_body split = body_of(reinterpret_cast<std::uintptr_t>(x), e.n, sizeof(T));
  const std::int64_t tail = split.head + split.vectors * per_vector;
  const bool aligned = reinterpret_cast<std::uintptr_t>(e.weights) % alignof(float) == 0;
  // Each vector's weights in whole loads where they are unit-stride and line up with the samples.
  constexpr std::uintptr_t weight_group = 4 * per_vector < 16 ? 4 * per_vector : 16;
  const bool grouped = e.weights && e.weight_stride_bytes == 4 &&
                       (reinterpret_cast<std::uintptr_t>(e.weights) + split.head * 4) % weight_group == 0;
  const char* body_weights = e.weights ? e.weights + split.head * e.weight_stride_bytes : nullptr;
  // Body vector i's weights (a vector past the body's end: zeros).
  struct vector_weights {
    float w[per_vector];
  };
  const auto load_weights = [&](std::int64_t i) {
    vector_weights v;
    if (i < split.vectors && grouped) {
      load_floats<per_vector>(body_weights + i * per_vector * 4, v.w);
    } else {
#pragma unroll
      for (int j = 0; j < per_vector; ++j)
        v.w[j] = i < split.vectors ? weight_at(e, aligned, split.head + i * per_vector + j) : 0.0f;
    }
    return v;
  };
  // The pair's sort key, from its sample alone: its cell, or `past` for a sample that no cell
  // takes (counted). The summing pass flags the non-finite weights.
  const auto key_of = [&](int s) {
    if (s < cells) return s;
    atomicAdd(flow + (s - cells), 1u);
    return past;
  };
  // The head and the tail: straight into the device words.
  const auto add_direct = [&](std::int64_t i) {
    const int s = key_of(slot_for<int>(binner, x[i], cells));
    if (s == past) return;
    const exact_term term = exact_term_of(weight_at(e, aligned, i));
    if (term.flag) atomicOr(e.flags + s, term.flag);
    else add_exact_at_digit(e.words + static_cast<std::int64_t>(s) * kExactWords, term.digit, term.value, atomic_fetch_add{});
  };
  // A body vector's weights, asked of L2 while its tile is ranked: place() reads them, so that they
  // take no registers across the ranks and barriers.
  const auto prefetch_weights = [&](std::int64_t i) {
    if (i < split.vectors && grouped)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(body_weights + i * per_vector * 4));
    return no_extra{};
  };
  const std::int64_t tid = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  __syncthreads();  // the counts and totals zeroed
  if (tid < split.head) add_direct(tid);
  if (tid < e.n - tail) add_direct(tail + tid);

  const int mask = (1 << out.bits) - 1;
  sort_tiles<T, no_extra>(
      reinterpret_cast<const uint4*>(x + split.head), split.vectors, out, counts, starts, prefetch_weights,
      [&](int, T v, no_extra) { return key_of(slot_for<int>(binner, v, cells)); },
      [&](int k, unsigned c) { totals[k] += c; },
      // The weights, from L2 where they were prefetched.
      [&](std::int64_t i, const unsigned* at, const int* keys) {
        const vector_weights w = load_weights(i);
#pragma unroll
        for (int j = 0; j < per_vector; ++j) {
          sorted[at[j]] = static_cast<unsigned short>(keys[j] & mask);
          sorted_weights[at[j]] = w.w[j];
        }
      },
      // A sorted tile's cells' low bits, then its weights, out in 16-byte stores.
      [&](std::int64_t tile, unsigned count, unsigned from) {
        auto* to = reinterpret_cast<uint4*>(out.entries + tile * kPartitionTile);
        auto* to_weights = reinterpret_cast<uint4*>(a.weights + tile * kPartitionTile);
        const unsigned words = (count + 7) / 8, weight_words = (count + 3) / 4;
        for (unsigned k = threadIdx.x - from; k < words + weight_words; k += blockDim.x - from) {
          if (k < words) to[k] = reinterpret_cast<const uint4*>(sorted)[k];
          else to_weights[k - words] = reinterpret_cast<const uint4*>(sorted_weights)[k - words];
        }
      });
  for (int k = threadIdx.x; k < buckets; k += blockDim.x)
    if (totals[k]) atomicAdd(&out.totals[k], totals[k]);
  if (threadIdx.x < 3 && flow[threadIdx.x]) atomicAdd(e.flow + threadIdx.x, static_cast<unsigned long long>(flow[threadIdx.x]));
}

/// The exclusive prefix sum of v over the block's threads, and the block's sum in `total`;
/// `sums`: 33 shared ints. Every thread takes part (blockDim.x a multiple of 32, at most 1024).
__device__ __forceinline__ int block_exclusive_sum(int v, int* sums, int& total) {
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int inclusive = warp_inclusive_sum(v);
  __syncthreads();  // the last call's sums are read
  if (lane == 31) sums[warp] = inclusive;
  __syncthreads();
  if (threadIdx.x < 32) {
    const int mine = lane < static_cast<int>(blockDim.x / 32) ? sums[lane] : 0;
    const int before = warp_inclusive_sum(mine);
    sums[lane] = before - mine;
    if (lane == 31) sums[32] = before;
  }
  __syncthreads();
  total = sums[32];
  return sums[warp] + inclusive - v;
}

/// The partitioned exact sums' second pass. A block finds its bucket and its share of the bucket's
/// tiles from the totals (partition_blocks_for; blocks are numbered bucket by bucket), adds the
/// share's pairs into its shared copy of the bucket's words as exact_sums_kernel does (two runs a
/// thread, three reductions a run's end, a drain every kEpochSamples pairs a thread), then drains
/// into the device words. A round takes blockDim tiles: thread i reads tile i's range of the bucket,
/// a scan numbers their groups of four pairs (8 bytes of cells, 16 of weights), and the threads take
/// the groups in turn, so that a range may hold none or all of its tile's pairs.
__global__ void __launch_bounds__(kExactThreads, 2) exact_partition_sum_kernel(exact_partition_sum_args a) {
  static_assert(sizeof(partition_sum_tables::first_group) / sizeof(int) == kExactThreads, "a table entry per thread");
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ partition_sum_tables tables;
  const partition_scratch& in = a.sorted;
  for (int k = threadIdx.x; k < in.buckets; k += blockDim.x) tables.totals[k] = in.totals[k];
  if (threadIdx.x == 0) tables.mine[0] = -1;
  if (blockIdx.x == 0)
    for (int k = threadIdx.x; k < in.buckets; k += blockDim.x) a.next_totals[k] = 0;
  __syncthreads();
  // Thread i's buckets, 2i and 2i + 1 (kPartitionExactMaxBuckets = 2 x kExactThreads): their blocks.
  static_assert(kPartitionExactMaxBuckets == 2 * kExactThreads, "two buckets a thread");
  const int k0 = 2 * static_cast<int>(threadIdx.x), k1 = k0 + 1;
  const unsigned t0 = k0 < in.buckets ? tables.totals[k0] : 0, t1 = k1 < in.buckets ? tables.totals[k1] : 0;
  int samples = 0;
  block_exclusive_sum(static_cast<int>(t0 + t1), tables.warp_sums, samples);  // below 2^31: a pass
  const unsigned b0 = partition_blocks_for(static_cast<double>(t0) / samples, a.blocks);
  const unsigned b1 = partition_blocks_for(static_cast<double>(t1) / samples, a.blocks);
  int parts = 0;
  const auto before = static_cast<unsigned>(block_exclusive_sum(static_cast<int>(b0 + b1), tables.warp_sums, parts));
  if (blockIdx.x >= before && blockIdx.x < before + b0) {
    tables.mine[0] = k0;
    tables.mine[1] = static_cast<int>(blockIdx.x - before);
    tables.mine[2] = static_cast<int>(b0);
  } else if (blockIdx.x >= before + b0 && blockIdx.x < before + b0 + b1) {
    tables.mine[0] = k1;
    tables.mine[1] = static_cast<int>(blockIdx.x - before - b0);
    tables.mine[2] = static_cast<int>(b1);
  }
  __syncthreads();
  const int bucket = tables.mine[0];
  if (bucket < 0) return;  // more blocks were launched than the buckets take
  const std::int64_t first_cell = static_cast<std::int64_t>(bucket) << in.bits;
  const int width = static_cast<int>(min(std::int64_t{1} << in.bits, a.cells - first_cell));
  const std::int64_t part = tables.mine[1], share = tables.mine[2];
  const std::int64_t tile_lo = part * a.tiles / share, tile_hi = (part + 1) * a.tiles / share;
  const unsigned short* starts = in.offsets + bucket * in.tile_stride;
  const unsigned short* ends = starts + in.tile_stride;
  // The window from the bucket's pairs in the share's first tile (none: 1.0's digit).
  unsigned probe = 0;
  if (tile_lo < tile_hi && ends[tile_lo] > starts[tile_lo]) {
    const int last = ends[tile_lo] - starts[tile_lo] - 1;
    probe = __float_as_uint(a.weights[tile_lo * kPartitionTile + starts[tile_lo] + min(static_cast<int>(threadIdx.x), last)]);
  }
  digit_window window{reinterpret_cast<unsigned*>(smem), a.words + first_cell * kExactWords, &tables.window};
  window.start(width, probe);
  run_pair runs;
  const auto emit = [&](const run& r) { window.emit(r); };
  unsigned* const flags = a.flags + first_cell;
  const auto take = [&](int cell, float w) {
    const unsigned bits = __float_as_uint(w), e = (bits >> 23) & 0xFFu;
    const unsigned t = window.offset(e);
    if (t >= digit_window::kInside) {  // outside the window, or not finite (kHighestWindow)
      if (e == 0xFFu) atomicOr(flags + cell, exact_flag_of(bits));
      else if (bits << 1) window.outside(cell, w, bits);  // a zero adds nothing
      return;
    }
    runs.add(cell * 16 + static_cast<int>(t >> 4), window.term(w, t), emit);
  };
  // Group f of a round: its cells and weights, loaded, and which of its four pairs are the tile's
  // (bit j for pair j).
  struct group {
    uint2 cells;
    float4 weights;
    unsigned mine = 0;
  };
  const unsigned short* round_entries = nullptr;  // the round's first tile's pairs
  const float* round_weights = nullptr;
  const auto fetch = [&](int f) {
    // The last tile whose groups start at or before f holds it.
    int owner = 0;
#pragma unroll
    for (int step = kExactThreads / 2; step; step /= 2)
      if (tables.first_group[owner + step] <= f) owner += step;
    const unsigned range = tables.range[owner];
    const int owner_lo = static_cast<int>(range & 0xFFFFu), owner_hi = static_cast<int>(range >> 16);
    const int pair = 4 * (owner_lo / 4 + (f - tables.first_group[owner]));
    static_assert(kExactThreads * kPartitionTile <= INT32_MAX, "a round's pairs have int places");
    const int at = owner * static_cast<int>(kPartitionTile) + pair;  // in the round's tiles
    group g;
    g.cells = __ldg(reinterpret_cast<const uint2*>(round_entries + at));
    g.weights = __ldg(reinterpret_cast<const float4*>(round_weights + at));
    g.mine = (0xFu << max(owner_lo - pair, 0)) & (0xFu >> max(4 - (owner_hi - pair), 0));
    return g;
  };
  // A tile's range of the bucket, lo | hi << 16 (past the share: empty), loaded a round ahead.
  const auto range_of = [&](std::int64_t t) {
    return t < tile_hi ? static_cast<unsigned>(starts[t]) | static_cast<unsigned>(ends[t]) << 16 : 0u;
  };
  unsigned next_range = range_of(tile_lo + threadIdx.x);
  int since_drain = 0;  // the same in every thread: rounds are block-uniform
  for (std::int64_t round = tile_lo; round < tile_hi; round += blockDim.x) {
    const unsigned range = next_range;
    next_range = range_of(round + blockDim.x + threadIdx.x);
    const unsigned lo = range & 0xFFFFu, hi = range >> 16;
    const int groups = hi > lo ? static_cast<int>((hi + 3) / 4 - lo / 4) : 0;
    int total = 0;
    const int first = block_exclusive_sum(groups, tables.warp_sums, total);  // also: the last round's tables read
    tables.first_group[threadIdx.x] = first;
    tables.range[threadIdx.x] = range;
    round_entries = in.entries + round * kPartitionTile;
    round_weights = a.weights + round * kPartitionTile;
    __syncthreads();
    // Each thread takes groups threadIdx.x, + blockDim.x, ...: the next one's loads are in flight
    // while it adds this one's pairs.
    group now;
    if (static_cast<int>(threadIdx.x) < total) now = fetch(static_cast<int>(threadIdx.x));
    for (int from = 0; from < total; from += blockDim.x) {
      const int f = from + static_cast<int>(blockDim.x + threadIdx.x);
      group next;
      if (f < total) next = fetch(f);
      unsigned short cell[4];
      memcpy(cell, &now.cells, sizeof cell);
      const float weight[4] = {now.weights.x, now.weights.y, now.weights.z, now.weights.w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (now.mine >> j & 1u) take(cell[j], weight[j]);
      now = next;
      since_drain += 4;
      if (since_drain >= kEpochSamples) {
        window.drain(width, kEpochSamples * kExactThreads, runs);
        since_drain = 0;
      }
    }
  }
  runs.finish(emit);
  window.flush();
  window.drain(width, kEpochSamples * kExactThreads, runs);
}

template <class Samples> void launch_exact(const Samples& samples, const exact_sums_args& a, const launch_shape& shape) {
  if (a.in_shared) launch_resident(&exact_sums_kernel<Samples, true>, shape, samples, a);
  else launch_resident(&exact_sums_kernel<Samples, false>, shape, samples, a);
}

}  // namespace

void sum_exact(const device_axes& axes, bool column, const exact_sums_args& exact_args, const launch_shape& shape) {
  exact_sums_args args = exact_args;
  const std::int64_t copy = args.in_shared ? exact_shared_bytes(args.cells) : 0;
  args.staged = static_cast<std::int64_t>(shape.shared_bytes) >= exact_ring_offset(copy) + kExactRingBytes;
  if (column && with_column_samples(axes, [&](const auto& samples) { launch_exact(samples, args, shape); })) return;
  launch_exact(any_samples{axes}, args, shape);
}

void finish_exact(const exact_sums_args& args, double* sums, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((args.cells + 255) / 256, 4096));
  finish_exact_kernel<<<blocks, 256, 0, stream>>>(args.words, args.flags, args.cells, sums);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void sort_exact_partitions(const device_axis& column, const exact_sort_args& args, const launch_shape& shape) {
  const bool launched = with_typed_binner<std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, std::uint64_t,
                                          std::int64_t, float, double>(
      column.type, column, [&](auto tag, const auto& binner) {
        using T = typename decltype(tag)::type;
        launch_resident(&exact_sort_kernel<T, std::decay_t<decltype(binner)>>, shape, binner, args);
      });
  if (!launched) throw error("sort_exact_partitions: no kernel for " + std::string(name_of(column.type)) + " samples");
}

void sum_exact_partitions(const exact_partition_sum_args& args, cudaStream_t stream) {
  const std::size_t shared = static_cast<std::size_t>(exact_words_bytes(std::int64_t{1} << args.sorted.bits));
  allow_shared(reinterpret_cast<const void*>(exact_partition_sum_kernel), shared);
  // Each bucket with pairs takes at most one block beyond its share of args.blocks.
  const unsigned grid = static_cast<unsigned>(args.blocks + args.sorted.buckets);
  exact_partition_sum_kernel<<<grid, kExactThreads, shared, stream>>>(args);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::detail::cuda

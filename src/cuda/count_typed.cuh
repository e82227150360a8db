// The typed count kernel: one contiguous column of T, 16-byte loads on the aligned body and
// scalar loads for the head and tail, the shared bin rule per sample (or a 32-bit form of it
// chosen at launch), counted where count_mode says: 2^shift interleaved shared-memory copies
// (lane l uses copy l mod 2^shift), device memory, a cluster's shared memory, registers, or
// 16-bit shared counters. Included by the translation units that instantiate it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "cuda/clusters.cuh"

#include "core/partition.hpp"
#include "cuda/kernels.hpp"

namespace tally::detail::cuda {

using detail::kPartitionTile;

constexpr int kTypedThreads = 512;
constexpr int kUnroll = 4;  // 16-byte loads in flight per thread before counting

/// The lowest value of an 8-bit type: the value table's slot s holds the value s + value_lo<T>.
template <class T> constexpr int value_lo = std::is_signed_v<T> ? -128 : 0;

/// The value table's slot of an 8-bit sample: its value less the type's lowest (never dropped;
/// the fold applies the axis' rule to each of the 256 values once).
struct value_binner {
  int lo;
  template <class T> __device__ __forceinline__ int operator()(T v) const { return static_cast<int>(v) - lo; }
};

/// The value table of C interleaved channels (C = 2, 3, 4): sample i of value v counts in
/// slot (v - lo) + 256 * channel_of(i), so channel c's values fill slots [256 c, 256 c + 256).
/// `phase` is the channel of the launch's first sample; channels from `counted` on (those no
/// histogram takes, as RGBA's alpha for three) are not counted.
template <int C> struct channel_value_binner {
  int lo;
  int phase;
  int counted;
  template <class T> __device__ __forceinline__ int operator()(T v) const { return static_cast<int>(v) - lo; }
  __device__ __forceinline__ int channel_of(std::int64_t index) const { return static_cast<int>((index + phase) % C); }
};

/// integer_rule in 32-bit arithmetic, for integer samples of at most 32 bits on an axis that lies
/// within the sample type (lo >= its min, lo + bins - 1 <= its max, bins < 2^32): v - lo of a
/// v >= lo is then exact modulo 2^32. launch_typed chooses it where it applies; the kernels see
/// one more binner. i32 256 bins: the 64-bit rule took ~20 instructions per sample of the ~35
/// the loop issued (SASS), which made the loop issue-bound near 2450 GB/s.
/// `Closed`: the last bin also holds lo + bins (integer_rule::closed), which is then a T; a
/// type of its own, so that open rules (every C++ integer axis) keep the two-comparison form.
template <class T, bool Closed = false> struct narrow_integer_binner {
  T lo;
  std::uint32_t bins;
  /// The slot itself (cells + 0 underflow, cells + 1 overflow; integers have no NaN).
  template <class S> __device__ __forceinline__ S slot(T v, S cells) const {
    const std::uint32_t d = static_cast<std::uint32_t>(v) - static_cast<std::uint32_t>(lo);
    if constexpr (Closed) {
      // lo + bins is a T, so no v < lo wraps to d <= bins.
      return d <= bins ? static_cast<S>(min(d, bins - 1)) : cells + (v < lo ? 0 : 1);
    } else {
      return d < bins ? static_cast<S>(d) : cells + (v < lo ? 0 : 1);
    }
  }
};
/// The regular rule for f32 samples where its f32 estimate is bounded (rule.fast32), computing
/// slots itself. `sure` is the estimate alone, right for most samples after three comparisons:
/// a decisive fraction (an estimate below 0, from x < first32, has a fraction of at most 0, and
/// NaN's fails every comparison) and x <= last32. `slot` is regular_rule::locate_fast32, which
/// looks at one edge where the fraction is not decisive. launch_typed chooses it.
struct fast32_binner {
  regular_rule rule;  // table: the edges, in device or shared memory
  /// The estimate's slot in s; false where it may be wrong.
  template <class S> __device__ __forceinline__ bool sure(float x, S& s) const {
    int i;
    float f;
    rule.estimate32(x, i, f);
    s = static_cast<S>(i);
    return rule.decisive32(f) && x <= rule.last32;
  }
  template <class S> __device__ __forceinline__ S slot(float x, S cells) const {
    const std::int64_t k = rule.locate_fast32(x, [this](std::int64_t e) { return rule.table[e]; });
    return k >= 0 ? static_cast<S>(k) : cells - 1 - static_cast<S>(k);
  }
};

/// The regular rule for f32 samples over many bins where neither the f32 estimate nor the
/// dyadic rule holds: the f64 rule, its edges computed as linspace computes them (f32 or f64
/// edges) instead of looked up. From min_bins on the table (256 KiB) is never staged in shared
/// memory, and a lookup in device memory, for a sample whose estimate is not decisive, keeps
/// its whole warp waiting; the arithmetic is four instructions. launch_typed chooses it.
struct computed32_binner {
  static constexpr std::int64_t min_bins = std::int64_t{1} << 15;
  regular_rule rule;
  __device__ __forceinline__ std::int64_t operator()(float x) const {
    const bool f32 = rule.rounding == edge_rounding::f32;
    // regular_rule::computed_edge for edges 0 .. bins - 1 (locate asks for no other) of f32 or
    // f64 edges and a nonzero step (applies): y = k * step, then y + lo, rounded. Its own copy:
    // computed_edge's other cases (f16/bf16 rounding, a zero step) cost this kernel registers.
    return rule.locate(static_cast<double>(x), [this, f32](std::int64_t k) {
      const double e = static_cast<double>(k) * rule.step + rule.lo;
      return f32 ? static_cast<double>(static_cast<float>(e)) : e;
    });
  }
  static bool applies(const regular_rule& r) {
    return r.bins >= min_bins && !r.step_is_zero &&
           (r.rounding == edge_rounding::f32 || r.rounding == edge_rounding::f64);
  }
};

/// The regular rule for f32 samples where every edge k is exactly k / scale, scale a power of two
/// (rule.dyadic_scale32): regular_rule::locate_dyadic32, no edge looked at.
struct dyadic32_binner {
  regular_rule rule;
  template <class S> __device__ __forceinline__ S slot(float x, S cells) const {
    const std::int64_t k = rule.locate_dyadic32(x);
    return k >= 0 ? static_cast<S>(k) : cells - 1 - static_cast<S>(k);
  }
};

/// The variable rule for f32 samples in f32 (variable_rule32): half the table, f32 comparisons.
struct variable32_binner {
  variable_rule32 rule;
  __device__ __forceinline__ std::int64_t operator()(float x) const { return rule.index(x); }
};

template <class T> bool narrow_integer_fits(const integer_rule& r) {
  if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
    const auto lo = static_cast<long double>(r.lo), last = lo + static_cast<long double>(r.bins) - 1;
    return r.bins < (std::int64_t{1} << 32) && lo >= std::numeric_limits<T>::min() &&
           last <= std::numeric_limits<T>::max();
  } else {
    return false;
  }
}

/// The distance between samples of one channel: runs of equal slots are looked for among them.
template <class B> constexpr int channel_step = 1;
template <int C> constexpr int channel_step<channel_value_binner<C>> = C;
/// Binners that compute the slot themselves (flow counters included), not a bin index.
template <class B> struct gives_slots : std::false_type {};
template <class T, bool Closed> struct gives_slots<narrow_integer_binner<T, Closed>> : std::true_type {};
template <> struct gives_slots<fast32_binner> : std::true_type {};
template <> struct gives_slots<dyadic32_binner> : std::true_type {};
template <class B> struct counts_values : std::false_type {};
template <> struct counts_values<value_binner> : std::true_type {};
template <int C> struct counts_values<channel_value_binner<C>> : std::true_type {};

/// The slot of sample value v (of a channel's value, where the binner has channels): its bin,
/// or the flow counter that drops it.
template <class S, class Binner, class T> __device__ __forceinline__ S slot_for(const Binner& binner, T v, S cells) {
  if constexpr (counts_values<Binner>::value) {
    return binner(v);
  } else if constexpr (gives_slots<Binner>::value) {
    return binner.slot(v, cells);
  } else {
    const auto k = static_cast<S>(binner(v));
    return k >= 0 ? k : cells - 1 - k;  // bin_underflow (-1) -> cells, ..., bin_nan (-3) -> cells + 2
  }
}

/// Bytes of the rule's tables, and copying them into shared memory (then pointing the rule
/// at the copy). Every thread calls stage; all of them copy, each keeps its own pointer.
template <class B> __device__ __forceinline__ std::int64_t table_bytes(const B&) { return 0; }
__device__ __forceinline__ std::int64_t table_bytes(const regular_table_binner& b) {
  return 8 * (b.rule.bins + 1);
}
__device__ __forceinline__ std::int64_t table_bytes(const fast32_binner& b) {
  return table_bytes(regular_table_binner{b.rule});
}
__device__ __forceinline__ std::int64_t table_bytes(const variable32_binner& b) {
  return 8 * ((b.rule.bins + 2) / 2) + 8 * (b.rule.bucket_count + 1);  // whole words
}
__device__ __forceinline__ std::int64_t table_bytes(const variable_binner& b) {
  return 8 * (b.rule.bins + 1) + 8 * (b.rule.bucket_count + 1);
}

__device__ __forceinline__ void copy_words(std::uint64_t* to, const std::uint64_t* from, std::int64_t n) {
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) to[i] = from[i];
}
template <class B> __device__ __forceinline__ void stage(B&, unsigned char*) {}
__device__ __forceinline__ void stage(regular_table_binner& b, unsigned char* smem) {
  auto* t = reinterpret_cast<double*>(smem);
  copy_words(reinterpret_cast<std::uint64_t*>(t), reinterpret_cast<const std::uint64_t*>(b.rule.table),
             b.rule.bins + 1);
  b.rule.table = t;
}
__device__ __forceinline__ void stage(fast32_binner& b, unsigned char* smem) {
  regular_table_binner staged{b.rule};
  stage(staged, smem);
  b.rule.table = staged.rule.table;
}
__device__ __forceinline__ void stage(variable32_binner& b, unsigned char* smem) {
  const std::int64_t edge_words = (b.rule.bins + 2) / 2, bucket_words = b.rule.bucket_count + 1;
  auto* words = reinterpret_cast<std::uint64_t*>(smem);
  copy_words(words, reinterpret_cast<const std::uint64_t*>(b.rule.edges), edge_words);
  copy_words(words + edge_words, reinterpret_cast<const std::uint64_t*>(b.rule.buckets), bucket_words);
  b.rule.edges = reinterpret_cast<const float*>(words);
  b.rule.buckets = reinterpret_cast<const bucket32*>(words + edge_words);
}
__device__ __forceinline__ void stage(variable_binner& b, unsigned char* smem) {
  auto* edges = reinterpret_cast<double*>(smem);
  auto* buckets = reinterpret_cast<std::int64_t*>(edges + b.rule.bins + 1);
  copy_words(reinterpret_cast<std::uint64_t*>(edges), reinterpret_cast<const std::uint64_t*>(b.rule.edges),
             b.rule.bins + 1);
  b.rule.edges = edges;
  if (b.rule.buckets) {
    copy_words(reinterpret_cast<std::uint64_t*>(buckets),
               reinterpret_cast<const std::uint64_t*>(b.rule.buckets), b.rule.bucket_count + 1);
    b.rule.buckets = buckets;
  }
}

/// Slots index shared memory in 32 bits (the planner keeps them within a block's, or a
/// cluster's, shared memory) and device memory in 64.
template <count_mode M> using slot_t = std::conditional_t<M == count_mode::global, std::int64_t, int>;

/// Adds n (< 2^16) to slot s of 16-bit counters packed two per word (slot s in the low half of
/// word s / 2 where s is even). A half that wraps hands 2^16 to device memory (out[s]). A low
/// half that wraps also carries 1 into the high half: that is taken back, and where the carry or
/// its undoing wraps the high half, 2^16 goes to or comes back from out[s + 1]. Each atomic's old
/// value says exactly which halves it wrapped, so the device counts plus the halves are exact.
__device__ __forceinline__ void add_packed(unsigned* counters, int s, unsigned n, std::int64_t slots,
                                           unsigned long long* out) {
  unsigned* word = counters + (s >> 1);
  const unsigned shift = (s & 1) * 16;
  const unsigned old = atomicAdd(word, n << shift);
  if (((old >> shift) & 0xFFFFu) + n <= 0xFFFFu) return;
  atomicAdd(&out[s], 1ull << 16);
  if (shift) return;  // the high half's carry leaves the word
  const bool next = s + 1 < slots;  // the last word's high half may be padding
  if ((old >> 16) == 0xFFFFu && next) atomicAdd(&out[s + 1], 1ull << 16);
  const unsigned undo = atomicSub(word, 1u << 16);
  if ((undo >> 16) == 0 && next) atomicAdd(&out[s + 1], ~0ull << 16);  // minus 2^16
}

/// Blocks per multiprocessor a kernel is compiled for: 4 (32 registers, every thread slot of the
/// multiprocessor) where its loop fits them without spilling (ptxas -v: the value and
/// narrow-integer rules in shared memory), else 3 (40 registers). Left free, the compiler took
/// 46-64 and 2 blocks fitted; fast32's test of a load keeps its four estimates and spilled the
/// loads at 32.
template <class Binner, count_mode M> constexpr int min_blocks() {
  constexpr bool lean = std::is_same_v<Binner, value_binner> ||
                        (gives_slots<Binner>::value && !std::is_same_v<Binner, fast32_binner>);
  return M == count_mode::shared && lean ? 4 : 3;
}

/// Cluster: block r of a cluster holds the cells [r 2^slice_shift, (r + 1) 2^slice_shift) for the
/// whole cluster, followed by 3 flow counters of its own; a sample's cell is added in the shared
/// memory of the block that holds it (distributed shared memory).
template <class T, class Binner, count_mode M>
__global__ void __launch_bounds__(kTypedThreads, min_blocks<Binner, M>()) count_typed_kernel(Binner binner, typed_count_args a) {
  constexpr bool in_cluster = M == count_mode::cluster;
  using slot_type = slot_t<M>;
  extern __shared__ __align__(16) unsigned char smem[];
  const std::int64_t slots = a.cells + 3;
  const int shift = a.replica_shift;
  std::int64_t tables = 0;
  if (a.stage_tables) {
    tables = table_bytes(binner);
    stage(binner, smem);
  }
  auto* counters = reinterpret_cast<unsigned*>(smem + tables);
  const int slice = 1 << a.slice_shift;
  if constexpr (M != count_mode::global) {
    const std::int64_t local = in_cluster ? slice + 3 : M == count_mode::packed ? (slots + 1) / 2 : slots << shift;
    for (std::int64_t k = threadIdx.x; k < local; k += blockDim.x) counters[k] = 0;
  }
  if constexpr (in_cluster) cluster_sync();  // every share zeroed
  else __syncthreads();

  // This lane's copy as a shared-memory address, and the distance between a copy's slots: one
  // multiply-add per atomic's address.
  const auto mine = static_cast<unsigned>(__cvta_generic_to_shared(counters + (threadIdx.x & ((1u << shift) - 1))));
  const unsigned slot_bytes = 4u << shift;
  const auto cells = static_cast<slot_type>(a.cells);
  auto slot = [&](T v) -> slot_type { return slot_for(binner, v, cells); };
  // Device memory: a thread keeps two runs of equal slots; an add to either stays in a
  // register, any other ends the shorter run with one atomic and takes its place. A hot bin's
  // run is then the longer one and stays to the end, whatever comes between its samples:
  // same-address device atomics run at about 1.35 G per second (bench/PERFORMANCE.md, "Global
  // atomics, warp aggregation and clusters").
  slot_type slot0 = -1, slot1 = -1;
  unsigned n0 = 0, n1 = 0;
  // Adds n to slot s where `when` holds.
  auto add = [&](slot_type s, unsigned n, bool when) {
    if constexpr (M == count_mode::global) {
      if (!when) return;
      if (s == slot0) {
        n0 += n;
      } else if (s == slot1) {
        n1 += n;
      } else {
        const bool first = n0 < n1;
        const slot_type ended = first ? slot0 : slot1;
        const unsigned count = first ? n0 : n1;
        if (count) atomicAdd(&a.slots[ended], static_cast<unsigned long long>(count));
        if (first) {
          slot0 = s;
          n0 = n;
        } else {
          slot1 = s;
          n1 = n;
        }
      }
    } else if constexpr (in_cluster) {
      if (!when) return;
      if (s >= cells) {
        atomicAdd(&counters[slice + (s - cells)], n);
      } else {
        unsigned* share = cluster_shared(counters, static_cast<unsigned>(s >> a.slice_shift));
        atomicAdd(share + (s & (slice - 1)), n);
      }
    } else if constexpr (M == count_mode::registers) {
      if (when) atomicAdd(&counters[s], n);  // the head and tail only; the body counts in registers
    } else if constexpr (M == count_mode::packed) {
      if (when) add_packed(counters, s, n, slots, a.slots);
    } else {
      // A reduction (no value returned) at a 32-bit shared address: one multiply-add per address.
      if (when)
        asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(mine + static_cast<unsigned>(s) * slot_bytes), "r"(n));
    }
  };
  auto add_sample = [&](T v, std::int64_t index) {
    if constexpr (channel_step<Binner> > 1) {
      const int channel = binner.channel_of(index);
      add(slot(v) + 256 * channel, 1, channel < binner.counted);
    } else {
      add(slot(v), 1, true);
    }
  };
  // Head: samples before the first 16-byte boundary; body: whole vectors; tail: the rest.
  constexpr int per_vector = 16 / sizeof(T);
  const T* x = static_cast<const T*>(a.data);
  const column_body split = body_of(reinterpret_cast<std::uintptr_t>(x), a.n, sizeof(T));
  const std::int64_t head = split.head, vectors = split.vectors;
  const std::int64_t tail = head + vectors * per_vector;
  const std::int64_t tid = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (tid < head) add_sample(x[tid], tid);
  if (tid < a.n - tail) add_sample(x[tail + tid], tail + tid);

  const uint4* body = reinterpret_cast<const uint4*>(x + head);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  // The body, with or without merging runs of equal slots within a vector (one atomic per run,
  // at its end; with channels, runs within each channel's samples). Merging saves atomics where
  // a hot bin's lanes would contend (fewer than 32 copies, a cluster; device memory keeps its
  // runs across vectors instead); with a
  // copy per lane it only costs instructions: u8 256 bins 1935 GB/s merged, 2869 with one
  // atomic per sample (bench/shared_atomics.cu on the H100; bench/PERFORMANCE.md, "GPU counting
  // in shared memory").
  constexpr bool test_loads = std::is_same_v<Binner, fast32_binner> && M == count_mode::shared;
  const auto count_body = [&](auto merge) {
    for (std::int64_t i = tid; i < vectors; i += stride * kUnroll) {
      uint4 loaded[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (i + u * stride < vectors) loaded[u] = __ldg(body + i + u * stride);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (i + u * stride < vectors) {
          T v[per_vector];
          memcpy(v, &loaded[u], sizeof v);
          // fast32: one test a load, not a branch a sample (f32 256 even bins issued 32
          // instructions a sample that way; bench/PERFORMANCE.md, "Bin rules"). A load with an
          // unsure estimate (a sample near an edge or outside the range) takes the exact rule
          // throughout.
          [[maybe_unused]] slot_type estimated[per_vector];
          if constexpr (test_loads) {
            bool sure = true;
#pragma unroll
            for (int j = 0; j < per_vector; ++j) sure &= binner.sure(v[j], estimated[j]);
            if (!sure) {
#pragma unroll
              for (int j = 0; j < per_vector; ++j) add(slot(v[j]), 1, true);
              continue;
            }
          }
          const auto slot_of = [&](int j) {
            if constexpr (test_loads) return estimated[j];
            else return slot(v[j]);
          };
          constexpr int step = channel_step<Binner>;
          [[maybe_unused]] int first_channel = 0;  // the channel of v[0]
          if constexpr (step > 1 && per_vector % step == 0) first_channel = binner.channel_of(head);  // every vector's
          else if constexpr (step > 1) first_channel = binner.channel_of(head + (i + u * stride) * per_vector);
#pragma unroll
          for (int k = 0; k < step; ++k) {
            slot_type offset = 0;
            if constexpr (step > 1) {
              const int channel = (first_channel + k) % step;
              if (channel >= binner.counted) continue;
              offset = 256 * channel;
            }
            if constexpr (decltype(merge)::value) {
              slot_type previous = slot_of(k) + offset;
              unsigned run = 1;
#pragma unroll
              for (int j = k + step; j < per_vector; j += step) {
                const slot_type s = slot_of(j) + offset;
                const bool cut = s != previous;
                add(previous, run, cut);
                run = cut ? 1u : run + 1u;
                previous = s;
              }
              add(previous, run, true);
            } else {
#pragma unroll
              for (int j = k; j < per_vector; j += step) add(slot_of(j) + offset, 1, true);
            }
          }
        }
      }
    }
  };
  if constexpr (M == count_mode::registers) {
    // The warp reads together (the loop bound is the warp's), so every lane takes part in the
    // ballots; a lane past the end contributes slot 32, which no lane counts. Bit k of the slots
    // of the warp's 32 samples is ballot k; lane l's matches are the lanes whose 6 bits equal
    // l's: 6 ballots, 3 logic operations, a population count and an add per 32 samples.
    const unsigned lane = threadIdx.x & 31;
    unsigned count = 0;
    for (std::int64_t base = tid - lane; base < vectors; base += stride * kUnroll) {
      const std::int64_t i = base + lane;
      uint4 loaded[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        loaded[u] = i + u * stride < vectors ? __ldg(body + i + u * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const bool valid = i + u * stride < vectors;
        T v[per_vector];
        memcpy(v, &loaded[u], sizeof v);
#pragma unroll
        for (int j = 0; j < per_vector; ++j) {
          const unsigned s = valid ? static_cast<unsigned>(slot(v[j])) : 32u;
          unsigned match = ~0u;
#pragma unroll
          for (int k = 0; k < 6; ++k) {
            const unsigned bits = __ballot_sync(~0u, (s >> k) & 1u);
            match &= (lane >> k) & 1u ? bits : ~bits;
          }
          count += __popc(match);
        }
      }
    }
    if (count) atomicAdd(&counters[lane], count);
  } else if (M == count_mode::global || (M == count_mode::shared && !a.merge_runs)) {
    count_body(std::false_type{});  // device memory: the runs are kept across loads (add)
  } else {
    count_body(std::true_type{});
  }
  if constexpr (M == count_mode::global) {
    if (n0) atomicAdd(&a.slots[slot0], static_cast<unsigned long long>(n0));
    if (n1) atomicAdd(&a.slots[slot1], static_cast<unsigned long long>(n1));
  }
  if constexpr (in_cluster) {
    // Every block's adds into this share are done; then its cells and flow go to device memory.
    cluster_sync();
    const std::int64_t lo = static_cast<std::int64_t>(cluster_rank()) << a.slice_shift;
    for (std::int64_t k = threadIdx.x; k < slice + 3; k += blockDim.x) {
      const std::int64_t s = k < slice ? lo + k : a.cells + (k - slice);
      if (counters[k] && (k >= slice || s < a.cells)) atomicAdd(&a.slots[s], static_cast<unsigned long long>(counters[k]));
    }
  } else if constexpr (M == count_mode::shared || M == count_mode::registers) {
    __syncthreads();
    flush_copies(counters, slots, shift, a.slots);
  } else if constexpr (M == count_mode::packed) {
    __syncthreads();
    for (std::int64_t k = threadIdx.x; k < slots; k += blockDim.x) {
      const unsigned half = (counters[k >> 1] >> ((k & 1) * 16)) & 0xFFFFu;
      if (half) atomicAdd(&a.slots[k], static_cast<unsigned long long>(half));
    }
  }
}

/// A thread's PerThread samples' ranks among its tile's samples of their bucket (slot >> bits), two
/// 16-bit ranks a word; counts[bucket] (zero before) ends as the tile's samples in each bucket.
/// Every lane of the warp takes part.
/// An increment of a shared counter that returns the count before (ATOMS.POPC.INC). Its
/// lanes on one counter are served one by one when they take the values back (a hot bucket: a
/// 32-way conflict per sample). So where most of a warp's first samples share one bucket, the
/// warp ranks that bucket's samples itself (a ballot per sample, the lanes before in it and in
/// the ballots before) and takes them with one increment; the other samples increment their
/// own. i32 2^20 bins, a pass of 2^25 samples sorted in 79 us instead of 175 (one hot bin) and
/// 152 instead of 169 (80% in one bin) (ncu); spread data pay a match a tile. The candidate is
/// the warp's most common first bucket (a match and a maximum a tile): lane 0's alone missed it
/// for a fifth of the warps on 80% data, which then served the hot bucket's lanes one by one
/// (bench/PERFORMANCE.md, "Partitioned fills").
template <int PerThread>
__device__ __forceinline__ void rank_by_bucket(const int (&s)[PerThread], int bits, unsigned* counts,
                                               unsigned (&rank)[PerThread / 2]) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned first = static_cast<unsigned>(s[0]) >> bits;  // below 2^16 (at most 1025 buckets)
  const unsigned most = __reduce_max_sync(~0u, __popc(__match_any_sync(~0u, first)) << 16 | first);
  const unsigned hot = most & 0xFFFFu;
  if (most >> 16 >= 16) {
    unsigned before = 0, mine = 0;  // the warp's samples in the hot bucket so far; this lane's
#pragma unroll
    for (int q = 0; q < PerThread; ++q) {
      const unsigned bucket = static_cast<unsigned>(s[q]) >> bits;
      const unsigned in_hot = __ballot_sync(~0u, bucket == hot);
      const unsigned r = bucket == hot ? before + __popc(in_hot & ((1u << lane) - 1))
                                       : atomicAdd(&counts[bucket], 1u);
      mine |= (bucket == hot) << q;
      before += __popc(in_hot);
      rank[q / 2] = q % 2 ? rank[q / 2] | r << 16 : r;
    }
    unsigned base = 0;
    if (lane == 0) base = atomicAdd(&counts[hot], before);
    base = __shfl_sync(~0u, base, 0);
#pragma unroll
    for (int q = 0; q < PerThread; ++q)
      if (mine >> q & 1) rank[q / 2] += base << (q % 2 * 16);  // < kPartitionTile: no carry
  } else {
#pragma unroll
    for (int q = 0; q < PerThread; ++q) {
      const unsigned r = atomicAdd(&counts[static_cast<unsigned>(s[q]) >> bits], 1u);
      rank[q / 2] = q % 2 ? rank[q / 2] | r << 16 : r;
    }
  }
}

/// Warp 0 of a sorting block (all 32 lanes), once a tile's ranks are taken: where each of the
/// tile's buckets starts (counts[buckets]: the samples that no bucket takes, after them all), in
/// `starts` and in tile t's column of out.offsets; each bucket's count, where not zero, handed to
/// total(k, count); the counts zeroed for the next tile. Each lane takes a run of buckets.
template <class Total>
__device__ __forceinline__ void scan_buckets(unsigned* counts, unsigned* starts, const partition_scratch& out,
                                             std::int64_t t, Total&& total) {
  const int buckets = out.buckets;
  const int per_lane = (buckets + 1 + 31) / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int lo = min(lane * per_lane, buckets + 1), hi = min(lo + per_lane, buckets + 1);
  unsigned sum = 0;
  for (int k = lo; k < hi; ++k) sum += counts[k];
  unsigned at = warp_inclusive_sum(sum) - sum;
  for (int k = lo; k < hi; ++k) {
    const unsigned c = counts[k];
    starts[k] = at;
    out.offsets[k * out.tile_stride + t] = static_cast<unsigned short>(at);
    if (c && k < buckets) total(k, c);
    counts[k] = 0;
    at += c;
  }
}

/// sort_tiles' Extra where a vector brings nothing into registers beside its samples.
struct no_extra {};

/// The partitioned sorts' loop over a contiguous column's 16-byte body (`vectors` of them): each
/// block sorts tiles of kPartitionTile samples (16 per thread), grid-stride, by bucket, key >> bits.
/// A thread loads its body vectors i, each with load(i) beside it (an Extra, kept in registers),
/// and sample j of value v of such a vector has the key key(j, v, extra); a key of out.buckets <<
/// bits goes after every bucket. A sample's rank among its tile's samples of one bucket is a shared
/// counter's value before its increment (rank_by_bucket); warp 0 then scans the tile's bucket
/// counts (scan_buckets, each to total(k, count)) while the other warps copy the previous tile's
/// `count` sorted samples out (copy_out(tile, count, from), threads [from, blockDim.x)), and
/// place(i, at, keys) puts each sample of vector i at its place at[j]. counts (zeroed) and starts:
/// out.buckets + 1 shared counters each.
template <class T, class Extra, class Load, class Key, class Total, class Place, class CopyOut>
__device__ __forceinline__ void sort_tiles(const uint4* body, std::int64_t vectors, const partition_scratch& out,
                                           unsigned* counts, unsigned* starts, const Load& load, const Key& key,
                                           const Total& total, const Place& place, const CopyOut& copy_out) {
  constexpr int per_vector = 16 / sizeof(T);
  constexpr int per_thread = kPartitionTile / kTypedThreads;  // 16
  constexpr int loads = per_thread / per_vector;
  static_assert(per_thread % per_vector == 0, "a thread's samples are whole vectors");
  const int bits = out.bits, past = out.buckets << bits;
  constexpr std::int64_t tile_vectors = kPartitionTile / per_vector;
  const std::int64_t tiles = (vectors + tile_vectors - 1) / tile_vectors;
  std::int64_t previous = -1;  // the tile sorted last: copied out while warp 0 scans the next
  unsigned previous_count = 0;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int s[per_thread];
    unsigned rank[per_thread / 2];  // two 16-bit ranks (< kPartitionTile) a word
    uint4 loaded[loads];
    Extra extra[loads];
#pragma unroll
    for (int u = 0; u < loads; ++u) {
      const std::int64_t i = t * tile_vectors + u * kTypedThreads + threadIdx.x;
      loaded[u] = i < vectors ? __ldg(body + i) : make_uint4(0, 0, 0, 0);
      extra[u] = load(i);
    }
#pragma unroll
    for (int u = 0; u < loads; ++u) {
      const bool valid = t * tile_vectors + u * kTypedThreads + threadIdx.x < vectors;
      T v[per_vector];
      memcpy(v, &loaded[u], sizeof v);
#pragma unroll
      for (int j = 0; j < per_vector; ++j) s[u * per_vector + j] = valid ? key(j, v[j], extra[u]) : past;
    }
    rank_by_bucket(s, bits, counts, rank);
    __syncthreads();  // the tile's ranks taken, the previous tile sorted
    // Where each bucket starts: warp 0 scans the counts while the other warps copy the previous
    // tile out (two barriers a tile, not three).
    if (threadIdx.x < 32) {
      scan_buckets(counts, starts, out, t, total);
    } else if (previous >= 0) {
      copy_out(previous, previous_count, 32u);
    }
    __syncthreads();
    // Each sample's place, its bucket's start plus its rank (< kPartitionTile: no carry between the
    // halves), for all samples before any is stored: the loads of the starts are then in flight
    // together. Samples past the body's end fill the tile's last places, after every bucket.
#pragma unroll
    for (int q = 0; q < per_thread; ++q) rank[q / 2] += starts[static_cast<unsigned>(s[q]) >> bits] << (q % 2 * 16);
#pragma unroll
    for (int u = 0; u < loads; ++u) {
      unsigned at[per_vector];
      int keys[per_vector];
#pragma unroll
      for (int j = 0; j < per_vector; ++j) {
        const int q = u * per_vector + j;
        at[j] = rank[q / 2] >> (q % 2 * 16) & 0xFFFFu;
        keys[j] = s[q];
      }
      place(t * tile_vectors + u * kTypedThreads + threadIdx.x, at, keys);
    }
    previous = t;
    previous_count = starts[out.buckets];
  }
  __syncthreads();
  if (previous >= 0) copy_out(previous, previous_count, 0u);
}

/// The partitioned strategy's first pass: each block sorts tiles of samples by bucket, slot >> bits
/// (sort_tiles), the slots' low bits into a.sorted.entries, and writes where each bucket starts in
/// a.sorted.offsets. The head and tail go straight to device memory.
template <class T, class Binner>
__global__ void __launch_bounds__(kTypedThreads, 2) partition_kernel(Binner binner, typed_count_args a) {
  extern __shared__ __align__(16) unsigned char smem[];
  std::int64_t tables = 0;
  if (a.stage_tables) {
    tables = (table_bytes(binner) + 15) / 16 * 16;
    stage(binner, smem);
  }
  auto* sorted = reinterpret_cast<unsigned short*>(smem + tables);  // the tile's low bits, by bucket
  const partition_scratch& out = a.sorted;
  const int buckets = out.buckets;
  auto* counts = reinterpret_cast<unsigned*>(sorted + kPartitionTile);  // buckets + 1: the last is past the end
  unsigned* starts = counts + buckets + 1;
  for (int k = threadIdx.x; k <= buckets; k += blockDim.x) counts[k] = 0;

  const auto cells = static_cast<int>(a.cells);
  auto slot = [&](T v) { return slot_for<int>(binner, v, cells); };
  const T* x = static_cast<const T*>(a.data);
  const column_body split = body_of(reinterpret_cast<std::uintptr_t>(x), a.n, sizeof(T));
  const std::int64_t tail = split.head + split.vectors * (16 / sizeof(T));
  const std::int64_t tid = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  __syncthreads();  // the tables staged, the counts zeroed
  if (tid < split.head) atomicAdd(&a.slots[slot(x[tid])], 1ull);
  if (tid < a.n - tail) atomicAdd(&a.slots[slot(x[tail + tid])], 1ull);

  const int mask = (1 << out.bits) - 1;
  sort_tiles<T, no_extra>(
      reinterpret_cast<const uint4*>(x + split.head), split.vectors, out, counts, starts,
      [](std::int64_t) { return no_extra{}; }, [&](int, T v, no_extra) { return slot(v); },
      [&](int k, unsigned c) { atomicAdd(&out.totals[k], c); },
      [&](std::int64_t, const unsigned* at, const int* keys) {
#pragma unroll
        for (int j = 0; j < 16 / static_cast<int>(sizeof(T)); ++j) sorted[at[j]] = static_cast<unsigned short>(keys[j] & mask);
      },
      // A sorted tile out, up to its last sample, in 16-byte stores.
      [&](std::int64_t tile, unsigned count, unsigned from) {
        auto* to = reinterpret_cast<uint4*>(out.entries + tile * kPartitionTile);
        for (unsigned w = threadIdx.x - from; w < (count + 7) / 8; w += blockDim.x - from)
          to[w] = reinterpret_cast<const uint4*>(sorted)[w];
      });
}

/// The planner's grid, cut to the blocks that are resident at once (the planner cannot see
/// the kernel's registers): a grid-stride kernel then runs in one wave.
template <class Kernel> unsigned resident_grid(Kernel* kernel, const launch_shape& shape) {
  // Asked once per kernel, device, block size and dynamic shared memory size: the query costs
  // microseconds, a fill of a 1 GiB column a third of a millisecond. The kernel is part of the key:
  // kernels of one shape differ in registers (32 or 40: 4 or 3 blocks per multiprocessor).
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, unsigned, std::size_t>, unsigned> resident;
  int device = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  const unsigned grid = remembered(resident, mutex, {reinterpret_cast<const void*>(kernel), device, shape.block,
                                                     shape.shared_bytes}, [&] {
    int sms = 0, per_sm = 0;
    TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TALLY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, static_cast<int>(shape.block),
                                                                   shape.shared_bytes));
    return static_cast<unsigned>(std::max(1, per_sm) * sms);
  });
  return std::min(shape.grid, grid);
}

/// Launches a grid-stride kernel on the resident grid with the shape's dynamic shared memory
/// (opted into above the default 48 KiB).
template <class... Params, class... Args>
void launch_resident(void (*kernel)(Params...), const launch_shape& shape, const Args&... args) {
  allow_shared(reinterpret_cast<const void*>(kernel), shape.shared_bytes);
  kernel<<<resident_grid(kernel, shape), shape.block, shape.shared_bytes, shape.stream>>>(args...);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

/// One launch of the typed kernel in mode M (not a cluster), on the resident grid.
template <class T, class Binner, count_mode M>
void launch_plain(const Binner& binner, const typed_count_args& args, const launch_shape& shape) {
  launch_resident(&count_typed_kernel<T, Binner, M>, shape, binner, args);
}

/// The launch of args.mode: value tables count in shared copies only; clusters and 16-bit
/// counters take samples wider than 8 bits (the planner never asks otherwise).
template <class T, class Binner>
void launch_with(const Binner& binner, const typed_count_args& args, const launch_shape& shape) {
  constexpr bool wide = sizeof(T) > 1 && !counts_values<Binner>::value;
  if constexpr (counts_values<Binner>::value) {
    if (args.mode == count_mode::shared) return launch_plain<T, Binner, count_mode::shared>(binner, args, shape);
  } else if constexpr (std::is_same_v<Binner, computed32_binner>) {
    if (args.mode == count_mode::partition) return launch_resident(&partition_kernel<T, Binner>, shape, binner, args);
  } else {
    switch (args.mode) {
      case count_mode::shared: return launch_plain<T, Binner, count_mode::shared>(binner, args, shape);
      case count_mode::global: return launch_plain<T, Binner, count_mode::global>(binner, args, shape);
      case count_mode::registers: return launch_plain<T, Binner, count_mode::registers>(binner, args, shape);
      case count_mode::packed:
        if constexpr (wide) return launch_plain<T, Binner, count_mode::packed>(binner, args, shape);
        break;
      case count_mode::partition:
        if constexpr (wide) return launch_resident(&partition_kernel<T, Binner>, shape, binner, args);
        break;
      case count_mode::cluster:
        if constexpr (wide) {
          // Clusters of cluster_blocks blocks on as many multiprocessors; the planner's grid is a
          // multiple of the cluster.
          launch_clustered(&count_typed_kernel<T, Binner, count_mode::cluster>, shape,
                           static_cast<unsigned>(args.cluster_blocks), binner, args);
          return;
        }
        break;
    }
  }
  throw error("count_typed: no kernel for this count mode and " + std::string(name_of(dtype_of<T>)) + " samples");
}

/// Calls f(type_tag<T>{}, binner) where `sample` is T, one of Ts, with the binner the typed
/// kernels use for the axis: the 32-bit integer rule where the axis lies within T, the f32
/// forms of the regular and variable rules (the line rule where the axis has one) for f32
/// samples (computed32_binner only where `partitioned`: the partition kernel keeps it in
/// registers, the others at 32 or 40 spilled it), else the axis' own. Returns false, calling
/// nothing, where `sample` is none of Ts.
template <class... Ts, class F>
bool with_typed_binner(dtype sample, const device_axis& axis, F&& f, bool partitioned = false) {
  const auto call_if = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (sample != dtype_of<T>) return false;
    if (axis.kind == axis_kind::integer && narrow_integer_fits<T>(axis.integer.rule)) {
      if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
        const integer_rule& r = axis.integer.rule;
        const auto lo = static_cast<T>(r.lo);
        const auto bins = static_cast<std::uint32_t>(r.bins);
        // A closed end beyond T's max holds no T: the open rule is the same.
        if (r.closed && static_cast<long double>(r.lo) + r.bins <= std::numeric_limits<T>::max()) {
          f(tag, narrow_integer_binner<T, true>{lo, bins});
        } else {
          f(tag, narrow_integer_binner<T>{lo, bins});
        }
        return true;
      }
    }
    if constexpr (std::is_same_v<T, float>) {
      if (axis.kind == axis_kind::regular && axis.regular.rule.dyadic_scale32 != 0.0f) {
        f(tag, dyadic32_binner{axis.regular.rule});
        return true;
      }
      if (axis.kind == axis_kind::regular && axis.regular.rule.fast32) {
        f(tag, fast32_binner{axis.regular.rule});
        return true;
      }
      if (partitioned && axis.kind == axis_kind::regular && computed32_binner::applies(axis.regular.rule)) {
        f(tag, computed32_binner{axis.regular.rule});
        return true;
      }
      if (axis.kind == axis_kind::variable && axis.line.bins && axis.variable32.edges) {
        f(tag, line_binner<float>{axis.line, axis.variable32.edges});
        return true;
      }
      if (axis.kind == axis_kind::variable && axis.variable32.bucket_count > 0) {  // 0: not usable
        f(tag, variable32_binner{axis.variable32});
        return true;
      }
    }
    with_binner(axis, [&](const auto& binner) { f(tag, binner); });
    return true;
  };
  return (call_if(type_tag<Ts>{}) || ...);
}

/// Launches the typed kernel for whichever of Ts `sample` is (each translation unit
/// instantiates its share of the sample types).
template <class... Ts>
void launch_typed(dtype sample, const device_axis& axis, const typed_count_args& args, const launch_shape& shape) {
  const bool launched = with_typed_binner<Ts...>(
      sample, axis, [&](auto tag, const auto& binner) { launch_with<typename decltype(tag)::type>(binner, args, shape); },
      args.mode == count_mode::partition);
  if (!launched) throw error("count_typed: no kernel for " + std::string(name_of(sample)) + " samples in this unit");
}

}  // namespace tally::detail::cuda

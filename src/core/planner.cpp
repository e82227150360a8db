// The planner: one pure function from the job's parameters to a policy, with its reasons.
#include <algorithm>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include <omp.h>

#include "core/generic_shape.hpp"
#include "core/backend.hpp"
#include "core/exact_sum.hpp"
#include "core/partition.hpp"
#include "tally/error.hpp"
#include "tally/plan.hpp"

namespace tally {
namespace {

using detail::kPartitionChunk;
using detail::kPartitionCountStatic;
using detail::kPartitionCountThreads;
using detail::kPartitionExactBits;
using detail::kPartitionExactMaxCells;
using detail::kPartitionExactWideBits;
using detail::kPartitionExactChunk;
using detail::kPartitionSumStatic;
using detail::kPartitionMaxBits;
using detail::kPartitionMaxBuckets;
using detail::kPartitionMinBits;
using detail::kPartitionTile;

template <class E, std::size_t N>
E from_name(std::string_view name, const std::pair<E, std::string_view> (&names)[N],
            std::string_view what) {
  std::string expected;
  for (const auto& [value, n] : names) {
    if (n == name) return value;
    expected += (expected.empty() ? "" : ", ") + std::string(n);
  }
  throw error("unknown " + std::string(what) + " '" + std::string(name) + "': expected one of " +
              expected);
}

template <class E, std::size_t N>
std::string_view to_name(E value, const std::pair<E, std::string_view> (&names)[N]) {
  for (const auto& [v, n] : names)
    if (v == value) return n;
  return "?";
}

constexpr std::pair<backend, std::string_view> kBackends[] = {
    {backend::automatic, "auto"}, {backend::cpu, "cpu"}, {backend::cuda, "cuda"}};
constexpr std::pair<count_type, std::string_view> kCounts[] = {
    {count_type::u64, "u64"}, {count_type::u32, "u32"}};

using detail::kGenericAhead;
using detail::kGenericLoads;
using detail::kGenericThreads;

/// Samples per pass of a partitioned fill of n samples: whole tiles, at most `most` samples (and
/// the tests' limit).
std::int64_t partition_chunk(std::int64_t n, std::int64_t most) {
  std::int64_t tiles = std::min(std::max<std::int64_t>(1, (n + kPartitionTile - 1) / kPartitionTile), most / kPartitionTile);
  if (detail::partition_pass_tiles() > 0) tiles = std::min(tiles, detail::partition_pass_tiles());
  return tiles * kPartitionTile;
}

policy plan_cpu(const plan_request& r) {
  policy p;
  p.where = backend::cpu;
  p.chosen = strategy::cpu_private;

  // Threads: every thread zeroes and merges a private copy of all cells, so each needs
  // enough samples to pay for it; below that, fewer threads are faster. Measured (2-core VM,
  // 2^26 i64; bench/PERFORMANCE.md, "CPU backend"): 2 threads 1.3-2.0x one thread.
  // Threads beyond the machine's would only cost memory and thread starts (and a thread the
  // system cannot start ends the process in the OpenMP runtime).
  // threads 0: as many as OpenMP would start here (OMP_NUM_THREADS, or a limit set through
  // omp_set_num_threads, as threadpoolctl sets it), never more than the machine's.
  const int hardware = detail::hardware_threads();
  const int available = std::min(r.threads > 0 ? r.threads : omp_get_max_threads(), hardware);
  // Weighted sums follow blocks of sum_block samples (0: the whole fill, in input order).
  if (r.weighted && !r.exact_sums) p.block = r.sum_block > 0 ? r.sum_block : std::max<std::int64_t>(1, r.n);
  // Exact sums keep no private copies (threads add into the shared words atomically).
  const std::int64_t per_thread = r.exact_sums ? p.block : std::max<std::int64_t>(p.block, 2 * r.cells);
  const std::int64_t useful = std::max<std::int64_t>(1, r.n / per_thread);
  p.threads = static_cast<int>(std::min<std::int64_t>(available, useful));
  p.reasons.push_back("threads " + std::to_string(p.threads) + " of " + std::to_string(available) +
                      (r.exact_sums ? ": one per 65536 samples"
                                    : ": one per max(" + std::to_string(p.block) +
                                          ", 2 x cells) samples, so private copies pay off"));
  if (r.exact_sums)
    p.reasons.push_back("exact sums: each weight an integer addition into its cell's 34 fixed-point words "
                        "(atomic where threads share them); any order gives the same words");

  // Replicas: a thread alternates between R copies of the counters, so runs of equal
  // samples do not wait on one counter's store-to-load latency. Only for few cells, where
  // R copies stay in L1. Measured (i64, 256 bins, 1 thread; bench/PERFORMANCE.md, "CPU backend"):
  // skewed80 538 -> 952 Melem/s, uniform 1029 -> 947.
  if (!r.weighted && r.cells * 4 <= 4096 && r.dims == 1) {
    p.replicas = 4;
    p.reasons.push_back("replicas 4: few cells; 4 copies break the dependency chain on a hot bin");
  } else {
    p.reasons.push_back("replicas 1: " + std::string(r.exact_sums ? "exact sums add into the histogram's words"
                                                    : r.weighted ? "weighted sums follow the block order"
                                                                : "many cells: copies would leave L1"));
  }

  // Edge table: a regular axis looks its (rounded) edges up instead of computing them
  // (175 -> 390 Melem/s per thread with the table-only rule; bench/PERFORMANCE.md, "CPU backend").
  p.edge_table = r.kind == axis_kind::regular && r.cells <= (1 << 20);
  p.reasons.push_back(p.edge_table ? "edge table: regular edges looked up (<= 2^20 bins)"
                                   : "edges computed per sample (table would not fit in cache)");
  return p;
}

/// Weighted sums of f32 weights (and of the ones of a fill without weights) on the GPU: every
/// weight is an integer addition at one digit of its cell's fixed-point words (core/exact_sum.hpp), in a
/// block's shared copy of the words where they fit, else in device memory. Integer atomics add
/// in any order to the same words: exact, correctly rounded sums, the same bits on every run,
/// grid and device, with no fixed order to keep. Measured: 318-322 G samples/s uniform, 349 hot,
/// 312-315 skewed80, 321-325 normal for i32 + f32 weights over 256 bins (device_histogram),
/// against 82-93 with the fixed-order tree (bench/PERFORMANCE.md, "Exact sums of weights").
policy plan_cuda_exact(const plan_request& r, policy p, std::int64_t budget) {
  if (r.wanted != strategy::automatic && r.wanted != strategy::shared && r.wanted != strategy::global_atomic &&
      r.wanted != strategy::partitioned)
    throw error("strategy " + std::string(name_of(r.wanted)) +
                " does not sum f32 weights exactly on the GPU; use automatic, shared, global_atomic or partitioned");
  // A block's copy: the record of its window, then a window of each cell's 16-bit digits in
  // 32-bit counters and its flags.
  const std::int64_t shared = detail::exact_shared_bytes(r.cells);
  const bool fits = shared <= budget;
  if (r.wanted == strategy::shared && !fits)
    throw error("strategy shared: the exact sums of " + std::to_string(r.cells) + " cells need " +
                std::to_string(shared) + " bytes of shared memory, " + std::to_string(budget) + " fit");
  // Partitioned (core/partition.hpp): buckets of 2^10 cells, whose words fit one of two blocks of a
  // multiprocessor, for one contiguous column of samples wider than 8 bits; of 2^11 cells beyond
  // 2^19 cells where a block holds them.
  const auto bucket_bytes_of = [](int bits) {
    return detail::exact_words_bytes(std::int64_t{1} << bits) + kPartitionSumStatic;
  };
  const int part_bits = r.cells > kPartitionExactMaxCells / 2 && bucket_bytes_of(kPartitionExactWideBits) <= budget
                            ? kPartitionExactWideBits
                            : kPartitionExactBits;
  const std::int64_t part_buckets = (r.cells + (std::int64_t{1} << part_bits) - 1) >> part_bits;
  // The summing pass holds a bucket's windows and its tables; the sort a tile of pairs and each
  // bucket's count, start and block total, and the block's flow counts. Both must fit.
  const std::int64_t bucket_bytes = bucket_bytes_of(part_bits);
  const std::int64_t sort_bytes = kPartitionTile * 6 + (3 * part_buckets + 5) * 4;
  const std::int64_t pass_bytes = std::max(bucket_bytes, sort_bytes);
  const bool partition_fits = r.contiguous && size_of(r.sample) > 1 && r.cells <= kPartitionExactMaxCells &&
                              pass_bytes <= budget;
  if (r.wanted == strategy::partitioned && !partition_fits)
    throw error("strategy partitioned sums f32 weights exactly for one contiguous column of samples wider than 8 "
                "bits and at most " + std::to_string(kPartitionExactMaxCells) +
                " cells, where a bucket's words and a sorted tile (" + std::to_string(pass_bytes) + " bytes) fit " +
                std::to_string(budget) + "; got " + std::to_string(r.cells) + " cells of " +
                std::string(name_of(r.sample)) + (r.contiguous ? "" : " in a strided or N-D fill"));
  if (r.wanted != strategy::automatic) p.chosen = r.wanted;
  else p.chosen = fits ? strategy::shared : partition_fits ? strategy::partitioned : strategy::global_atomic;
  p.exact_sums = true;
  p.block_threads = detail::kExactThreads;
  p.grid_blocks = std::max(1, r.device_sms) * 4;  // cut to the resident blocks at launch
  p.reasons.push_back("weighted, f32 weights: exact sums, each weight an integer addition at one 16-bit "
                      "digit of its cell's 9 fixed-point words; any order gives the same bits, correctly rounded");
  if (p.chosen == strategy::partitioned) {
    // Prediction: 8 bytes read, 6 written and read again a sample (bench/PERFORMANCE.md,
    // "Exact sums of weights").
    p.partition_bits = part_bits;
    p.partition_buckets = static_cast<int>(part_buckets);
    p.partition_chunk = partition_chunk(r.n, kPartitionExactChunk);
    p.partition_blocks = std::max(1, r.device_sms) * 2;  // one wave of two a multiprocessor
    p.grid_blocks = std::max(1, r.device_sms) * 2;
    p.shared_bytes = sort_bytes;
    p.vector_bytes = 16;
    p.unroll = static_cast<int>(kPartitionTile / p.block_threads * size_of(r.sample) / 16);
    p.merge_runs = true;
    p.reasons.push_back(std::string(r.wanted == strategy::partitioned ? "partitioned: asked for" : "partitioned: a block's copy of the words would not fit") +
                        "; each tile of (cell, weight) pairs is sorted by bucket (2^" + std::to_string(part_bits) +
                        " cells) into temporary memory (6 bytes a pair), then each bucket summed in the shared copy of "
                        "its words of the blocks that own it");
    p.reasons.push_back(std::to_string(part_buckets) + " buckets; passes of " + std::to_string(p.partition_chunk) +
                        " samples; up to " + std::to_string(p.partition_blocks) +
                        " summing blocks (one wave) shared out among the buckets by their pairs");
    p.reasons.push_back("runs: a thread's terms at one digit of one cell add once (two runs kept)");
    return p;
  }
  p.shared_bytes = p.chosen == strategy::shared ? shared : 0;
  // A contiguous column streams through a ring after the words where two blocks still fit a
  // multiprocessor: loads always in flight, with no barrier. i32 + f32 weights over 256 bins,
  // 307 -> 321 G samples/s uniform, 280 -> 304 skewed80 (with f64 runs). Beyond that room (about
  // 1800 cells) each round loads its group itself.
  const std::int64_t ringed = detail::exact_ring_offset(p.shared_bytes) + detail::kExactRingBytes;
  const bool ring = r.contiguous && ringed <= budget;
  if (ring) p.shared_bytes = ringed;
  // One contiguous column: four samples (and four f32 weights, where they line up) per load.
  p.vector_bytes = r.contiguous ? 4 * static_cast<int>(size_of(r.sample)) : 0;
  p.unroll = r.contiguous ? 1 : 4;
  p.merge_runs = true;
  p.reasons.push_back(p.chosen == strategy::shared
                          ? "shared: one copy of the words per block, a window of " + std::to_string(detail::kExactWindowDigits) +
                                " 16-bit digits a cell (" + std::to_string(shared) + " bytes; terms outside it add to the device words)"
                          : "global_atomic: the words in device memory (" +
                                (r.wanted == strategy::global_atomic
                                     ? std::string("asked for")
                                     : "a block's copy would not fit; partitions take one contiguous column of samples "
                                       "wider than 8 bits, at most 2^20 cells, and " + std::to_string(bucket_bytes) +
                                           " bytes of shared memory a block, " + std::to_string(budget) + " here") + ")");
  p.reasons.push_back("runs: a thread's terms at one digit of one cell add once (two runs kept)");
  if (ring)
    p.reasons.push_back("ring: each thread's next " + std::to_string(detail::kExactStages - 1) +
                        " loads in flight through shared memory (cp.async, " +
                        std::to_string(detail::kExactRingBytes) + " bytes)");
  return p;
}

/// Exact sums (options::exact_sums) of f64 weights, or of f32 weights where the f32 kernel's keys
/// do not reach, on the GPU: each weight is a global 64-bit atomic addition (two, with their rare
/// carries) into its cell's wide fixed-point words (core/exact_sum.hpp) in device memory, one sample
/// per thread. The simplest exact kernel: expect about global_atomic's rate for uniform samples and
/// a hot bin serialised on its words' atomics (not measured).
policy plan_cuda_exact_wide(const plan_request& r, policy p) {
  if (r.wanted != strategy::automatic && r.wanted != strategy::global_atomic)
    throw error("strategy " + std::string(name_of(r.wanted)) +
                " does not keep exact sums of f64 weights on the GPU; use automatic or global_atomic");
  p.chosen = strategy::global_atomic;
  p.exact_wide = true;
  p.block_threads = 256;
  p.grid_blocks = std::max(1, r.device_sms) * 8;
  p.reasons.push_back("exact sums, " + std::string(name_of(r.weight_type)) +
                      " weights: a thread sums its terms in runs of one cell in registers, each run two global "
                      "64-bit atomics (and their carries) into its cell's 34 fixed-point words; any order gives the "
                      "same words");
  p.reasons.push_back("global_atomic: the words in device memory; a hot bin takes an atomic a run of up to 512 "
                      "terms, not one a sample");
  return p;
}

/// Passes over the samples beyond which plan_cuda_weighted sums f64 weights in exact wide words instead.
constexpr std::int64_t kWindowedPassesMax = 4;

/// Weighted sums of f64 weights on the GPU: each warp sums into its own f64 copy of a window of cells (no
/// float atomics), warps and blocks are combined in a fixed order, and the grid is a function
/// of n alone, so the bits are the same on every run and every device (what it reads:
/// bench/PERFORMANCE.md, "Fixed-order f64 weighted sums").
policy plan_cuda_weighted(const plan_request& r, policy p, std::int64_t budget) {
  if (r.wanted != strategy::automatic && r.wanted != strategy::shared)
    throw error("strategy " + std::string(name_of(r.wanted)) +
                " cannot sum weights reproducibly on the GPU (float atomics add in a different "
                "order every run); use automatic or shared");
  constexpr std::int64_t warps = 256 / 32;
  // A warp's copy: an f64 sum and a word (the mask of a group's lanes in the cell) a cell, as
  // cuda/ordered_sums.cu's weighted_kernel lays them out; every window's launch takes these bytes.
  const std::int64_t window = std::min<std::int64_t>(r.cells, std::max<std::int64_t>(1, budget / (warps * 12)));
  const std::int64_t passes = (r.cells + window - 1) / window;
  // Each pass reads every sample, so the windows' time grows with the cells; the wide words' global
  // atomics take one pass at any number of cells (2 x 10^7 samples into 25,000 cells of a 3-D
  // histogram on an H200: 21 windows 19.7 ms, wide words 6.6 ms).
  if (passes > kWindowedPassesMax && r.wanted == strategy::automatic) {
    policy wide = plan_cuda_exact_wide(r, p);
    wide.reasons.insert(wide.reasons.begin(),
                        "weighted: the warps' f64 copies would need " + std::to_string(passes) + " passes of " +
                        std::to_string(window) + " cells; exact fixed-point words instead, one pass, each cell "
                        "rounded once to f64 (correctly rounded: the same bits on every run)");
    return wide;
  }
  p.chosen = strategy::shared;
  p.block_threads = 256;
  p.window_cells = window;
  p.shared_bytes = warps * p.window_cells * 12;
  // At least 16384 samples per block, at most 4096 blocks: a fixed function of n.
  p.grid_blocks = std::clamp<std::int64_t>((r.n + 16383) / 16384, 1, 4096);
  p.reasons.push_back("weighted: one f64 copy per warp of " + std::to_string(p.window_cells) +
                      " cells, lanes of a warp with the same cell combined by a fixed tree, warps "
                      "and blocks added in a fixed order: the same bits on every run");
  p.reasons.push_back("grid " + std::to_string(p.grid_blocks) +
                      " x 256: a function of n alone (16384 samples per block, at most 4096), "
                      "so the summation order does not depend on the device");
  if (passes > 1)
    p.reasons.push_back(std::to_string(passes) + " passes over the samples, one per window of " +
                        std::to_string(p.window_cells) + " cells (the copies of all cells do not fit)");
  return p;
}

/// Shared memory of the device a CUDA plan is for.
struct cuda_room {
  std::int64_t sms = 1;
  std::int64_t per_block = 48 * 1024;  // one block may use
  std::int64_t per_sm = 48 * 1024;     // one multiprocessor has
  std::int64_t budget = 0;             // for one of two blocks a multiprocessor (1 KiB each is the runtime's)
};

cuda_room room_of(const plan_request& r) {
  cuda_room m;
  m.sms = std::max(1, r.device_sms);
  if (r.device_shared_bytes > 0) m.per_block = r.device_shared_bytes;
  m.per_sm = r.device_shared_per_sm > 0 ? r.device_shared_per_sm : m.per_block;
  m.budget = std::min(m.per_block, m.per_sm / 2 - 1024);
  return m;
}

/// write_once (count_into): a small fill is one cluster of blocks that count the samples in
/// their shared memory; then each cell, summed over the cluster's copies, is written once into
/// the caller's output, converted to its type: one launch, no allocation, no zeroing and no
/// atomics in device memory (a one-shot call through a device_histogram costs about twice the
/// runtime's one memset and one launch). Up to 16 samples a thread: one block of 256 threads, or
/// a cluster of up to 8 (the portable size) of 1024, and up to 16384 cells (128 KiB of 64-bit
/// output).
/// add_once: a larger fill of up to 2^20 samples into as few cells counts 4096 samples a block
/// in shared memory, and each block adds its nonzero counts into the output, zeroed first: one
/// memset and one launch, no histogram's memory and no conversion. Only into types whose adds
/// are exact in any order: 64-bit integers, and f64 and f32, whose counts stay below 2^24 here
/// (f16 and bf16 would round at every add; they take a histogram's fill and one conversion).
bool takes_count_into(const plan_request& r, const cuda_room& m) {
  const bool exact_adds = r.write_type == dtype::u64 || r.write_type == dtype::i64 || r.write_type == dtype::f64 ||
                          r.write_type == dtype::f32;
  return r.write_once && r.wanted == strategy::automatic && r.channels == 1 && r.cells <= write_once_max_cells &&
         (r.cells + 3) * 4 <= m.per_block &&
         ((r.n <= write_once_max_samples && r.device_clusters) || (r.n <= add_once_max_samples && exact_adds));
}

policy plan_count_into(const plan_request& r, policy p) {
  constexpr std::int64_t per_thread = 16, small_block = 256, block = 1024;
  static_assert(write_once_max_samples == 8 * block * per_thread, "write_once's grid is one portable cluster");
  p.chosen = strategy::shared;
  p.shared_bytes = (r.cells + 3) * 4;
  if (r.n <= write_once_max_samples && r.device_clusters) {
    p.write_once = true;
    p.block_threads = r.n <= small_block * per_thread ? small_block : block;
    p.grid_blocks = std::max<std::int64_t>(1, (r.n + block * per_thread - 1) / (block * per_thread));
    p.reasons.push_back("write_once: " + std::to_string(r.n) + " samples counted by a cluster of " +
                        std::to_string(p.grid_blocks) + " block(s) of " + std::to_string(p.block_threads) +
                        " threads in shared memory, each cell summed over the cluster and written once into the "
                        "output (one launch; no zeroing, no atomics in device memory)");
    return p;
  }
  p.add_once = true;
  p.block_threads = small_block;
  p.grid_blocks = (r.n + small_block * per_thread - 1) / (small_block * per_thread);
  p.reasons.push_back("add_once: " + std::to_string(r.n) + " samples counted by " + std::to_string(p.grid_blocks) +
                      " blocks of 256 threads in shared memory, each adding its nonzero counts into the zeroed "
                      "output (one memset and one launch; exact adds into " + std::string(name_of(r.write_type)) + ")");
  return p;
}

/// What the counting strategies' counters need of shared memory, and which of them fit a fill
/// (one channel): the facts the planner's choice and the checks of an asked-for strategy read.
struct counting_fit {
  bool bytes = false;               // one contiguous column of 8-bit samples: counted per value
  bool one_pass = false;            // 2-4 interleaved 8-bit channels counted in one pass
  int counted = 1;                  // channels counted (one value table each)
  std::int64_t values = 256;        // value counters of the 8-bit tables
  std::int64_t counter_bytes = 0;   // one copy of 32-bit counters and the 3 flow counters
  std::int64_t axis_bytes = 0;      // the generic kernel's bin of each stride-0 column, after the copies
  int replicas = 32;                // copies that fit the budget
  bool fits = false;                // one copy fits a block
  std::int64_t packed_bytes = 0;    // one copy of 16-bit counters, two a word
  bool packed = false;              // only 16-bit counters fit, for one contiguous column
  int cluster_k = 0;                // blocks of a cluster holding one copy (0: none fits)
  bool cluster_fits = false;
  int part_bits = kPartitionMinBits;  // partitioned: slots a bucket, as a power of two
  std::int64_t part_buckets = 0;
  bool partition_fits = false;
  bool registers_fit = false;       // a lane a slot: at most 32 slots

  std::int64_t cluster_share(std::int64_t cells, int k) const {
    std::int64_t slice = 1;
    while (slice * k < cells) slice *= 2;
    return (slice + 3) * 4;
  }
};

counting_fit fit_of(const plan_request& r, const cuda_room& m) {
  counting_fit f;
  const bool eight_bit = r.sample == dtype::u8 || r.sample == dtype::i8;
  // Interleaved 8-bit channels (2-4, as RGB and RGBA pixels) are counted in one pass, one value
  // table per channel (RGBA u8, 3 x 256 bins: 1078 GB/s uniform against 370 channel by channel).
  f.one_pass = r.channels > 1 && r.channels <= 4 && eight_bit && r.contiguous && r.wanted == strategy::automatic;
  // 8-bit samples take 256 values: the shared strategies count each value, then map the 256
  // values to bins once. Their counters always fit.
  f.bytes = r.contiguous && eight_bit;
  // Only the channels that histograms take are counted (RGBA's alpha is skipped for three):
  // 3 x 256 values fit 32 copies, which is 2-3% faster than 4 x 256 in 16.
  f.counted = r.counted_channels > 0 ? std::min(r.counted_channels, r.channels) : r.channels;
  f.values = 256 * std::max(1, f.counted);
  f.counter_bytes = ((f.bytes ? f.values : r.cells) + 3) * 4;  // and 3 flow counters
  // Copies per block: as many (up to one per lane, 32) as leave two blocks per multiprocessor
  // (u8 skewed80 1159 GB/s with one copy, 1537 with 32; elsewhere within 1.5% either way).
  f.axis_bytes = r.contiguous ? 0 : 4 * std::int64_t{r.dims};
  while (f.replicas > 1 && f.counter_bytes * f.replicas + f.axis_bytes > m.budget) f.replicas /= 2;
  f.fits = f.counter_bytes + f.axis_bytes <= m.per_block;
  // Beyond that, one copy of 16-bit counters, two per word, holds twice the slots (a half that
  // wraps hands 2^16 to device memory): one contiguous column of samples wider than 8 bits.
  f.packed_bytes = (r.cells + 3 + 1) / 2 * 4;
  f.packed = !f.fits && r.contiguous && !f.bytes && f.packed_bytes <= m.per_block;
  // A cluster of K blocks holds one copy of the cells, 2^k cells per block (so that a slot's
  // block is its high bits), and each block its own 3 flow counters: the smallest K of 2, 4 and
  // 8 whose share fits half a multiprocessor, else a whole one.
  for (std::int64_t limit : {m.budget, m.per_block}) {
    for (int k = 2; k <= 8 && !f.cluster_k; k *= 2)
      if (f.cluster_share(r.cells, k) <= limit) f.cluster_k = k;
    if (f.cluster_k) break;
  }
  f.cluster_fits = r.device_clusters && r.contiguous && !f.bytes && f.cluster_k > 0;
  // Partitioned: buckets of 2^bits slots, a bucket's slots counted in one block's shared memory.
  // At most 32 buckets of bins where 2^15 slots allow (the flow counters may take one more), at
  // least 2^10 slots a bucket, at most 256 buckets. The sort's bucket counters and starts then
  // fall in 32 banks (i32 2^20 bins: a pass sorted in 140 us in 33 buckets, 294 in 129).
  while (f.part_bits < kPartitionMaxBits && ((r.cells - 1) >> f.part_bits) >= 32) ++f.part_bits;
  f.part_buckets = ((r.cells + 2) >> f.part_bits) + 1;
  f.partition_fits = r.contiguous && !f.bytes && f.part_buckets <= kPartitionMaxBuckets &&
                     (std::int64_t{4} << f.part_bits) <= m.per_block;
  // Registers: a lane per slot, so at most 32 slots (29 bins and the 3 flow counters).
  f.registers_fit = r.contiguous && r.cells + 3 <= 32;
  return f;
}

/// Throws where the asked-for counting strategy does not apply to the fill.
void check_asked(const plan_request& r, const counting_fit& f, const cuda_room& m) {
  const std::string column = r.contiguous ? "" : " in a strided or N-D fill";
  if ((r.wanted == strategy::shared || r.wanted == strategy::shared_replicated) && !f.fits && !f.packed)
    throw error("strategy " + std::string(name_of(r.wanted)) + ": " + std::to_string(r.cells) +
                " cells need " + std::to_string(f.counter_bytes) + " bytes of shared memory (" +
                std::to_string(f.packed_bytes) + " as 16-bit counters, for one contiguous column), the device has " +
                std::to_string(m.per_block) + " per block");
  if (r.wanted == strategy::cluster && !r.device_clusters)
    throw error("strategy cluster needs thread block clusters, which this GPU lacks (sm_90 and newer have them)");
  if (r.wanted == strategy::cluster && !f.cluster_fits)
    throw error("strategy cluster needs one contiguous column of samples wider than 8 bits and no more "
                "cells than 8 blocks' shared memory holds (" + std::to_string(m.per_block) + " bytes each); got " +
                std::to_string(r.cells) + " cells of " + std::string(name_of(r.sample)) + column);
  if (r.wanted == strategy::partitioned && !f.partition_fits)
    throw error("strategy partitioned needs one contiguous column of samples wider than 8 bits and at most " +
                std::to_string(kPartitionMaxBuckets) + " buckets of 2^" + std::to_string(kPartitionMaxBits) +
                " slots; got " + std::to_string(r.cells) + " cells of " + std::string(name_of(r.sample)) + column);
  if (r.wanted == strategy::registers && !f.registers_fit)
    throw error("strategy register counts one contiguous column into at most 29 bins (32 slots with the 3 flow "
                "counters); got " + std::to_string(r.cells) + " cells" +
                (r.contiguous ? "" : " in a strided, N-D or multi-channel fill"));
}

/// The automatic choice among the counting strategies (their measurements: the registry's
/// chosen_when, tally/strategy.hpp), or the asked-for one.
void choose_counting(const plan_request& r, const counting_fit& f, policy& p) {
  if (r.wanted != strategy::automatic) {
    p.chosen = r.wanted;
    p.reasons.push_back(std::string(name_of(p.chosen)) + ": asked for");
  } else if (f.fits && f.replicas > 1) {
    p.chosen = strategy::shared_replicated;
    p.reasons.push_back("shared_replicated: " + std::to_string(f.replicas) +
                        " interleaved copies of the counters fit in half a multiprocessor's "
                        "shared memory; lanes spread over banks and a hot bin over copies");
  } else if (f.fits) {
    p.chosen = strategy::shared;
    p.reasons.push_back("shared: one copy of the counters fits in a block's shared memory");
  } else if (f.packed) {
    p.chosen = strategy::shared;
    p.reasons.push_back("shared: one copy of 16-bit counters (two per word) fits in a block's shared memory");
  } else if (f.partition_fits) {
    p.chosen = strategy::partitioned;
    p.reasons.push_back("partitioned: the counters exceed one block's shared memory; each tile of samples is "
                        "sorted by bucket (2^" + std::to_string(f.part_bits) + " slots) into temporary memory, then "
                        "each bucket counted in the shared memory of the blocks that own it");
  } else if (f.cluster_fits) {
    p.chosen = strategy::cluster;
    p.reasons.push_back("cluster: the counters exceed one block's shared memory; " + std::to_string(f.cluster_k) +
                        " blocks of a cluster hold one copy in distributed shared memory");
  } else if (r.contiguous) {
    // Beyond the partitions' 2^23 slots, a hot bin rarely reaches device memory (same-address
    // atomics: about 1.35 G per second) through the two runs a thread keeps across loads.
    p.chosen = strategy::global_atomic_vec;
    p.reasons.push_back("global_atomic_vec: the counters do not fit in shared memory; each thread keeps two "
                        "runs of equal bins in registers and adds a run with one atomic");
  } else {
    p.chosen = strategy::warp_aggregated;
    p.reasons.push_back("warp_aggregated: the counters do not fit in shared memory; one atomic per "
                        "warp and bin");
  }
}

/// The chosen counting strategy's copies, shared memory, loads and grid.
void shape_counting(const plan_request& r, const counting_fit& f, const cuda_room& m, policy& p) {
  const bool in_shared = p.chosen == strategy::shared || p.chosen == strategy::shared_replicated;
  const bool in_cluster = p.chosen == strategy::cluster;
  const bool in_registers = p.chosen == strategy::registers;
  const bool partitioned = p.chosen == strategy::partitioned;
  const bool typed = r.contiguous && (in_shared || in_cluster || in_registers || partitioned ||
                                      p.chosen == strategy::global_atomic_vec);
  p.value_table = f.bytes && in_shared;
  const std::int64_t tables = p.value_table ? 0 : r.table_bytes;
  p.replicas = p.chosen == strategy::shared_replicated ? f.replicas : 1;
  p.counter_bits = in_shared && !f.fits ? 16 : 32;
  // Runs of equal slots within a load add once where lanes share counters (fewer than 16
  // copies, a cluster's remote counters, device memory): a hot bin then costs one atomic per
  // load. With a copy per lane (or per two) there is little contention to save and merging costs
  // instructions: u8 256 bins in 32 copies, 1935 GB/s merged against 2869 with one atomic per
  // sample; i32 within 3% either way.
  p.merge_runs = typed && !in_registers && !partitioned && !(in_shared && p.replicas >= 16);
  if (partitioned) {
    p.partition_bits = f.part_bits;
    p.partition_buckets = static_cast<int>(f.part_buckets);
    // Counting blocks: one wave, two per multiprocessor where the counters leave room for two.
    const std::int64_t counting = m.per_sm / ((std::int64_t{4} << f.part_bits) + kPartitionCountStatic + 1024);
    p.partition_blocks = static_cast<int>(m.sms * std::clamp<std::int64_t>(counting, 1, 2048 / kPartitionCountThreads));
    // Temporary memory: 2 bytes per sample of a pass, and a tile's offsets per bucket.
    p.partition_chunk = partition_chunk(r.n, kPartitionChunk);
  }
  if (p.chosen == strategy::shared_replicated && f.replicas == 1)
    p.reasons.push_back("replicas 1: a second copy would not fit");
  if (p.counter_bits == 16)
    p.reasons.push_back("16-bit counters, two per word: 32-bit ones would need " + std::to_string(f.counter_bytes) +
                        " bytes; a half that wraps adds 2^16 to device memory");
  p.shared_bytes = in_shared     ? (p.counter_bits == 16 ? f.packed_bytes : f.counter_bytes * p.replicas + f.axis_bytes)
                  : in_cluster  ? f.cluster_share(r.cells, f.cluster_k)
                  : in_registers ? 32 * 4  // the block's sum of its warps' counts
                  : partitioned  ? kPartitionTile * 2 + (f.part_buckets + 1) * 8  // a sorted tile; counts, starts
                                 : 0;
  p.cluster_blocks = in_cluster ? f.cluster_k : 0;
  // The partitioned sort keeps its tile after the tables at a 16-byte boundary (16-byte copies).
  const std::int64_t staged = partitioned ? (tables + 15) / 16 * 16 : tables;
  p.tables_in_shared = typed && (in_shared || in_registers || partitioned) && tables > 0 &&
                       p.shared_bytes + staged <= m.budget;
  if (p.tables_in_shared) {
    p.shared_bytes += staged;
    p.reasons.push_back("edge tables in shared memory (" + std::to_string(tables) + " bytes)");
  }
  if (in_registers)
    p.reasons.push_back("register: lane l of each warp counts slot l from 6 ballots per 32 samples; one "
                        "shared atomic per warp and slot at the end");
  else if (partitioned)
    p.reasons.push_back(std::to_string(f.part_buckets) + " buckets; passes of " + std::to_string(p.partition_chunk) +
                        " samples (2 bytes each of temporary memory); up to " + std::to_string(p.partition_blocks) +
                        " counting blocks (one wave) shared out among the buckets by their samples; increments by 1 "
                        "of shared counters (a warp's lanes on one counter combine, so a hot bin costs no more)");
  else if (typed && p.chosen != strategy::global_atomic_vec)
    p.reasons.push_back(p.merge_runs ? "runs of equal slots within a load add once (lanes share counters)"
                                     : "one atomic per sample: a copy per lane or two, no run merging");
  if (p.value_table && f.one_pass)
    p.reasons.push_back("value tables: " + std::to_string(f.counted) + (f.counted < r.channels ? " of " + std::to_string(r.channels) : std::string()) +
                        " channels of 8-bit samples counted per channel and value in one pass over the pixels (" +
                        std::to_string(f.values) + " counters), each folded into its channel's bins once per fill");
  else if (p.value_table)
    p.reasons.push_back("value table: 8-bit samples counted per value (256 counters), folded "
                        "into the axis' bins once per fill");

  // 16-byte loads, 4 in flight per thread, 512 threads: i32 256 bins 2308 GB/s uniform against
  // 757 for the generic one-sample-per-load kernel.
  p.vector_bytes = typed ? 16 : 0;
  // The generic shared kernel (N-D, strided or unaligned columns): one block of 1024 threads a
  // multiprocessor (its 64 registers a thread allow no more), kGenericLoads samples of each
  // column in flight per thread. One sample per load and 256 threads, as the other generic kernels
  // still take, kept 2 KiB of a 3-D f32 fill in flight per multiprocessor: 170-180 GB/s on an
  // H200 (bench/PERFORMANCE.md, "GPU counting in shared memory").
  const bool generic_shared = in_shared && !typed;
  p.block_threads = typed ? 512 : generic_shared ? kGenericThreads : 256;
  // partitioned: a thread's share of a tile of kPartitionTile samples, in 16-byte loads.
  p.unroll = partitioned      ? static_cast<int>(kPartitionTile / p.block_threads * size_of(r.sample) / 16)
             : typed          ? 4
             : generic_shared ? kGenericLoads
                              : 1;
  // The sort keeps a thread's 16 slots and ranks across its barriers: 64 registers, two blocks.
  const std::int64_t by_threads = partitioned ? 2 : generic_shared ? 1 : 2048 / p.block_threads;
  const std::int64_t by_shared = p.shared_bytes > 0 ? m.per_sm / (p.shared_bytes + 1024) : by_threads;
  const std::int64_t blocks_per_sm = std::max<std::int64_t>(1, std::min(by_threads, by_shared));
  // No more blocks than one grid-stride step over the samples needs: every block zeroes and
  // flushes its copy, which is most of a small fill's time (a fill of 1 sample took 12 us on the
  // H100 with the full grid).
  const std::int64_t per_step =
      p.block_threads * (typed ? p.unroll * p.vector_bytes / static_cast<std::int64_t>(size_of(r.sample)) : p.unroll);
  const std::int64_t needed = std::max<std::int64_t>(1, (r.n + per_step - 1) / per_step);
  const std::int64_t k = in_cluster ? f.cluster_k : 1;  // whole clusters
  const std::int64_t resident = std::max(k, m.sms * blocks_per_sm / k * k);
  p.grid_blocks = std::min(resident, (needed + k - 1) / k * k);
  const bool small = p.grid_blocks < resident;
  p.reasons.push_back(
      "grid " + std::to_string(p.grid_blocks) + " x " + std::to_string(p.block_threads) + ": " +
      (small ? "one grid-stride step over the samples (at most " : "") + std::to_string(blocks_per_sm) +
      " resident blocks per multiprocessor" + (small ? ")" : ", grid-stride") +
      (typed            ? "; 16-byte loads, " + std::to_string(p.unroll) + " in flight per thread (" +
                                 std::to_string(16 * p.unroll) + " KiB per 1024 threads in flight)"
       : generic_shared ? "; strided, N-D or unaligned samples: " + std::to_string(p.unroll) +
                              " samples of each column in flight per thread (those of the first " +
                              std::to_string(kGenericAhead) + " columns of up to 4-byte samples all at once), "
                              "each axis' rule chosen once for them; a column of one repeated value (stride 0) "
                              "binned once per block"
                        : "; one sample per load (strided, N-D or unaligned samples)"));
}

/// A CUDA plan: weighted sums, a count_into's one launch, channels one by one, or a count.
policy plan_cuda(const plan_request& r) {
  if (r.wanted == strategy::cpu_private)
    throw error("strategy cpu_private does not run on the GPU");
  policy p;
  p.where = backend::cuda;
  p.threads = 0;
  const cuda_room m = room_of(r);
  // The exact kernel keys a thread's runs by cell x 16 + digit in 32 bits: below 2^27 cells (a
  // fill of more would need 9 x 8 bytes of device words per cell, over 9 GiB).
  if (r.weighted) {
    if (r.weight_type == dtype::f32 && r.cells < (std::int64_t{1} << 27)) return plan_cuda_exact(r, p, m.budget);
    return r.exact_sums ? plan_cuda_exact_wide(r, p) : plan_cuda_weighted(r, p, m.budget);
  }
  if (takes_count_into(r, m)) return plan_count_into(r, p);
  if (r.wanted == strategy::global_atomic_vec && !r.contiguous)
    throw error("strategy global_atomic_vec needs one contiguous column aligned to its sample type");
  const counting_fit f = fit_of(r, m);
  // Channels beyond one pass are filled one by one, each a strided column.
  if (r.channels > 1 && !f.one_pass) {
    plan_request each = r;
    each.channels = 1;
    each.contiguous = false;
    policy p_each = plan_cuda(each);
    p_each.reasons.insert(p_each.reasons.begin(),
                          std::to_string(r.channels) + " channels filled one by one (one pass takes 2-4 channels of "
                          "8-bit samples, automatic strategy)");
    return p_each;
  }
  check_asked(r, f, m);
  choose_counting(r, f, p);
  shape_counting(r, f, m, p);
  return p;
}

}  // namespace

namespace detail {
int hardware_threads() {
  // Asked once: the C library reads it from /sys on every call (about 6 us), which small fills
  // would pay at each plan.
  static const int threads = [] {
    const unsigned t = std::thread::hardware_concurrency();
    return t == 0 ? 1 : static_cast<int>(t);
  }();
  return threads;
}

std::int64_t& partition_pass_tiles() {
  static std::int64_t tiles = 0;
  return tiles;
}
}  // namespace detail

std::string_view name_of(backend b) { return to_name(b, kBackends); }
std::string_view name_of(count_type c) { return to_name(c, kCounts); }
backend backend_from_name(std::string_view name) { return from_name(name, kBackends, "backend"); }

policy plan(const plan_request& r) {
  if (r.cells < 1) throw error("plan: cells must be >= 1, got " + std::to_string(r.cells));
  if (r.n < 0) throw error("plan: n must be >= 0, got " + std::to_string(r.n));
  if (r.flow_bins && r.weighted) throw error("plan: flow bins hold counts; a weighted fill keeps none");
  policy p;
  switch (r.where) {
    case backend::cpu: {
      if (r.wanted != strategy::automatic && r.wanted != strategy::cpu_private)
        throw error("strategy " + std::string(name_of(r.wanted)) + " does not run on the CPU");
      p = plan_cpu(r);
      break;
    }
    case backend::cuda: {
      // Flow bins are placed by the generic per-sample kernels (cuda/common.cuh's slot_of).
      constexpr strategy generic[] = {strategy::automatic, strategy::global_atomic, strategy::warp_aggregated,
                                      strategy::shared, strategy::shared_replicated};
      if (r.flow_bins && std::find(std::begin(generic), std::end(generic), r.wanted) == std::end(generic))
        throw error("strategy " + std::string(name_of(r.wanted)) + " keeps no flow bins; use automatic, "
                    "global_atomic, warp_aggregated, shared or shared_replicated");
      p = plan_cuda(r);
      if (r.flow_bins && (p.vector_bytes || p.partition_bits || p.value_table))
        throw error("plan: flow bins need the generic kernels, the plan took " + std::string(name_of(p.chosen)));
      break;
    }
    default:
      throw error("plan: resolve backend::automatic to cpu or cuda before planning");
  }
  p.flow_bins = r.flow_bins;
  if (r.flow_bins) p.reasons.push_back("flow bins: each axis keeps bins + 3 cells, placed sample by sample");
  return p;
}

std::string describe(const policy& p) {
  std::ostringstream s;
  s << "backend    " << name_of(p.where) << "\n"
    << "strategy   " << name_of(p.chosen) << "\n";
  if (p.where == backend::cuda) {
    s << "launch     " << p.grid_blocks << " blocks x " << p.block_threads << " threads\n"
      << "loads      " << (p.vector_bytes ? std::to_string(p.vector_bytes) + " bytes, " +
                                                std::to_string(p.unroll) + " in flight per thread"
                           : p.unroll > 1 && !p.exact_sums ? "one sample each, " + std::to_string(p.unroll) +
                                                " of each column in flight per thread"
                                          : std::string("one sample each")) << "\n"
      << "replicas   " << p.replicas << "\n"
      << "shared     " << p.shared_bytes << " bytes per block"
      << (p.counter_bits == 16 ? ", 16-bit counters, two per word" : "") << "\n";
    if (p.cluster_blocks) s << "cluster    " << p.cluster_blocks << " blocks share one copy\n";
    if (p.write_once) s << "writes     each cell once into the output, summed over the grid's one cluster (count_into)\n";
    if (p.add_once) s << "adds       each block's counts into the zeroed output (count_into)\n";
    if (p.value_table) s << "values     counted per 8-bit value, folded into bins\n";
    if (p.vector_bytes && !p.exact_sums && !p.partition_bits)
      s << "runs       "
        << (p.chosen == strategy::global_atomic_vec ? "two per thread, kept across loads"
            : p.merge_runs                          ? "merged within a load"
                                                    : "not merged")
        << "\n";
    if (p.window_cells) s << "window     " << p.window_cells << " cells per pass\n";
    if (p.exact_sums) s << "sums       exact: fixed-point words per cell, any order\n";
    if (p.exact_wide) s << "sums       exact: 34 fixed-point words per cell in device memory, global atomics\n";
    if (p.partition_bits)
      s << "partition  " << p.partition_buckets << " buckets of 2^" << p.partition_bits << " slots, "
        << p.partition_chunk << " samples per pass, " << p.partition_blocks
        << (p.exact_sums ? " summing blocks\n" : " counting blocks\n");
  } else {
    s << "threads    " << p.threads << "\n"
      << "replicas   " << p.replicas << "\n"
      << "edge table " << (p.edge_table ? "yes" : "no") << "\n"
      << "block      " << p.block << " samples\n";
  }
  s << "why:\n";
  for (const auto& reason : p.reasons) s << "  - " << reason << "\n";
  return s.str();
}

}  // namespace tally
